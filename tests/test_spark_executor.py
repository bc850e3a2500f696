"""The Spark executor of the preparing stage: Spark tasks given a segment's bytes prepare exactly
what the applier's own process prepares, in local mode and on a standalone cluster, and the apply
never waits for Spark's start.

Run as `python -m tests.test_spark_executor spark://HOST:PORT`, the module compares the two on
that cluster (the cluster test runs it so, in a process of its own: a process has one SparkSession,
and the other tests' is in local mode).
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.applier.prepare import PrepareTask, prepare_segment
from engine.applier.prepared import PreparedRun, PreparedSegment
from engine.applier.processes import prepared_chunks
from engine.errors import RelaydeckError
from engine.pool import ExecutorActivity, InProcessExecutor, make_executor
from engine.pool.executors import ProcessExecutor
from engine.pool.handover import PREFIX, SHARED_MEMORY, Handover, new_owner
from engine.pool.spark import (
    JOBS_PER_SLOT,
    LocalSegment,
    SparkExecutor,
    SparkExecutorError,
    _run_in_spark_task,
    run_shipped,
    ship,
    walked_to_start,
)
from engine.relaylog.index import read_index
from engine.relaylog.segments import plan_segments

from .conftest import ROOT
from .spark_fixture import spark  # noqa: F401
from .test_prepared_arrow import assert_same_items, some_keys
from .test_replay_oracle import CHANNELS

SEGMENT_TRANSACTIONS = 300  # the capture's 2,448 transactions in several segments per channel


def _no_ordinary_reading(name: str, pos: int) -> Iterator[list[object]]:
    raise AssertionError(f"a segment was read the ordinary way from {name}:{pos}")


def chunks_through(executor, index: Path) -> list[object]:  # type: ignore[no-untyped-def]
    task = PrepareTask(100, some_keys(index))
    items: list[object] = []
    for chunk in prepared_chunks(
        read_index(index), None, 4, executor, _no_ordinary_reading, None, task, SEGMENT_TRANSACTIONS
    ):
        items.extend(chunk)
    return items


def assert_same_chunks(got: list[object], expected: list[object]) -> None:
    assert any(isinstance(item, PreparedRun) for item in expected)
    assert_same_items(PreparedSegment(0, got), PreparedSegment(0, expected))  # type: ignore[arg-type]


def compare_on(executor: SparkExecutor) -> int:
    """Both captured channels through `executor` and in-process; the segments Spark prepared."""
    assert executor.wait_started(600)
    assert executor.spark_ready
    for channel in CHANNELS:
        assert_same_chunks(
            chunks_through(executor, channel.index_file),
            chunks_through(InProcessExecutor(), channel.index_file),
        )
    return executor.segments_done_on_spark


def test_local_mode_prepares_exactly_what_the_applier_prepares(spark):  # noqa: F811
    executor = make_executor("spark", 2)
    try:
        assert isinstance(executor, SparkExecutor)
        done = compare_on(executor)
        assert done >= 2 * len(CHANNELS) and done == executor.segments_done
    finally:
        executor.close()


class _Pid:
    def run(self, segment: None) -> int:
        return os.getpid()


def test_processes_forked_while_spark_runs_leave_its_connections_alone(spark):  # noqa: F811
    # Until Spark is ready the applier's thread forks the local processes while another thread
    # starts Spark. A fork used to shut down, in the child, the Py4J connection of each thread
    # between two calls: that thread's next call met "Connection reset by peer".
    context = spark.sparkContext
    client = context._gateway._gateway_client
    between_calls, forked = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def talk_to_the_jvm() -> None:
        context.setJobGroup("fork-test", "a thread with a connection of its own")
        # weakly, as py4j holds it: a strong reference here would keep it alive in the child
        connection = weakref.ref(client.get_thread_connection())
        between_calls.set()
        forked.wait(60)
        try:
            context.setJobGroup("fork-test", "the same connection, after the fork")
            seen["same connection"] = client.get_thread_connection() is connection()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            seen["error"] = exc

    thread = threading.Thread(target=talk_to_the_jvm, name="spark-user")
    thread.start()
    try:
        assert between_calls.wait(60)
        executor = ProcessExecutor(2)
        try:
            child = executor.submit(_Pid(), None).result(60)  # type: ignore[arg-type]
        finally:
            executor.close()  # every child has ended: whatever it did to the socket is done
        assert child != os.getpid()
    finally:
        forked.set()
        thread.join(60)
    # py4j replaces a connection that failed: the same one means its socket was left working
    assert seen == {"same connection": True}
    assert context.parallelize(range(4), 2).map(lambda n: n + 1).collect() == [1, 2, 3, 4]


# -- start-up, without a JVM --------------------------------------------------------------------


class _Context:
    """Stands for a SparkContext that runs each job's function in this process, one job at a time
    as a Spark Python worker runs its tasks (a task may use the process's caches alone)."""

    def __init__(self) -> None:
        self.jobs = 0
        self.hold = threading.Event()  # cleared: a job waits until it is set
        self.hold.set()
        self._one_at_a_time = threading.Lock()

    def setJobGroup(self, *args: object, **kwargs: object) -> None:  # noqa: N802 - Spark's name
        pass

    def cancelJobGroup(self, *args: object) -> None:  # noqa: N802
        pass

    def parallelize(self, items: list[object], slices: int) -> _Job:
        return _Job(self, items)


class _Job:
    def __init__(self, context: _Context, items: list[object]) -> None:
        self.context, self.items = context, items

    def map(self, function):  # type: ignore[no-untyped-def]
        self.function = function
        return self

    def collect(self) -> list[object]:
        context = self.context
        context.hold.wait(60)
        with context._one_at_a_time:
            context.jobs += 1
            return [self.function(item) for item in self.items]


class _Session:
    def __init__(self) -> None:
        self.sparkContext = _Context()


def test_until_spark_is_ready_segments_are_prepared_by_local_processes():
    release, started = threading.Event(), threading.Event()
    session = _Session()

    def start() -> _Session:
        started.set()
        release.wait(60)
        return session

    executor = SparkExecutor(2, start=start)
    try:
        assert started.wait(30)
        assert [a.slot for a in executor.activity()] == [
            "local (Spark starting): process 1",
            "local (Spark starting): process 2",
        ]
        index = CHANNELS[1].index_file
        expected = chunks_through(InProcessExecutor(), index)
        assert_same_chunks(chunks_through(executor, index), expected)
        assert session.sparkContext.jobs == 0 and executor.segments_done > 0
        release.set()
        assert executor.wait_started(30) and executor.spark_ready
        warm_up = session.sparkContext.jobs  # the Python workers started before Spark took over
        assert warm_up == 1
        # then every segment goes to a Spark job, as bytes, and comes back as Arrow
        assert_same_chunks(chunks_through(executor, index), expected)
        assert session.sparkContext.jobs - warm_up == executor.segments_done_on_spark > 1
        slots = [f"spark task {n}" for n in range(1, 2 * JOBS_PER_SLOT + 1)]
        assert [(a.slot, a.state) for a in executor.activity()] == [(slot, "idle") for slot in slots]
    finally:
        release.set()
        executor.close()


@dataclass(frozen=True)
class _HeldInLocalProcesses(PrepareTask):
    """PrepareTask, except that in any process but the test's (a local one) it first waits for
    the file `gate` to exist: the segments stay in the local processes' hands meanwhile."""

    gate: str = ""
    test_pid: int = 0

    def run(self, segment):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 60
        while os.getpid() != self.test_pid and not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.01)
        return super().run(segment)


