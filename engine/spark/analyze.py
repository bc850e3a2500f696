"""`relaydeck analyze`: the parallelism a set of relay logs offers each scheduler, computed with Spark.

Per channel, the driver reads the relay logs once, in order, as the coordinator would: it
assembles transactions, skips repeated GTIDs, numbers the rest 1, 2, 3… (ordinals), follows the
source's logical clock, and replays the definitions (DDL) into an in-memory slave so that every
transaction is hashed against the catalog the coordinator would hold when scheduling it. The
work that grows with the data runs in Spark:

- decoding and hashing (engine.spark.decode), batches of one relay file each, in parallel;
- WRITESET dependencies as window functions over the keys: for each key, the previous
  transaction that wrote it (lag over the key's transactions ordered by ordinal); a transaction
  depends on the newest such transaction since its window began. A window begins after each
  transaction without a writeset and, when the bounded history would overflow, after the
  transaction that overflows it (scheduling.writeset.WritesetHistory). Overflows are found with a
  running count of the keys each window has seen; the rare windows that overflow are rescanned
  exactly, one window per task;
- the hottest keys and tables (aggregations).

Critical paths and ideal speedups are computed on the driver from the dependencies: a
transaction weighs its rows events + 1 (a stand-in for its cost), finishes at the latest finish
of what it depends on plus its weight, and the ideal speedup with N workers is
min(N, total weight / critical path). Under DATABASE a transaction waits for the earlier ones on
its databases (none logged or more than 16: for all before it); LOGICAL_CLOCK and WRITESET wait
for every ordinal up to their dependency. Transactions that change definitions run alone under
every scheduler, as in the applier.

Each channel's DDL is replayed into its own catalog: channels that alter each other's tables
would be hashed here as if the other channel's DDL came after all of this channel's.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..applier.executor import TransactionExecutor, is_structural
from ..applier.vocabulary import ParallelOptions
from ..binlog.events import Incident, RowsEvent, TableMap
from ..binlog.reader import LoggedEvent
from ..errors import BinlogError
from ..gtids import ExecutedGtids
from ..relaylog.index import RelayLogSet, read_index
from ..relaylog.stream import stream_events
from ..scheduling.clock import LogicalClock
from ..scheduling.partition import MAX_DBS_IN_QUERY_MTS
from ..scheduling.rowkeys import transaction_writeset
from ..scheduling.writeset import DEFAULT_HISTORY_SIZE
from ..slave.database import Slave
from ..slave.identifiers import quote_ident
from ..slave.names import duckdb_schema
from ..slave.rowapply import slave_table_ref
from ..slave.schema import Catalog, MysqlTable
from ..slave.types import duckdb_type
from ..transactions import Transaction, TransactionAssembler
from .decode import (
    Batch,
    ShippedTransaction,
    pack_batches,
    payload_table,
    tasks_for,
    unsigned_hash,
    writeset_frame,
)

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_WORKERS = (1, 2, 4, 8, 16)
DEFAULT_TOP = 10
SCHEDULERS = ("database", "logical_clock", "writeset")
# The applier runs a transaction larger than this alone (replica_pending_jobs_size_max).
PENDING_JOBS_SIZE_MAX = ParallelOptions().pending_jobs_size_max
SCHEDULE_FORMAT = 1

LogsInput = RelayLogSet | str | Path


# -- the catalog as the coordinator sees it ---------------------------------------------------------


class CatalogTimeline:
    """The catalog after each definition change, made by the applier's own executor on an
    in-memory slave: only structural transactions are applied, without their row events."""

    def __init__(self, initial: Catalog | None = None) -> None:
        self._slave = Slave(":memory:")
        self._executor = TransactionExecutor(self._slave, strict=False)
        self.errors: list[str] = []
        if initial is not None and (len(initial) or initial.databases):
            self._install(initial)
        self.versions: list[Catalog] = [self._slave.catalog.copy()]

    def apply(self, txn: Transaction) -> None:
        """Apply a transaction that changes definitions: a new version unless it failed."""
        definitions_only = replace(
            txn, events=tuple(e for e in txn.events if not isinstance(e.event, TableMap | RowsEvent))
        )
        self._slave.begin(changes_definitions=True)
        try:
            self._executor.apply(definitions_only)
            self._executor.flush()
            self._slave.commit()
        except Exception as exc:  # the replay would stop here; the analysis goes on without it
            self._slave.rollback()
            self._executor.discard()
            self.errors.append(f"{txn.describe()}: {type(exc).__name__}: {exc}")
            return
        # A version per definition change, even one that changed nothing here: comparing catalogs
        # costs more than broadcasting them (versions share their unchanged table objects).
        self.versions.append(self._slave.catalog.copy())

    def close(self) -> None:
        self._slave.close()

    def _install(self, catalog: Catalog) -> None:
        """Empty DuckDB tables behind a starting catalog, so that later DDL finds what it alters."""
        con, duckdb_catalog = self._slave.con, self._slave.duckdb_catalog
        self._slave.begin(changes_definitions=True)
        for key in catalog:
            table: MysqlTable = catalog[key]
            columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in table.columns)
            schema = f"{quote_ident(duckdb_catalog)}.{quote_ident(duckdb_schema(table.schema))}"
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            con.execute(f"CREATE TABLE {slave_table_ref(table, duckdb_catalog)} ({columns})")
        self._slave.save_catalog(catalog.copy())
        self._slave.commit()


# -- reading a channel (driver) -----------------------------------------------------------------------


@dataclass
class ChannelRead:
    """What the driver learns reading one channel's relay logs; lists are indexed by ordinal - 1."""

    name: str
    index_file: str | None
    weights: list[int] = field(default_factory=list)
    clock_after: list[int] = field(default_factory=list)  # LOGICAL_CLOCK, runs-alone included
    databases: list[frozenset[str] | None] = field(default_factory=list)
    alone: list[bool] = field(default_factory=list)
    tables: list[tuple[str, ...]] = field(default_factory=list)  # "db.table" of its table maps
    rows_events: list[int] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    catalogs: list[Catalog] = field(default_factory=list)  # this channel's versions, in order
    skipped: int = 0  # repeated GTIDs: the coordinator skips them as already applied
    ddl_errors: list[str] = field(default_factory=list)
    stopped_by: str = "end of relay log"
    catalog_base: int = 0  # the number of catalogs[0] among all channels' versions

    @property
    def transactions(self) -> int:
        return len(self.weights)


