"""The preparing stage: its executors give the same prepared segments, the scheduler inputs it
prepares are what the coordinator would compute from the events, and the coordinator schedules
prepared transactions exactly as it schedules transactions it read itself."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine import replay as replay_module
from engine.applier.parallel import ParallelApplier
from engine.applier.parallel_jobs import Job
from engine.applier.prepare import PrepareTask, prepare_segment
from engine.applier.prepared import PreparedRun
from engine.applier.reading import read_chunks as _read_chunks
from engine.applier.vocabulary import ParallelOptions
from engine.generate import generate
from engine.pool import APPLIER_PREPARING_NICENESS, InProcessExecutor, ProcessExecutor, make_executor
from engine.pool.ahead import TaskFailed, in_order
from engine.relaylog.index import read_index
from engine.relaylog.segments import Segment, plan_segments
from engine.relaylog.stream import stream_events
from engine.replay import ChannelSpec, Replay
from engine.scheduling.rowkeys import transaction_writeset, writeset_keys
from engine.slave.database import Slave
from engine.transactions import Transaction, TransactionAssembler

from .test_replay_oracle import CHANNELS, assert_tables_equal


def _transactions_by_end(index: Path) -> dict[tuple[str, int], Transaction]:
    assembler = TransactionAssembler()
    out = {}
    for logged in stream_events(read_index(index)):
        for item in assembler.feed(logged):
            if isinstance(item, Transaction):
                out[(item.end.log_name, item.end.pos)] = item
    return out


@pytest.fixture(scope="module")
def capture_catalog(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The catalog the bundled capture leaves behind (every table it creates)."""
    folder = tmp_path_factory.mktemp("catalog")
    assert all(o.error is None for o in Replay(folder / "s.duckdb", None, CHANNELS).run())
    slave = Slave(folder / "s.duckdb")
    try:
        yield slave.catalog
    finally:
        slave.close()


@pytest.mark.parametrize("channel", [0, 1])
def test_prepared_runs_carry_the_clock_databases_and_writeset_the_coordinator_computes(
    channel, capture_catalog
):
    compared = _compare_with_the_coordinator(CHANNELS[channel].index_file, capture_catalog, 300)
    assert compared > 250  # not vacuous: most of the channel's transactions are row-only


