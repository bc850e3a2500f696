"""Replay throughput of the single and parallel appliers, side by side with MariaDB's own replica.

    python benchmarks/replay_throughput.py [--size MB] [--repeats N]
        [--peer [--peer-rounds N] [--peer-workers N] [--peer-types TYPE ...] [--peer-pool POOL]
                [--mariadb-configs "THREADS:MODE ..."] [--baseline-checkout PATH [--baseline-workers N]]]

Measures `relaydeck replay` (transactions/s, MB/s) on the bundled MariaDB capture and on a
generated relay log (single applier, and the parallel applier with --peer-workers), checking each
result against its oracle.

With --peer it also runs ../shared/peer/peer.sh on the full-size capture (PROFILE=big: made once,
reused from --peer-lab / $PEER_LAB), and in each round, on the same files, one after the other:
  - MariaDB 10.11's applier in each of --mariadb-configs (default 0:none 4:optimistic
    4:conservative); the fastest of the round is "MariaDB's best";
  - relaydeck's single applier;
  - with --baseline-checkout PATH: the process pool of that checkout (an older relaydeck, where
    the process pool was a mode of the single applier), replayed by checkout_replay.py in PATH's
    own .venv interpreter with PYTHONPATH=PATH, --baseline-workers processes (default: the CPUs);
  - the parallel applier, `--workers N` (default 4) under database, logical_clock and writeset,
    each with commit order on and off, its transactions prepared by --peer-pool (default
    processes).
Every replay's tables are compared with MariaDB's (identical_tables). Each relaydeck run is read on
two clocks: the whole run (DuckDB's checkpoint at the slave's close included) and up to its last
commit, which is how MariaDB's run is read (START to its last GTID applied), see CLOCKS. Each configuration is
reported as trx/s and as ratios, within its round, to the single applier, to MariaDB's best and to
the old process pool; the summary keeps the median over rounds, and "targets" says whether each
parallel configuration reaches 1.5x the single applier and the old process pool. Figures are
printed and written to benchmarks/results/replay_throughput.json.
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
# ../shared beside the checkout; a worktree kept in a folder of its own finds it further up
PEER = next(
    (p / "shared" / "peer" / "peer.sh" for p in ROOT.parents if (p / "shared" / "peer" / "peer.sh").exists()),
    ROOT.parent / "shared" / "peer" / "peer.sh",
)
sys.path.insert(0, str(ROOT))

from generated_logs import ensure_relay_log  # noqa: E402
from machine import measurement_header, write_bytecode, write_results  # noqa: E402

from engine.applier.vocabulary import PARALLEL_TYPES, POOLS, ParallelOptions  # noqa: E402
from engine.replay import ChannelSpec, Replay, relay_bytes  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402


def replay_once(
    channels: list[ChannelSpec], expected: Path | None, parallel: ParallelOptions | None = None
) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="relaydeck-bench-"))
    last_commit = [0.0]

    def committed(_: object) -> None:
        last_commit[0] = time.perf_counter()

    try:
        start = time.perf_counter()
        replay = Replay(
            work / "slave.duckdb", work / "repo.sqlite", channels, parallel=parallel, on_commit=committed
        )
        outcomes = replay.run()
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
        return {
            "seconds": seconds,
            "seconds_to_last_commit": last_commit[0] - start if last_commit[0] else seconds,
            "transactions": transactions,
            "errors": errors,
            "identical_tables": exact,
        }
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
    to_last_commit = statistics.median(r["seconds_to_last_commit"] for r in runs)  # type: ignore[misc]
    transactions = runs[0]["transactions"]
    result = {
        "name": name,
        "relay_log_bytes": size,
        "transactions": transactions,
        "runs_seconds": [round(r["seconds"], 3) for r in runs],  # type: ignore[arg-type]
        "median_seconds": round(seconds, 3),
        "trx_per_s": round(transactions / seconds),  # type: ignore[operator]
        "median_seconds_to_last_commit": round(to_last_commit, 3),
        "trx_per_s_to_last_commit": round(transactions / to_last_commit),  # type: ignore[operator]
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
        out[key] = {
            "seconds": run["total"]["seconds"],
            "trx_per_s": run["total"]["tps"],
            "checksums_match_master": run.get("checksums_match_master"),
        }
    return out


def checkout_replay(
    checkout: Path, channels: list[ChannelSpec], expected: Path, workers: int, pool: str
) -> dict[str, object]:
    """One replay by another checkout's engine, in its own virtual environment's interpreter, on
    the same files (checkout_replay.py): seconds, transactions, errors, identical_tables."""
    python = checkout / ".venv" / "bin" / "python"
    command = [
        str(python if python.exists() else sys.executable),
        str(Path(__file__).resolve().parent / "checkout_replay.py"),
        *(argument for c in channels for argument in ("--channel", f"{c.name}={c.index_file}")),
        "--expected",
        str(expected),
        "--workers",
        str(workers),
        "--pool",
        pool,
    ]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {
            "seconds": None,
            "seconds_to_last_commit": None,
            "transactions": 0,
            "errors": [done.stderr.strip()[-2000:]],
            "identical_tables": False,
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_checkout(
    name: str, checkout: Path, channels: list[ChannelSpec], expected: Path, workers: int, pool: str
) -> dict[str, object]:
    run = checkout_replay(checkout, channels, expected, workers, pool)
    seconds = run["seconds"]
    to_last_commit = run.get("seconds_to_last_commit")
    result = {
        "name": name,
        "checkout": str(checkout),
        "commit": subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "relay_log_bytes": sum(relay_bytes(c) for c in channels),
        "transactions": run["transactions"],
        "runs_seconds": [round(seconds, 3)] if seconds else [],  # type: ignore[arg-type]
        "median_seconds": round(seconds, 3) if seconds else None,  # type: ignore[arg-type]
        "trx_per_s": round(run["transactions"] / seconds) if seconds else None,  # type: ignore[operator]
        "median_seconds_to_last_commit": round(to_last_commit, 3) if to_last_commit else None,  # type: ignore[arg-type]
        "trx_per_s_to_last_commit": round(run["transactions"] / to_last_commit) if to_last_commit else None,  # type: ignore[operator]
        "identical_tables": run["identical_tables"],
        "errors": run["errors"],
    }
    print(json.dumps(result), flush=True)
    return result


def parallel_configurations(workers: int, types: list[str], pool: str) -> dict[str, ParallelOptions]:
    """`--workers N --parallel-type T --preserve-commit-order on|off --pool P` for each type, by label."""
    return {
        f"{workers}:{kind}:order-{'on' if order else 'off'}:{pool}": ParallelOptions(
            workers=workers, parallel_type=kind, preserve_commit_order=order, pool=pool
        )
        for kind in types
        for order in (True, False)
    }


# The two clocks each relaydeck run is read on: "" the whole Replay.run (the slave's close, which
# checkpoints DuckDB's WAL into the file, included); "_to_last_commit" until its last commit, the
# moment its last transaction is durable. MariaDB's figure is read the second way (START SLAVE
# SQL_THREAD to MASTER_GTID_WAIT of the last GTID, InnoDB's pages flushed later), so the ratio to
# MariaDB's best is like for like on that clock; the whole run is the stricter one.
CLOCKS = ("", "_to_last_commit")


def ratio(numerator: object, denominator: object) -> float | None:
    if not numerator or not denominator:
        return None
    return round(float(numerator) / float(denominator), 2)  # type: ignore[arg-type]


def round_ratios(
    run: dict[str, object], single: dict[str, object], best: object, old_pool: dict[str, object] | None
) -> dict[str, float | None]:
    """A run's ratios within its round, on each clock."""
    out: dict[str, float | None] = {}
    for clock in CLOCKS:
        tps = run[f"trx_per_s{clock}"]
        out[f"over_single_applier{clock}"] = ratio(tps, single[f"trx_per_s{clock}"])
        out[f"over_mariadb_best{clock}"] = ratio(tps, best)
        out[f"over_old_process_pool{clock}"] = ratio(tps, old_pool[f"trx_per_s{clock}"]) if old_pool else None
    return out


