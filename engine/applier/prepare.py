"""What a worker process of the process pool does with one segment of a relay log.

It reads the segment, assembles its transactions and, for each run of consecutive row-only
transactions (GTID, BEGIN, table maps, row events, XID/COMMIT), decodes the row images and
collects them per table, column-wise, into Arrow tables of operations: the same operations the
set-based RowApplier collects (slave/rowapply.py), so the coordinator only has to apply them.
Everything else — coordinator events, DDL, statements, transactions whose images are partial or
do not decode — comes back as read, for the coordinator to execute the ordinary way. Nothing
here needs the slave: conversions that depend on the slave's definitions happen at apply time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ..binlog.columns import ColumnInfo, RowDecoder, row_decoder
from ..binlog.constants import RowsKind
from ..binlog.events import Gtid, MariaGtidEvent, Query, RowsEvent, TableMap, Xid
from ..binlog.reader import LoggedEvent
from ..errors import BinlogError
from ..relaylog.index import RelayLogSet
from ..relaylog.segments import Segment
from ..relaylog.stream import stream_events
from ..slave.rowapply import for_target, value_converter
from ..slave.schema import MysqlTable
from ..transactions import Incomplete, Position, Transaction, TransactionAssembler

_PLAIN = frozenset({Gtid, MariaGtidEvent, Xid})
_WRITE, _UPDATE = RowsKind.WRITE, RowsKind.UPDATE
# an UPDATE row's two operations: delete of the old key (which must exist), upsert of the new one
_DELETE_UPSERT = (0, 1)
_MUST_THEN_NEW = (1, None)
_DELIMITERS = frozenset({"BEGIN", "COMMIT"})


class RunTransaction(NamedTuple):
    """A transaction of a prepared run, as the coordinator records and reports it."""

    gtid: str | None
    start: Position
    end: Position
    source_log_file: str | None
    source_end_pos: int
    timestamp: int
    original_commit_timestamp: int | None
    size: int
    row_events: int

    def describe(self) -> str:
        if self.gtid:
            return f"GTID {self.gtid}"
        return f"source position {self.source_log_file}:{self.source_end_pos}"


@dataclass(slots=True)
class TableOps:
    """One table's operations in a run: seq, op, must, c0…cN (see RowApplier._ops_table)."""

    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    ops: pa.Table
    rows: int


@dataclass(slots=True)
class PreparedRun:
    """Consecutive row-only transactions of a segment, their row changes collected per table."""

    transactions: list[RunTransaction]
    tables: list[TableOps]
    row_changes: int
    operations: int  # its operations are numbered (seq) 0 … operations - 1, across its tables

    def __getstate__(self) -> tuple[Any, ...]:
        # Handed from a worker process to the applier column-wise: pickling thousands of named
        # tuples one by one measured two thirds of the cost of handing a segment over.
        t = self.transactions
        columns = (
            [x.gtid for x in t],
            [x.start.log_name for x in t],
            [x.start.pos for x in t],
            [x.end.log_name for x in t],
            [x.end.pos for x in t],
            [x.source_log_file for x in t],
            [x.source_end_pos for x in t],
            [x.timestamp for x in t],
            [x.original_commit_timestamp for x in t],
            [x.size for x in t],
            [x.row_events for x in t],
        )
        return columns, self.tables, self.row_changes, self.operations

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        columns, self.tables, self.row_changes, self.operations = state
        gtid, start_file, start_pos, end_file, end_pos, *rest = columns
        starts = map(Position, start_file, start_pos)
        ends = map(Position, end_file, end_pos)
        self.transactions = list(map(RunTransaction, gtid, starts, ends, *rest))

    @property
    def start(self) -> Position:
        return self.transactions[0].start

    @property
    def end(self) -> Position:
        return self.transactions[-1].end


@dataclass(slots=True)
class PreparedSegment:
    number: int
    items: list[Transaction | LoggedEvent | Incomplete | PreparedRun]
    # Reading stopped on bad input: everything before this position is in `items`; the
    # coordinator reads on from here itself, which reports the error where it is.
    resume_at: Position | None = None


