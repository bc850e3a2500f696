"""Replay throughput of the single and multi-threaded appliers, side by side with MariaDB's own replica.

    python benchmarks/replay_throughput.py [--size MB] [--peer] [--repeats N]

Measures `relaydeck replay` (transactions/s, MB/s) on the bundled MariaDB capture and on a
generated relay log, checking each result against its oracle. With --peer it also runs
../shared/peer/peer.sh on the full-size capture (PROFILE=big: made once, reused from $PEER_LAB),
and in each round times MariaDB 10.11's applier on it, then relaydeck's single applier and its
process pool on the same files, and compares relaydeck's tables with MariaDB's. Figures are printed and written to benchmarks/results/replay_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT.parent / "shared" / "peer" / "peer.sh"
sys.path.insert(0, str(ROOT))

from generated_logs import ensure_relay_log  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402

from engine.applier.parallel import ParallelOptions  # noqa: E402
from engine.replay import ChannelSpec, Replay, relay_bytes  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402


def replay_once(
    channels: list[ChannelSpec], expected: Path | None, parallel: ParallelOptions | None = None
) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="relaydeck-bench-"))
    try:
        start = time.perf_counter()
        outcomes = Replay(work / "slave.duckdb", work / "repo.sqlite", channels, parallel=parallel).run()
        seconds = time.perf_counter() - start
        errors = [o.error.one_line() for o in outcomes if o.error]
        transactions = sum(o.stats.transactions for o in outcomes if o.stats)
        exact = None
        if expected is not None:
            slave = Slave(work / "slave.duckdb")
            try:
                diffs = differences(slave, expected)
            finally:
                slave.close()
            exact = not diffs and not errors
        return {"seconds": seconds, "transactions": transactions, "errors": errors, "identical_tables": exact}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(
    name: str,
    channels: list[ChannelSpec],
    expected: Path | None,
    repeats: int,
    parallel: ParallelOptions | None = None,
) -> dict[str, object]:
    size = sum(relay_bytes(c) for c in channels)
    runs = [replay_once(channels, expected, parallel) for _ in range(repeats)]
    seconds = statistics.median(r["seconds"] for r in runs)  # type: ignore[misc]
    transactions = runs[0]["transactions"]
    result = {
        "name": name,
        "relay_log_bytes": size,
        "transactions": transactions,
        "runs_seconds": [round(r["seconds"], 3) for r in runs],  # type: ignore[arg-type]
        "median_seconds": round(seconds, 3),
        "trx_per_s": round(transactions / seconds),  # type: ignore[operator]
        "mb_per_s": round(size / 1e6 / seconds, 2),
        "identical_tables": all(r["identical_tables"] for r in runs) if expected else None,
        "errors": runs[0]["errors"],
    }
    print(json.dumps(result), flush=True)
    return result


def peer_capture(lab: Path) -> Path:
    capture = lab / "capture"
    if not (capture / "relay-bin-m1.index").exists():
        subprocess.run(
            ["bash", str(PEER), "all"], env={**os.environ, "PROFILE": "big", "PEER_LAB": str(lab)}, check=True
        )
    return capture


def peer_apply(lab: Path, configs: str) -> dict[str, object]:
    env = {
        **os.environ,
        "PROFILE": "big",
        "PEER_LAB": str(lab),
        "CONFIGS": configs,
        "WARMUP": "0",
        "REPEATS": "1",
    }
    subprocess.run(["bash", str(PEER), "apply"], env=env, check=True, stdout=subprocess.DEVNULL)
    runs = json.loads((lab / "results" / "mariadb_apply.json").read_text())
    if isinstance(runs, dict):
        runs = runs.get("runs", [])
    out = {}
    for run in runs:
        key = f"{run['slave_parallel_threads']}:{run['slave_parallel_mode']}"
        out[key] = {"seconds": run["total"]["seconds"], "trx_per_s": run["total"]["tps"]}
    return out


def _workers_and_type(text: str) -> tuple[int, str, str]:
    """N:TYPE or N:TYPE:POOL (threads, processes)."""
    workers, kind, *pool = text.split(":")
    return int(workers), kind, pool[0] if pool else "threads"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=100.0, help="generated relay log size in MB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peer", action="store_true", help="also compare with MariaDB on the full-size capture"
    )
    parser.add_argument("--peer-lab", default=os.environ.get("PEER_LAB", "/tmp/peer-lab"))
    parser.add_argument(
        "--peer-rounds",
        type=int,
        default=2,
        help="rounds of MariaDB, then relaydeck's single applier and process pool, on the full capture (default 2)",
    )
    parser.add_argument(
        "--pool-workers",
        type=int,
        default=os.cpu_count() or 2,
        help="worker processes of the process pool measured in every round (default: the CPU count)",
    )
    parser.add_argument(
        "--peer-parallel",
        nargs="*",
        type=_workers_and_type,
        default=[
            (2, "logical_clock", "threads"),
            (4, "logical_clock", "threads"),
            (4, "writeset", "threads"),
            (4, "database", "threads"),
        ],
        metavar="N:TYPE[:POOL]",
        help="parallel configurations measured once on the full capture (default 2:logical_clock "
        "4:logical_clock 4:writeset 4:database, thread pool)",
    )
    args = parser.parse_args()

    fixture = ROOT / "fixtures" / "mariadb-10.11-multisource"
    results: dict[str, object] = measurement_header()
    results["mariadb_fixture"] = measure(
        "MariaDB 10.11 capture (small)",
        [
            ChannelSpec("m1", fixture / "relay" / "relay-bin-m1.index"),
            ChannelSpec("m2", fixture / "relay" / "relay-bin-m2.index"),
        ],
        fixture / "expected",
        args.repeats,
    )
    generated = ensure_relay_log("oltp", args.size, 1).parent
    results["generated_oltp"] = measure(
        f"generated oltp {args.size:g} MB",
        [ChannelSpec("", generated / "relay-bin.index")],
        generated / "expected",
        1,
    )
    results["generated_oltp_process_pool"] = measure(
        f"generated oltp {args.size:g} MB, process pool of {args.pool_workers}",
        [ChannelSpec("", generated / "relay-bin.index")],
        generated / "expected",
        1,
        ParallelOptions(workers=args.pool_workers, pool="processes"),
    )
    results["generated_oltp_process_pool_over_single_applier"] = round(
        results["generated_oltp_process_pool"]["trx_per_s"] / results["generated_oltp"]["trx_per_s"],
        2,  # type: ignore[index,operator]
    )
    if args.peer:
        lab = Path(args.peer_lab)
        capture = peer_capture(lab)
        channels = [
            ChannelSpec("m1", capture / "relay-bin-m1.index"),
            ChannelSpec("m2", capture / "relay-bin-m2.index"),
        ]
        name = "MariaDB 10.11 capture (full size, PROFILE=big)"
        # Rounds alternate MariaDB and relaydeck on the same files, so that each ratio compares
        # runs made under the same load of this shared machine.
        rounds = []
        for _ in range(args.peer_rounds):
            mariadb = peer_apply(lab, "0:none 4:optimistic 4:conservative")
            ours = measure(name, channels, lab / "expected", 1)
            pool = ParallelOptions(workers=args.pool_workers, pool="processes")
            pooled = measure(
                f"{name}, process pool of {args.pool_workers}", channels, lab / "expected", 1, pool
            )
            best = max(mariadb.values(), key=lambda r: r["trx_per_s"])  # type: ignore[index]
            rounds.append(
                {
                    "mariadb": mariadb,
                    "relaydeck_single_applier": ours,
                    "relaydeck_process_pool": pooled,
                    "process_pool_workers": args.pool_workers,
                    "process_pool_ratio_to_mariadb_best": round(pooled["trx_per_s"] / best["trx_per_s"], 2),  # type: ignore[index,operator]
                    "process_pool_over_single_applier": round(pooled["trx_per_s"] / ours["trx_per_s"], 2),  # type: ignore[index,operator]
                    "ratio_to_mariadb_single_threaded": round(
                        ours["trx_per_s"] / mariadb["0:none"]["trx_per_s"], 2
                    ),  # type: ignore[index,operator]
                    "ratio_to_mariadb_best": round(ours["trx_per_s"] / best["trx_per_s"], 2),  # type: ignore[index,operator]
                }
            )
            print(json.dumps(rounds[-1], indent=2))
        mariadb_best = max(
            (run for r in rounds for run in r["mariadb"].values()),  # type: ignore[attr-defined]
            key=lambda run: run["trx_per_s"],
        )
        parallel = {}
        for workers, kind, pool_kind in args.peer_parallel:
            options = ParallelOptions(workers=workers, parallel_type=kind, pool=pool_kind)
            parallel[f"{workers}:{kind}:{pool_kind}"] = measure(
                f"{name}, {workers} workers, {kind}, {pool_kind}", channels, lab / "expected", 1, options
            )
        best_parallel = max(parallel.values(), key=lambda r: r["trx_per_s"], default=None)  # type: ignore[index,return-value]
        results["peer"] = {
            "rounds": rounds,
            "ratio_to_mariadb_best_per_round": [r["ratio_to_mariadb_best"] for r in rounds],
            "process_pool_ratio_to_mariadb_best_per_round": [
                r["process_pool_ratio_to_mariadb_best"] for r in rounds
            ],
            "process_pool_over_single_applier_per_round": [
                r["process_pool_over_single_applier"] for r in rounds
            ],
            "ratio_to_mariadb_best_median": round(
                statistics.median(r["ratio_to_mariadb_best"] for r in rounds),
                2,  # type: ignore[misc]
            ),
            "relaydeck_parallel": parallel,
            "best_parallel_over_best_mariadb": round(
                best_parallel["trx_per_s"] / mariadb_best["trx_per_s"], 2
            )  # type: ignore[index,operator]
            if best_parallel
            else None,
        }
        print(json.dumps({k: v for k, v in results["peer"].items() if k != "rounds"}, indent=2))
    write_results("replay_throughput", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