def read_channel(
    name: str,
    logs: LogsInput,
    initial: Catalog | None = None,
    pending_jobs_size_max: int = PENDING_JOBS_SIZE_MAX,
    catalog_base: int = 0,
) -> ChannelRead:
    """Read a channel as its coordinator would; batches carry catalog versions numbered from
    catalog_base (so that several channels' versions can share one broadcast list)."""
    logs = _log_set(logs)
    read = ChannelRead(name, str(logs.index_file) if logs.index_file else None, catalog_base=catalog_base)
    timeline = CatalogTimeline(initial)
    clock = LogicalClock()
    scheduled = ExecutedGtids()
    barrier = 0  # the last ordinal that ran alone: nothing after it starts before it commits
    entries: list[tuple[int, int, Transaction | None]] = []
    files: list[str] = []
    try:
        for item in _channel_items(logs, read):
            ordinal = read.transactions + 1
            if item.gtid and scheduled.contains(item.gtid):
                read.skipped += 1
                clock.skipped(item, ordinal - 1)
                continue
            structural = is_structural(item)
            alone = structural or item.size > pending_jobs_size_max
            after_clock = clock.dependency(item, ordinal)
            read.clock_after.append(ordinal - 1 if alone else max(after_clock, barrier))
            read.weights.append(item.row_events + 1)
            read.databases.append(item.databases)
            read.alone.append(alone)
            read.rows_events.append(item.row_events)
            read.tables.append(_tables_of(item))
            version = catalog_base + len(timeline.versions) - 1
            entries.append((ordinal, version, None if alone else item))
            files.append(item.start.log_name)
            if item.gtid:
                scheduled.add(item.gtid)
            if alone:
                barrier = ordinal
            if structural:
                timeline.apply(item)
        read.batches = pack_batches(name, entries, group_of=files)
        read.catalogs = timeline.versions
        read.ddl_errors = timeline.errors
    finally:
        timeline.close()
    return read