@dataclass(slots=True)
class _Table:
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    seq: list[int] = field(default_factory=list)
    op: list[int] = field(default_factory=list)
    must: list[int | None] = field(default_factory=list)
    values: list[list[Any]] = field(default_factory=list)
    rows: int = 0


class _RunBuilder:
    """Collects row-only transactions into a run; refuses what a run cannot hold."""

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []
        self.tables: dict[tuple[str, str], _Table] = {}
        self.seq = 0
        self.rows = 0

    def add(self, txn: Transaction) -> bool | None:
        """True: taken. False: row-only, but its tables' column lists differ from the run's (it
        starts the next run). None: not row-only, or its images cannot be taken set-based."""
        maps: dict[int, TableMap] = {}
        events = []
        for logged in txn.events:
            event = logged.event
            kind = type(event)
            if kind is TableMap:
                maps[event.table_id] = event
            elif kind is RowsEvent:
                table_map = maps.get(event.table_id)
                if table_map is None:
                    return None
                try:
                    decoder = row_decoder(event, table_map)
                except ValueError:
                    return None  # the coordinator's own decoding reports it
                if not decoder.full:
                    return None  # partial images are applied row by row
                events.append((event, table_map, decoder))
            elif kind in _PLAIN:
                if kind is MariaGtidEvent and event.xa_format_id is not None:
                    return None
            elif kind is Query and event.query in _DELIMITERS:
                continue
            else:
                return None
        if txn.is_ddl:
            return None
        tables = self.tables
        for _event, table_map, decoder in events:
            table = tables.get((table_map.schema, table_map.table))
            if (
                table is not None
                and table.columns is not decoder.columns
                and table.columns != decoder.columns
            ):
                return False
        marks = {key: (len(t.seq), t.rows) for key, t in tables.items()}  # to take the transaction back
        seq, rows = self.seq, self.rows
        try:
            for event, table_map, decoder in events:
                self._queue(event, table_map, decoder)
        except ValueError:
            for key in list(tables):
                if key not in marks:
                    del tables[key]  # new to the run with this transaction
                    continue
                table = tables[key]
                length, table.rows = marks[key]
                for column in (table.seq, table.op, table.must, *table.values):
                    del column[length:]
            self.seq, self.rows = seq, rows
            return None  # the coordinator's own decoding reports it
        self.transactions.append(txn)
        return True

    def _queue(self, event: RowsEvent, table_map: TableMap, decoder: RowDecoder) -> None:
        """Decode the event's images straight into its table's columns: a row's before image and
        after image (UPDATE) follow each other, numbered in stream order."""
        key = (table_map.schema, table_map.table)
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = _Table(
                key[0], key[1], decoder.columns, values=[[] for _ in decoder.columns]
            )
        kind = decoder.kind
        two = kind is _UPDATE
        n = decoder.decode_into(event, table_map, table.values + table.values if two else table.values)
        first = self.seq
        if two:
            table.seq.extend(range(first, first + 2 * n))
            table.op.extend(_DELETE_UPSERT * n)
            table.must.extend(_MUST_THEN_NEW * n)
            self.seq = first + 2 * n
        else:
            table.seq.extend(range(first, first + n))
            write = kind is _WRITE
            table.op.extend((1 if write else 0,) * n)
            table.must.extend((0 if write else 1,) * n)
            self.seq = first + n
        table.rows += n
        self.rows += n

    def build(self) -> PreparedRun:
        tables = []
        for table in self.tables.values():
            arrays = [
                pa.array(table.seq, type=pa.int64()),
                pa.array(table.op, type=pa.int8()),
                pa.array(table.must, type=pa.int8()),
            ]
            for info, values in zip(table.columns, table.values, strict=True):
                convert, arrow_type = value_converter(info)
                arrays.append(pa.array(convert(values) if convert else values, type=arrow_type))
            names = ["seq", "op", "must", *(f"c{i}" for i in range(len(table.columns)))]
            tables.append(
                TableOps(
                    table.schema,
                    table.name,
                    table.columns,
                    pa.Table.from_arrays(arrays, names=names),
                    table.rows,
                )
            )
        transactions = [
            RunTransaction(
                t.gtid,
                t.start,
                t.end,
                t.source_log_file,
                t.source_end_pos,
                t.timestamp,
                t.original_commit_timestamp,
                t.size,
                t.row_events,
            )
            for t in self.transactions
        ]
        return PreparedRun(transactions, tables, self.rows, self.seq)