def test_segments_no_local_process_has_taken_move_to_spark_once_it_is_ready(tmp_path):
    release = threading.Event()
    session = _Session()
    executor = SparkExecutor(2, start=lambda: release.wait(60) and session)
    gate = tmp_path / "gate"
    try:
        segments = list(plan_segments(read_index(CHANNELS[1].index_file), None, 4, 25))[:10]
        assert len(segments) == 10
        task = _HeldInLocalProcesses(100, gate=str(gate), test_pid=os.getpid())
        futures = [executor.submit(task, segment) for segment in segments]  # Spark is starting
        release.set()
        assert executor.wait_started(30) and executor.spark_ready
        deadline = time.monotonic() + 30
        while sum(f.done() for f in futures) < len(segments) - 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        # each local process was given one segment and holds it; the eight others moved to Spark
        assert [f.done() for f in futures] == [False, False] + [True] * (len(segments) - 2)
        assert executor.segments_done_on_spark == len(segments) - 2
        gate.touch()  # the local processes prepare what they hold
        for future, segment in zip(futures, segments, strict=True):
            assert_same_items(future.result(60), prepare_segment(copy.deepcopy(segment), 100))
        assert executor.segments_done == len(segments)
        # the warm-up, then one job per moved segment
        assert session.sparkContext.jobs == 1 + executor.segments_done_on_spark
    finally:
        release.set()
        gate.touch()
        executor.close()


