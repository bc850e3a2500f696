"""The preparing stage's executors: where interpreter-bound work on segments of a relay log runs.

Reading, assembling and decoding a relay log is Python work, and Python threads take turns on one
interpreter lock, so that work has to leave the applier's process to use more than one core. It is
cut into segments of whole transactions (relaylog/segments.py) and each segment goes to a
SegmentTask (what to do with it: prepare it for the applier, render it for `relaydeck events`),
run by one of three executors with one interface:

- in-process (`threads`): in the caller's thread, for tiny logs and the tests;
- local processes (`processes`): forked worker processes, one per core;
- Spark (`spark`): Spark tasks, in local mode or on a cluster; a task receives the segment's bytes
  and returns Arrow, so executors never need the driver's files.

The caller never changes with the executor: `ahead.SegmentPipeline` keeps a few segments in flight
and hands their results back in stream order.
"""

from __future__ import annotations

from .executors import (
    APPLIER_PREPARING_NICENESS,
    EXECUTOR_KINDS,
    Executor,
    ExecutorActivity,
    InProcessExecutor,
    ProcessExecutor,
    SegmentTask,
    local_cores,
)


def make_executor(
    kind: str, workers: int, spark_master: str | None = None, for_applier: bool = False
) -> Executor:
    """The executor a `--pool` names; `workers` segments side by side (processes: at most one
    per core, more would only take turns). for_applier: its local processes prepare for an
    applier in this process, and yield the cores to it (APPLIER_PREPARING_NICENESS)."""
    niceness = APPLIER_PREPARING_NICENESS if for_applier else 0
    if kind == "threads":
        return InProcessExecutor()
    if kind == "processes":
        return ProcessExecutor(max(1, min(workers, local_cores())), niceness)
    if kind == "spark":
        # imported here: its module (concurrent.futures' threads, the Spark session's helpers)
        # took 8-9 ms, a tenth of the imports of `relaydeck events`, which never uses it
        from .spark import SparkExecutor

        return SparkExecutor(workers, spark_master, niceness=niceness)
    raise ValueError(f"the worker pool is one of {', '.join(EXECUTOR_KINDS)}")


__all__ = [
    "APPLIER_PREPARING_NICENESS",
    "EXECUTOR_KINDS",
    "Executor",
    "ExecutorActivity",
    "InProcessExecutor",
    "ProcessExecutor",
    "SegmentTask",
    "make_executor",
]
