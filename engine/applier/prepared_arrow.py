"""A prepared segment as one Arrow IPC stream: how a Spark task hands its result to the driver.

The stream holds one record batch of one row. Each run contributes list columns: its transactions
(a struct per transaction, one field per TransactionRecord field, whatever fields it has), the first
operation of each transaction, its writesets, and each table's operations (a struct per
operation, the table's own columns); the columns' descriptions, the run's other fields and the
segment's small fields (resume_at, gap, continuity) are JSON in the schema's metadata. The run's
GTID batch is rebuilt from its transactions on the driver.

Items that are not runs (DDL, statements, coordinator events, incomplete groups) are rare and
travel as their positions only: the driver, which holds the relay-log files, reads them again with
the ordinary reader. A re-read that does not find what the task found is an error, and whoever
reads the segment then reads it the ordinary way.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ..binlog.columns import ColumnInfo
from ..binlog.reader import BinlogFile, LoggedEvent, ReaderState
from ..gtids import GtidBatch
from ..relaylog.segments import Segment
from ..transactions import Incomplete, Position, Transaction, TransactionAssembler, TransactionRecord
from .prepared import PreparedRun, PreparedSegment, RunWritesets, TableOps

_METADATA_KEY = b"relaydeck.prepared_segment"
# LZ4-compressed buffers: the stream crosses Spark's JVM and sockets, where its bytes cost more
# than compressing them (measured: 20 MB of OLTP runs in 8.9 MB)
_WRITE_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")
# PreparedRun fields carried as Arrow columns (or rebuilt); any other field travels as JSON
_RUN_COLUMNS = frozenset({"transactions", "tables", "op_starts", "writesets", "gtids"})


def encode_segment(prepared: PreparedSegment) -> bytes:
    columns: dict[str, pa.Array] = {}
    items: list[list[Any]] = []
    runs: list[dict[str, Any]] = []
    for item in prepared.items:
        if isinstance(item, PreparedRun):
            prefix = f"r{len(runs)}."
            items.append(["run", len(runs)])
            runs.append(_encode_run(item, prefix, columns))
        elif isinstance(item, Transaction):
            items.append(["transaction", *_span(item.start, item.end)])
        elif isinstance(item, Incomplete):
            last = item.events[-1]
            items.append(
                ["incomplete", *_span(item.start, Position(last.log_name, last.end_pos)), item.reason]
            )
        elif isinstance(item, LoggedEvent):
            items.append(["event", item.log_name, item.pos, item.end_pos])
        else:
            raise TypeError(f"a prepared segment holds no {type(item).__name__}")
    segment_fields = {
        f.name: plain(getattr(prepared, f.name))
        for f in dataclasses.fields(prepared)
        if f.name not in ("items",)
    }
    metadata = {"segment": segment_fields, "items": items, "runs": runs}
    schema = pa.schema(
        [pa.field(name, array.type) for name, array in columns.items()],
        metadata={_METADATA_KEY: json.dumps(metadata, separators=(",", ":"))},
    )
    batch = pa.record_batch(list(columns.values()), schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=_WRITE_OPTIONS) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def decode_segment(data: bytes, segment: Segment) -> PreparedSegment:
    with pa.ipc.open_stream(data) as reader:
        batch = reader.read_next_batch()
    metadata = json.loads(batch.schema.metadata[_METADATA_KEY])
    columns = dict(zip(batch.schema.names, batch.columns, strict=True))
    runs = [_decode_run(spec, f"r{i}.", columns) for i, spec in enumerate(metadata["runs"])]
    again = _Rereader(segment)
    items: list[Transaction | LoggedEvent | Incomplete | PreparedRun] = []
    for kind, *where in metadata["items"]:
        if kind == "run":
            items.append(runs[where[0]])
        elif kind == "event":
            items.append(again.event(*where))
        elif kind == "transaction":
            items.append(again.transaction(*where))
        else:
            items.append(again.incomplete(*where))
    hints = typing.get_type_hints(PreparedSegment)
    fields = {name: from_plain(hints[name], value) for name, value in metadata["segment"].items()}
    return PreparedSegment(items=items, **fields)


def _span(start: Position, end: Position) -> list[Any]:
    return [start.log_name, start.pos, end.log_name, end.pos]


# -- runs -------------------------------------------------------------------------------------


def _one_row(values: pa.Array) -> pa.Array:
    """`values` as the one list of a one-row list column."""
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)


def _encode_run(run: PreparedRun, prefix: str, columns: dict[str, pa.Array]) -> dict[str, Any]:
    transactions = run.transactions
    hints = typing.get_type_hints(TransactionRecord)
    names = TransactionRecord._fields
    values = zip(*transactions, strict=True) if transactions else [()] * len(names)
    arrays = [_column_codec(hints[name])[1](field) for name, field in zip(names, values, strict=True)]
    columns[prefix + "transactions"] = _one_row(pa.StructArray.from_arrays(arrays, names=list(names)))
    columns[prefix + "op_starts"] = _one_row(pa.array(run.op_starts, pa.int64()))
    if run.writesets is not None:
        held = run.writesets
        offsets = pa.array(np.concatenate([[0], held.ends]), pa.int32())
        writesets = pa.ListArray.from_arrays(
            offsets, pa.array(held.hashes, pa.uint64()), mask=pa.array(~held.usable)
        )
        columns[prefix + "writesets"] = _one_row(writesets)
    tables = []
    for number, ops in enumerate(run.tables):
        data = ops.ops.combine_chunks()
        operations = pa.StructArray.from_arrays(
            [column.chunk(0) if column.num_chunks else pa.array([], column.type) for column in data.columns],
            fields=list(data.schema),
        )
        columns[f"{prefix}t{number}"] = _one_row(operations)
        tables.append(
            {
                "schema": ops.schema,
                "table": ops.table,
                "rows": ops.rows,
                "columns": [plain(info) for info in ops.columns],
            }
        )
    others = {
        f.name: plain(getattr(run, f.name)) for f in dataclasses.fields(run) if f.name not in _RUN_COLUMNS
    }
    return {"tables": tables, "fields": others}


def _decode_run(spec: dict[str, Any], prefix: str, columns: dict[str, pa.Array]) -> PreparedRun:
    hints = typing.get_type_hints(TransactionRecord)
    struct = columns[prefix + "transactions"].values
    values = [_column_codec(hints[name])[2](struct.field(name)) for name in TransactionRecord._fields]
    transactions = list(map(TransactionRecord, *values))
    gtids = GtidBatch()
    for transaction in transactions:
        if transaction.gtid:
            gtids.add(transaction.gtid)
    writesets = None
    if prefix + "writesets" in columns:
        held = columns[prefix + "writesets"].values
        offsets = held.offsets.to_numpy().astype(np.int64)
        writesets = RunWritesets(
            held.values.to_numpy()[offsets[0] : offsets[-1]],
            offsets[1:] - offsets[0],
            held.is_valid().to_numpy(zero_copy_only=False),
        )
    tables = []
    for number, table in enumerate(spec["tables"]):
        operations = columns[f"{prefix}t{number}"].values
        infos = tuple(from_plain(ColumnInfo, info) for info in table["columns"])
        ops = pa.Table.from_arrays(operations.flatten(), schema=pa.schema(list(operations.type)))
        tables.append(TableOps(table["schema"], table["table"], infos, ops, table["rows"]))
    run_hints = typing.get_type_hints(PreparedRun)
    others = {name: from_plain(run_hints[name], value) for name, value in spec["fields"].items()}
    return PreparedRun(
        transactions=transactions,
        tables=tables,
        gtids=gtids,
        op_starts=columns[prefix + "op_starts"].values.to_pylist(),
        writesets=writesets,
        **others,
    )


_Codec = tuple[pa.DataType, Callable[[Sequence[Any]], pa.Array], Callable[[pa.Array], list[Any]]]
_POSITION = pa.struct([("log_name", pa.string()), ("pos", pa.int64())])
_SCALARS = {int: pa.int64(), str: pa.string(), bool: pa.bool_(), float: pa.float64()}


def _column_codec(hint: Any) -> _Codec:
    """How a TransactionRecord field of this type travels as a column: its Arrow type, the field's
    values as an Arrow array, and the array back as the field's values."""
    hint = _without_none(hint)
    if hint is Position:
        return _POSITION, _positions_out, _positions_back
    if hint in _SCALARS:
        kind = _SCALARS[hint]
        return kind, lambda values: pa.array(values, kind), _pylist
    origin = typing.get_origin(hint)
    if origin in (frozenset, set, tuple, list):
        (item,) = {_without_none(a) for a in typing.get_args(hint) if a is not Ellipsis}
        if item not in _SCALARS:
            raise TypeError(f"a prepared transaction's field of type {hint} has no Arrow column type")
        kind = pa.list_(_SCALARS[item])

        def items_out(values: Sequence[Any]) -> pa.Array:
            return pa.array([None if v is None else list(v) for v in values], kind)

        def items_back(array: pa.Array) -> list[Any]:
            return [None if v is None else origin(v) for v in array.to_pylist()]

        return kind, items_out, items_back
    raise TypeError(f"a prepared transaction's field of type {hint} has no Arrow column type")