def _channel_items(logs: RelayLogSet, read: ChannelRead) -> Iterator[Transaction]:
    """The channel's transactions in order; an incident or unreadable input ends the channel
    (recorded in read.stopped_by), as it stops the applier."""
    assembler = TransactionAssembler()
    events = stream_events(logs)
    try:
        for logged in events:
            for item in assembler.feed(logged):
                if isinstance(item, Transaction):
                    yield item
                elif isinstance(item, LoggedEvent) and isinstance(item.event, Incident):
                    read.stopped_by = f"incident at {item.log_name}:{item.pos}"
                    return
    except BinlogError as exc:
        read.stopped_by = f"unreadable relay log: {exc.one_line()}"
    finally:
        events.close()  # type: ignore[attr-defined]


def _tables_of(txn: Transaction) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(
            f"{e.event.schema}.{e.event.table}" for e in txn.events if isinstance(e.event, TableMap)
        )
    )


def _log_set(logs: LogsInput) -> RelayLogSet:
    return logs if isinstance(logs, RelayLogSet) else read_index(logs)


# -- WRITESET dependencies in Spark -------------------------------------------------------------------


def writeset_dependencies(
    spark: SparkSession,
    logs: LogsInput,
    *,
    history_size: int = DEFAULT_HISTORY_SIZE,
    catalog: Catalog | None = None,
) -> list[int]:
    """Per transaction (ordinal 1, 2, …) the ordinal it depends on under WRITESET: what the
    multi-threaded applier's coordinator computes for these relay logs on a fresh slave."""
    read = read_channel("", logs, catalog)
    with _WritesetJob(spark, [read], history_size) as job:
        return job.dependencies()[""]


