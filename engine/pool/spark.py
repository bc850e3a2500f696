"""The Spark executor of the preparing stage: segments prepared by Spark tasks, in local mode or on a
cluster whose machines do not hold the relay logs.

A segment travels to its task as bytes: the stretch of each of its relay files from its start to
its stop, with the reader state at its start. The task writes them at their own offsets into files
of the same names in a temporary folder (the bytes before the segment stay a hole, except the
file's magic and Format_description, which the reader and the continuity check look at), prepares
the segment there and hands back task.to_arrow(result); the driver turns it back with
task.from_arrow. The reader state is walked to the segment's start on the driver, so that the task
reads nothing before it.

Spark's start takes seconds (a JVM, and executors on a cluster): until it is ready, segments go
to local processes, so the apply starts at once. Those that no process has taken yet when Spark
becomes ready move to Spark: the pipeline keeps several segments ahead, and without the move a
log of a few Spark-sized segments went to the local processes whole even when Spark was up a
second after the start (as in `relaydeck serve`, whose session outlives each START).

In local mode the tasks run on the driver's machine, so a segment goes to its task as the driver's
paths (LocalSegment), read in place, and the result comes back through a file in /dev/shm
(handover.py) as the local processes hand theirs back: shipping the bytes there and back through
the JVM cost the driver's process, the applier's, more than preparing the segment saved it.
"""

from __future__ import annotations

import copy
import itertools
import os
import pickle
import shutil
import tempfile
import threading
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ..binlog.reader import BinlogFile, ReaderState
from ..errors import RelaydeckError
from ..gc_tuning import relax_garbage_collector
from ..leftovers import remove_folders_of_ended
from ..relaylog.segments import Segment
from .executors import (
    ExecutorActivity,
    ProcessExecutor,
    SegmentsInFlight,
    SegmentTask,
    local_cores,
    segment_position,
)
from .handover import Handover, close_owner, hand_over, new_owner, sweep_orphans

R = TypeVar("R")

# Spark jobs in flight per task slot: while one job's result is turned back on the driver and the
# next job is scheduled (0.1-0.3 s each), the other keeps the slot busy
JOBS_PER_SLOT = 2
# Segments for Spark are best this many times the applier's usual size (SEGMENT_TRANSACTIONS,
# SEGMENT_BYTES): a job's fixed cost is spread over more work (measured on a 315 MB OLTP log in
# local mode on 2 busy cores, against the process pool at the applier's size beside it: ×1
# 0.62-0.69, ×4 0.78-0.83; benchmarks/prepare_executors.py)
SEGMENT_SCALE = 4

# The niceness a local-mode Spark starts with (the lowest priority)
LOCAL_START_NICENESS = 19

_MAGIC_AND_FORMAT = 4 + 19  # the file's magic and the header of its Format_description


class SparkExecutorError(RelaydeckError):
    """Spark could not be used to prepare segments."""


@dataclass(frozen=True, slots=True)
class ShippedFile:
    name: str
    size: int  # the file's size in the task's folder: where the segment stops reading it
    pieces: tuple[tuple[int, bytes], ...]  # (offset, bytes) at their place in the file


@dataclass(frozen=True, slots=True)
class ShippedSegment:
    """A segment as a Spark task receives it: its bytes, not the driver's paths."""

    files: tuple[ShippedFile, ...]
    start_pos: int
    state: ReaderState  # walked to start_pos of the first file
    stop: tuple[str, int] | None
    number: int


@dataclass(frozen=True, slots=True)
class LocalSegment:
    """A segment as a Spark task on the driver's own machine receives it (local mode): the
    driver's paths, read in place, the result handed over through /dev/shm for `owner`."""

    segment: Segment
    owner: str  # handover.new_owner of the executor


def walked_to_start(segment: Segment) -> ReaderState:
    """The segment's reader state at its start, for a task that has only the bytes from there:
    the planner's (Segment.state), which a walk from its read_pos leaves as it is, or walked
    here where the planner's walk met bad input (this walk raises it: the segment is then
    read on the driver, which reports it)."""
    state = copy.deepcopy(segment.state)
    with BinlogFile(segment.files[0]) as binlog:
        for _ in binlog.events(state, start=segment.start_pos, stop=segment.start_pos, resume=True):
            pass
    state.read_pos = segment.start_pos
    return state