@pytest.mark.parametrize("workload", ["oltp", "types", "hot", "multidb"])
def test_writesets_hashed_a_run_at_a_time_are_those_of_each_transaction(workload, tmp_path):
    """The preparing stage hashes each key over a whole run (integers in one pass) and hands each
    transaction its share: the same hashes the coordinator computes from that transaction alone,
    on generated logs with every column type, unique keys and hot rows, in runs of all sizes."""
    summary = generate(workload, 2, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    assert all(o.error is None for o in Replay(tmp_path / "s.duckdb", None, spec).run())
    slave = Slave(tmp_path / "s.duckdb")
    try:
        catalog = slave.catalog
        for per_segment in (7, 500):
            assert _compare_with_the_coordinator(summary.index_file, catalog, per_segment) > 10
    finally:
        slave.close()


def _compare_with_the_coordinator(index: Path, catalog, per_segment: int) -> int:  # type: ignore[no-untyped-def]
    """Check each prepared transaction's scheduler inputs against the coordinator's from the same
    transaction as read; how many were compared."""
    keys = writeset_keys(catalog)
    expected = _transactions_by_end(index)
    compared = 0
    for segment in plan_segments(read_index(index), None, 4, per_segment):
        for item in prepare_segment(segment, per_segment, keys=keys).items:
            if not isinstance(item, PreparedRun):
                continue
            assert item.writesets is not None and len(item.writesets) == len(item.transactions)
            assert item.op_starts == sorted(item.op_starts) and item.op_starts[0] == 0
            for txn, writeset in zip(item.transactions, item.writesets, strict=True):
                read = expected[(txn.end.log_name, txn.end.pos)]
                assert (txn.gtid, txn.last_committed, txn.sequence_number, txn.commit_id) == (
                    read.gtid,
                    read.last_committed,
                    read.sequence_number,
                    read.commit_id,
                )
                assert txn.databases == read.databases
                hashes, _ = transaction_writeset(read, catalog)
                assert (set(writeset) if writeset else None) == (set(hashes) if hashes else None)
                # without repeats: the coordinator takes them as they are (dependency(distinct=True))
                assert writeset is None or len(set(writeset)) == len(writeset)
                compared += 1
    return compared


def _segments(index: Path, per_segment: int) -> list[Segment]:
    return list(plan_segments(read_index(index), None, 4, per_segment))


def _summary(prepared: object) -> list[tuple]:  # type: ignore[type-arg]
    """What a prepared segment holds, comparable across processes."""
    out: list[tuple] = []  # type: ignore[type-arg]
    for item in prepared.items:  # type: ignore[attr-defined]
        if isinstance(item, PreparedRun):
            tables = [(t.schema, t.table, t.ops.to_pylist()) for t in item.tables]
            out.append(("run", item.transactions, tables, item.op_starts, item.writesets))
        elif isinstance(item, Transaction):
            out.append(("transaction", item.start, item.end))
        else:
            out.append((type(item).__name__, getattr(item, "pos", None)))
    return out


def test_the_local_executors_prepare_the_same_segments_in_stream_order():
    index = CHANNELS[1].index_file
    task = PrepareTask(60)
    here = [_summary(p) for p in in_order(InProcessExecutor(), task, iter(_segments(index, 60)))]
    pool = ProcessExecutor(2)
    try:
        forked = [_summary(p) for p in in_order(pool, task, iter(_segments(index, 60)))]
        assert pool.segments_done == len(here)
    finally:
        pool.close()
    assert len(here) > 3 and forked == here


class _FailsOnSegment1:
    """A task with a defect on one segment (module level: pickled to the processes)."""

    def run(self, segment: Segment) -> object:
        if segment.number == 1:
            raise RuntimeError("a defect")
        return segment.number

    def to_arrow(self, result: object) -> bytes:
        raise NotImplementedError

    def from_arrow(self, data: bytes, segment: Segment) -> object:
        raise NotImplementedError


@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_a_failed_task_comes_back_in_its_place_naming_its_segment(kind):
    executor = make_executor(kind, 2)
    try:
        results = list(in_order(executor, _FailsOnSegment1(), iter(_segments(CHANNELS[1].index_file, 40))))
    finally:
        executor.close()
    assert results[0] == 0 and results[2] == 2
    failed = results[1]
    assert isinstance(failed, TaskFailed) and failed.segment.number == 1
    assert "a defect" in str(failed) and f"{failed.segment.start[0]}:{failed.segment.start[1]}" in str(failed)


def test_a_process_pool_shows_what_each_process_prepares():
    pool = ProcessExecutor(2)
    segments = _segments(CHANNELS[0].index_file, 300)
    try:
        assert [a.state for a in pool.activity()] == ["idle", "idle"]
        futures = [pool.submit(PrepareTask(300), s) for s in segments[:4]]
        busy = pool.activity()
        assert busy[0].slot == "process 1" and busy[0].state == "preparing"
        assert busy[0].segment == f"{segments[0].start[0]}:{segments[0].start[1]}"
        for future in futures:
            future.result()
        assert pool.segments_done == 4
        assert all(a.state == "idle" for a in pool.activity())
    finally:
        pool.close()


class _RecordingApplier(ParallelApplier):
    """The parallel applier, noting each job's dependency; `read_here` makes the coordinator read
    the relay log itself instead of taking it from the preparing stage. What follows a DDL is
    scheduled once the DDL has committed, against the catalog it leaves: chained after it on its
    worker (parallel_schedule.py), a prepared run is checked against the catalog from before the
    DDL, and on a log whose every table is altered it would be read again, not scheduled."""

    read_here = False
    chain_after_definitions = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.after_of: dict[int, int] = {}
        self.prepared_jobs = 0
        enqueue, enqueue_all = self._gaq.enqueue, self._gaq.enqueue_all

        def note(job: Job) -> None:
            self.after_of[job.ordinal] = job.after
            self.prepared_jobs += job.run is not None

        def recording(worker: int, job: Job) -> int:  # every job passes the GAQ, one by one
            note(job)
            return enqueue(worker, job)

        def recording_all(workers: Sequence[int], jobs: Sequence[Job]) -> None:  # or in pieces
            for job in jobs:
                note(job)
            enqueue_all(workers, jobs)

        self._gaq.enqueue = recording  # type: ignore[method-assign]
        self._gaq.enqueue_all = recording_all  # type: ignore[method-assign]

    def _reader(self, continuity):  # type: ignore[no-untyped-def]
        if self.read_here:
            return _read_chunks(self.logs, None, 4, continuity=continuity)
        return super()._reader(continuity)


def _prepared_and_read_dependencies(summary, kind: str, tmp_path) -> tuple[dict[int, int], dict[int, int]]:
    """Job.after of every transaction, prepared by the preparing stage and read by the coordinator
    itself; both slaves compared with the oracle."""
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    dependencies = []
    for read_here in (False, True):
        slave = Slave(tmp_path / f"{read_here}.duckdb")
        try:
            applier = _RecordingApplier(
                slave, "", read_index(summary.index_file), ParallelOptions(3, kind, pool="threads")
            )
            applier.read_here = read_here
            applier.run()
            assert (applier.prepared_jobs > 0) != read_here
            dependencies.append(applier.after_of)
        finally:
            slave.close()
        assert_tables_equal(tmp_path / f"{read_here}.duckdb", expected)
    prepared, read = dependencies
    return prepared, read


@pytest.mark.parametrize("kind", ["writeset", "logical_clock", "database"])
def test_prepared_transactions_get_the_dependencies_read_ones_get(kind, tmp_path, monkeypatch):
    """On a log whose DDL changes keys mid-way. WRITESET: a transaction prepared before a DDL that
    changed its table's keys has no writeset the coordinator may use, so it follows its
    predecessor (as MySQL schedules a transaction without a writeset); no prepared transaction
    may ever run beside one that the ordinary reader would have ordered it after."""
    import engine.applier.processes as processes

    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 50)  # many segments in flight at each DDL
    summary = generate("ddl", 3, tmp_path / "relay")
    prepared, read = _prepared_and_read_dependencies(summary, kind, tmp_path)
    assert len(prepared) == summary.transactions
    if kind != "writeset":
        assert prepared == read
    else:
        assert prepared.keys() == read.keys()
        assert all(prepared[o] >= read[o] for o in read)


