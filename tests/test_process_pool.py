"""The process pool: worker processes read and decode segments of the relay log, the applier
applies what they prepared in source order — with exactly the single applier's results, errors
and positions."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.applier.parallel_schedule as parallel_schedule
import engine.applier.processes as processes
from engine.applier.prepare import prepare_segment
from engine.applier.prepared import PreparedRun, concatenated_ranges, sliced_tables
from engine.applier.vocabulary import ParallelOptions
from engine.binlog.events import RowsEvent
from engine.binlog.reader import LoggedEvent
from engine.generate import WORKLOADS, generate
from engine.pool import InProcessExecutor
from engine.pool.ahead import SEGMENTS_AHEAD_PER_WORKER
from engine.relaylog.index import read_index
from engine.relaylog.segments import GTID_EVENTS, plan_segments
from engine.relaylog.stream import stream_events
from engine.replay import ChannelSpec, Replay
from engine.slave.database import Slave
from engine.transactions import Transaction, TransactionAssembler

from .conftest import replay_argv
from .test_parallel_oracle import commit_record_counts
from .test_replay_oracle import CHANNELS, assert_tables_equal, expected_tables

POOL = ParallelOptions(workers=2, pool="processes")


def _classic(logs) -> list[tuple[str, str, int, str | None]]:  # type: ignore[no-untyped-def]
    """What the single applier's reader hands on: whole transactions and coordinator events."""
    out = []
    assembler = TransactionAssembler()
    for logged in stream_events(logs):
        for item in assembler.feed(logged):
            out.append(_key(item))
    return out


def _key(item: object) -> tuple[str, str, int, str | None]:
    if isinstance(item, LoggedEvent):
        return ("event", item.log_name, item.end_pos, None)
    assert isinstance(item, Transaction)
    return ("transaction", item.end.log_name, item.end.pos, item.gtid)


@pytest.mark.parametrize("per_segment", [1, 7, 250, 10**6])
def test_segments_start_at_gtid_events_and_together_are_the_whole_stream(per_segment):
    logs = read_index(CHANNELS[0].index_file)
    segments = list(plan_segments(logs, None, 4, per_segment))
    assert [s.number for s in segments] == list(range(len(segments)))
    for before, after in zip(segments, segments[1:], strict=False):
        assert before.stop == after.start
        data = after.files[0].read_bytes()
        assert data[after.start_pos + 4] in GTID_EVENTS
    if per_segment == 10**6:
        assert len(segments) == 1
    else:
        assert len(segments) > 1
    prepared = []
    for segment in segments:
        result = prepare_segment(segment, 50)
        assert result.resume_at is None
        for item in result.items:
            if isinstance(item, PreparedRun):
                assert 0 < len(item.transactions) <= 50
                prepared.extend(("transaction", t.end.log_name, t.end.pos, t.gtid) for t in item.transactions)
            else:
                prepared.append(_key(item))
    assert prepared == _classic(logs)


def test_a_segment_can_start_in_the_middle_of_the_stream():
    logs = read_index(CHANNELS[0].index_file)
    classic = [k for k in _classic(logs) if k[0] == "transaction"]
    name, pos = classic[99][1], classic[99][2]  # resume after the 100th transaction
    segments = list(plan_segments(logs, name, pos, 40))
    assert segments[0].start == (name, pos)
    ends = []
    for segment in segments:
        for item in prepare_segment(segment, 1000).items:
            if isinstance(item, PreparedRun):
                ends.extend((t.end.log_name, t.end.pos) for t in item.transactions)
            elif isinstance(item, Transaction):
                ends.append((item.end.log_name, item.end.pos))
    assert ends == [(k[1], k[2]) for k in classic[100:]]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_the_mariadb_capture_replays_exactly_with_the_process_pool(workers, tmp_path):
    options = ParallelOptions(workers=workers, pool="processes")
    outcomes = Replay(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", CHANNELS, parallel=options).run()
    assert [o.error for o in outcomes] == [None, None]
    assert sum(o.stats.prepared_runs for o in outcomes) > 0  # the workers' runs were applied as prepared
    assert [o.stats.runs_read_again for o in outcomes] == [0, 0]
    applied = sum(o.stats.transactions for o in outcomes)
    assert commit_record_counts(tmp_path / "slave.duckdb") == (applied, applied, applied)
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables())


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_generated_workload_replays_exactly_with_the_process_pool(workload, tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 25)  # many segments, many cuts
    summary = generate(workload, 5, tmp_path / "relay")
    outcome = Replay(
        tmp_path / "slave.duckdb", None, [ChannelSpec("", summary.index_file)], parallel=POOL
    ).run()[0]
    assert outcome.error is None, outcome.error
    assert outcome.stats.transactions == summary.transactions
    n = summary.transactions
    assert commit_record_counts(tmp_path / "slave.duckdb") == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert expected
    assert_tables_equal(tmp_path / "slave.duckdb", expected)


