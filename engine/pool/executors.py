"""The executors of the preparing stage: in this process, in forked local processes (Spark's is in
spark.py). See the package's docstring for why the work leaves the applier's process.

Processes are forked from the caller's thread when the first segment is submitted, not spawned:
a spawned process imports the program's main module again, which a script using the engine need
not be written for. A forked process holds copies of whatever other threads had locked at that
moment, so a task touches nothing but what it was given: it never uses DuckDB, and it builds its
Arrow arrays with the C library's allocator, which forking leaves usable (pyarrow's default
allocator does not promise that). It leaves with os._exit, running no finalizers; the fork itself
runs those of what only the other threads held (engine/spark/session.py keeps Spark's connections
out of that).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..relaylog.segments import Segment
from ..without_pandas import settle_arrow_without_pandas
from .handover import Handover, close_owner, hand_over, new_owner, sweep_orphans

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

EXECUTOR_KINDS = ("threads", "processes", "spark")

# The niceness that processes preparing segments for an applier add to the applier's. The
# applier's process is a replay's critical path: its interpreter runs the coordinator and the
# workers, on one core at most. Whatever it cannot do while the preparing processes take their
# fair share of the cores is left for the end, when it works alone with a core idle. At a lower
# priority they take what it leaves instead. Measured on 2 cores (the full-size MariaDB capture,
# 4 workers, to the last commit, medians of 6): against 0, 10 took logical_clock to 0.93 of the
# time, writeset 0.95, database 0.93, logical_clock with commit order off 0.92. 19 gained 2-5%
# more. But on cores that other programs want too, it would leave the preparing processes almost
# nothing (a share of 15 against their 1024; at 10, 110).
APPLIER_PREPARING_NICENESS = 10


class SegmentTask(Protocol[R]):
    """What to do with one segment. An instance is pickled to wherever it runs (a forked process,
    a Spark executor), so it holds plain settings only, never open files or connections."""

    def run(self, segment: Segment) -> R: ...

    def to_arrow(self, result: R) -> bytes:
        """The result as an Arrow IPC stream: what a Spark task hands back to the driver."""
        ...

    def from_arrow(self, data: bytes, segment: Segment) -> R:
        """to_arrow's result back as `run` gave it, on the driver (which holds the files)."""
        ...


@dataclass(frozen=True, slots=True)
class ExecutorActivity:
    """One slot of an executor (a process, a Spark task slot) and what it is doing."""

    slot: str  # "process 1", "spark executor 2", "in-process"
    state: str  # "idle", "preparing", "queued"
    segment: str | None = None  # where the segment it works on starts, as file:position


class Executor(Protocol):
    kind: str  # one of EXECUTOR_KINDS
    workers: int  # segments it prepares side by side
    # segments this many times the usual size suit it (Spark: each job has a fixed cost)
    segment_scale: int

    def submit(self, task: SegmentTask[R], segment: Segment) -> Future[R]: ...

    def activity(self) -> list[ExecutorActivity]: ...

    @property
    def segments_done(self) -> int: ...

    def close(self) -> None: ...


def segment_position(segment: Segment) -> str:
    """Where a segment starts, as the activity views show it (file:pos)."""
    name, pos = segment.start
    return f"{name}:{pos}"


class SegmentsInFlight:
    """The segments an executor holds, for activity(): submitted, not yet done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, tuple[Future[Any], Segment]] = {}  # id(future) -> …, in submission order
        self._done = 0

    def add(self, future: Future[Any], segment: Segment) -> None:
        with self._lock:
            self._held[id(future)] = (future, segment)
        future.add_done_callback(lambda _: self._sweep())

    def _sweep(self) -> None:
        # also from snapshot(): a future's result is visible before its callbacks have run
        with self._lock:
            for key in [k for k, (f, _) in self._held.items() if f.done()]:
                del self._held[key]
                self._done += 1

    def snapshot(self) -> list[Segment]:
        self._sweep()
        with self._lock:
            return [segment for _, segment in self._held.values()]

    @property
    def done(self) -> int:
        self._sweep()
        return self._done


class InProcessExecutor:
    """Runs each task in the caller's thread as it is submitted: no overlap, no start-up cost."""

    kind = "threads"
    workers = 1
    segment_scale = 1

    def __init__(self) -> None:
        self.segments_done = 0

    def submit(self, task: SegmentTask[R], segment: Segment) -> Future[R]:
        future: Future[R] = Future()
        try:
            future.set_result(task.run(segment))
        except BaseException as exc:  # handed to whoever takes the result, as a pool would
            future.set_exception(exc)
        self.segments_done += 1
        return future

    def activity(self) -> list[ExecutorActivity]:
        return [ExecutorActivity("in-process", "idle")]

    def close(self) -> None:
        pass