def test_prepared_writesets_let_independent_transactions_run_side_by_side(tmp_path, monkeypatch):
    """WRITESET on an OLTP log, in short segments: the writesets the preparing stage hashed are
    what the coordinator schedules with, and they let transactions run side by side."""
    import engine.applier.processes as processes

    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 40)
    summary = generate("oltp", 12, tmp_path / "relay", size_mb=6)
    prepared, read = _prepared_and_read_dependencies(summary, "writeset", tmp_path)
    assert prepared.keys() == read.keys()
    # never beside a transaction the reader would order it after ...
    assert all(prepared[o] >= read[o] for o in read)
    # ... and the preparing stage's writesets are what lets them run side by side
    assert sum(prepared[o] < o - 1 for o in prepared) > len(prepared) // 10


def test_workers_given_parts_of_runs_apply_exactly_what_they_hold(tmp_path, monkeypatch):
    """Commit order off and WRITESET on a workload of independent rows: the workers hold parts of
    the same runs and commit them as they finish; the tables are still the source's."""
    import engine.applier.parallel as parallel

    monkeypatch.setattr(parallel, "RUN_LENGTH", 7)  # consecutive transactions spread over workers
    summary = generate("oltp", 8, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    options = ParallelOptions(4, "writeset", preserve_commit_order=False, pool="processes")
    replay = Replay(tmp_path / "slave.duckdb", None, spec, parallel=options)
    (outcome,) = replay.run()
    assert outcome.error is None, outcome.error
    assert outcome.stats.prepared_runs > 0 and outcome.stats.transactions == summary.transactions
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(tmp_path / "slave.duckdb", expected)


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc")
def test_a_killed_replay_leaves_no_preparing_process_behind(tmp_path):
    """SIGKILL of `relaydeck replay --workers 2 --pool processes`: its forked processes end with it
    instead of waiting forever on a pipe nobody reads."""
    import signal
    import subprocess
    import time

    from .conftest import replay_argv

    summary = generate("oltp", 9, tmp_path / "relay", size_mb=30)
    argv = replay_argv(
        tmp_path / "s.duckdb", tmp_path / "r.sqlite", f"c={summary.index_file}", "--workers", "2"
    )
    replay = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children: set[int] = set()
    deadline = time.monotonic() + 120
    while len(children) < 2 and replay.poll() is None and time.monotonic() < deadline:
        children = _children(replay.pid)
        time.sleep(0.05)
    assert len(children) >= 2, "the replay ended before its processes were seen"
    replay.send_signal(signal.SIGKILL)
    replay.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in children if Path(f"/proc/{pid}").exists()]
    for pid in left:  # not left running by a failing test either
        os.kill(pid, signal.SIGKILL)
    assert left == []