def test_transactions_of_prepared_runs_applied_before_are_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 40)
    summary = generate("oltp", 6, tmp_path / "relay")
    slave_path = tmp_path / "slave.duckdb"
    spec = [ChannelSpec("", summary.index_file)]
    first = Replay(slave_path, None, spec, parallel=POOL).run()[0]
    assert first.error is None and first.stats.prepared_runs > 0
    # The position goes back to the start; the executed GTIDs stay (CHANGE REPLICATION SOURCE TO
    # RELAY_LOG_POS): every transaction read again is one the slave already has.
    slave = Slave(slave_path)
    logs = read_index(summary.index_file)
    slave.set_relay_position("", logs.files[0].name, 4)
    slave.close()
    again = Replay(slave_path, None, spec, parallel=POOL).run()[0]
    assert again.error is None
    # skipped one by one inside the prepared runs, none read again
    assert again.stats.prepared_runs > 0 and again.stats.runs_read_again == 0
    assert again.stats.skipped == summary.transactions and again.stats.transactions == 0
    n = summary.transactions
    assert commit_record_counts(slave_path) == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(slave_path, expected)


def _progress(slave_path: Path) -> tuple:  # type: ignore[type-arg]
    con = duckdb.connect(str(slave_path), read_only=True)
    try:
        return con.execute(
            "SELECT relay_log_file, relay_log_pos, transactions, executed_gtids FROM __relaydeck.progress"
        ).fetchone()
    finally:
        con.close()


def test_bad_input_stops_the_pool_where_it_stops_the_single_applier(tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 30)
    summary = generate("oltp", 4, tmp_path / "relay")
    logs = read_index(summary.index_file)
    # a flipped bit in the body of a rows event two thirds of the way in: a checksum error there
    events = [e for e in stream_events(logs) if isinstance(e.event, RowsEvent)]
    victim = events[2 * len(events) // 3]
    path = next(p for p in logs.files if p.name == victim.log_name)
    data = bytearray(path.read_bytes())
    data[victim.pos + 19 + 3] ^= 0x10
    path.write_bytes(bytes(data))
    spec = [ChannelSpec("", summary.index_file)]
    single = Replay(tmp_path / "single.duckdb", None, spec).run()[0]
    pooled = Replay(tmp_path / "pool.duckdb", None, spec, parallel=POOL).run()[0]
    assert single.error is not None and pooled.error is not None
    assert str(pooled.error) == str(single.error)
    assert f"{victim.log_name}" in str(pooled.error) and str(victim.pos) in str(pooled.error)
    assert _progress(tmp_path / "pool.duckdb") == _progress(tmp_path / "single.duckdb")
    assert _progress(tmp_path / "pool.duckdb")[2] > 0  # the whole transactions before it were applied


def test_an_apply_error_in_a_prepared_run_is_reported_as_the_single_applier_reports_it(tmp_path, monkeypatch):
    from engine.applier.vocabulary import ChannelError, Until

    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 500)
    summary = generate("oltp", 4, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    probe = Replay(tmp_path / "probe.duckdb", None, spec).run()[0]
    assert probe.error is None
    con = duckdb.connect(str(tmp_path / "probe.duckdb"), read_only=True)
    gtid = con.execute("SELECT gtid FROM __relaydeck.commits ORDER BY seqno LIMIT 1 OFFSET 39").fetchone()[0]
    con.close()
    # 40 transactions applied, then the slave loses its rows: a later change cannot find its row
    base = tmp_path / "single.duckdb"
    assert Replay(base, None, spec, until=Until(after_gtids=gtid)).run()[0].error is None
    con = duckdb.connect(str(base))
    for schema, name in con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema LIKE 'sbtest%'"
    ).fetchall():
        con.execute(f'DELETE FROM "{schema}"."{name}"')
    con.close()
    shutil.copy(base, tmp_path / "pool.duckdb")
    single = Replay(base, None, spec).run()[0]
    pooled = Replay(tmp_path / "pool.duckdb", None, spec, parallel=POOL).run()[0]
    assert single.error is not None and "Error 1032" in str(single.error)
    # the same error, transaction and position; the parallel applier adds which worker stopped
    assert isinstance(pooled.error, ChannelError) and isinstance(single.error, ChannelError)
    assert (pooled.error.errno, pooled.error.transaction, pooled.error.position) == (
        single.error.errno,
        single.error.transaction,
        single.error.position,
    )
    assert single.error.message in pooled.error.message
    assert _progress(tmp_path / "pool.duckdb") == _progress(base)


