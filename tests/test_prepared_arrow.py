"""A prepared segment travels from a Spark task to the driver as Arrow and comes back item for item."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest

from engine.applier.prepare import PrepareTask
from engine.applier.prepared import PreparedRun, PreparedSegment
from engine.applier.prepared_arrow import from_plain, plain
from engine.binlog.events import TableMap
from engine.binlog.reader import LoggedEvent
from engine.generate import generate
from engine.relaylog.continuity import Continuity, GtidFacts, _Open
from engine.relaylog.index import read_index
from engine.relaylog.segments import plan_segments
from engine.relaylog.stream import stream_events
from engine.scheduling.rowkeys import KeyColumns, WritesetKeys
from engine.transactions import Incomplete, Position, Transaction
from engine.transactions import TransactionRecord as RunTransaction

from .test_replay_oracle import CHANNELS


def some_keys(index: Path) -> WritesetKeys:
    """Writeset keys for the tests: the first column of every table the log changes, but those
    named with an odd length, which have none (their transactions have no writeset). A plain
    WritesetKeys: it travels to Spark executors that import only the engine."""
    tables: dict[tuple[str, str], KeyColumns | None] = {}
    for logged in stream_events(read_index(index)):
        if isinstance(logged.event, TableMap):
            schema, name = logged.event.schema, logged.event.table
            tables[(schema, name)] = None if len(name) % 2 else ((schema, name, "PRIMARY", (0,)),)
    return WritesetKeys(tables, False)


def assert_same_items(got: PreparedSegment, expected: PreparedSegment) -> None:
    assert len(got.items) == len(expected.items)
    for mine, theirs in zip(got.items, expected.items, strict=True):
        assert type(mine) is type(theirs)
        if isinstance(theirs, PreparedRun):
            assert_same_run(mine, theirs)  # type: ignore[arg-type]
        elif isinstance(theirs, Transaction | Incomplete):
            assert mine == theirs
        else:
            assert isinstance(mine, LoggedEvent)
            assert (mine.log_name, mine.pos, mine.end_pos, mine.event) == (
                theirs.log_name,
                theirs.pos,
                theirs.end_pos,
                theirs.event,
            )
    for field in dataclasses.fields(PreparedSegment):
        if field.name != "items":
            assert getattr(got, field.name) == getattr(expected, field.name), field.name


def assert_same_run(got: PreparedRun, expected: PreparedRun) -> None:
    assert got.transactions == expected.transactions
    assert [type(t) for t in got.transactions] == [RunTransaction] * len(got.transactions)
    assert got.op_starts == expected.op_starts
    assert got.writesets == expected.writesets
    assert (got.gtids.maria, got.gtids.mysql) == (expected.gtids.maria, expected.gtids.mysql)
    assert len(got.tables) == len(expected.tables)
    for mine, theirs in zip(got.tables, expected.tables, strict=True):
        assert (mine.schema, mine.table, mine.columns, mine.rows) == (
            theirs.schema,
            theirs.table,
            theirs.columns,
            theirs.rows,
        )
        assert mine.ops.schema == theirs.ops.schema
        assert mine.ops.equals(theirs.ops)
    for field in dataclasses.fields(PreparedRun):
        if field.name not in ("transactions", "tables", "gtids"):
            assert getattr(got, field.name) == getattr(expected, field.name), field.name


def round_trips(index: Path, task: PrepareTask, per_segment: int) -> tuple[int, int]:
    """Every segment of the log through to_arrow and from_arrow; (runs, other items) seen."""
    runs = others = 0
    writesets: set[bool] = set()
    for segment in plan_segments(read_index(index), None, 4, per_segment):
        prepared = task.run(copy.deepcopy(segment))
        data = task.to_arrow(prepared)
        assert isinstance(data, bytes)
        with pa.ipc.open_stream(data) as reader:  # one Arrow stream, nothing else
            assert reader.read_all().num_rows == 1
        assert_same_items(task.from_arrow(data, segment), prepared)
        runs += sum(isinstance(i, PreparedRun) for i in prepared.items)
        others += sum(not isinstance(i, PreparedRun) for i in prepared.items)
        for item in prepared.items:
            if isinstance(item, PreparedRun) and item.writesets is not None:
                writesets.update(w is not None for w in item.writesets)
    if task.keys is not None:
        assert writesets == {True, False}  # transactions with a writeset and without
    return runs, others


@pytest.mark.parametrize("channel", CHANNELS, ids=lambda c: c.name)
@pytest.mark.parametrize("keys", [False, True], ids=["no-writesets", "writesets"])
def test_every_segment_of_the_capture_round_trips(channel, keys):
    runs, others = round_trips(
        channel.index_file, PrepareTask(100, some_keys(channel.index_file) if keys else None), 300
    )
    assert runs > 0 and others > 0  # the capture has DDL and coordinator events between its runs


@pytest.mark.parametrize("workload", ["mixed", "types"])
def test_every_segment_of_a_generated_log_round_trips(tmp_path, workload):
    summary = generate(workload, 3, tmp_path / "gen", size_mb=1)
    runs, others = round_trips(summary.index_file, PrepareTask(200, some_keys(summary.index_file)), 500)
    assert runs > 0 and others > 0


def test_a_segment_stopped_by_bad_input_keeps_where_the_reader_goes_on(tmp_path):
    source = CHANNELS[1].index_file.parent
    folder = tmp_path / "relay"
    folder.mkdir()
    for path in source.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    logs = read_index(folder / CHANNELS[1].index_file.name)
    last = Path(logs.files[-1])
    data = bytearray(last.read_bytes())
    data[len(data) // 2 + 9 : len(data) // 2 + 13] = b"\xff\xff\xff\x00"  # a bad event length
    last.write_bytes(bytes(data))
    task = PrepareTask(100)
    stopped = 0
    for segment in plan_segments(logs, None, 4, 10**6):
        prepared = task.run(copy.deepcopy(segment))
        stopped += prepared.resume_at is not None or prepared.gap is not None
        assert_same_items(task.from_arrow(task.to_arrow(prepared), segment), prepared)
    assert stopped == 1


def test_the_continuity_state_travels_as_json_and_comes_back_equal():
    facts = GtidFacts("0-1-7", 0, 7, True, "relay.000002", 420, "bin.000001", 300, 380)
    state = Continuity.segment(Path("relay.000002"), 4)
    state.last_seq = {0: 7, 3: 12}
    state.open = _Open(facts, True, reconnected=True)
    assert state.entry is not None
    state.entry.first_gtid = facts
    state.entry.domains = {0: facts}
    text = json.dumps(plain(state))
    back = from_plain(Continuity | None, json.loads(text))
    assert back == state
    assert from_plain(Position | None, json.loads(json.dumps(plain(Position("r.1", 9))))) == Position(
        "r.1", 9
    )
    state.accept = lambda: True
    with pytest.raises(TypeError):
        plain(state)
