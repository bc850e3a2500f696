"""The writeset work of `relaydeck analyze` (decode the row images, hash their keys) done in Spark
tasks, many transactions per task. What travels:

- to the tasks, one pickle per batch of transactions holding, per transaction, only the events
  transaction_writeset looks at (table maps, rows events, queries) with their index in the
  transaction. One pickle for many transactions stores each table map once: a source repeats
  the same map before every statement and the reader shares the object (rows.decode_table_map).
  Transactions that need no writeset (a caller decided they run alone) travel without events.
  A rows event travels as its fields without its header, which no task reads: unpickling a
  frozen dataclass and its header tuple took about half of a task's decoding time.
  The catalogs go once, as a broadcast variable; no file path is ever shipped.
- back, per transaction, the hashes as an Arrow list of int64 (the unsigned 64-bit hash stored
  in two's complement).

The replica's own Spark work (preparing segments of the relay log) is engine/pool/spark.py.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa

from ..binlog.constants import RowsKind
from ..binlog.events import Query, RowsEvent, TableMap
from ..scheduling.rowkeys import Decoded, transaction_writeset
from ..slave.schema import Catalog
from ..transactions import Transaction

if TYPE_CHECKING:
    from pyspark.core.broadcast import Broadcast
    from pyspark.sql import DataFrame, SparkSession

Prepared = tuple[list[int] | None, Decoded]

# A batch (one pickle, one Arrow row) holds at most this many transactions or bytes of events:
# large enough that per-row costs vanish, small enough to spread a relay file over several tasks.
BATCH_TRANSACTIONS = 2000
BATCH_BYTES = 16 << 20
# Tasks per core: a few, so one slow batch does not leave the other cores idle.
TASKS_PER_CORE = 2

_PICKLE = pickle.HIGHEST_PROTOCOL
_HASH_BIT = 1 << 63
_HASH_SPAN = 1 << 64

PAYLOAD_SCHEMA = pa.schema([("stream", pa.string()), ("payload", pa.binary())])
RESULT_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("key", pa.int64()),
        ("hashes", pa.list_(pa.int64())),  # null: no writeset
        ("images", pa.binary()),  # null unless images were asked for
        # seconds spent by the task on its batch, on the batch's first row only (0 elsewhere)
        ("unpickle_s", pa.float64()),
        ("writeset_s", pa.float64()),
        ("pickle_s", pa.float64()),
    ]
)
RESULT_DDL = (
    "stream string, key long, hashes array<long>, images binary, "
    "unpickle_s double, writeset_s double, pickle_s double"
)


def signed_hash(value: int) -> int:
    """An unsigned 64-bit writeset hash as the int64 Arrow and Spark store."""
    return value - _HASH_SPAN if value >= _HASH_BIT else value


def unsigned_hash(value: int) -> int:
    return value % _HASH_SPAN


# -- driver side ----------------------------------------------------------------------------------


class Batch(NamedTuple):
    stream: str
    first_key: int
    last_key: int
    payload: bytes


def shipped_events(txn: Transaction) -> tuple[int, tuple[tuple[int, object], ...]]:
    """(event count, (index, event) of what transaction_writeset reads): the rest stays home."""
    kept = tuple(
        (index, logged.event)
        for index, logged in enumerate(txn.events)
        if isinstance(logged.event, TableMap | RowsEvent | Query)
    )
    return len(txn.events), kept


def pack_batches(
    stream: str,
    entries: Iterable[tuple[int, int, Transaction | None]],
    batch_transactions: int = BATCH_TRANSACTIONS,
    group_of: Iterable[object] | None = None,
) -> list[Batch]:
    """Pickle (key, catalog version, transaction or None) entries into batches, in order.

    A transaction given as None needs no writeset (it runs alone): it travels without events and
    comes back with none. group_of, aligned with entries, starts a new batch whenever its value
    changes (the relay file a transaction came from: each file is decoded apart).
    """
    batches: list[Batch] = []
    current: list[tuple[int, int, int, tuple[tuple[int, object], ...] | None]] = []
    size = 0
    previous_group: object = None
    groups = iter(group_of) if group_of is not None else None

    def flush() -> None:
        nonlocal current, size
        if current:
            batches.append(Batch(stream, current[0][0], current[-1][0], dumps_for_tasks(current)))
        current, size = [], 0

    for key, version, txn in entries:
        group = next(groups) if groups is not None else None
        if current and (group != previous_group or len(current) >= batch_transactions or size >= BATCH_BYTES):
            flush()
        previous_group = group
        if txn is None:
            current.append((key, version, 0, None))
        else:
            count, kept = shipped_events(txn)
            current.append((key, version, count, kept))
            size += txn.size
    flush()
    return batches


def _rows_event_reduction(event: RowsEvent) -> tuple[object, tuple[object, ...]]:
    fields = (
        int(event.kind),
        event.version,
        event.table_id,
        event.flags,
        event.extra_data,
        event.column_count,
        event.columns_before,
        event.columns_after,
        event.rows_data,
        event.partial,
    )
    return _shipped_rows_event, fields


def _shipped_rows_event(kind: int, *fields: object) -> RowsEvent:
    return RowsEvent(None, RowsKind(kind), *fields)  # type: ignore[arg-type]  # the header stayed home


_SHIPPING = {**copyreg.dispatch_table, RowsEvent: _rows_event_reduction}


def dumps_for_tasks(value: object) -> bytes:
    """pickle.dumps, with rows events slimmed for the trip (only in this pickle, not process-wide)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, _PICKLE)
    pickler.dispatch_table = _SHIPPING
    pickler.dump(value)
    return buffer.getvalue()