def test_the_command_line_runs_the_process_pool(tmp_path):
    summary = generate("oltp", 3, tmp_path / "relay")
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    argv = replay_argv(slave, repo, f"c1={summary.index_file}", "--workers", "2", "--pool", "processes")
    run = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    n = summary.transactions
    assert commit_record_counts(slave) == (n, n, n)
    without = subprocess.run(
        replay_argv(
            tmp_path / "t.duckdb",
            tmp_path / "t.sqlite",
            f"c1={summary.index_file}",
            "--workers",
            "0",
            "--pool",
            "processes",
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert without.returncode != 0 and "--pool processes prepares for workers" in without.stderr
    assert "Traceback" not in without.stderr


class _ReadyPool(InProcessExecutor):
    """Prepares each segment as it is submitted: every segment is ready when the applier asks, the
    case where the applier is the slower side and merges runs."""

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.workers = workers
        self.submitted = 0

    def submit(self, task, segment):  # type: ignore[no-untyped-def]
        self.submitted += 1
        return super().submit(task, segment)


def _ready_pool(kind, workers, spark_master=None, for_applier=False):  # type: ignore[no-untyped-def]
    return _ReadyPool(workers)


def _runs(index_file: Path, per_segment: int) -> list[PreparedRun]:
    logs = read_index(index_file)
    out = []
    for segment in plan_segments(logs, None, 4, per_segment):
        out.extend(i for i in prepare_segment(segment, per_segment).items if isinstance(i, PreparedRun))
    return out


def _ops_of(run: PreparedRun, first: int, end: int, schema: str, table: str) -> list[tuple]:  # type: ignore[type-arg]
    """Transactions first … end - 1 of a run: their operations on one table, without seq."""
    low = run.op_starts[first]
    high = run.op_starts[end] if end < len(run.op_starts) else run.operations
    out = []
    for ops in run.tables:
        if (ops.schema, ops.table) == (schema, table):
            for row in ops.ops.to_pylist():
                if low <= row["seq"] < high:
                    out.append(tuple(v for k, v in row.items() if k != "seq"))
    return out


@pytest.mark.parametrize("workload", ["hot", "oltp"])
def test_sliced_runs_keep_every_operation_in_relay_log_order(workload, tmp_path):
    summary = generate(workload, 2, tmp_path / "relay")  # hot: the same rows changed again and again
    runs = [r for r in _runs(summary.index_file, 20) if len(r.transactions) >= 14]
    assert len(runs) >= 3
    # whole runs, parts of runs, single transactions: what a worker may be given
    parts = [(runs[0], 0, len(runs[0].transactions)), (runs[1], 3, 9), (runs[1], 12, 13), (runs[2], 0, 5)]
    tables = sliced_tables(parts)
    total = sum(run.operations for run in {id(r): r for r, _, _ in parts}.values())
    for ops in tables:
        seq = ops.ops.column("seq").to_pylist()
        assert seq == sorted(seq) and len(set(seq)) == len(seq)  # one order across the parts
        assert 0 <= seq[0] and seq[-1] < total
        rows = [tuple(v for k, v in row.items() if k != "seq") for row in ops.ops.to_pylist()]
        assert rows == [op for r, f, e in parts for op in _ops_of(r, f, e, ops.schema, ops.table)]
        assert ops.rows == len(rows) - sum(1 for row in rows if row[1] is None)  # UPDATE: two operations
    touched = {
        (t.schema, t.table) for r, f, e in parts for t in r.tables if _ops_of(r, f, e, t.schema, t.table)
    }
    assert {(t.schema, t.table) for t in tables} == touched


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=40))
def test_the_ranges_of_a_worker_s_pieces_are_taken_in_order_and_whole(pieces):
    """Each (low, low + length) of a table's pieces, one after another; empty ones add nothing."""
    lows = np.array([low for low, _ in pieces], dtype=np.int64)
    highs = np.array([low + length for low, length in pieces], dtype=np.int64)
    expected = [i for low, length in pieces for i in range(low, low + length)]
    taken = concatenated_ranges(lows, highs)
    if not expected:
        assert taken is None
    else:
        assert taken.tolist() == expected


