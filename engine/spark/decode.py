"""The coordinator's writeset work (decode the row images, hash their keys) done in Spark tasks.

`SparkRowDecoder.prepare` returns what `transaction_writeset` returns for each transaction, but the
decoding and hashing run in Spark's Python workers, many transactions per task. What travels:

- to the tasks, one pickle per batch of transactions holding, per transaction, only the events
  transaction_writeset looks at (table maps, rows events, queries) with their index in the
  transaction. One pickle for many transactions stores each table map once: a source repeats
  the same map before every statement and the reader shares the object (rows.decode_table_map).
  Transactions that need no writeset (a caller decided they run alone) travel without events.
  A rows event travels as its fields without its header, which no task reads: unpickling a
  frozen dataclass and its header tuple took about half of a task's decoding time.
  The catalogs go once, as a broadcast variable; no file path is ever shipped.
- back, per transaction, the hashes as an Arrow list of int64 (the unsigned 64-bit hash stored
  in two's complement) and, when the caller wants them, the decoded images as a pickle of only
  their values (kind, count, before, after). The table map and the column descriptions are
  rebuilt on the driver from the transaction it already holds, so they never travel back.

`LocalRowDecoder` has the same interface and runs in this process, so callers can swap them.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ..binlog.columns import ColumnInfo, RowImages, table_columns
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


class LocalRowDecoder:
    """In this process, one transaction after another: what the thread coordinator does."""

    def prepare(self, transactions: Sequence[Transaction], catalog: Catalog) -> list[Prepared]:
        return [transaction_writeset(txn, catalog) for txn in transactions]


class StartingSparkDecoder:
    """prepare() by Spark once its session has started, by LocalRowDecoder until then.

    Starting Spark (a JVM, the context) takes seconds (13.5 s measured here in local mode), and the
    applier need not wait for it: the two give the same results, so the first batches of a start
    are prepared here while Spark starts in a thread of its own. An error starting Spark is
    raised by the next prepare().
    """

    def __init__(self, start: Callable[[], SparkSession]) -> None:
        self._local = LocalRowDecoder()
        self._spark: SparkRowDecoder | None = None
        self._error: BaseException | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._start, args=(start,), name="spark-start", daemon=True)
        self._thread.start()

    def _start(self, start: Callable[[], SparkSession]) -> None:
        try:
            self._spark = SparkRowDecoder(start())
        except BaseException as exc:  # handed to the applier's thread by prepare()
            self._error = exc
        finally:
            self._started.set()

    @property
    def spark(self) -> SparkRowDecoder | None:
        """The Spark decoder once Spark has started (None before)."""
        return self._spark

    def wait_started(self, timeout: float | None = None) -> bool:
        return self._started.wait(timeout)

    def prepare(self, transactions: Sequence[Transaction], catalog: Catalog) -> list[Prepared]:
        if self._error is not None:
            raise self._error
        if self._spark is None:
            return self._local.prepare(transactions, catalog)
        return self._spark.prepare(transactions, catalog)


@dataclass(slots=True)
class DecodeTimings:
    """Where the time of the last Spark prepare() went (seconds; task figures summed over tasks)."""

    driver_pickle_s: float = 0.0
    spark_job_s: float = 0.0  # from submitting the job until its Arrow result is on the driver
    task_unpickle_s: float = 0.0
    task_writeset_s: float = 0.0  # decoding and hashing: transaction_writeset itself
    task_pickle_s: float = 0.0
    driver_unpickle_s: float = 0.0
    payload_bytes: int = 0
    result_bytes: int = 0
    batches: int = 0
    tasks: int = 0
    transactions: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


class SparkRowDecoder:
    """prepare() as LocalRowDecoder's, computed by Spark tasks."""

    def __init__(self, spark: SparkSession, batch_transactions: int = BATCH_TRANSACTIONS) -> None:
        self.spark = spark
        self.batch_transactions = batch_transactions
        self.last_timings = DecodeTimings()

    def prepare(self, transactions: Sequence[Transaction], catalog: Catalog) -> list[Prepared]:
        timings = DecodeTimings(transactions=len(transactions))
        self.last_timings = timings
        if not transactions:
            return []
        started = time.perf_counter()
        batches = pack_batches(
            "", ((key, 0, txn) for key, txn in enumerate(transactions)), self.batch_transactions
        )
        payloads = payload_table(batches, tasks_for(self.spark, len(batches)))
        timings.driver_pickle_s = time.perf_counter() - started
        timings.payload_bytes = sum(len(b.payload) for b in batches)
        timings.batches = len(batches)
        timings.tasks = payloads.column("payload").num_chunks
        started = time.perf_counter()
        frame, broadcast = writeset_frame(self.spark, payloads, [catalog], with_images=True)
        try:
            result = frame.toArrow()
        finally:
            broadcast.destroy()
        timings.spark_job_s = time.perf_counter() - started
        started = time.perf_counter()
        prepared: list[Prepared | None] = [None] * len(transactions)
        images_bytes = 0
        keys = result.column("key").to_pylist()
        hash_lists = result.column("hashes").to_pylist()
        image_blobs = result.column("images").to_pylist()
        columns_of: dict[bytes, tuple[ColumnInfo, ...]] = {}
        for key, hashes, blob in zip(keys, hash_lists, image_blobs, strict=True):
            images_bytes += len(blob)
            decoded = rebuild_images(transactions[key], pickle.loads(blob), columns_of)
            prepared[key] = ([unsigned_hash(h) for h in hashes] if hashes is not None else None, decoded)
        timings.driver_unpickle_s = time.perf_counter() - started
        timings.result_bytes = images_bytes + sum(8 * len(h) for h in hash_lists if h)
        timings.task_unpickle_s = pc.sum(result.column("unpickle_s")).as_py() or 0.0
        timings.task_writeset_s = pc.sum(result.column("writeset_s")).as_py() or 0.0
        timings.task_pickle_s = pc.sum(result.column("pickle_s")).as_py() or 0.0
        missing = [i for i, p in enumerate(prepared) if p is None]
        if missing:
            raise RuntimeError(
                f"Spark returned no result for {len(missing)} transactions (first: {missing[0]})"
            )
        return prepared  # type: ignore[return-value]


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
    spark: SparkSession, payloads: pa.Table, catalogs: list[Catalog], with_images: bool
) -> tuple[DataFrame, Broadcast]:
    """The lazy DataFrame of per-transaction results (RESULT_SCHEMA) and the catalogs' broadcast,
    which the caller destroys once it has what it needs."""
    broadcast = spark.sparkContext.broadcast(catalogs)
    frame = spark.createDataFrame(payloads)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return writeset_task(batches, broadcast.value, with_images)

    return frame.mapInArrow(run, RESULT_DDL), broadcast


