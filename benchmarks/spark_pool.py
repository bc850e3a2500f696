"""Replay with the Spark worker pool against the thread pool, on the same generated relay log.

    python benchmarks/spark_pool.py [--size MB] [--workers N] [--parallel-type TYPE] [--repeats N]

Both pools run the multi-threaded applier with the same workers and scheduler; with the Spark
pool the coordinator hands row decoding and writesets to Spark tasks (local[N] here) in batches,
and the engine process applies and commits. Runs alternate (thread, Spark, thread, …) so the
ratio is measured side by side. Each slave's tables are compared with the generator's oracle.
Where the time goes with Spark is measured too: time inside the pool's prepare() calls (ship,
decode in the tasks, ship back) against the whole run, and the Spark session's start-up.
Figures are printed and written to benchmarks/results/spark_pool.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from decode_throughput import ensure_relay_log  # noqa: E402
from machine import measurement_header  # noqa: E402

from engine.applier.parallel import ParallelOptions  # noqa: E402
from engine.replay import ChannelRun, ChannelSpec, RunSettings, relay_bytes  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402


class TimedPreparer:
    """Wraps a pool's preparer and adds up the time spent in it."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.transactions = 0

    def prepare(self, transactions, catalog):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return self.inner.prepare(transactions, catalog)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1
            self.transactions += len(transactions)


def replay_once(index: Path, expected: Path, options: ParallelOptions, preparer) -> dict[str, object]:  # type: ignore[no-untyped-def]
    work = Path(tempfile.mkdtemp(prefix="relaydeck-spark-bench-"))
    try:
        slave = Slave(work / "slave.duckdb")
        try:
            run = ChannelRun(
                slave, None, ChannelSpec("", index), RunSettings(parallel=options, preparer=preparer)
            )
            started = time.perf_counter()
            run.start()
            run.join()
            seconds = time.perf_counter() - started
            diffs = differences(slave, expected)
        finally:
            slave.close()
        error = run.outcome.error.one_line() if run.outcome.error else None
        transactions = run.outcome.stats.transactions if run.outcome.stats else 0
        return {
            "seconds": round(seconds, 3),
            "transactions": transactions,
            "trx_per_s": round(transactions / seconds),
            "error": error,
            "identical_tables": not diffs and error is None,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=float, default=200.0, help="generated relay log size, MB (default 200)"
    )
    parser.add_argument("--workload", default="oltp")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--parallel-type", default="writeset", choices=("database", "logical_clock", "writeset")
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--spark-master", default=None)
    args = parser.parse_args()

    from engine.spark.decode import SparkRowDecoder
    from engine.spark.session import spark_session

    index = ensure_relay_log(args.workload, args.size, 1)
    expected = index.parent / "expected"
    size = relay_bytes(ChannelSpec("", index))
    threads = ParallelOptions(workers=args.workers, parallel_type=args.parallel_type)
    spark = ParallelOptions(
        workers=args.workers, parallel_type=args.parallel_type, pool="spark", spark_master=args.spark_master
    )
    started = time.perf_counter()
    session = spark_session(args.spark_master, cores=args.workers)
    spark_start = time.perf_counter() - started

    runs: dict[str, list[dict[str, object]]] = {"threads": [], "spark": []}
    prepare_share = []
    for _ in range(args.repeats):
        runs["threads"].append(replay_once(index, expected, threads, None))
        timed = TimedPreparer(SparkRowDecoder(session))
        result = replay_once(index, expected, spark, timed)
        result.update(
            prepare_seconds=round(timed.seconds, 3),
            prepare_calls=timed.calls,
            prepared_transactions=timed.transactions,
        )
        prepare_share.append(timed.seconds / max(1e-9, float(result["seconds"])))  # type: ignore[arg-type]
        runs["spark"].append(result)
        for name in ("threads", "spark"):
            r = runs[name][-1]
            print(
                f"{name:8} {r['transactions']} trx in {r['seconds']} s: {r['trx_per_s']} trx/s, identical={r['identical_tables']}"
            )

    best = {name: max(int(r["trx_per_s"]) for r in rs) for name, rs in runs.items()}  # type: ignore[call-overload]
    ratio = round(best["spark"] / best["threads"], 3)
    print(f"\nrelay log: {args.workload} {size / 1e6:.0f} MB, {args.workers} workers, {args.parallel_type}")
    print(f"best: threads {best['threads']} trx/s, spark {best['spark']} trx/s, spark/threads {ratio}")
    print(f"spark session start-up {spark_start:.1f} s (not in the run times)")
    print(f"time inside the Spark pool's prepare(): {max(prepare_share) * 100:.0f}% of a Spark run")

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {
        **measurement_header(),
        "relay_log": {"workload": args.workload, "bytes": size},
        "workers": args.workers,
        "parallel_type": args.parallel_type,
        "spark_session_start_s": round(spark_start, 1),
        "runs": runs,
        "best_trx_per_s": best,
        "spark_over_threads": ratio,
        "prepare_share_of_spark_run": [round(x, 3) for x in prepare_share],
        "identical_tables": all(r["identical_tables"] for rs in runs.values() for r in rs),
    }
    (RESULTS / "spark_pool.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0 if out["identical_tables"] else 1


if __name__ == "__main__":
    sys.exit(main())