def test_parts_of_a_table_whose_columns_changed_are_not_combined(tmp_path):
    summary = generate("oltp", 2, tmp_path / "relay")
    first, second = _runs(summary.index_file, 20)[:2]
    sliced_tables([(first, 0, len(first.transactions)), (second, 0, len(second.transactions))])
    shared = next(
        t for t in second.tables if any((u.schema, u.table) == (t.schema, t.table) for u in first.tables)
    )
    shared.columns = shared.columns[:-1]  # as if an ALTER TABLE dropped a column between the runs
    with pytest.raises(ValueError, match="other columns"):
        sliced_tables([(first, 0, len(first.transactions)), (second, 0, len(second.transactions))])


@pytest.mark.parametrize("workload", ["hot", "oltp"])
def test_runs_ready_together_are_applied_together_and_exactly(workload, tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 30)
    monkeypatch.setattr("engine.replay.make_executor", _ready_pool)
    summary = generate(workload, 4, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    segments = len(list(plan_segments(read_index(summary.index_file), None, 4, 30)))
    outcome = Replay(tmp_path / "slave.duckdb", None, spec, parallel=POOL).run()[0]
    assert outcome.error is None, outcome.error
    # several segments ready at every hand-over: their transactions are committed together
    assert outcome.stats.prepared_runs >= segments - 1
    assert outcome.stats.commits * 4 < outcome.stats.transactions
    n = summary.transactions
    assert outcome.stats.transactions == n
    assert commit_record_counts(tmp_path / "slave.duckdb") == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(tmp_path / "slave.duckdb", expected)


def test_database_batches_of_prepared_transactions_outgrow_the_read_queue(tmp_path, monkeypatch):
    """Under DATABASE with commit order off a worker's batch is what its own queue holds. A
    prepared transaction is a light record, so queues hold more of them than of transactions read
    the ordinary way, and the batches are longer than a queue of read ones could make them."""
    monkeypatch.setattr(parallel_schedule, "READ_QUEUE_LENGTH", 8)
    monkeypatch.setattr(parallel_schedule, "WORKER_QUEUE_LENGTH", 64)
    monkeypatch.setattr(parallel_schedule, "PARTITION_PIECE", 16)  # a piece fits a queue
    monkeypatch.setattr("engine.replay.make_executor", _ready_pool)
    summary = generate("multidb", 4, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    options = ParallelOptions(4, "database", preserve_commit_order=False, pool="processes")
    outcome = Replay(tmp_path / "slave.duckdb", None, spec, parallel=options).run()[0]
    assert outcome.error is None, outcome.error
    n = summary.transactions
    assert outcome.stats.transactions == n
    assert outcome.stats.commits * 8 < n  # batches past the read queue's length, on average
    assert commit_record_counts(tmp_path / "slave.duckdb") == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(tmp_path / "slave.duckdb", expected)


def test_merging_stops_at_the_batch_limit(tmp_path, monkeypatch):
    from engine.applier.vocabulary import BatchLimits

    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 30)
    monkeypatch.setattr("engine.replay.make_executor", _ready_pool)
    summary = generate("oltp", 4, tmp_path / "relay")
    spec = [ChannelSpec("", summary.index_file)]
    limits = BatchLimits(transactions=30)  # one segment's run at a time
    outcome = Replay(tmp_path / "slave.duckdb", None, spec, parallel=POOL, limits=limits).run()[0]
    assert outcome.error is None
    segments = len(list(plan_segments(read_index(summary.index_file), None, 4, 30)))
    assert outcome.stats.prepared_runs >= segments - 1  # DDL-free: about one run per segment
    assert outcome.stats.commits >= outcome.stats.transactions // 30  # no batch above the limit


def test_a_prepared_run_reaches_the_applier_unchanged(tmp_path):
    """Runs travel from the worker process pickled (column-wise): nothing may change on the way."""
    import pickle

    summary = generate("types", 3, tmp_path / "relay")  # NULLs and every column type
    runs = _runs(summary.index_file, 25)
    assert runs
    for run in runs:
        back = pickle.loads(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL))
        assert back.transactions == run.transactions
        assert (back.row_changes, back.operations) == (run.row_changes, run.operations)
        assert [(t.schema, t.table, t.columns, t.rows) for t in back.tables] == [
            (t.schema, t.table, t.columns, t.rows) for t in run.tables
        ]
        assert all(b.ops.equals(t.ops) for b, t in zip(back.tables, run.tables, strict=True))