class _WritesetJob:
    """The channels' writesets as a persisted DataFrame, and what is computed from it."""

    def __init__(self, spark: SparkSession, reads: Sequence[ChannelRead], history_size: int) -> None:
        if history_size < 1:
            raise ValueError("history_size must be at least 1")
        self.spark = spark
        self.reads = reads
        self.history_size = history_size
        self.timings: dict[str, float] = {}
        batches = [b for r in reads for b in r.batches]
        catalogs = [c for r in reads for c in r.catalogs]
        payloads = payload_table(batches, tasks_for(spark, len(batches)))
        self._frame, self._broadcast = writeset_frame(spark, payloads, catalogs)
        self._frame = self._frame.select("stream", "key", "hashes").persist()
        self._keys: DataFrame | None = None

    def __enter__(self) -> _WritesetJob:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._keys is not None:
            self._keys.unpersist()
        self._frame.unpersist()
        self._broadcast.destroy()

    def keys(self) -> DataFrame:
        """One row per (transaction, distinct key): its window start and the key's previous writer."""
        if self._keys is None:
            from pyspark.sql import Window
            from pyspark.sql import functions as F

            txns = self._frame.select(
                "stream", F.col("key").alias("ordinal"), F.array_distinct("hashes").alias("hashes")
            )
            opens = F.col("hashes").isNull() | (F.size("hashes") == 0)
            before = (
                Window.partitionBy("stream").orderBy("ordinal").rowsBetween(Window.unboundedPreceding, -1)
            )
            txns = txns.withColumn(
                # the window a transaction is judged in starts at the last one without a writeset
                "window_start",
                F.coalesce(F.max(F.when(opens, F.col("ordinal"))).over(before), F.lit(0)),
            ).where(~opens)
            by_key = Window.partitionBy("stream", "hash").orderBy("ordinal")
            self._keys = txns.select(
                "stream",
                "ordinal",
                "window_start",
                F.size("hashes").alias("key_count"),
                F.explode("hashes").alias("hash"),
            ).withColumn("previous", F.lag("ordinal").over(by_key))
            self._keys.persist()  # the dependencies and the hot keys both start from it
        return self._keys

    def dependencies(self) -> dict[str, list[int]]:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        started = time.perf_counter()
        keys = self.keys()
        in_window = F.col("previous") > F.col("window_start")
        per_txn = keys.groupBy("stream", "ordinal", "window_start", "key_count").agg(
            F.max(F.when(in_window, F.col("previous"))).alias("newest_writer"),
            F.sum(F.when(in_window, 0).otherwise(1)).alias("new_keys"),
        )
        earlier = (
            Window.partitionBy("stream", "window_start")
            .orderBy("ordinal")
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        # Keys the history holds when the transaction arrives, if nothing overflowed before it.
        held = F.coalesce(F.sum("new_keys").over(earlier), F.lit(0))
        with_keys = per_txn.select(
            "stream",
            "ordinal",
            F.least(F.greatest("window_start", "newest_writer"), F.col("ordinal") - 1).alias("after"),
            ((held + F.col("key_count")) > self.history_size).alias("overflows"),
            "window_start",
        )
        without_keys = self._frame.where(F.col("hashes").isNull() | (F.size("hashes") == 0)).select(
            "stream",
            F.col("key").alias("ordinal"),
            (F.col("key") - 1).alias("after"),
            F.lit(False).alias("overflows"),
            F.lit(-1).cast("long").alias("window_start"),
        )
        result = with_keys.unionByName(without_keys).toArrow()
        self.timings["dependencies_s"] = time.perf_counter() - started
        afters = {r.name: [0] * r.transactions for r in self.reads}
        overflowing: set[tuple[str, int]] = set()
        for stream, ordinal, after, overflows, window_start in zip(
            *(
                result.column(c).to_pylist()
                for c in ("stream", "ordinal", "after", "overflows", "window_start")
            ),
            strict=True,
        ):
            afters[stream][ordinal - 1] = after
            if overflows:
                overflowing.add((stream, window_start))
        if overflowing:
            started = time.perf_counter()
            for stream, ordinal, after in self._rescan(overflowing):
                afters[stream][ordinal - 1] = after
            self.timings["overflow_rescan_s"] = time.perf_counter() - started
        return afters

    def _rescan(self, windows: set[tuple[str, int]]) -> Iterator[tuple[str, int, int]]:
        """Windows whose history overflows: scanned in order, one window per task."""
        from pyspark.sql import functions as F

        wanted = self.spark.createDataFrame(
            pa.table(
                {
                    "stream": pa.array([w[0] for w in windows], pa.string()),
                    "window_start": pa.array([w[1] for w in windows], pa.int64()),
                }
            )
        )
        history_size = self.history_size
        per_txn = (
            self.keys()
            .join(F.broadcast(wanted), ["stream", "window_start"])
            .groupBy("stream", "window_start", "ordinal", "key_count")
            .agg(F.collect_list(F.coalesce("previous", F.lit(-1))).alias("previous"))
        )
        result = (
            per_txn.groupBy("stream", "window_start")
            .applyInPandas(
                lambda frame: scan_window(frame, history_size), "stream string, ordinal long, after long"
            )
            .toArrow()
        )
        yield from zip(*(result.column(c).to_pylist() for c in ("stream", "ordinal", "after")), strict=True)

    def hot_keys(self, top: int) -> dict[str, list[dict[str, Any]]]:
        """Per channel the keys written by the most transactions, with how often they made one wait."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        started = time.perf_counter()
        waited = (F.col("previous") > F.col("window_start")).cast("int")
        counts = (
            self.keys()
            .groupBy("stream", "hash")
            .agg(
                F.count("*").alias("transactions"),
                F.sum(waited).alias("waits"),
                F.min("ordinal").alias("first_ordinal"),
            )
        )
        rank = Window.partitionBy("stream").orderBy(F.desc("transactions"), F.desc("waits"), "hash")
        rows = counts.withColumn("rank", F.row_number().over(rank)).where(F.col("rank") <= top).toArrow()
        self.timings["hot_keys_s"] = time.perf_counter() - started
        out: dict[str, list[dict[str, Any]]] = {r.name: [] for r in self.reads}
        for row in sorted(rows.to_pylist(), key=lambda r: (r["stream"], r["rank"])):
            out[row["stream"]].append(
                {
                    "hash": unsigned_hash(row["hash"]),
                    "transactions": row["transactions"],
                    "waits": row["waits"],
                    "first_ordinal": row["first_ordinal"],
                }
            )
        return out


def scan_window(frame: pd.DataFrame, history_size: int) -> pd.DataFrame:
    """WritesetHistory over one window whose history overflows (rows: one per transaction with
    its key count and each key's previous writer, -1 for none), giving each its dependency."""
    import pandas as pd

    frame = frame.sort_values("ordinal")
    window_start = int(frame["window_start"].iloc[0])
    held = 0
    afters = []
    for ordinal, key_count, previous in zip(
        frame["ordinal"], frame["key_count"], frame["previous"], strict=True
    ):
        newest = max((p for p in previous if p > window_start), default=window_start)
        afters.append(min(newest, ordinal - 1))
        if held + key_count > history_size:
            # judged against the full history, then a new window opens after it
            window_start, held = int(ordinal), 0
        else:
            held += sum(1 for p in previous if p <= window_start)
    return pd.DataFrame({"stream": frame["stream"], "ordinal": frame["ordinal"], "after": afters})


# -- hot tables in Spark ----------------------------------------------------------------------------


def hot_tables(
    spark: SparkSession, reads: Sequence[ChannelRead], top: int
) -> dict[str, list[dict[str, Any]]]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    streams, tables, rows = [], [], []
    for read in reads:
        for names, count in zip(read.tables, read.rows_events, strict=True):
            for table in names:
                streams.append(read.name)
                tables.append(table)
                rows.append(count)
    out: dict[str, list[dict[str, Any]]] = {r.name: [] for r in reads}
    if not tables:
        return out
    frame = spark.createDataFrame(
        pa.table({"stream": streams, "table": tables, "rows_events": pa.array(rows, pa.int64())})
    )
    counts = frame.groupBy("stream", "table").agg(
        F.count("*").alias("transactions"), F.sum("rows_events").alias("rows_events")
    )
    rank = Window.partitionBy("stream").orderBy(F.desc("transactions"), F.desc("rows_events"), "table")
    ranked = counts.withColumn("rank", F.row_number().over(rank)).where(F.col("rank") <= top).toArrow()
    for row in sorted(ranked.to_pylist(), key=lambda r: (r["stream"], r["rank"])):
        out[row["stream"]].append(
            {"table": row["table"], "transactions": row["transactions"], "rows_events": row["rows_events"]}
        )
    return out


# -- naming a hot key (driver) ------------------------------------------------------------------------


def key_name(read: ChannelRead, ordinal: int, wanted: int) -> str | None:
    """'db.table.KEY' for a writeset hash, found by rehashing one transaction that wrote it with
    one key of one table at a time; None when no key of its tables gives the hash."""
    batch = next((b for b in read.batches if b.first_key <= ordinal <= b.last_key), None)
    if batch is None:
        return None
    _, version, count, kept = next(e for e in pickle.loads(batch.payload) if e[0] == ordinal)
    if kept is None:
        return None
    catalog = read.catalogs[version - read.catalog_base]
    by_table: dict[tuple[str, str], list[tuple[int, object]]] = {}
    maps: dict[int, TableMap] = {}
    for index, event in kept:
        # the map in force at each rows event, as transaction_writeset follows them
        if isinstance(event, TableMap):
            maps[event.table_id] = event
            by_table.setdefault((event.schema, event.table), []).append((index, event))
        elif isinstance(event, RowsEvent) and event.table_id in maps:
            table_map = maps[event.table_id]
            by_table[(table_map.schema, table_map.table)].append((index, event))
    for key, events in by_table.items():
        table = catalog.get(key)
        if table is None:
            continue
        shipped = ShippedTransaction.of(count, tuple(events))
        for label, reduced, anchor in _key_sources(table):
            hashes = _hashes(shipped, catalog, reduced)
            if anchor is not None:
                hashes -= _hashes(shipped, catalog, anchor)
            if wanted in hashes:
                return label
    return None


def _key_sources(table: MysqlTable) -> Iterator[tuple[str, MysqlTable, MysqlTable | None]]:
    """(label, the table with only that key, a table whose hashes to take away or None)."""
    bare = replace(table, primary_key=(), unique_keys=(), unique_key_names=(), foreign_keys=())
    anchor = None
    if table.primary_key:
        anchor = replace(bare, primary_key=table.primary_key)
        yield f"{table.schema}.{table.name}.PRIMARY", anchor, None
    for key_name_, columns in zip(table.unique_key_names, table.unique_keys, strict=True):
        only = replace(bare, unique_keys=(columns,), unique_key_names=(key_name_,))
        anchor = anchor or only
        yield f"{table.schema}.{table.name}.{key_name_}", only, None
    if anchor is None:
        return  # no key: the table gives no hashes at all
    for fk in table.foreign_keys:
        # a child row's foreign key hashes as its parent's key: with the anchor key, minus it
        label = f"{fk.ref_schema}.{fk.ref_table}.({','.join(fk.ref_columns)})"
        yield label, replace(anchor, foreign_keys=(fk,)), anchor


def _hashes(shipped: ShippedTransaction, catalog: Catalog, table: MysqlTable) -> set[int]:
    variant = catalog.copy()
    variant[table.key] = table
    hashes, _ = transaction_writeset(shipped, variant)  # type: ignore[arg-type]
    return set(hashes or ())


# -- critical paths (driver) --------------------------------------------------------------------------


def critical_path(after: Sequence[int], weights: Sequence[int]) -> int:
    """Longest path when transaction o waits for every ordinal up to after[o - 1]."""
    latest = [0]  # latest[o]: the latest finish among ordinals 1..o
    for depends_on, weight in zip(after, weights, strict=True):
        latest.append(max(latest[-1], latest[depends_on] + weight))
    return latest[-1]


def database_critical_path(
    databases: Sequence[frozenset[str] | None], alone: Sequence[bool], weights: Sequence[int]
) -> int:
    """Longest path when a transaction waits for the earlier ones on its databases only."""
    finish_on: dict[str, int] = {}  # database -> finish of its last transaction
    floor = 0  # finish of the last transaction that ran alone
    longest = 0
    for names, solo, weight in zip(databases, alone, weights, strict=True):
        if solo or not names or len(names) > MAX_DBS_IN_QUERY_MTS:
            floor = longest = longest + weight
            continue
        finish = max([floor, *(finish_on.get(db, 0) for db in names)]) + weight
        for db in names:
            finish_on[db] = finish
        longest = max(longest, finish)
    return longest


def scheduler_profile(total_weight: int, path: int, workers: Sequence[int]) -> dict[str, Any]:
    parallelism = total_weight / path if path else 1.0
    return {
        "critical_path": path,
        "parallelism": round(parallelism, 3),
        "ideal_speedup": {str(n): round(min(float(n), parallelism), 3) for n in workers},
    }


# -- the analysis -----------------------------------------------------------------------------------


@dataclass
class Analysis:
    """The parallelism profile of each channel (JSON-ready) and its WRITESET schedule."""

    channels: dict[str, dict[str, Any]]
    schedule: dict[str, list[int]]  # channel -> the ordinal each transaction depends on
    workers: tuple[int, ...]
    history_size: int
    timings: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workers": list(self.workers),
            "history_size": self.history_size,
            "weight": "rows events + 1 per transaction",
            "ideal_speedup": "min(workers, total weight / critical path)",
            "channels": self.channels,
            "seconds": {k: round(v, 3) for k, v in self.timings.items()},
        }

    def schedule_document(self) -> dict[str, Any]:
        """What --schedule-out writes: per channel, after[i] is the ordinal transaction i + 1 (in
        relay-log order, repeated GTIDs skipped) waits for, as the coordinator's Job.after."""
        return {
            "format": SCHEDULE_FORMAT,
            "parallel_type": "writeset",
            "history_size": self.history_size,
            "channels": {
                name: {
                    "index_file": self.channels[name]["index_file"],
                    "transactions": len(after),
                    "after": after,
                }
                for name, after in self.schedule.items()
            },
        }

    def write_schedule(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.schedule_document()) + "\n")