def prepare_segment(segment: Segment, run_length: int) -> PreparedSegment:
    """Read one segment and prepare its runs (in a worker process); runs hold at most run_length
    transactions."""
    logs = RelayLogSet(None, segment.files)
    stop_name, stop_pos = segment.stop if segment.stop is not None else ("", -1)
    events = stream_events(
        logs, start_file=segment.files[0].name, start_pos=segment.start_pos, state=segment.state
    )
    assembler = TransactionAssembler()
    items: list[Transaction | LoggedEvent | Incomplete | PreparedRun] = []
    builder = _RunBuilder()
    done = Position(segment.files[0].name, segment.start_pos)  # everything before it is in items

    def close_run() -> None:
        nonlocal builder
        if builder.transactions:
            try:
                items.append(builder.build())
            except (pa.ArrowException, ValueError, TypeError, OverflowError):
                items.extend(builder.transactions)  # values Arrow refuses: the coordinator's way reports them
        builder = _RunBuilder()

    try:
        for logged in events:
            if logged.pos == stop_pos and logged.log_name == stop_name:
                break
            for item in assembler.feed(logged):
                if isinstance(item, Transaction):
                    taken = builder.add(item)
                    if taken is False:
                        close_run()
                        taken = builder.add(item)
                    if taken:
                        if len(builder.transactions) >= run_length:
                            close_run()
                    else:
                        close_run()
                        items.append(item)
                    done = item.end
                else:
                    close_run()
                    items.append(item)
                    if isinstance(item, LoggedEvent):
                        done = Position(item.log_name, item.end_pos)
    except BinlogError:
        close_run()
        return PreparedSegment(segment.number, items, done)
    finally:
        events.close()  # type: ignore[attr-defined]
    close_run()
    return PreparedSegment(segment.number, items)


def can_follow(runs: list[PreparedRun], following: PreparedRun) -> bool:
    """Whether `following` (next in the relay log) can be applied together with `runs`: the tables
    they share were logged with the same columns (no DDL between them changed a definition)."""
    columns = {(t.schema, t.table): t.columns for run in runs for t in run.tables}
    for ops in following.tables:
        known = columns.get((ops.schema, ops.table))
        if known is not None and known != ops.columns:
            return False
    return True


def merge_runs(runs: list[PreparedRun]) -> PreparedRun:
    """Consecutive runs (each can_follow the one before) as one: their transactions in order, each
    table's operations concatenated and renumbered so that seq keeps the relay log's order.

    Why: the applier's cost per run is mostly per statement and per commit, not per row, so runs
    that are ready together are cheaper applied together.
    """
    if len(runs) == 1:
        return runs[0]
    parts: dict[tuple[str, str], list[TableOps]] = {}
    transactions: list[RunTransaction] = []
    offset = 0
    for run in runs:
        transactions.extend(run.transactions)
        for ops in run.tables:
            data = ops.ops
            if offset:
                data = data.set_column(0, "seq", pc.add(data.column(0), pa.scalar(offset, pa.int64())))
            parts.setdefault((ops.schema, ops.table), []).append(
                TableOps(ops.schema, ops.table, ops.columns, data, ops.rows)
            )
        offset += run.operations
    tables = [
        TableOps(
            group[0].schema,
            group[0].table,
            group[0].columns,
            pa.concat_tables([g.ops for g in group]),
            sum(g.rows for g in group),
        )
        for group in parts.values()
    ]
    return PreparedRun(transactions, tables, sum(r.row_changes for r in runs), offset)


def for_slave(ops: TableOps, table: MysqlTable) -> pa.Table:
    """A run's operations on one table with its columns converted for the slave's definitions."""
    data = ops.ops
    arrays = data.columns[:3]
    for i, (info, target) in enumerate(zip(ops.columns, table.columns, strict=True)):
        arrays.append(for_target(data.column(3 + i), info, target))
    return pa.Table.from_arrays(arrays, names=data.column_names)
