"""Throughput of the parallel applier by scheduler and worker count, against the ideal.

    python benchmarks/parallel_throughput.py [--size MB] [--workloads NAME ...] [--types TYPE ...]
                                             [--workers N ...] [--commit-order on|off|both]
                                             [--pool threads|processes|spark]
                                             [--repeats N] [--seed N] [--timeout S]

For each generated workload (default: oltp, multidb, hot), scheduler (database, logical_clock,
writeset) and worker count (default 1 2 4 8; 1 is always measured, it is the baseline) it replays
the relay log with the parallel applier (`--workers N`), its transactions prepared by --pool
(default processes, the applier's own default: as many preparing processes as workers, at most one
per core), and reports transactions/s, the speedup over one worker of the same scheduler and pool,
the ideal speedup and achieved/ideal (the target with 2 workers: at least 0.8). The single applier (workers 0)
is measured once per workload as a reference. Every replay's tables are compared with the
generator's oracle (identical_tables); a replay that differs or fails is an engine bug and is
listed under "failures".

The workloads are three dependency shapes (see engine/generate/workloads/):
  oltp     sysbench write-only over 3 databases x 2 tables of random rows: few row conflicts;
           most transactions touch one database, 10% touch two
  multidb  transfers between bank databases, each also writing the audit database: separate
           rows, but every transaction touches 3-4 databases including audit
  hot      a handful of hot rows updated by every transaction: long dependency chains

The ideal speedup is computed offline, without running the applier, by replaying each
scheduler's dependency logic over the relay log's transactions (ordinals 1, 2, 3... in stream
order) and taking the critical path of the resulting graph:
  - weight of a transaction = its rows events + 1 (a stand-in for its cost);
  - logical_clock: D = LogicalClock().dependency(txn, ordinal); writeset: D = WritesetHistory's
    dependency on the transaction's key hashes (commit_parent = ordinal - 1);
    finish(t) = max(finish of every ordinal <= D) + weight(t);
  - database: finish(t) = max(finish of the last earlier transaction on each of its databases)
    + weight(t); no databases logged or more than 16 run alone (after everything before);
  - a transaction that changes definitions (is_structural) depends on everything before it and
    everything after depends on it, under every scheduler;
  - ideal speedup = min(workers, total weight / critical path).
The machine's ideal bounds that by the cores as well: "cores" is the CPU time of a run (this
process and its preparing processes) over its wall time, and one worker's run keeping c of the
machine's n cores busy cannot be sped up past n / c by any number of workers. Both ratios are
reported; the target (0.8 with 2 workers) is stated against the dependency ideal.
The writeset hashes need table definitions. They are taken from the slave the single-applier
replay leaves behind, i.e. the definitions at the END of the relay log. That is exact for the
generated workloads named above, whose DDL all comes first (CREATE DATABASE / TABLE in setup);
for workloads that alter tables mid-stream (ddl, mixed) the writeset ideal is approximate.

Figures are printed and written to benchmarks/results/parallel_throughput.json, with the command
line and the machine's CPU count. Relay logs are generated once into benchmarks/work/ and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "work"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from machine import measurement_header  # noqa: E402

from engine.applier.executor import is_structural  # noqa: E402
from engine.applier.vocabulary import PARALLEL_TYPES, POOLS, ParallelOptions  # noqa: E402
from engine.generate import WORKLOADS, generate  # noqa: E402
from engine.relaylog.index import read_index  # noqa: E402
from engine.relaylog.stream import stream_events  # noqa: E402
from engine.replay import ChannelSpec, Replay, relay_bytes  # noqa: E402
from engine.scheduling.clock import LogicalClock  # noqa: E402
from engine.scheduling.partition import MAX_DBS_IN_QUERY_MTS  # noqa: E402
from engine.scheduling.rowkeys import transaction_writeset  # noqa: E402
from engine.scheduling.writeset import DEFAULT_HISTORY_SIZE, WritesetHistory  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402
from engine.slave.schema import Catalog  # noqa: E402
from engine.transactions import Transaction, TransactionAssembler  # noqa: E402

DEFAULT_WORKLOADS = ("oltp", "multidb", "hot")
DEFAULT_WORKERS = (1, 2, 4, 8)


# -- relay logs ---------------------------------------------------------------------------------


def generated(workload: str, size: float, seed: int) -> Path:
    """The folder of a generated relay log (relay-bin.index, expected/), made once and reused.

    Same folder names as decode_throughput.ensure_relay_log, so the benchmarks share their files.
    """
    out = WORK / f"{workload}-{seed}-{size:g}MB"
    # The oracle's manifest is written last: without it the folder is from an interrupted run.
    if not (out / "relay-bin.index").exists() or not (out / "expected" / "manifest.json").exists():
        if out.exists():
            shutil.rmtree(out)
        print(f"generating {workload} ({size:g} MB, seed {seed}) into {out}", flush=True)
        summary = generate(workload, seed, out, size)
        assert summary.index_file == out / "relay-bin.index", summary.index_file
    return out


# -- ideal speedup ------------------------------------------------------------------------------


class _ClockPath:
    """Critical path when a transaction waits for every ordinal <= D (logical_clock, writeset)."""

    def __init__(self) -> None:
        self._best = [0]  # _best[o]: the latest finish among ordinals 1..o

    def add(self, depends_on: int, weight: int) -> None:
        finish = self._best[depends_on] + weight
        self._best.append(max(self._best[-1], finish))

    @property
    def length(self) -> int:
        return self._best[-1]


@dataclass
class _DatabasePath:
    """Critical path when a transaction waits for the last earlier one on each of its databases."""

    last: dict[str, int] = field(default_factory=dict)  # database -> finish of its last transaction
    floor: int = 0  # finish of the last transaction that ran alone
    length: int = 0  # the latest finish so far

    def add(self, databases: frozenset[str] | None, alone: bool, weight: int) -> None:
        if alone or not databases or len(databases) > MAX_DBS_IN_QUERY_MTS:
            self.floor = self.length = self.length + weight
            return
        finish = max([self.floor, *(self.last.get(db, 0) for db in databases)]) + weight
        for db in databases:
            self.last[db] = finish
        self.length = max(self.length, finish)


def weight(txn: Transaction) -> int:
    return txn.row_events + 1


def dependency_profile(index: Path, catalog: Catalog, types: list[str]) -> dict[str, object]:
    """Total weight and, per scheduler, the critical path of the relay log's dependency graph."""
    clock = LogicalClock()
    history = WritesetHistory(DEFAULT_HISTORY_SIZE)
    paths = {"logical_clock": _ClockPath(), "writeset": _ClockPath()}
    databases = _DatabasePath()
    assembler = TransactionAssembler()
    ordinal = 0
    total = 0
    barrier = 0  # the last ordinal that changed definitions: nothing after starts before it
    started = time.perf_counter()
    events = stream_events(read_index(index))
    try:
        for logged in events:
            for item in assembler.feed(logged):
                if not isinstance(item, Transaction):
                    continue
                ordinal += 1
                w = weight(item)
                total += w
                alone = is_structural(item)
                # Both trackers see every transaction, as the applier's coordinator would.
                after_clock = clock.dependency(item, ordinal)
                hashes = None
                if "writeset" in types and not alone:
                    hashes, _ = transaction_writeset(item, catalog)
                after_writeset = history.dependency(ordinal, hashes, commit_parent=ordinal - 1)
                if alone:
                    after_clock = after_writeset = ordinal - 1
                paths["logical_clock"].add(max(after_clock, barrier), w)
                paths["writeset"].add(max(after_writeset, barrier), w)
                databases.add(item.databases, alone, w)
                if alone:
                    barrier = ordinal
    finally:
        events.close()
    lengths = {"database": databases.length, **{k: p.length for k, p in paths.items()}}
    return {
        "transactions": ordinal,
        "total_weight": total,
        "seconds": round(time.perf_counter() - started, 2),
        "schedulers": {
            kind: {"critical_path": lengths[kind], "parallelism": round(total / max(1, lengths[kind]), 2)}
            for kind in types
        },
    }


