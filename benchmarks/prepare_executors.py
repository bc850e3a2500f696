"""The preparing stage on each executor: every segment of a generated OLTP relay log prepared by
local processes and by Spark tasks (local mode, and a standalone cluster), side by side.

    python benchmarks/prepare_executors.py [--size MB] [--workers N] [--repeats N]
                                           [--scales 1,4] [--cluster | --master URL]

What is timed is prepared_chunks (engine/applier/processes.py) drained to the end: segments planned,
submitted to the executor, prepared (read, assembled, decoded, per-table Arrow operations) and
handed back in stream order, with nothing applied. Spark's start-up is measured apart (the
applier does not wait for it: local processes prepare until it is ready). --scales multiplies
the segment size (transactions and bytes): a Spark job costs a fixed 0.1-0.5 s, larger segments
spread it. Runs alternate executors within each repeat. Every run must give the same
transactions and row changes as the first. --cluster starts a Spark master and a worker
(`--workers` cores) from the pyspark distribution on 127.0.0.1 for the run; --master uses one
already running. Figures are printed and written to benchmarks/results/prepare_executors.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from decode_throughput import ensure_relay_log  # noqa: E402
from machine import measurement_header  # noqa: E402

from engine.applier.prepare import PrepareTask  # noqa: E402
from engine.applier.prepared import PreparedRun  # noqa: E402
from engine.applier.processes import SEGMENT_BYTES, SEGMENT_TRANSACTIONS, prepared_chunks  # noqa: E402
from engine.pool import Executor, ProcessExecutor  # noqa: E402
from engine.pool.spark import SparkExecutor  # noqa: E402
from engine.relaylog.index import read_index  # noqa: E402
from engine.spark.session import stop_spark  # noqa: E402
from engine.spark.standalone import standalone_cluster  # noqa: E402


def _never(name: str, pos: int) -> Iterator[list[object]]:
    raise RuntimeError(f"the segment at {name}:{pos} was not prepared by the executor")


def prepare_all(executor: Executor, index: Path, scale: int) -> dict[str, float | int]:
    transactions = rows = chunks = 0
    started = time.perf_counter()
    for chunk in prepared_chunks(
        read_index(index),
        None,
        4,
        executor,
        _never,
        None,
        PrepareTask(SEGMENT_TRANSACTIONS * scale),
        SEGMENT_TRANSACTIONS * scale,
        SEGMENT_BYTES * scale,
    ):
        chunks += 1
        for item in chunk:
            if isinstance(item, PreparedRun):
                transactions += len(item.transactions)
                rows += item.row_changes
            else:
                transactions += 1
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "transactions": transactions, "row_changes": rows, "chunks": chunks}


def started_spark(workers: int, master: str | None) -> tuple[SparkExecutor, float]:
    started = time.perf_counter()
    executor = SparkExecutor(workers, master)
    if not executor.wait_started(900) or not executor.spark_ready:
        raise RuntimeError(f"Spark did not start: {executor._start_error}")
    return executor, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=300.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--scales", default="1,4", help="segment sizes, as multiples of the applier's")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--cluster", action="store_true", help="start a standalone cluster for the run")
    where.add_argument("--master", help="a running standalone cluster's URL")
    parser.add_argument(
        "--no-local", action="store_true", help="only the cluster (with --cluster or --master)"
    )
    args = parser.parse_args()
    scales = [int(s) for s in args.scales.split(",")]
    index = ensure_relay_log("oltp", args.size, 1)
    relay_bytes = sum(Path(f).stat().st_size for f in read_index(index).files)

    runs: list[dict[str, object]] = []
    reference: tuple[object, object] | None = None

    def measure(name: str, executor: Executor, scale: int, repeat: int) -> None:
        nonlocal reference
        result = prepare_all(executor, index, scale)
        counts = (result["transactions"], result["row_changes"])
        reference = reference or counts
        if counts != reference:
            raise RuntimeError(f"{name} prepared {counts}, the first run {reference}")
        runs.append({"executor": name, "segment_scale": scale, "repeat": repeat, **result})
        print(
            f"{name:>16} x{scale}  {result['seconds']:7.2f} s  {result['transactions']} transactions",
            flush=True,
        )

    def side_by_side(name: str, spark: SparkExecutor) -> None:
        processes = ProcessExecutor(args.workers)
        try:
            for repeat in range(args.repeats):
                for scale in scales:
                    measure("processes", processes, scale, repeat)
                    measure(name, spark, scale, repeat)
        finally:
            spark.close()
            processes.close()
            stop_spark()

    spark_start = cluster_start = None
    if not args.no_local:
        spark, spark_start = started_spark(args.workers, None)
        print(f"Spark local[{args.workers}] started in {spark_start:.1f} s", flush=True)
        side_by_side("spark local", spark)
    with contextlib.ExitStack() as stack:
        master = args.master or (
            stack.enter_context(standalone_cluster(args.workers)) if args.cluster else None
        )
        if master:
            cluster, cluster_start = started_spark(args.workers, master)
            print(f"Spark on {master} started in {cluster_start:.1f} s", flush=True)
            side_by_side("spark cluster", cluster)

    # Side by side: each Spark run against the process-pool run just before it (same segments),
    # and against the process pool at the applier's own segment size in the same round. The
    # machine's other load moves both alike within a round, not across rounds.
    summary: dict[str, object] = {}
    for name in ("spark local", "spark cluster"):
        for scale in scales:
            same, default = [], []
            for run in runs:
                if run["executor"] != name or run["segment_scale"] != scale:
                    continue
                before = [
                    r
                    for r in runs[: runs.index(run)]
                    if r["executor"] == "processes" and r["repeat"] == run["repeat"]
                ]
                paired = [r for r in before if r["segment_scale"] == scale][-1]
                first = [r for r in before if r["segment_scale"] == 1]
                same.append(paired["seconds"] / run["seconds"])  # type: ignore[operator]
                if first:
                    default.append(first[-1]["seconds"] / run["seconds"])  # type: ignore[operator]
            if not same:
                continue
            seconds = min(r["seconds"] for r in runs if r["executor"] == name and r["segment_scale"] == scale)  # type: ignore[type-var]
            summary[f"{name} x{scale}"] = {
                "best_seconds": seconds,
                "mb_per_s": round(relay_bytes / seconds / 1e6, 1),  # type: ignore[operator]
                "speed_vs_processes_same_segments": [round(r, 2) for r in same],
                "speed_vs_processes_x1": [round(r, 2) for r in default],
            }
    report = {
        **measurement_header(),
        "relay_log": {
            "workload": "oltp",
            "size_mb": args.size,
            "bytes": relay_bytes,
            "transactions": reference,
        },
        "workers": args.workers,
        "spark_local_start_s": spark_start and round(spark_start, 1),
        "spark_cluster_start_s": cluster_start and round(cluster_start, 1),
        "summary": summary,
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "prepare_executors.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
