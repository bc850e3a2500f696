"""Replay with the Spark pool against the process pool, on the same generated relay log.

    python benchmarks/spark_pool.py [--size MB] [--workers N] [--parallel-type TYPE] [--repeats N]
                                    [--spark-master URL | --cluster]

Both runs are the parallel applier with the same workers and scheduler; only the preparing
stage's executor differs: local processes, or Spark tasks (local[N], or the cluster given). Each
run is a whole `relaydeck replay` in its own process, Spark's start-up included (the apply does
not wait for it: local processes prepare until Spark is ready, and the run reports how many
segments Spark prepared). A third run has Spark already up when its clock starts, as `relaydeck
serve` has after its first START (the session and its Python workers stay in the process): there
Spark prepares the segments from the first. Runs alternate (processes, Spark, Spark already up,
processes, …) so the ratios are measured side by side. Each slave's tables are compared with
the generator's oracle. Figures are printed and written to benchmarks/results/spark_pool.json
(spark_pool_cluster.json with --cluster).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generated_logs import add_relay_log_options, ensure_relay_log  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402

from engine.replay import relay_bytes  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402

# One run, in a process of its own (a Spark session belongs to its process): the replay, then
# what the pool did, as one JSON line.
_RUN = """
import json, sys, time
from pathlib import Path
import engine.replay as replay
from engine.applier.vocabulary import ParallelOptions
slave, index, workers, kind, pool, master, warm = sys.argv[1:8]
if warm == "warm":
    # Spark up before the clock starts, as in `relaydeck serve` after its first START: the
    # session and its Python workers stay for the next executor
    from engine.pool.spark import SparkExecutor
    first = SparkExecutor(int(workers), master or None)
    assert first.wait_started(600) and first.spark_ready, "Spark did not start"
    first.close()
made = []
original = replay.make_executor
def keep(*args, **kwargs):
    made.append(original(*args, **kwargs))
    return made[-1]
replay.make_executor = keep
options = ParallelOptions(int(workers), kind, pool=pool, spark_master=master or None)
started = time.perf_counter()
(outcome,) = replay.Replay(Path(slave), None, [replay.ChannelSpec("", Path(index))], parallel=options).run()
seconds = time.perf_counter() - started
assert outcome.error is None, outcome.error
on_spark = getattr(made[0], "segments_done_on_spark", None) if made else None
print(json.dumps({"seconds": seconds, "transactions": outcome.stats.transactions,
                  "segments_on_spark": on_spark}))
"""


def replay_once(
    index: Path, expected: Path, args: argparse.Namespace, pool: str, warm: bool = False
) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="relaydeck-spark-bench-"))
    try:
        slave = work / "slave.duckdb"
        command = [
            sys.executable,
            "-c",
            _RUN,
            str(slave),
            str(index),
            str(args.workers),
            args.parallel_type,
            pool,
            args.spark_master or "",
            "warm" if warm else "cold",
        ]
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SystemExit(f"{pool} run failed:\n{run.stderr[-3000:]}")
        figures = json.loads(run.stdout.strip().splitlines()[-1])
        database = Slave(slave)
        try:
            mismatches = differences(database, expected)
        finally:
            database.close()
        figures["identical_tables"] = not mismatches
        figures["trx_per_s"] = round(figures["transactions"] / figures["seconds"])
        return figures
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_relay_log_options(parser, "oltp")
    parser.set_defaults(size=300.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--parallel-type", default="logical_clock")
    parser.add_argument("--repeats", type=int, default=2)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--spark-master", default=None, help="a cluster URL (default: local mode)")
    where.add_argument(
        "--cluster",
        action="store_true",
        help="start a standalone cluster (a master and a worker of --workers cores, on 127.0.0.1) "
        "for the Spark runs",
    )
    args = parser.parse_args()
    if args.cluster:
        from engine.spark.standalone import standalone_cluster

        with standalone_cluster(cores=args.workers) as url:
            args.spark_master = url
            return measure(args)
    return measure(args)


def measure(args: argparse.Namespace) -> int:
    index = ensure_relay_log(args.workload, args.size, args.seed)
    expected = index.parent / "expected"
    rounds = []
    for _ in range(args.repeats):
        started = time.monotonic()
        processes = replay_once(index, expected, args, "processes")
        spark = replay_once(index, expected, args, "spark")
        warm = replay_once(index, expected, args, "spark", warm=True)
        rounds.append(
            {
                "processes": processes,
                "spark": spark,
                "spark_warm": warm,
                "spark_over_processes": round(spark["trx_per_s"] / processes["trx_per_s"], 2),  # type: ignore[operator]
                "spark_warm_over_processes": round(warm["trx_per_s"] / processes["trx_per_s"], 2),  # type: ignore[operator]
                "round_s": round(time.monotonic() - started, 1),
            }
        )
        print(
            f"processes {processes['trx_per_s']:>7} trx/s  spark {spark['trx_per_s']:>7} trx/s "
            f"({spark['segments_on_spark']} segments on Spark, ratio {rounds[-1]['spark_over_processes']})  "
            f"spark already up {warm['trx_per_s']:>7} trx/s ({warm['segments_on_spark']} segments on Spark, "
            f"ratio {rounds[-1]['spark_warm_over_processes']})  identical tables: "
            f"{processes['identical_tables'] and spark['identical_tables'] and warm['identical_tables']}",
            flush=True,
        )
    results = {
        **measurement_header(),
        "log": {"workload": args.workload, "size_mb": args.size, "bytes": relay_bytes_of(index)},
        "workers": args.workers,
        "parallel_type": args.parallel_type,
        "spark_master": args.spark_master or f"local[{args.workers}]",
        "standalone_cluster_started_here": args.cluster,
        "rounds": rounds,
        "spark_over_processes_median": statistics.median(r["spark_over_processes"] for r in rounds),
        "spark_warm_over_processes_median": statistics.median(r["spark_warm_over_processes"] for r in rounds),
        "identical_tables": all(
            r[run]["identical_tables"] for r in rounds for run in ("processes", "spark", "spark_warm")
        ),  # type: ignore[index]
    }
    write_results("spark_pool_cluster" if args.cluster else "spark_pool", results)
    print(
        f"median Spark / processes: {results['spark_over_processes_median']} (Spark's start in the run), "
        f"{results['spark_warm_over_processes_median']} (Spark already up)"
    )
    return 0 if results["identical_tables"] else 1


def relay_bytes_of(index: Path) -> int:
    from engine.replay import ChannelSpec

    return relay_bytes(ChannelSpec("", index))


if __name__ == "__main__":
    raise SystemExit(main())