def ideal_speedup(profile: dict[str, object], kind: str, workers: int) -> float:
    parallelism = profile["schedulers"][kind]["parallelism"]  # type: ignore[index]
    return round(min(float(workers), parallelism), 2)


def machine_ideal_speedup(ideal: float, one_worker_cores_busy: float | None) -> float:
    """The ideal speedup bounded by this machine's cores as well: one worker's run already keeps
    `one_worker_cores_busy` of them busy (its preparing processes, its threads, DuckDB's threads),
    so however independent the transactions, the same work cannot go faster than cores / busy."""
    if not one_worker_cores_busy:
        return ideal
    cores = os.cpu_count() or 1
    return round(min(ideal, max(1.0, cores / one_worker_cores_busy)), 2)


# -- replays ------------------------------------------------------------------------------------


def replay_once(
    folder: Path, parallel: ParallelOptions | None, timeout: float, keep_catalog: bool = False
) -> dict[str, object]:
    """One replay into a fresh slave, timed, then checked against the oracle."""
    work = Path(tempfile.mkdtemp(prefix="relaydeck-bench-"))
    channels = [ChannelSpec("", folder / "relay-bin.index")]
    errors: list[str] = []
    transactions = 0
    waits = None
    catalog = None
    try:
        replay = Replay(work / "slave.duckdb", work / "repo.sqlite", channels, parallel=parallel)
        timed_out = threading.Event()

        def expire() -> None:
            timed_out.set()
            replay.kill.set()
            replay.stop.set()

        timer = threading.Timer(timeout, expire)
        timer.start()
        cpu_before = _cpu_seconds()
        start = time.perf_counter()
        try:
            outcomes = replay.run()
        except Exception as exc:  # an engine bug: record it and go on with the other runs
            outcomes = []
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            seconds = time.perf_counter() - start
            cpu = _cpu_seconds() - cpu_before
            timer.cancel()
        if timed_out.is_set():
            errors.append(f"killed after the {timeout:g} s timeout")
        for o in outcomes:
            if o.error:
                errors.append(o.error.one_line())
            elif o.stats is None:
                errors.append(f"channel {o.name!r} ended without stats (its thread raised; see stderr)")
            else:
                transactions += o.stats.transactions
        applier = replay.appliers.get("")
        if applier is not None:
            waits = {k: round(v, 3) for k, v in applier.waits.as_dict().items()}
        slave = Slave(work / "slave.duckdb")
        try:
            diffs = differences(slave, folder / "expected")
            if keep_catalog:
                catalog = slave.catalog
        finally:
            slave.close()
        return {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "transactions": transactions,
            "errors": errors,
            "differences": diffs,
            "identical_tables": not diffs and not errors,
            "waits": waits,
            "catalog": catalog,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (the preparing processes, which the
    replay's executor reaps when it closes)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def measure(
    folder: Path, parallel: ParallelOptions | None, repeats: int, timeout: float, keep_catalog: bool = False
) -> dict[str, object]:
    runs = [replay_once(folder, parallel, timeout, keep_catalog and i == 0) for i in range(repeats)]
    seconds = statistics.median(r["seconds"] for r in runs)  # type: ignore[misc]
    transactions = runs[0]["transactions"]
    busy = statistics.median(r["cpu_seconds"] / r["seconds"] for r in runs if r["seconds"])  # type: ignore[operator]
    result = {
        "transactions": transactions,
        "cores_busy": round(busy, 2),
        "runs_seconds": [round(r["seconds"], 3) for r in runs],  # type: ignore[arg-type]
        "median_seconds": round(seconds, 3),
        "trx_per_s": round(transactions / seconds) if seconds else None,  # type: ignore[operator]
        "identical_tables": all(r["identical_tables"] for r in runs),
        "errors": sorted({e for r in runs for e in r["errors"]}),  # type: ignore[attr-defined]
        "differences": sorted({d for r in runs for d in r["differences"]}),  # type: ignore[attr-defined]
    }
    if parallel is not None:
        result["coordinator_waits"] = runs[len(runs) // 2]["waits"]
    if keep_catalog:
        result["catalog"] = runs[0]["catalog"]
    return result


# -- report -------------------------------------------------------------------------------------


def _fmt(value: object, pattern: str = "{}") -> str:
    return "-" if value is None else pattern.format(value)


def print_table(rows: list[dict[str, object]], show_order: bool) -> None:
    head = ["workload", "type", "workers"] + (["order"] if show_order else [])
    head += [
        "trx/s",
        "cores",
        "speedup",
        "ideal",
        "ach/ideal",
        "mach ideal",
        "ach/mach",
        "vs single",
        "identical",
    ]
    lines = [head]
    for r in rows:
        line = [str(r["workload"]), str(r["type"]), str(r["workers"])]
        if show_order:
            line.append(_fmt(r.get("commit_order")))
        line += [
            _fmt(r["trx_per_s"]),
            _fmt(r.get("cores_busy"), "{:.2f}"),
            _fmt(r.get("speedup"), "{:.2f}"),
            _fmt(r.get("ideal_speedup"), "{:.2f}"),
            _fmt(r.get("achieved_over_ideal"), "{:.2f}"),
            _fmt(r.get("machine_ideal_speedup"), "{:.2f}"),
            _fmt(r.get("achieved_over_machine_ideal"), "{:.2f}"),
            _fmt(r.get("vs_single_applier"), "{:.2f}"),
            "yes" if r["identical_tables"] else "NO",
        ]
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    left = {0, 1} | ({3} if show_order else set())
    for n, line in enumerate(lines):
        cells = [
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=8.0, help="generated relay log size in MB (default 8)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(DEFAULT_WORKLOADS))
    parser.add_argument("--types", nargs="+", choices=PARALLEL_TYPES, default=list(PARALLEL_TYPES))
    parser.add_argument(
        "--workers", nargs="+", type=int, default=list(DEFAULT_WORKERS), help="1 is always added"
    )
    parser.add_argument(
        "--commit-order",
        choices=("on", "off", "both"),
        default="on",
        help="replica_preserve_commit_order (default on)",
    )
    parser.add_argument(
        "--pool",
        choices=POOLS,
        default=ParallelOptions().pool,
        help=f"where transactions are prepared (default {ParallelOptions().pool})",
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs per figure; the median is kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a replay is killed")
    args = parser.parse_args()
    if any(n < 1 for n in args.workers):
        parser.error("--workers takes counts of 1 or more (the single applier is always measured)")
    workers = sorted(set(args.workers) | {1})
    orders = {"on": [True], "off": [False], "both": [True, False]}[args.commit_order]

    results: dict[str, object] = {
        **measurement_header(),
        "options": {
            "size_mb": args.size,
            "seed": args.seed,
            "workloads": args.workloads,
            "types": args.types,
            "workers": workers,
            "commit_order": args.commit_order,
            "pool": args.pool,
            "repeats": args.repeats,
        },
        "ideal_model": "weight = rows events + 1 per transaction; "
        "ideal speedup = min(workers, total weight / critical path)",
    }
    rows: list[dict[str, object]] = []
    failures: list[dict[str, object]] = []
    per_workload: dict[str, object] = {}
    for workload in args.workloads:
        folder = generated(workload, args.size, args.seed)
        index = folder / "relay-bin.index"
        single = measure(folder, None, args.repeats, args.timeout, keep_catalog=True)
        catalog = single.pop("catalog")
        profile = dependency_profile(index, catalog, args.types)  # type: ignore[arg-type]
        entry: dict[str, object] = {
            "relay_log_bytes": relay_bytes(ChannelSpec("", index)),
            "dependencies": profile,
            "single_applier": single,
            "runs": [],
        }
        per_workload[workload] = entry
        row = {"workload": workload, "type": "single", "workers": 0, **single}
        rows.append(row)
        if not single["identical_tables"]:
            failures.append(
                {
                    "workload": workload,
                    "type": "single",
                    "workers": 0,
                    "commit_order": None,
                    "errors": single["errors"],
                    "differences": single["differences"],
                }
            )
        print(f"{workload}: {profile['transactions']} transactions, {json.dumps(profile['schedulers'])}")
        print(json.dumps({k: v for k, v in row.items() if k != "differences"}), flush=True)
        for kind in args.types:
            for preserve in orders:
                base: float | None = None
                base_busy: float | None = None
                for n in workers:
                    options = ParallelOptions(
                        workers=n, parallel_type=kind, preserve_commit_order=preserve, pool=args.pool
                    )
                    result = measure(folder, options, args.repeats, args.timeout)
                    tps = result["trx_per_s"]
                    if n == 1:
                        base = tps  # type: ignore[assignment]
                        base_busy = result["cores_busy"]  # type: ignore[assignment]
                    speedup = round(tps / base, 2) if tps and base else None  # type: ignore[operator]
                    ideal = ideal_speedup(profile, kind, n)
                    machine_ideal = machine_ideal_speedup(ideal, base_busy)
                    row = {
                        "workload": workload,
                        "type": kind,
                        "workers": n,
                        "commit_order": "on" if preserve else "off",
                        "trx_per_s": tps,
                        "speedup": speedup,
                        "ideal_speedup": ideal,
                        "achieved_over_ideal": round(speedup / ideal, 2) if speedup else None,
                        "machine_ideal_speedup": machine_ideal,
                        "achieved_over_machine_ideal": round(speedup / machine_ideal, 2) if speedup else None,
                        "vs_single_applier": round(tps / single["trx_per_s"], 2)  # type: ignore[operator]
                        if tps and single["trx_per_s"]
                        else None,
                        **{k: v for k, v in result.items() if k != "trx_per_s"},
                    }
                    entry["runs"].append(row)  # type: ignore[attr-defined]
                    rows.append(row)
                    if not result["identical_tables"]:
                        failures.append({k: row[k] for k in ("workload", "type", "workers", "commit_order")})
                        failures[-1].update(errors=result["errors"], differences=result["differences"])
                    print(json.dumps({k: v for k, v in row.items() if k != "differences"}), flush=True)
    results["workloads"] = per_workload
    results["failures"] = failures
    print()
    print_table(rows, show_order=len(orders) > 1)
    for failure in failures:
        print(f"FAILED: {json.dumps(failure)}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "parallel_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