def test_the_first_segment_can_be_shorter_than_the_rest():
    logs = read_index(CHANNELS[0].index_file)
    segments = list(plan_segments(logs, None, 4, 10, first_segment=3))

    def transactions(segment) -> int:  # type: ignore[no-untyped-def]
        items = prepare_segment(segment, 1000).items
        return sum(
            len(i.transactions) if isinstance(i, PreparedRun) else isinstance(i, Transaction) for i in items
        )

    counts = [transactions(s) for s in segments]
    assert counts[0] == 3 and set(counts[1:-1]) == {10} and 0 < counts[-1] <= 10
    assert sum(counts) == sum(1 for k in _classic(logs) if k[0] == "transaction")


def test_a_transaction_whose_images_do_not_decode_leaves_the_run_as_it_was(tmp_path):
    from dataclasses import replace

    from engine.applier.prepare import _RunBuilder

    summary = generate("oltp", 2, tmp_path / "relay")
    assembler = TransactionAssembler()
    transactions = [
        item
        for logged in stream_events(read_index(summary.index_file))
        for item in assembler.feed(logged)
        if isinstance(item, Transaction) and sum(isinstance(e.event, RowsEvent) for e in item.events) >= 2
    ]

    def tables(txn):  # type: ignore[no-untyped-def]
        return [(e.event.schema, e.event.table) for e in txn.events if type(e.event).__name__ == "TableMap"]

    good = transactions[0]
    # a victim whose first rows event goes to a table the run already holds: that table's
    # columns grow before the fault and must shrink back
    victim = next(t for t in transactions[1:] if tables(t)[0] in tables(good) and len(set(tables(t))) == 1)
    later = transactions[transactions.index(victim) + 1]
    # its last rows event cut short: the events before it were already decoded into the run
    last = max(i for i, e in enumerate(victim.events) if isinstance(e.event, RowsEvent))
    cut = victim.events[last]._replace(
        event=replace(victim.events[last].event, rows_data=victim.events[last].event.rows_data[:-3])
    )
    broken = replace(victim, events=[*victim.events[:last], cut, *victim.events[last + 1 :]])

    def shape(builder):  # type: ignore[no-untyped-def]
        tables = {
            k: (len(t.spans), t.operations, [len(v) for v in t.values], t.rows)
            for k, t in builder.tables.items()
        }
        return tables, builder.seq, builder.rows, len(builder.transactions)

    builder = _RunBuilder()
    assert builder.add(good) is True
    before = shape(builder)
    assert builder.add(broken) is None
    assert shape(builder) == before
    assert builder.add(later) is True
    clean = _RunBuilder()
    clean.add(good)
    clean.add(later)
    got, want = builder.build(), clean.build()
    assert [(t.schema, t.table, t.rows) for t in got.tables] == [
        (t.schema, t.table, t.rows) for t in want.tables
    ]
    assert all(a.ops.equals(b.ops) for a, b in zip(got.tables, want.tables, strict=True))


def _record_scanned(prepare, monkeypatch) -> list[tuple]:  # type: ignore[no-untyped-def]
    """What the compiled scanner reads from now on (the test is skipped where it is not built)."""
    if prepare._runscan is None:
        pytest.skip("the compiled scanner is not built")
    scanned: list[tuple] = []
    real = prepare._runscan

    class Recording:
        def scan_transaction(self, *args):  # type: ignore[no-untyped-def]
            result = real.scan_transaction(*args)
            if result is not None:
                scanned.append(result)
            return result

    monkeypatch.setattr(prepare, "_runscan", Recording())
    return scanned