def tasks_for(spark: SparkSession, batches: int) -> int:
    return max(1, min(batches, TASKS_PER_CORE * spark.sparkContext.defaultParallelism))


def payload_table(batches: Sequence[Batch], tasks: int) -> pa.Table:
    """The batches as an Arrow table of `tasks` chunks: Spark makes one partition of each chunk.

    Batches go to the chunk with the fewest bytes so far, largest first, so tasks end together.
    """
    tasks = max(1, min(tasks, len(batches)))
    chunks: list[list[Batch]] = [[] for _ in range(tasks)]
    loads = [0] * tasks
    for batch in sorted(batches, key=lambda b: len(b.payload), reverse=True):
        lightest = loads.index(min(loads))
        chunks[lightest].append(batch)
        loads[lightest] += len(batch.payload)
    record_batches = [
        pa.record_batch(
            [
                pa.array([b.stream for b in chunk], pa.string()),
                pa.array([b.payload for b in chunk], pa.binary()),
            ],
            schema=PAYLOAD_SCHEMA,
        )
        for chunk in chunks
        if chunk
    ]
    return pa.Table.from_batches(record_batches, schema=PAYLOAD_SCHEMA)


def writeset_frame(
    spark: SparkSession, payloads: pa.Table, catalogs: list[Catalog]
) -> tuple[DataFrame, Broadcast]:
    """The lazy DataFrame of per-transaction results (RESULT_SCHEMA) and the catalogs' broadcast,
    which the caller destroys once it has what it needs."""
    broadcast = spark.sparkContext.broadcast(catalogs)
    frame = spark.createDataFrame(payloads)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return writeset_task(batches, broadcast.value)

    return frame.mapInArrow(run, RESULT_DDL), broadcast


# -- task side ------------------------------------------------------------------------------------


class _Slot(NamedTuple):
    """What transaction_writeset reads of a LoggedEvent: the event (None for one left home)."""

    event: object


@dataclass(frozen=True, slots=True)
class ShippedTransaction:
    """What transaction_writeset reads of a Transaction: its events, at their original indexes."""

    events: tuple[_Slot, ...] = field(default=())

    @classmethod
    def of(cls, count: int, kept: tuple[tuple[int, object], ...]) -> ShippedTransaction:
        slots = [_EMPTY] * count
        for index, event in kept:
            slots[index] = _Slot(event)
        return cls(tuple(slots))


_EMPTY = _Slot(None)


def writeset_task(batches: Iterator[pa.RecordBatch], catalogs: list[Catalog]) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark Python worker: each payload row becomes one result row per transaction."""
    for record_batch in batches:
        streams = record_batch.column("stream").to_pylist()
        payloads = record_batch.column("payload").to_pylist()
        for stream, payload in zip(streams, payloads, strict=True):
            yield _batch_result(stream, payload, catalogs)


def _batch_result(stream: str, payload: bytes, catalogs: list[Catalog]) -> pa.RecordBatch:
    started = time.perf_counter()
    entries = pickle.loads(payload)
    unpickled = time.perf_counter()
    keys: list[int] = []
    hash_lists: list[list[int] | None] = []
    for key, version, count, kept in entries:
        keys.append(key)
        if kept is None:
            hash_lists.append(None)
            continue
        hashes, _ = transaction_writeset(ShippedTransaction.of(count, kept), catalogs[version])  # type: ignore[arg-type]
        hash_lists.append([signed_hash(h) for h in hashes] if hashes is not None else None)
    computed = time.perf_counter()
    images: list[bytes | None] = [None] * len(keys)  # the images column stays for its schema
    pickled = computed
    zeros = [0.0] * (len(keys) - 1)
    return pa.record_batch(
        [
            pa.array([stream] * len(keys), pa.string()),
            pa.array(keys, pa.int64()),
            pa.array(hash_lists, pa.list_(pa.int64())),
            pa.array(images, pa.binary()),
            pa.array([unpickled - started, *zeros], pa.float64()),
            pa.array([computed - unpickled, *zeros], pa.float64()),
            pa.array([pickled - computed, *zeros], pa.float64()),
        ],
        schema=RESULT_SCHEMA,
    )