def rebuild_images(
    txn: Transaction,
    values: list[tuple[int, int, int, dict | None, dict | None]],
    columns_of: dict[bytes, tuple[ColumnInfo, ...]],
) -> Decoded:
    """RowImages from the values a task sent back, with the table maps of the driver's transaction
    (the map in force at each rows event, as transaction_writeset found it)."""
    if not values:
        return {}
    wanted = {index: rest for index, *rest in values}
    decoded: Decoded = {}
    maps: dict[int, TableMap] = {}
    for index, logged in enumerate(txn.events):
        event = logged.event
        if isinstance(event, TableMap):
            maps[event.table_id] = event
        elif index in wanted:
            table_map = maps[event.table_id]  # type: ignore[attr-defined]
            columns = columns_of.get(table_map.raw_metadata_key)
            if columns is None:
                columns = columns_of[table_map.raw_metadata_key] = table_columns(table_map)
            kind, count, before, after = wanted[index]
            decoded[index] = RowImages(table_map, RowsKind(kind), columns, before, after, count)
    return decoded


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


def writeset_task(
    batches: Iterator[pa.RecordBatch], catalogs: list[Catalog], with_images: bool
) -> Iterator[pa.RecordBatch]:
    """Runs in a Spark Python worker: each payload row becomes one result row per transaction."""
    for record_batch in batches:
        streams = record_batch.column("stream").to_pylist()
        payloads = record_batch.column("payload").to_pylist()
        for stream, payload in zip(streams, payloads, strict=True):
            yield _batch_result(stream, payload, catalogs, with_images)


def _batch_result(stream: str, payload: bytes, catalogs: list[Catalog], with_images: bool) -> pa.RecordBatch:
    started = time.perf_counter()
    entries = pickle.loads(payload)
    unpickled = time.perf_counter()
    keys: list[int] = []
    hash_lists: list[list[int] | None] = []
    decoded_per_txn: list[Decoded] = []
    for key, version, count, kept in entries:
        keys.append(key)
        if kept is None:
            hash_lists.append(None)
            decoded_per_txn.append({})
            continue
        hashes, decoded = transaction_writeset(ShippedTransaction.of(count, kept), catalogs[version])  # type: ignore[arg-type]
        hash_lists.append([signed_hash(h) for h in hashes] if hashes is not None else None)
        decoded_per_txn.append(decoded)
    computed = time.perf_counter()
    images: list[bytes | None] = [None] * len(keys)
    if with_images:
        images = [
            pickle.dumps(
                [(index, int(ri.kind), ri.count, ri.before, ri.after) for index, ri in decoded.items()],
                _PICKLE,
            )
            for decoded in decoded_per_txn
        ]
    pickled = time.perf_counter()
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