def test_a_scanned_transaction_whose_images_do_not_decode_leaves_the_run_as_it_was(monkeypatch):
    """The scanner's way (add_scanned) takes back what a transaction queued before its faulty
    rows event, in the tables the run held and in those new to it; the run then goes on as if
    the transaction had never come."""
    from engine.applier import prepare
    from engine.applier.prepare import _RunBuilder

    scanned = _record_scanned(prepare, monkeypatch)
    logs = read_index(CHANNELS[0].index_file)
    for segment in plan_segments(logs, None, 4, 400):
        prepare_segment(segment, 400)
    several = [s for s in scanned if len({(r[0].schema, r[0].table) for r in s[6]}) >= 2]
    assert several, "the capture has transactions changing two tables"

    def key(row):  # type: ignore[no-untyped-def]
        return (row[0].schema, row[0].table)

    good = next(s for s in scanned if len(s[6]) >= 1)
    # a victim whose first rows event goes to a table the run holds, a later one to one it does not
    victim = next(
        s
        for s in several
        if key(s[6][0]) in {key(r) for r in good[6]} and key(s[6][-1]) not in {key(r) for r in good[6]}
    )
    table_map, type_code, width, data = victim[6][-1]
    broken = (*victim[:6], [*victim[6][:-1], (table_map, type_code, width, data[:-3])], *victim[7:])
    later = scanned[scanned.index(victim) + 1]

    def shape(builder):  # type: ignore[no-untyped-def]
        tables = {
            k: (len(t.spans), t.operations, [len(v) for v in t.values], t.rows)
            for k, t in builder.tables.items()
        }
        return tables, builder.seq, builder.rows, len(builder.transactions), dict(builder._maria)

    builder = _RunBuilder()
    assert builder.add_scanned(good, "relay-bin.000001", 4, "source-bin.000001") is True
    before = shape(builder)
    assert builder.add_scanned(broken, "relay-bin.000001", 400, "source-bin.000001") is None
    assert shape(builder) == before
    assert builder.add_scanned(later, "relay-bin.000001", 800, "source-bin.000001") is True
    clean = _RunBuilder()
    clean.add_scanned(good, "relay-bin.000001", 4, "source-bin.000001")
    clean.add_scanned(later, "relay-bin.000001", 800, "source-bin.000001")
    got, want = builder.build(), clean.build()
    assert got.transactions == want.transactions
    assert (got.gtids.maria, got.op_starts) == (want.gtids.maria, want.op_starts)
    assert [(t.schema, t.table, t.rows) for t in got.tables] == [
        (t.schema, t.table, t.rows) for t in want.tables
    ]
    assert all(a.ops.equals(b.ops) for a, b in zip(got.tables, want.tables, strict=True))


@pytest.mark.parametrize("begins_known", [True, False], ids=["begin-decoded-before", "begin-never-seen"])
def test_the_compiled_scanner_reads_mysql_transactions_whose_begin_the_reader_decoded(
    begins_known, tmp_path, monkeypatch
):
    """A MySQL row-only transaction (GTID, BEGIN, table maps, rows events, XID) is read by the
    scanner once the reader has decoded a BEGIN of the same bytes; with none decoded, every one is
    left to the reader. Either way the runs are the reader's, GTIDs and logical clocks included."""
    from engine.applier import prepare

    scanned = _record_scanned(prepare, monkeypatch)
    if not begins_known:
        monkeypatch.setattr(prepare, "_BEGINS", set())  # one the reader never fills
    logs = read_index(generate("oltp", 2, tmp_path / "relay").index_file)
    in_runs = 0
    for segment in plan_segments(logs, None, 4, 200):
        fast = prepare_segment(copy.deepcopy(segment), 100)
        _same_items(fast, prepare_segment(copy.deepcopy(segment), 100, fast_path=False))
        in_runs += sum(len(i.transactions) for i in fast.items if isinstance(i, PreparedRun))
    mysql = [s for s in scanned if len(s) == 10]
    assert in_runs > 100
    if not begins_known:
        assert mysql == []
        return
    # all but the first transaction of each segment, which the reader reads with the file's start
    assert len(mysql) > 0.9 * in_runs
    assert all(s[7] is not None and s[8] is not None for s in mysql)  # the logical clock, logged


def _same_items(fast, slow) -> None:  # type: ignore[no-untyped-def]
    assert fast.resume_at == slow.resume_at
    assert [type(i) for i in fast.items] == [type(i) for i in slow.items]
    for a, b in zip(fast.items, slow.items, strict=True):
        if not isinstance(a, PreparedRun):
            assert a == b
            continue
        assert a.transactions == b.transactions
        assert (a.row_changes, a.operations) == (b.row_changes, b.operations)
        assert (a.gtids.maria, a.gtids.mysql) == (b.gtids.maria, b.gtids.mysql)
        assert [(t.schema, t.table, t.columns, t.rows) for t in a.tables] == [
            (t.schema, t.table, t.columns, t.rows) for t in b.tables
        ]
        assert all(x.ops.equals(y.ops) for x, y in zip(a.tables, b.tables, strict=True))