def _positions_out(values: Sequence[Position]) -> pa.Array:
    names = pa.array([p.log_name for p in values], pa.string())
    positions = pa.array([p.pos for p in values], pa.int64())
    return pa.StructArray.from_arrays([names, positions], fields=list(_POSITION))


def _positions_back(array: pa.Array) -> list[Position]:
    return list(map(Position, array.field("log_name").to_pylist(), array.field("pos").to_pylist()))


def _pylist(array: pa.Array) -> list[Any]:
    return array.to_pylist()


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


# -- small fields as JSON ---------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A value of plain data classes, named tuples, containers and scalars as JSON data."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return [[plain(k), plain(v)] for k, v in value.items()]
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, frozenset | set):
        return [plain(v) for v in sorted(value)]
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} cannot travel as plain data")


def from_plain(hint: Any, value: Any) -> Any:
    """plain()'s result back, as the type `hint` names."""
    if value is None:
        return None
    hint = _without_none(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        raise TypeError(f"{hint} is ambiguous as plain data")
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: from_plain(hints[k], v) for k, v in value.items() if k in known})
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        hints = typing.get_type_hints(hint)
        return hint(*(from_plain(hints[name], v) for name, v in zip(hint._fields, value, strict=True)))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict:
        return {from_plain(args[0], k): from_plain(args[1], v) for k, v in value}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_plain(args[0], v) for v in value)
        return tuple(from_plain(a, v) for a, v in zip(args, value, strict=True))
    if origin in (list, set, frozenset):
        return origin(from_plain(args[0], v) for v in value)
    if hint is Path:
        return Path(value)
    if origin is Callable or hint is Callable:
        raise TypeError("a callable cannot travel as plain data")
    return value