def test_activity_shows_what_each_spark_task_prepares():
    session = _Session()
    executor = SparkExecutor(1, start=lambda: session)
    try:
        assert executor.wait_started(30) and executor.spark_ready
        segments = list(plan_segments(read_index(CHANNELS[1].index_file), None, 4, 50))
        session.sparkContext.hold.clear()
        task = PrepareTask(100)
        futures = [executor.submit(task, segment) for segment in segments[:3]]
        deadline = time.monotonic() + 30
        while sum(a.state == "preparing" for a in executor.activity()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        where = [f"{s.start[0]}:{s.start[1]}" for s in segments[:2]]
        assert executor.activity() == [
            ExecutorActivity("spark task 1", "preparing", where[0]),
            ExecutorActivity("spark task 2", "preparing", where[1]),
            ExecutorActivity("queue", "queued", "1 segments"),
        ] or executor.activity() == [
            ExecutorActivity("spark task 1", "preparing", where[1]),
            ExecutorActivity("spark task 2", "preparing", where[0]),
            ExecutorActivity("queue", "queued", "1 segments"),
        ]
        session.sparkContext.hold.set()
        for future, segment in zip(futures, segments, strict=False):
            assert_same_items(future.result(30), prepare_segment(copy.deepcopy(segment), 100))
        assert [a.state for a in executor.activity()] == ["idle", "idle"]
        assert executor.segments_done == 3
    finally:
        session.sparkContext.hold.set()
        executor.close()


def test_an_error_starting_spark_is_raised_by_the_next_submit():
    def start() -> None:
        raise RelaydeckError("Spark needs Java 17 or later")

    executor = SparkExecutor(2, start=start)
    try:
        assert executor.wait_started(30)
        with pytest.raises(RelaydeckError, match="Java 17"):
            chunks_through(executor, CHANNELS[1].index_file)
    finally:
        executor.close()


def test_segments_waiting_when_spark_fails_to_start_are_prepared_by_the_local_processes():
    release = threading.Event()

    def start() -> None:
        release.wait(60)
        raise RelaydeckError("Spark needs Java 17 or later")

    executor = SparkExecutor(2, start=start)
    try:
        segments = list(plan_segments(read_index(CHANNELS[1].index_file), None, 4, 25))[:8]
        task = PrepareTask(100)
        futures = [executor.submit(task, segment) for segment in segments]  # most wait for a process
        release.set()
        for future, segment in zip(futures, segments, strict=True):
            assert_same_items(future.result(60), prepare_segment(copy.deepcopy(segment), 100))
        assert executor.segments_done == len(segments) and executor.segments_done_on_spark == 0
        with pytest.raises(RelaydeckError, match="Java 17"):  # and the next one learns why
            executor.submit(task, segments[0])
    finally:
        release.set()
        executor.close()


def test_a_task_reads_only_the_bytes_of_its_segment(tmp_path):
    # run_shipped reads only a folder it writes itself: the shipped bytes are all a task has
    task = PrepareTask(100)
    for segment in plan_segments(read_index(CHANNELS[0].index_file), None, 4, 200):
        shipped = ship(segment, walked_to_start(segment))
        shipped_bytes = sum(len(piece) for f in shipped.files for _, piece in f.pieces)
        whole = sum(path.stat().st_size for path in segment.files[: len(shipped.files)])
        assert shipped_bytes < whole or segment.start_pos <= 4
        data = run_shipped(task, shipped)
        expected = prepare_segment(copy.deepcopy(segment), 100)
        assert_same_items(task.from_arrow(data, segment), expected)


def test_a_task_on_the_drivers_machine_reads_its_files_and_hands_the_result_over():
    """Local mode: the task is given the driver's paths (LocalSegment), and a large result comes
    back as a Handover through /dev/shm, equal to what the applier's own process prepares."""
    if not SHARED_MEMORY.is_dir():
        pytest.skip("no /dev/shm on this machine")
    task = PrepareTask(2000)
    owner = new_owner()
    handed_over = 0
    for segment in plan_segments(read_index(CHANNELS[0].index_file), None, 4, 1000):
        data = _run_in_spark_task((task, LocalSegment(copy.deepcopy(segment), owner)))
        assert len(data) < 1 << 20 or not isinstance(pickle.loads(data), Handover)
        result = pickle.loads(data)
        if isinstance(result, Handover):
            handed_over += 1
            result = result.take()
        assert_same_items(result, prepare_segment(copy.deepcopy(segment), 2000))
    assert handed_over > 0
    assert not [n for n in os.listdir(SHARED_MEMORY) if n.startswith(f"{PREFIX}{owner}-")]


def test_any_other_failure_to_start_spark_is_a_clear_error_naming_the_master():
    def start() -> None:
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    executor = SparkExecutor(2, "spark://127.0.0.1:9", start=start)
    try:
        assert executor.wait_started(30)
        with pytest.raises(
            SparkExecutorError, match=r"Spark did not start \(spark://127.0.0.1:9\): .*refused"
        ):
            executor.submit(
                PrepareTask(100), next(plan_segments(read_index(CHANNELS[1].index_file), None, 4, 50))
            )
    finally:
        executor.close()


# -- a standalone cluster -----------------------------------------------------------------------


@pytest.fixture
def standalone_cluster(tmp_path) -> Iterator[str]:
    """A Spark master and one worker (2 cores) from the pyspark distribution, on 127.0.0.1."""
    from engine.spark.standalone import standalone_cluster as cluster

    with cluster(2, tmp_path) as url:
        yield url


def _run_this_module(*args: str) -> subprocess.CompletedProcess[str]:
    """This module run as a program (a Spark session of its own, not the tests' local one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    return subprocess.run(
        [sys.executable, "-m", "tests.test_spark_executor", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_a_standalone_cluster_prepares_exactly_what_the_applier_prepares(standalone_cluster):
    result = _run_this_module(standalone_cluster)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.startswith("segments prepared on the cluster: ")
    done, compiled = result.stdout.strip().removeprefix("segments prepared on the cluster: ").split(", ")
    assert int(done) >= 2 * len(CHANNELS)
    # the engine's compiled modules travel too (the same interpreter runs the executors here)
    from engine.binlog.compiled import load

    assert compiled == f"compiled modules: {load('_runscan', package='engine.binlog') is not None}"


def test_a_replay_on_the_standalone_cluster_gives_the_sources_tables(standalone_cluster, tmp_path):
    """Both channels of the capture replayed with `--workers 2 --pool spark --spark-master
    spark://…`, Spark started first so that the cluster prepares every segment."""
    from .test_replay_oracle import assert_tables_equal, expected_tables

    slave = tmp_path / "slave.duckdb"
    result = _run_this_module(standalone_cluster, str(slave))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert_tables_equal(slave, expected_tables())
    # every segment of both channels (at least one each) was prepared by the cluster's tasks
    prepared = int(result.stdout.strip().removeprefix("segments prepared on the cluster: "))
    assert prepared >= len(CHANNELS)


def _replay_on_cluster(master: str, slave: str) -> None:
    import engine.replay
    from engine.applier.vocabulary import ParallelOptions
    from engine.spark.session import stop_spark

    executor = SparkExecutor(2, master)
    assert executor.wait_started(600), "Spark did not start"

    class Shared:
        """The started executor for both channels; each channel's run closes its pool at its
        end, the executor is closed here, after both."""

        def __getattr__(self, name: str) -> object:
            return getattr(executor, name)

        def close(self) -> None:
            pass

    engine.replay.make_executor = lambda kind, workers, spark_master=None, for_applier=False: Shared()  # type: ignore[assignment]
    options = ParallelOptions(2, "writeset", pool="spark", spark_master=master)
    try:
        outcomes = engine.replay.Replay(Path(slave), None, list(CHANNELS), parallel=options).run()
        assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
        print(f"segments prepared on the cluster: {executor.segments_done_on_spark}")
    finally:
        executor.close()
        stop_spark()


def _compare_on_cluster(master: str) -> None:
    from engine.spark.session import stop_spark

    executor = SparkExecutor(2, master)
    try:
        done = compare_on(executor)
        context = executor._session.sparkContext
        (compiled,) = context.parallelize([0], 1).map(_compiled_scanner_loaded).collect()
    finally:
        executor.close()
        stop_spark()
    print(f"segments prepared on the cluster: {done}, compiled modules: {compiled}")


def _compiled_scanner_loaded(_: int) -> bool:
    from engine.binlog.compiled import load

    return load("_runscan", package="engine.binlog") is not None


if __name__ == "__main__":
    if len(sys.argv) > 2:
        _replay_on_cluster(sys.argv[1], sys.argv[2])
    else:
        _compare_on_cluster(sys.argv[1])


class _StallingTask:
    """A task that signals it started (its segment's files are written by then), then never ends."""

    def __init__(self, started: Path) -> None:
        self.started = started

    def run(self, segment) -> None:  # type: ignore[no-untyped-def]
        self.started.write_text(str(segment.files[0].parent))
        time.sleep(3600)

    def to_arrow(self, result: None) -> bytes:
        return b""


def _task_in_a_forked_process(task: _StallingTask, shipped):  # type: ignore[no-untyped-def]
    import multiprocessing

    process = multiprocessing.get_context("fork").Process(
        target=run_shipped, args=(task, shipped), daemon=True
    )
    process.start()
    deadline = time.monotonic() + 60
    while not task.started.exists():
        assert process.is_alive() and time.monotonic() < deadline, "the stalling task did not start"
        time.sleep(0.05)
    return process


def test_the_folder_of_a_task_killed_with_its_replay_is_removed_by_the_next_task(tmp_path, monkeypatch):
    # A SIGKILLed replay takes Spark's JVM and Python workers with it, and a task's `finally` does
    # not run: its folder (the segment's relay-log bytes, up to 24 MB) stayed in the temporary
    # folder, one per killed task.
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    segment = next(plan_segments(read_index(CHANNELS[0].index_file), None, 4, 200))
    shipped = ship(segment, walked_to_start(segment))
    killed = _task_in_a_forked_process(_StallingTask(tmp_path / "killed"), shipped)
    alive = _task_in_a_forked_process(_StallingTask(tmp_path / "alive"), shipped)
    try:
        killed_folder = Path((tmp_path / "killed").read_text())
        alive_folder = Path((tmp_path / "alive").read_text())
        os.kill(killed.pid, 9)  # type: ignore[attr-defined]
        killed.join(30)  # type: ignore[attr-defined]
        assert killed_folder.is_dir()
        task = PrepareTask(100)
        data = run_shipped(task, shipped)
        assert_same_items(task.from_arrow(data, segment), prepare_segment(copy.deepcopy(segment), 100))
        assert not killed_folder.exists()
        assert alive_folder.is_dir(), "the folder of a task still running was removed"
        assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == [alive_folder.name]
    finally:
        alive.kill()  # type: ignore[attr-defined]
        alive.join(30)  # type: ignore[attr-defined]