def _public_logs() -> list[Path]:
    from .conftest import PUBLIC

    return sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("scanner", [True, False], ids=["compiled-scanner", "python"])
@pytest.mark.parametrize("source", ["capture", "oltp", "types", "public"])
def test_the_fast_path_prepares_exactly_what_the_assembler_prepares(source, scanner, tmp_path, monkeypatch):
    """Row-only transactions read by the compiled scanner, or gathered without the assembler:
    same runs, same GTIDs, same items handed back as read, on MariaDB's and MySQL's logs,
    damaged ones included."""
    from engine.applier import prepare
    from engine.relaylog.index import RelayLogSet

    if scanner and prepare._runscan is None:
        pytest.skip("the compiled scanner is not built")
    if not scanner:
        monkeypatch.setattr(prepare, "_runscan", None)

    if source == "capture":
        sets = [read_index(spec.index_file) for spec in CHANNELS]
    elif source == "public":
        sets = [RelayLogSet(None, [path]) for path in _public_logs()]
    else:
        sets = [read_index(generate(source, 2, tmp_path / "relay").index_file)]
    runs = 0
    for logs in sets:
        try:
            segments = list(plan_segments(logs, None, 4, 30))
        except Exception:  # a file the planner cannot open: its reader reports it, not compared here
            continue
        read = _as_read(logs)
        for segment in segments:
            # a worker reads its own copy of the segment (the reader state changes as it reads)
            fast = prepare_segment(copy.deepcopy(segment), 25)
            _same_items(fast, prepare_segment(copy.deepcopy(segment), 25, fast_path=False))
            for run in (i for i in fast.items if isinstance(i, PreparedRun)):
                runs += 1
                for txn in run.transactions:  # as the coordinator would have known it
                    whole = read[txn.end]
                    assert (txn.gtid, txn.start, txn.source_log_file, txn.source_end_pos) == (
                        whole.gtid,
                        whole.start,
                        whole.source_log_file,
                        whole.source_end_pos,
                    )
                    assert (txn.timestamp, txn.original_commit_timestamp, txn.size, txn.row_events) == (
                        whole.timestamp,
                        whole.original_commit_timestamp,
                        whole.size,
                        whole.row_events,
                    )
    assert runs > 0


def _as_read(logs) -> dict:  # type: ignore[no-untyped-def]
    """The transactions the ordinary reader assembles, by end position (as far as it can read)."""
    from engine.errors import BinlogError

    out = {}
    assembler = TransactionAssembler()
    try:
        for logged in stream_events(logs):
            for item in assembler.feed(logged):
                if isinstance(item, Transaction):
                    out[item.end] = item
    except BinlogError:
        pass
    return out


def _stream_offset(logs, name: str, pos: int) -> int:  # type: ignore[no-untyped-def]
    """Bytes of the stream before (name, pos), each file counted from its first event."""
    offset = 0
    for path in logs.files:
        if path.name == name:
            return offset + pos - 4
        offset += path.stat().st_size - 4
    raise AssertionError(name)


@pytest.mark.parametrize(("first_bytes", "bytes_bound"), [(None, 6000), (1500, 20000)])
def test_a_segment_ends_at_the_first_transaction_past_its_byte_bound(first_bytes, bytes_bound):
    logs = read_index(CHANNELS[0].index_file)
    segments = list(plan_segments(logs, None, 4, 10**6, None, bytes_bound, first_bytes))
    assert len(segments) > 2 and len({s.files[0] for s in segments}) > 1  # bounds across files
    for segment in segments[:-1]:
        bound = first_bytes if segment.number == 0 and first_bytes else bytes_bound
        start = _stream_offset(logs, *segment.start)
        stop = _stream_offset(logs, *segment.stop)
        assert stop - start >= bound
        cuts = [
            _stream_offset(logs, s.start[0], s.start[1]) for s in plan_segments(logs, None, 4, 1)
        ]  # every transaction's start
        inside = [c for c in cuts if start < c < stop]
        assert all(c - start < bound for c in inside)
    assert sum(1 for k in _classic(logs) if k[0] == "transaction") == sum(
        1
        for s in segments
        for i in prepare_segment(s, 10**6).items
        for _ in (i.transactions if isinstance(i, PreparedRun) else [i] if isinstance(i, Transaction) else [])
    )