_PR_SET_PDEATHSIG = 1


def _end_with(parent: int) -> None:
    """End this process when the process that forked it ends, however it ends (SIGKILL of a
    replay, `relaydeck events … | head` ended by SIGPIPE): otherwise it outlives it, waiting
    forever on a pipe nobody reads. Linux sends the signal when the forking thread ends: the
    executor is created, used and closed by one thread, which outlives its processes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the request was made
        os._exit(1)


_owner = ""  # in a forked process: its executor's owner (handover.new_owner)


def _start_process(parent: int, niceness: int, owner: str = "") -> None:
    global _owner
    from ..gc_tuning import relax_garbage_collector

    _owner = owner
    _end_with(parent)
    if niceness:
        try:
            os.nice(niceness)
        except OSError:  # a platform without priorities: the processes run as they are
            pass

    if "pyarrow" in sys.modules:
        # forked with the caller's Arrow allocator state; a task that loads pyarrow itself (one
        # that lists events needs none: a quarter second saved per process) starts it afresh
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    relax_garbage_collector()  # measured: the collector otherwise doubles a segment's preparation


def _run_task(task: SegmentTask[R], segment: Segment) -> R | Handover:
    return hand_over(task.run(segment), _owner)


def _receive(handed: Future[Any], done: Future[Any]) -> None:
    """A process's outcome to the future handed out for it, a Handover taken over (in the pool's
    result thread: the result is ready when its future is)."""
    if done.cancelled():
        handed.cancel()
        return
    error = done.exception()
    if error is None:
        result = done.result()
        if isinstance(result, Handover):
            if handed.done():  # cancelled meanwhile: nobody takes it
                result.discard()
                return
            try:
                result = result.take()
            except Exception as exc:  # noqa: BLE001 - the segment's reader learns it (TaskFailed)
                error = exc
    try:
        if error is not None:
            handed.set_exception(error)
        else:
            handed.set_result(result)
    except InvalidStateError:  # cancelled meanwhile
        pass


class ProcessExecutor:
    """`workers` forked processes, started on the first submit, at `niceness` below the caller's
    priority (APPLIER_PREPARING_NICENESS for an applier's)."""

    kind = "processes"
    segment_scale = 1

    def __init__(self, workers: int, niceness: int = 0) -> None:
        self.workers = workers
        self.niceness = niceness
        self._executor: Any = None
        self._in_flight = SegmentsInFlight()
        self._owner = new_owner()

    def submit(self, task: SegmentTask[R], segment: Segment) -> Future[R]:
        forking = self._executor is None
        if forking:
            # loaded here: multiprocessing is not needed by every run of the engine
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # decided before forking: no process imports pandas for pyarrow (see without_pandas)
            settle_arrow_without_pandas()
            context = multiprocessing.get_context("fork")
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=context,
                initializer=_start_process,
                initargs=(os.getpid(), self.niceness, self._owner),
            )
            # This first submit forks every process. The caller's objects are kept out of the
            # children's garbage collections, as Python's gc documentation advises before a fork:
            # a child's collection walks every object it inherited, including any another
            # thread of the caller was changing at that instant (a child crashed so, in its
            # first collection, inside threading's after-fork hook), and it would copy their
            # pages besides.
            gc.freeze()
            sweep_orphans()
        try:
            running: Future[Any] = self._executor.submit(_run_task, task, segment)
        finally:
            if forking:
                gc.unfreeze()
        future: Future[R] = Future()
        running.add_done_callback(lambda done: _receive(future, done))
        future.add_done_callback(lambda handed: handed.cancelled() and running.cancel())
        self._in_flight.add(future, segment)
        return future

    def activity(self) -> list[ExecutorActivity]:
        # A process pool runs its queue in order: the oldest segments held are the ones running.
        held = self._in_flight.snapshot()
        out = []
        for i in range(self.workers):
            segment = held[i] if i < len(held) else None
            state = "preparing" if segment is not None else "idle"
            out.append(ExecutorActivity(f"process {i + 1}", state, segment and segment_position(segment)))
        if len(held) > self.workers:
            out.append(ExecutorActivity("queue", "queued", f"{len(held) - self.workers} segments"))
        return out

    @property
    def segments_done(self) -> int:
        return self._in_flight.done

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
            close_owner(self._owner)


def local_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