def peer_rounds(args: argparse.Namespace) -> dict[str, object]:
    """MariaDB's applier and relaydeck's side by side on the full-size capture, round after round."""
    lab = Path(args.peer_lab)
    capture = peer_capture(lab)
    expected = lab / "expected"
    channels = [
        ChannelSpec("m1", capture / "relay-bin-m1.index"),
        ChannelSpec("m2", capture / "relay-bin-m2.index"),
    ]
    name = "MariaDB 10.11 capture (full size, PROFILE=big)"
    configurations = parallel_configurations(args.peer_workers, args.peer_types, args.peer_pool)
    baseline = Path(args.baseline_checkout).resolve() if args.baseline_checkout else None
    if baseline is not None:
        write_bytecode(baseline)
    # Every configuration runs once per round, on the same files, one after the other: each ratio
    # compares runs made under the same load of this shared machine.
    rounds = []
    for _ in range(args.peer_rounds):
        mariadb = peer_apply(lab, args.mariadb_configs)
        best_key = max(mariadb, key=lambda k: mariadb[k]["trx_per_s"])  # type: ignore[index]
        best = mariadb[best_key]["trx_per_s"]  # type: ignore[index]
        single = measure(f"{name}, single applier", channels, expected, 1)
        old_pool = None
        if baseline is not None:
            old_pool = measure_checkout(
                f"{name}, process pool of {args.baseline_workers} (single applier's mode), {baseline.name}",
                baseline,
                channels,
                expected,
                args.baseline_workers,
                "processes",
            )
        parallel = {
            label: measure(f"{name}, {label}", channels, expected, 1, options)
            for label, options in configurations.items()
        }
        table = {"single": single, **({"old_process_pool": old_pool} if old_pool else {}), **parallel}
        ratios = {label: round_ratios(r, single, best, old_pool) for label, r in table.items()}
        rounds.append({"mariadb": mariadb, "mariadb_best": best_key, "relaydeck": table, "ratios": ratios})
        print(json.dumps({"mariadb": mariadb, "ratios": ratios}, indent=2), flush=True)
    labels = list(rounds[0]["relaydeck"])  # type: ignore[call-overload]
    summary = {}
    for label in labels:
        runs = [r["relaydeck"][label] for r in rounds]  # type: ignore[index]
        per_round = [r["ratios"][label] for r in rounds]  # type: ignore[index]
        keys = [
            f"{key}{clock}"
            for clock in CLOCKS
            for key in ("over_single_applier", "over_mariadb_best", "over_old_process_pool")
        ]
        summary[label] = {
            "identical_tables_every_round": all(run["identical_tables"] for run in runs),
            **{
                key: value
                for clock in CLOCKS
                for tps in [[run[f"trx_per_s{clock}"] for run in runs if run[f"trx_per_s{clock}"]]]
                for key, value in (
                    (f"trx_per_s{clock}_per_round", [run[f"trx_per_s{clock}"] for run in runs]),
                    (f"trx_per_s{clock}_median", round(statistics.median(tps)) if tps else None),
                )
            },
            **{f"{key}_per_round": [p[key] for p in per_round] for key in keys},
            **{
                f"{key}_median": round(statistics.median(values), 2) if values else None
                for key in keys
                for values in [[p[key] for p in per_round if p[key] is not None]]
            },
        }
    targets = {
        label: {
            "at_least_1_5x_single": (s["over_single_applier_median"] or 0) >= 1.5,
            "not_slower_than_old_process_pool": None
            if s["over_old_process_pool_median"] is None
            else s["over_old_process_pool_median"] >= 1.0,
            "five_times_mariadb_best_to_last_commit": (s["over_mariadb_best_to_last_commit_median"] or 0)
            >= 5.0,
            "identical_tables": s["identical_tables_every_round"],
        }
        for label, s in summary.items()
        if label in configurations
    }
    mariadb_summary = {
        key: {
            "trx_per_s_per_round": [r["mariadb"][key]["trx_per_s"] for r in rounds],  # type: ignore[index]
            "trx_per_s_median": round(statistics.median(r["mariadb"][key]["trx_per_s"] for r in rounds)),  # type: ignore[index]
        }
        for key in rounds[0]["mariadb"]  # type: ignore[index]
    }
    return {
        "capture": str(capture),
        "mariadb_summary": mariadb_summary,
        "mariadb_configs": args.mariadb_configs,
        "baseline_checkout": str(baseline) if baseline else None,
        "rounds": rounds,
        "summary": summary,
        "targets": targets,
    }