# -- non-run items, read again ----------------------------------------------------------------


class _Rereader:
    """Reads events of the segment's files on the driver, in any order, walking each file's
    headers only once when asked in stream order."""

    def __init__(self, segment: Segment) -> None:
        self._segment = segment
        self._names = [path.name for path in segment.files]
        self._restart()

    def _restart(self) -> None:
        self._state: ReaderState = copy.deepcopy(self._segment.state)
        self._file = 0  # the state stands in this file (at its read_pos when it was read)
        # the planner walked the state to the segment's start in its first file (Segment.state)
        self._read = self._state.read_file == str(self._segment.files[0])

    def _events(self, name: str, start: int, stop: int) -> list[LoggedEvent]:
        index = self._names.index(name)
        state = self._state
        if index < self._file or (index == self._file and self._read and state.read_pos > start):
            self._restart()
            state = self._state
        while self._file < index:
            # the rest of this file first: its Format_description and Rotate events carry on
            with BinlogFile(self._segment.files[self._file]) as binlog:
                for _ in binlog.events(state, start=binlog.size, resume=self._read):
                    pass
            self._file, self._read = self._file + 1, False
        with BinlogFile(self._segment.files[index]) as binlog:
            events = list(binlog.events(state, start=start, stop=stop, resume=self._read))
        self._read = True
        return events

    def _span(self, start_name: str, start: int, end_name: str, end: int) -> list[LoggedEvent]:
        if start_name == end_name:
            return self._events(start_name, start, end)
        first, last = self._names.index(start_name), self._names.index(end_name)
        events = self._events(start_name, start, 1 << 62)
        for name in self._names[first + 1 : last]:
            events.extend(self._events(name, 4, 1 << 62))
        events.extend(self._events(end_name, 4, end))
        return events

    def event(self, name: str, pos: int, end: int) -> LoggedEvent:
        found = [e for e in self._events(name, pos, end) if not e.inner]
        if len(found) != 1 or found[0].pos != pos or found[0].end_pos != end:
            raise ValueError(f"no event at {name}:{pos} as the task read it")
        return found[0]

    def transaction(self, start_name: str, start: int, end_name: str, end: int) -> Transaction:
        assembler = TransactionAssembler()
        found = [
            item
            for logged in self._span(start_name, start, end_name, end)
            for item in assembler.feed(logged)
            if not isinstance(item, LoggedEvent)
        ]
        if (
            len(found) != 1
            or not isinstance(found[0], Transaction)
            or found[0].start != Position(start_name, start)
            or found[0].end != Position(end_name, end)
        ):
            raise ValueError(f"no transaction at {start_name}:{start} as the task read it")
        return found[0]

    def incomplete(self, start_name: str, start: int, end_name: str, end: int, reason: str) -> Incomplete:
        assembler = TransactionAssembler()
        for logged in self._span(start_name, start, end_name, end):
            for item in assembler.feed(logged):
                if not isinstance(item, LoggedEvent):
                    raise ValueError(f"no incomplete group at {start_name}:{start} as the task read it")
        (cut,) = assembler.finish()
        if cut.start != Position(start_name, start):
            raise ValueError(f"no incomplete group at {start_name}:{start} as the task read it")
        return Incomplete(cut.events, reason)