def ship(segment: Segment, state: ReaderState) -> ShippedSegment:
    """The segment's bytes, from its start to its stop, for a task that has no access to its files."""
    files = []
    stop_name, stop_pos = segment.stop if segment.stop is not None else (None, None)
    for index, path in enumerate(segment.files):
        with BinlogFile(path) as binlog:
            data = binlog._data
            end = stop_pos if binlog.name == stop_name else binlog.size
            if index == 0:
                head = min(_format_end(data, binlog.size), segment.start_pos)
                pieces = ((0, bytes(data[:head])), (segment.start_pos, bytes(data[segment.start_pos : end])))
            else:
                pieces = ((0, bytes(data[:end])),)
            files.append(ShippedFile(binlog.name, end, pieces))
        if binlog.name == stop_name:
            break
    return ShippedSegment(tuple(files), segment.start_pos, state, segment.stop, segment.number)


def _format_end(data: Any, size: int) -> int:
    if size < _MAGIC_AND_FORMAT:
        return size
    return min(size, 4 + int.from_bytes(data[4 + 9 : 4 + 13], "little"))


_SEGMENT_FOLDER = "relaydeck-segment-"  # + the pid of the Python worker running the task + "-"


def run_shipped(task: SegmentTask[R], shipped: ShippedSegment) -> bytes:
    """In the Spark task: the segment's files rebuilt in a temporary folder, the task run there."""
    relax_garbage_collector()  # as in the local processes (the Python worker outlives the task)
    remove_folders_of_ended_tasks()
    folder = Path(tempfile.mkdtemp(prefix=f"{_SEGMENT_FOLDER}{os.getpid()}-"))
    try:
        paths = []
        for shipped_file in shipped.files:
            path = folder / shipped_file.name
            with open(path, "wb") as out:
                for offset, piece in shipped_file.pieces:
                    out.seek(offset)
                    out.write(piece)
                out.truncate(shipped_file.size)
            paths.append(path)
        state = copy.deepcopy(shipped.state)
        state.read_file = str(paths[0])  # walked on the driver: the task reads on from start_pos
        segment = Segment(tuple(paths), shipped.start_pos, state, shipped.stop, shipped.number)
        return task.to_arrow(task.run(segment))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_folders_of_ended_tasks() -> None:
    """Remove the segment folders whose Python worker has ended. A replay killed with SIGKILL
    takes Spark's JVM and its Python workers with it, and the task's own removal never runs: each
    task it was running left a folder of up to SEGMENT_SCALE x 6 MB of relay log (a 50-kill
    storm, benchmarks/kill_storm.py, left 140 MB). The next task on the machine removes them."""
    remove_folders_of_ended(_SEGMENT_FOLDER)


def _warm_up(_: int) -> int:
    from ..applier import prepare  # noqa: F401 - imported for the tasks that follow

    relax_garbage_collector()
    remove_folders_of_ended_tasks()
    return os.getpid()


@dataclass(slots=True)
class _Waiting:
    """A segment submitted while Spark starts."""

    task: SegmentTask[Any]
    segment: Segment
    handed: Future[Any]  # what submit() returned
    local: Future[Any] | None = None  # once a local process was given it


def _pass_on(done: Future[R], handed: Future[R]) -> None:
    """A future's outcome to the one handed out for it (unless it was cancelled, or the handed
    one was: the pipeline cancels what it no longer wants)."""
    if done.cancelled():
        return
    try:
        error = done.exception()
        if error is not None:
            handed.set_exception(error)
        else:
            handed.set_result(done.result())
    except InvalidStateError:
        pass


def _pass_on_error(handed: Future[Any], error: BaseException) -> None:
    try:
        handed.set_exception(error)
    except InvalidStateError:
        pass


def _run_in_spark_task(item: tuple[SegmentTask[Any], ShippedSegment | LocalSegment]) -> bytes:
    task, segment = item
    if isinstance(segment, LocalSegment):
        relax_garbage_collector()  # as in the local processes (the Python worker outlives the task)
        return pickle.dumps(hand_over(task.run(segment.segment), segment.owner), protocol=5)
    return run_shipped(task, segment)