def test_segments_are_submitted_again_before_the_applier_takes_a_chunk():
    """The workers keep busy while the applier applies: a chunk's segments are replaced in
    flight before the chunk is handed over."""
    logs = read_index(CHANNELS[0].index_file)
    pool = _ReadyPool(2)
    ahead = 2 * SEGMENTS_AHEAD_PER_WORKER + 1
    total = len(list(plan_segments(logs, None, 4, 5, max(1, 5 // processes.FIRST_SEGMENT_FRACTION))))
    assert total > 2 * ahead
    chunks = processes.prepared_chunks(
        logs, None, 4, pool, lambda name, pos: iter(()), segment_transactions=5, segment_bytes=1 << 40
    )
    next(chunks)
    # every segment in flight was ready: the chunk took them all, as many are in flight again
    assert pool.submitted == 2 * ahead
    chunks.close()


def test_a_runs_gtids_sum_up_what_adding_them_one_by_one_gives(tmp_path):
    from engine.gtids import ExecutedGtids

    for spec in CHANNELS:
        for run in _runs(spec.index_file, 7):
            one_by_one = ExecutedGtids()
            for txn in run.transactions:
                if txn.gtid:
                    one_by_one.add(txn.gtid)
            summed = ExecutedGtids()
            run.gtids.add_to(summed)
            assert str(summed) == str(one_by_one)
            assert run.gtids.any_in(summed) == any(t.gtid for t in run.transactions)


def test_a_scanned_run_arrow_refuses_is_read_again_and_handed_back_as_read(monkeypatch):
    """Values Arrow refuses send a run's transactions back as read; those the compiled scanner
    read have no events to hand back, so the segment is read again without it."""
    from engine.applier import prepare

    if prepare._runscan is None:
        pytest.skip("the compiled scanner is not built")

    def refuse(self):  # type: ignore[no-untyped-def]
        raise prepare.pa.ArrowInvalid("refused")

    monkeypatch.setattr(prepare._RunBuilder, "build", refuse)
    logs = read_index(CHANNELS[0].index_file)
    handed_back = 0
    for segment in plan_segments(logs, None, 4, 40):
        fast = prepare_segment(copy.deepcopy(segment), 25)
        assert not any(isinstance(i, PreparedRun) for i in fast.items)
        _same_items(fast, prepare_segment(copy.deepcopy(segment), 25, fast_path=False))
        handed_back += sum(isinstance(i, Transaction) for i in fast.items)
    assert handed_back > 100


def _prepare_failing_on_segment_2(segment, run_length, **options):  # type: ignore[no-untyped-def]
    """prepare_segment, with a defect in the third segment's process (module level: pickled)."""
    if segment.number == 2:
        raise RuntimeError("a defect in the worker process")
    return prepare_segment(segment, run_length, **options)


def test_a_segment_whose_process_fails_is_read_the_ordinary_way_and_applied_exactly(tmp_path, monkeypatch):
    # Not bad input (that hands over at its position): the process itself failed. The applier
    # reads from that segment's start on, and the tables are still exactly the source's.
    monkeypatch.setattr(processes, "SEGMENT_TRANSACTIONS", 40)
    monkeypatch.setattr("engine.applier.prepare.prepare_segment", _prepare_failing_on_segment_2)
    m2 = [spec for spec in CHANNELS if spec.name == "m2"]
    (outcome,) = Replay(tmp_path / "pool.duckdb", None, m2, parallel=POOL).run()
    assert outcome.error is None, outcome.error and outcome.error.one_line()
    assert outcome.stats.prepared_runs > 0  # the segments before it came prepared
    expected = {k: v for k, v in expected_tables().items() if k[0] == "shop"}
    assert_tables_equal(tmp_path / "pool.duckdb", expected, {"shop"})


class _FrozenInChild:
    """A task that tells how many objects the process running it inherited frozen."""

    def run(self, segment):  # type: ignore[no-untyped-def]
        import gc

        return gc.get_freeze_count()


def test_forked_processes_leave_what_they_inherit_out_of_their_garbage_collections():
    """gc.freeze before the fork (Python's advice): a child's collection never walks the objects
    another thread of the caller may have been changing at that instant. The caller's own
    collections get them back."""
    import gc

    from engine.pool.executors import ProcessExecutor

    executor = ProcessExecutor(2)
    try:
        futures = [executor.submit(_FrozenInChild(), None) for _ in range(4)]  # type: ignore[arg-type]
        frozen = [f.result(timeout=60) for f in futures]
    finally:
        executor.close()
    assert all(count > 1000 for count in frozen)  # this test process alone holds far more
    assert gc.get_freeze_count() == 0