def print_summary(peer: dict[str, object]) -> None:
    summary = peer["summary"]
    # each figure: the whole run / to the last commit (see CLOCKS)
    head = ["configuration", "trx/s", "x single", "x MariaDB best", "x old pool", "identical"]
    lines = [head]
    for label, s in summary.items():  # type: ignore[attr-defined]
        lines.append(
            [
                label,
                *(
                    f"{s[f'{key}_median']} / {s[f'{key}_to_last_commit_median']}"
                    if key != "trx_per_s"
                    else f"{s['trx_per_s_median']} / {s['trx_per_s_to_last_commit_median']}"
                    for key in (
                        "trx_per_s",
                        "over_single_applier",
                        "over_mariadb_best",
                        "over_old_process_pool",
                    )
                ),
                "yes" if s["identical_tables_every_round"] else "NO",
            ]
        )
    for key, m in peer["mariadb_summary"].items():  # type: ignore[attr-defined]
        lines.append([f"MariaDB {key}", str(m["trx_per_s_median"]), "", "", "", ""])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )


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
        help="rounds on the full capture, every configuration in each (default 2)",
    )
    parser.add_argument(
        "--mariadb-configs",
        default="0:none 4:optimistic 4:conservative",
        help="MariaDB's applier settings timed in each round, THREADS:MODE (default: 0:none 4:optimistic "
        "4:conservative); the best of a round is what relaydeck is compared with",
    )
    parser.add_argument(
        "--peer-workers", type=int, default=4, help="--workers of the parallel applier (default 4)"
    )
    parser.add_argument(
        "--peer-types",
        nargs="+",
        choices=PARALLEL_TYPES,
        default=list(PARALLEL_TYPES),
        help="parallel types measured, each with commit order on and off (default: all three)",
    )
    parser.add_argument(
        "--peer-pool",
        choices=POOLS,
        default="processes",
        help="the preparing stage's executor (default processes)",
    )
    parser.add_argument(
        "--baseline-checkout",
        metavar="PATH",
        help="another checkout of relaydeck (with its own .venv) whose process pool is timed in each round too",
    )
    parser.add_argument(
        "--baseline-workers",
        type=int,
        default=os.cpu_count() or 2,
        help="workers of the baseline checkout's process pool (default: the CPU count)",
    )
    args = parser.parse_args()
    if args.peer and not PEER.exists():
        # said now, not after the minutes of the generated-log part
        parser.error(
            f"--peer runs shared/peer/peer.sh, found in no folder above this checkout (looked for {PEER})"
        )

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
    options = ParallelOptions(workers=args.peer_workers, pool=args.peer_pool)
    results["generated_oltp_parallel"] = measure(
        f"generated oltp {args.size:g} MB, {args.peer_workers} workers, writeset, {args.peer_pool}",
        [ChannelSpec("", generated / "relay-bin.index")],
        generated / "expected",
        1,
        options,
    )
    results["generated_oltp_parallel_over_single_applier"] = ratio(
        results["generated_oltp_parallel"]["trx_per_s"],  # type: ignore[index]
        results["generated_oltp"]["trx_per_s"],  # type: ignore[index]
    )
    if args.peer:
        results["peer"] = peer_rounds(args)
        print_summary(results["peer"])  # type: ignore[arg-type]
    write_results("replay_throughput", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