class SparkExecutor:
    """Segments prepared by Spark tasks on `workers` task slots (one Spark job per segment, each
    submitted by a driver thread of its own, JOBS_PER_SLOT per slot); local processes prepare
    them until Spark is ready."""

    kind = "spark"
    segment_scale = SEGMENT_SCALE  # for whoever plans the segments

    def __init__(self, workers: int, master: str | None = None, start: Any = None, niceness: int = 0) -> None:
        self.workers = max(1, workers)
        self.master = master
        self._ready = threading.Event()
        self._session: Any = None
        self._start_error: BaseException | None = None
        self._closed = False
        self._local = ProcessExecutor(max(1, min(self.workers, local_cores())), niceness)
        # segments submitted while Spark starts, in order: each local process is given one at a
        # time, so that those not yet given move to Spark once it is ready
        self._until_ready: list[_Waiting] = []
        self._until_ready_lock = threading.RLock()  # a future done at once runs its callback in place
        self._in_flight = SegmentsInFlight()
        self._slots: dict[int, Segment | None] = {}
        self._slot_of = threading.local()
        self._slot_numbers = itertools.count(1)
        self._slots_lock = threading.Lock()
        self._group = f"relaydeck-prepare-{id(self):x}"
        # local mode: the tasks read the driver's files and hand results over through /dev/shm
        self._same_machine = master is None or master.startswith("local")
        self._owner = new_owner()
        sweep_orphans()
        self.jobs = self.workers * JOBS_PER_SLOT
        self._driver = ThreadPoolExecutor(self.jobs, "spark-segment", initializer=self._name_slot)
        self._starter = threading.Thread(
            target=self._start, args=(start or self._default_start,), name="spark-start", daemon=True
        )
        self._starter.start()

    # -- start-up ----------------------------------------------------------------------------

    def _default_start(self) -> Any:
        from ..spark.session import spark_session

        return spark_session(self.master, cores=self.workers)

    def _start(self, start: Any) -> None:
        try:
            if self._same_machine:
                # In local mode the JVM starts on the cores that the applier and the local
                # processes preparing meanwhile already use: starting it at the lowest priority
                # (its processes inherit this thread's) keeps its start-up from holding the apply
                # back. Measured on a 300 MB log on 2 cores, its start at normal priority cost a
                # third of the process pool's throughput; Spark became ready after the replay.
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOCAL_START_NICENESS)
            session = start()
            # The first task of each Python worker imports the engine and pyarrow (seconds on a
            # busy machine): done here, while local processes still prepare the segments.
            context = session.sparkContext
            context.setJobGroup(self._group, "start the Python workers")
            context.parallelize(range(self.jobs), self.jobs).map(_warm_up).collect()
            self._session = session
        except BaseException as exc:  # kept for the next submit, which raises it
            self._start_error = exc
        finally:
            with self._until_ready_lock:
                self._ready.set()
                waiting = [w for w in self._until_ready if w.local is None and not w.handed.done()]
                self._until_ready = []
        if self._session is not None and not self._closed:
            self._move_to_spark(waiting)
        else:  # Spark failed: what waited is prepared locally, as if Spark had never been asked
            for entry in waiting:
                self._give_locally(entry)

    def _submit_until_ready(self, task: SegmentTask[R], segment: Segment) -> Future[R] | None:
        """The segment queued for the local processes, behind a future of its own that Spark's
        result fills instead if Spark is ready before a process is free (None: Spark became
        ready meanwhile)."""
        with self._until_ready_lock:
            if self._ready.is_set():
                return None
            entry = _Waiting(task, segment, Future())
            self._until_ready.append(entry)
            self._dispatch_locally_locked()
        return entry.handed

    def _dispatch_locally_locked(self) -> None:
        """Give waiting segments to the local processes, one per process (a process pool would
        take more ahead of its processes, and those could no longer move to Spark)."""
        if self._ready.is_set() or self._closed:
            return
        self._until_ready = [w for w in self._until_ready if not w.handed.done()]
        busy = sum(w.local is not None for w in self._until_ready)
        for entry in self._until_ready:
            if busy >= self._local.workers:
                break
            if entry.local is None:
                self._give_locally(entry)
                busy += 1

    def _give_locally(self, entry: _Waiting) -> None:
        if self._closed:  # a pool closed is not started again
            entry.handed.cancel()
            return
        try:
            entry.local = self._local.submit(entry.task, entry.segment)
        except Exception as exc:  # noqa: BLE001 - a broken or closed pool: the segment's reader learns it
            _pass_on_error(entry.handed, exc)
            return
        entry.local.add_done_callback(lambda done: self._local_done(entry, done))
        entry.handed.add_done_callback(
            lambda handed: handed.cancelled() and entry.local and entry.local.cancel()
        )

    def _local_done(self, entry: _Waiting, done: Future[Any]) -> None:
        _pass_on(done, entry.handed)
        with self._until_ready_lock:
            self._dispatch_locally_locked()

    def _move_to_spark(self, waiting: list[_Waiting]) -> None:
        for entry in waiting:
            try:
                on_spark = self._driver.submit(self._prepare, entry.task, entry.segment)
            except RuntimeError as exc:  # closed meanwhile: nobody waits for it any more
                _pass_on_error(entry.handed, SparkExecutorError(f"the executor was closed: {exc}"))
                continue
            self._in_flight.add(on_spark, entry.segment)
            on_spark.add_done_callback(lambda done, handed=entry.handed: _pass_on(done, handed))

    def wait_started(self, timeout: float | None = None) -> bool:
        """Whether Spark's start has ended (ready or failed) within `timeout` seconds."""
        return self._ready.wait(timeout)

    @property
    def spark_ready(self) -> bool:
        return self._ready.is_set() and self._session is not None

    # -- segments ----------------------------------------------------------------------------

    def submit(self, task: SegmentTask[R], segment: Segment) -> Future[R]:
        if not self._ready.is_set():
            handed = self._submit_until_ready(task, segment)
            if handed is not None:
                return handed
        if self._session is None:
            error = self._start_error
            if isinstance(error, RelaydeckError):
                raise error
            raise SparkExecutorError(f"Spark did not start ({self.master or 'local mode'}): {error}")
        future: Future[R] = self._driver.submit(self._prepare, task, segment)
        self._in_flight.add(future, segment)
        return future

    def _name_slot(self) -> None:
        number = next(self._slot_numbers)
        self._slot_of.number = number
        with self._slots_lock:
            self._slots[number] = None

    def _prepare(self, task: SegmentTask[R], segment: Segment) -> R:
        number = self._slot_of.number
        with self._slots_lock:
            self._slots[number] = segment
        try:
            if self._same_machine:
                shipped: ShippedSegment | LocalSegment = LocalSegment(segment, self._owner)
            else:
                shipped = ship(segment, walked_to_start(segment))
            context = self._session.sparkContext
            context.setJobGroup(self._group, f"prepare segment {segment.number}", interruptOnCancel=True)
            (data,) = context.parallelize([(task, shipped)], 1).map(_run_in_spark_task).collect()
            if self._same_machine:
                result = pickle.loads(data)
                return result.take() if isinstance(result, Handover) else result
            return task.from_arrow(data, segment)
        finally:
            with self._slots_lock:
                self._slots[number] = None

    def activity(self) -> list[ExecutorActivity]:
        ready = self.spark_ready
        label = "local" if ready else "local (Spark starting)"
        local = [replace(a, slot=f"{label}: {a.slot}") for a in self._local.activity()]
        if not ready:
            return local
        with self._slots_lock:
            slots = dict(self._slots)
        out = [a for a in local if a.state != "idle"]  # what the local processes still finish
        for number in range(1, self.jobs + 1):
            segment = slots.get(number)
            state = "preparing" if segment is not None else "idle"
            out.append(ExecutorActivity(f"spark task {number}", state, segment and segment_position(segment)))
        waiting = len(self._in_flight.snapshot()) - sum(s is not None for s in slots.values())
        if waiting > 0:
            out.append(ExecutorActivity("queue", "queued", f"{waiting} segments"))
        return out

    @property
    def segments_done(self) -> int:
        return self._in_flight.done + self._local.segments_done

    @property
    def segments_done_on_spark(self) -> int:
        return self._in_flight.done

    def close(self) -> None:
        if self._closed:
            return
        with self._until_ready_lock:
            self._closed = True
            for entry in self._until_ready:
                entry.handed.cancel()
            self._until_ready = []
        self._driver.shutdown(wait=False, cancel_futures=True)
        if self._session is not None:
            try:
                self._session.sparkContext.cancelJobGroup(self._group)
            except Exception:  # noqa: BLE001 - a context already stopped has nothing to cancel
                pass
        self._driver.shutdown(wait=True)
        self._local.close()
        close_owner(self._owner)