class _NothingSetBased(ParallelApplier):
    """As if the slave held no table set-based: every prepared run is read again (the
    coordinator's check; a run chained after DDL is checked by its worker instead)."""

    chain_after_definitions = 0

    def _takes_set_based(self, run: PreparedRun) -> bool:
        return False


def test_runs_read_again_skip_what_the_slave_has_and_apply_the_rest_exactly(tmp_path, monkeypatch):
    import engine.applier.processes as processes

    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 40)
    summary = generate("oltp", 6, tmp_path / "relay")
    slave_path = tmp_path / "slave.duckdb"
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    logs = read_index(summary.index_file)
    options = ParallelOptions(2, "logical_clock", pool="threads")
    for again in (False, True):
        slave = Slave(slave_path)
        try:
            if again:
                # back to the start with the executed GTIDs kept: every transaction is one it has
                slave.set_relay_position("", logs.files[0].name, 4)
            applier = _NothingSetBased(slave, "", logs, options)
            stats = applier.run()
        finally:
            slave.close()
        assert stats.runs_read_again > 0 and stats.prepared_runs == 0
        assert stats.transactions == (0 if again else summary.transactions)
        assert stats.skipped == (summary.transactions if again else 0)
        assert_tables_equal(slave_path, expected)


class _Niceness:
    """A task that tells the niceness of the process it runs in."""

    def run(self, segment: Segment) -> int:
        return os.nice(0)

    def to_arrow(self, result: int) -> bytes:
        raise NotImplementedError

    def from_arrow(self, data: bytes, segment: Segment) -> int:
        raise NotImplementedError


def _niceness_of_processes(executor) -> set[int]:  # type: ignore[no-untyped-def]
    try:
        return {executor.submit(_Niceness(), None).result(timeout=60) for _ in range(4)}
    finally:
        executor.close()


def test_an_appliers_preparing_processes_yield_the_cores_to_it_and_a_listings_do_not(monkeypatch, tmp_path):
    own = os.nice(0)
    assert _niceness_of_processes(make_executor("processes", 2, for_applier=True)) == {
        min(19, own + APPLIER_PREPARING_NICENESS)
    }
    assert _niceness_of_processes(make_executor("processes", 2)) == {own}

    made = []  # a replay asks for an applier's executor

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(make_executor(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(replay_module, "make_executor", recording)
    options = ParallelOptions(workers=2, parallel_type="logical_clock", pool="processes")
    (outcome,) = Replay(tmp_path / "s.duckdb", None, CHANNELS[1:], parallel=options).run()
    assert outcome.error is None
    assert [type(e) for e in made] == [ProcessExecutor]
    assert made[0].niceness == APPLIER_PREPARING_NICENESS