def analyze(
    spark: SparkSession,
    channels: Sequence[tuple[str, LogsInput]],
    *,
    workers: Sequence[int] = DEFAULT_WORKERS,
    history_size: int = DEFAULT_HISTORY_SIZE,
    top: int = DEFAULT_TOP,
    catalog: Catalog | None = None,
) -> Analysis:
    """Profile each (name, relay logs) channel; catalog: the slave's definitions before the logs."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    reads: list[ChannelRead] = []
    for name, logs in channels:
        base = sum(len(r.catalogs) for r in reads)
        reads.append(read_channel(name, logs, catalog, catalog_base=base))
    timings["read_s"] = time.perf_counter() - started
    started = time.perf_counter()
    with _WritesetJob(spark, reads, history_size) as job:
        schedule = job.dependencies()
        keys = job.hot_keys(top)
        timings.update(job.timings)
    tables = hot_tables(spark, reads, top)
    timings["spark_s"] = time.perf_counter() - started
    started = time.perf_counter()
    profiles = {
        read.name: _channel_profile(read, schedule[read.name], keys[read.name], tables[read.name], workers)
        for read in reads
    }
    timings["profile_s"] = time.perf_counter() - started
    return Analysis(profiles, schedule, tuple(workers), history_size, timings)


def _channel_profile(
    read: ChannelRead,
    writeset_after: list[int],
    keys: list[dict[str, Any]],
    tables: list[dict[str, Any]],
    workers: Sequence[int],
) -> dict[str, Any]:
    total = sum(read.weights)
    paths = {
        "database": database_critical_path(read.databases, read.alone, read.weights),
        "logical_clock": critical_path(read.clock_after, read.weights),
        "writeset": critical_path(writeset_after, read.weights),
    }
    for key in keys:
        key["key"] = key_name(read, key["first_ordinal"], key["hash"])
        key["hash"] = f"{key['hash']:016x}"
    return {
        "index_file": read.index_file,
        "transactions": read.transactions,
        "skipped_repeated_gtids": read.skipped,
        "run_alone": sum(read.alone),
        "total_weight": total,
        "schedulers": {kind: scheduler_profile(total, paths[kind], workers) for kind in SCHEDULERS},
        "writeset_independent": sum(
            1 for ordinal, after in enumerate(writeset_after, 1) if after < ordinal - 1
        ),
        "hot_keys": keys,
        "hot_tables": tables,
        "ddl_errors": read.ddl_errors,
        "stopped_by": read.stopped_by,
        "catalog_versions": len(read.catalogs),
    }


__all__ = [
    "Analysis",
    "CatalogTimeline",
    "ChannelRead",
    "analyze",
    "critical_path",
    "database_critical_path",
    "read_channel",
    "writeset_dependencies",
]
