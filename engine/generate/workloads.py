"""The workloads: simulated client sessions on a MySQL 8.0 source, logged into a relay log.

SourceServer plays the source's binary-log layer: it turns row changes, statements and DDL into
the events MySQL would log (BEGIN, TABLE_MAP, rows events split at 8 KB, XID; GTID + QUERY for
DDL; INTVAR/RAND/USER_VAR before statement-format queries), applies each change to the oracle as
it logs it, and hands finished transactions with their writesets to the relay-log writer.
Each Workload owns some databases, creates them in setup() and then logs one burst of
transactions per step(); the driver in engine.generate calls step() until the size is reached.
"""

from __future__ import annotations

import random
import string
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from engine.binlog.constants import (
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    ROWS_FLAG_STMT_END,
    EventFlag,
    EventType,
)
from engine.binlog.writer import (
    ColumnDef,
    QueryStatusVars,
    TableDef,
    intvar_body,
    query_body,
    rand_body,
    rows_body_prefix,
    split_rows,
    table_map_body,
    user_var_body,
    xid_body,
)
from engine.generate.oracle import MysqlRand, Oracle, TableKey, TableState, TempKey, sql_string
from engine.generate.relay_writer import LoggedTransaction, RelayLogWriter, SourceEvent
from engine.scheduling.writeset import writeset_hash

col = ColumnDef.of
Row = tuple[object, ...]
_EPOCH = datetime(1970, 1, 1)
TIME_ZONE = "+00:00"  # sessions that use time functions run with time_zone='+00:00'


# --------------------------------------------------------------------------------------------
# The simulated source


@dataclass(frozen=True)
class RowCounts:
    insert: int = 0
    update: int = 0
    delete: int = 0


class SourceServer:
    """The source's logging layer for every session: clock, xids, table ids, transactions."""

    def __init__(self, relay: RelayLogWriter, oracle: Oracle, rng: random.Random, start_us: int) -> None:
        self.relay = relay
        self.oracle = oracle
        self.rng = rng
        self.now_us = start_us
        self._xid = 100
        self._table_ids: dict[TableKey | TempKey, int] = {}
        self._next_table_id = 88
        self._maps: dict[int, bytes] = {}
        self._rows: dict[str, dict[str, int]] = {}  # "db.table" -> kind -> row images
        self.transactions = 0

    @property
    def row_counts(self) -> RowCounts:
        """Row images logged so far, per kind (what mysqlbinlog -v prints as ### lines)."""
        totals = {"insert": 0, "update": 0, "delete": 0}
        for counts in self._rows.values():
            for kind, n in counts.items():
                totals[kind] += n
        return RowCounts(**totals)

    def row_counts_by_table(self) -> dict[str, dict[str, int]]:
        """Row images per table, under the name the table had when they were logged."""
        return {name: dict(counts) for name, counts in sorted(self._rows.items())}

    def tick(self, low: int = 150, high: int = 2500) -> int:
        self.now_us += self.rng.randint(low, high)
        return self.now_us

    def now(self) -> datetime:
        """The source's clock as a DATETIME(6) value in UTC."""
        return _EPOCH + timedelta(microseconds=self.now_us)

    def next_xid(self) -> int:
        self._xid += 1
        return self._xid

    def table_id(self, key: TableKey | TempKey) -> int:
        tid = self._table_ids.get(key)
        if tid is None:
            tid = self._table_ids[key] = self._next_table_id
            self._next_table_id += 1
        return tid

    def forget_table(self, key: TableKey | TempKey) -> None:
        """After DDL the server reopens the table under a new table id."""
        tid = self._table_ids.pop(key, None)
        if tid is not None:
            self._maps.pop(tid, None)

    def table_map(self, key: TableKey, table: TableDef) -> SourceEvent:
        tid = self.table_id(key)
        body = self._maps.get(tid)
        if body is None:
            body = self._maps[tid] = table_map_body(tid, table)
        return SourceEvent(EventType.TABLE_MAP, body, self.now_us // 1_000_000)

    def _log(
        self, events: list[SourceEvent], start_us: int, writeset: list[int] | None, sbr: bool
    ) -> LoggedTransaction:
        commit_us = max(self.now_us, start_us) + 20 + 6 * len(events) + self.rng.randint(0, 200)
        self.now_us = commit_us
        self.transactions += 1
        return self.relay.write_transaction(
            events, writeset=writeset, may_have_sbr=sbr, commit_timestamp_us=commit_us
        )

    def ddl(
        self,
        sql: str,
        *,
        db: str,
        thread_id: int,
        apply: Callable[[], object],
        dbs: Sequence[str] | None = None,
        table_options: bool = False,
        create_database: bool = False,
        timestamp_columns: bool = False,
    ) -> LoggedTransaction:
        """An atomic DDL statement: GTID + QUERY carrying its xid, no BEGIN."""
        start = self.tick()
        apply()
        status = QueryStatusVars(
            updated_db_names=tuple(sorted(set(dbs if dbs is not None else [db]))),
            explicit_defaults_for_timestamp=1 if timestamp_columns else None,
            ddl_xid=self.next_xid(),
            sql_require_primary_key=0 if table_options else None,
            default_table_encryption=0 if create_database else None,
        )
        body = query_body(thread_id=thread_id, db=db, query=sql, status=status)
        return self._log([SourceEvent(EventType.QUERY, body, start // 1_000_000)], start, None, True)

    def standalone_query(
        self, sql: str, *, db: str, thread_id: int, apply: Callable[[], object]
    ) -> LoggedTransaction:
        """A non-transactional statement that uses temporary tables: GTID + QUERY, no xid."""
        start = self.tick()
        apply()
        status = QueryStatusVars(updated_db_names=(db,))
        body = query_body(thread_id=thread_id, db=db, query=sql, status=status)
        event = SourceEvent(EventType.QUERY, body, start // 1_000_000, EventFlag.THREAD_SPECIFIC)
        return self._log([event], start, None, True)

    def rows(self, thread_id: int) -> RowTransaction:
        return RowTransaction(self, thread_id)

    def statements(self, thread_id: int, db: str) -> StatementTransaction:
        return StatementTransaction(self, thread_id, db)

    def count_rows(self, table: TableDef, kind: str, n: int) -> None:
        counts = self._rows.setdefault(f"{table.db}.{table.name}", {"insert": 0, "update": 0, "delete": 0})
        counts[kind] += n


class RowTransaction:
    """A ROW-format transaction: each statement logs its table maps then its rows events."""

    def __init__(self, server: SourceServer, thread_id: int) -> None:
        self.server = server
        self.thread_id = thread_id
        self.start_us = server.tick()
        self.events: list[SourceEvent] = []
        self.writeset: list[int] = []
        self.first_dbs: tuple[str, ...] | None = None

    def insert(self, key: TableKey, rows: Sequence[Row]) -> None:
        self.statement([(key, EventType.WRITE_ROWS, list(rows))])

    def update(self, key: TableKey, pairs: Sequence[tuple[Row, Row]]) -> None:
        self.statement([(key, EventType.UPDATE_ROWS, list(pairs))])

    def delete(self, key: TableKey, rows: Sequence[Row]) -> None:
        self.statement([(key, EventType.DELETE_ROWS, list(rows))])

    def statement(self, parts: Sequence[tuple[TableKey, int, list]]) -> None:  # type: ignore[type-arg]
        """One statement touching one or more tables (a multi-table UPDATE has several parts)."""
        parts = [p for p in parts if p[2]]
        if not parts:
            return  # a statement that matched no row logs nothing
        server = self.server
        oracle = server.oracle
        ts = server.now_us // 1_000_000
        if self.first_dbs is None:
            self.first_dbs = tuple(sorted({key[0] for key, _, _ in parts}))
        seen: list[TableKey] = []
        for key, _, _ in parts:
            if key not in seen:
                seen.append(key)
                self.events.append(server.table_map(key, oracle.state(key).table))
        rows_events: list[tuple[int, int, int, list[bytes]]] = []
        for key, kind, payload in parts:
            state = oracle.state(key)
            images = self._apply(state, kind, payload)
            tid = server.table_id(key)
            ncols = len(state.table.columns)
            groups = [images] if len(images) == 1 else split_rows(kind, ncols, images)
            rows_events += [(kind, tid, ncols, group) for group in groups]
        last = len(rows_events) - 1
        for i, (kind, tid, ncols, group) in enumerate(rows_events):
            # STMT_END_F marks the statement's last rows event
            prefix = rows_body_prefix(kind, tid, ROWS_FLAG_STMT_END if i == last else 0, ncols)
            self.events.append(SourceEvent(kind, b"".join([prefix, *group]), ts))

    def _apply(self, state: TableState, kind: int, payload: list) -> list[bytes]:  # type: ignore[type-arg]
        table = state.table
        encode = table.row_encoder
        keys = table.unique_positions
        ws = self.writeset
        db, name = table.db, table.name
        images: list[bytes] = []
        if kind == EventType.UPDATE_ROWS:
            for before, after in payload:
                state.update(before, after)
                images.append(encode(before) + encode(after))
                for key_name, pos in keys:
                    ws.append(writeset_hash(db, name, key_name, tuple(before[i] for i in pos)))
                    ws.append(writeset_hash(db, name, key_name, tuple(after[i] for i in pos)))
            self.server.count_rows(table, "update", len(payload))
        else:
            for row in payload:
                if kind == EventType.WRITE_ROWS:
                    state.insert(row)
                else:
                    state.delete(row)
                images.append(encode(row))
                for key_name, pos in keys:
                    ws.append(writeset_hash(db, name, key_name, tuple(row[i] for i in pos)))
            self.server.count_rows(
                table, "insert" if kind == EventType.WRITE_ROWS else "delete", len(payload)
            )
        return images

    def commit(self) -> LoggedTransaction | None:
        if not self.events:
            return None
        server = self.server
        dbs = self.first_dbs or ()
        ts = self.start_us // 1_000_000
        begin = query_body(
            thread_id=self.thread_id,
            db=dbs[0] if dbs else "",
            query="BEGIN",
            status=QueryStatusVars(updated_db_names=dbs),
        )
        events = [SourceEvent(EventType.QUERY, begin, ts, EventFlag.SUPPRESS_USE)]
        events += self.events
        events.append(SourceEvent(EventType.XID, xid_body(server.next_xid()), server.now_us // 1_000_000))
        return server._log(events, self.start_us, self.writeset, False)


@dataclass(frozen=True)
class UserVar:
    name: str
    value: int | float | str | Decimal | None


class StatementTransaction:
    """A STATEMENT-format transaction: BEGIN, context events + QUERY per statement, XID."""

    def __init__(self, server: SourceServer, thread_id: int, db: str) -> None:
        self.server = server
        self.thread_id = thread_id
        self.db = db
        self.start_us = server.tick()
        self.events: list[SourceEvent] = []

    def query(
        self,
        sql: str,
        *,
        apply: Callable[[datetime], object],
        user_vars: Sequence[UserVar] = (),
        insert_id: int | None = None,
        last_insert_id: int | None = None,
        rand_seeds: tuple[int, int] | None = None,
        uses_now: bool = False,
        temporary: bool = False,
        dbs: Sequence[str] | None = None,
    ) -> None:
        """Log one statement; apply() gets its start time, which is what NOW(6) returns."""
        server = self.server
        start = server.tick(20, 400)
        ts = start // 1_000_000
        apply(_EPOCH + timedelta(microseconds=start))
        # Context events come in the order the server writes them (binlog.cc).
        if last_insert_id is not None:
            self.events.append(
                SourceEvent(EventType.INTVAR, intvar_body(INTVAR_LAST_INSERT_ID, last_insert_id), ts)
            )
        if insert_id is not None:
            self.events.append(SourceEvent(EventType.INTVAR, intvar_body(INTVAR_INSERT_ID, insert_id), ts))
        if rand_seeds is not None:
            self.events.append(SourceEvent(EventType.RAND, rand_body(*rand_seeds), ts))
        for var in user_vars:
            self.events.append(SourceEvent(EventType.USER_VAR, user_var_body(var.name, var.value), ts))
        status = QueryStatusVars(
            time_zone=TIME_ZONE if uses_now else None,
            updated_db_names=tuple(sorted(set(dbs or [self.db]))),
            microseconds=start % 1_000_000 if uses_now else None,
        )
        body = query_body(thread_id=self.thread_id, db=self.db, query=sql, status=status)
        self.events.append(
            SourceEvent(EventType.QUERY, body, ts, EventFlag.THREAD_SPECIFIC if temporary else 0)
        )

    def commit(self) -> LoggedTransaction | None:
        if not self.events:
            return None
        server = self.server
        ts = self.start_us // 1_000_000
        begin = query_body(
            thread_id=self.thread_id,
            db=self.db,
            query="BEGIN",
            status=QueryStatusVars(updated_db_names=(self.db,)),
        )
        events = [SourceEvent(EventType.QUERY, begin, ts, EventFlag.SUPPRESS_USE)]
        events += self.events
        events.append(SourceEvent(EventType.XID, xid_body(server.next_xid()), server.now_us // 1_000_000))
        return server._log(events, self.start_us, None, True)


# --------------------------------------------------------------------------------------------
# Schema helpers


def table_def(
    db: str,
    name: str,
    columns: Sequence[ColumnDef],
    primary_key: Sequence[str],
    unique_keys: Sequence[tuple[str, Sequence[str]]] = (),
    keys: Sequence[tuple[str, Sequence[str]]] = (),
) -> TableDef:
    return TableDef(
        db,
        name,
        tuple(columns),
        tuple(primary_key),
        tuple((n, tuple(c)) for n, c in unique_keys),
        tuple((n, tuple(c)) for n, c in keys),
    )


def _cols(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def create_table_sql(table: TableDef, *, temporary: bool = False) -> str:
    """CREATE TABLE text as a client would send it (and the server logs it verbatim)."""
    lines = [c.ddl() for c in table.columns]
    if table.primary_key:
        lines.append(f"PRIMARY KEY ({_cols(table.primary_key)})")
    lines += [f"UNIQUE KEY `{n}` ({_cols(c)})" for n, c in table.unique_keys]
    lines += [f"KEY `{n}` ({_cols(c)})" for n, c in table.keys]
    head = "CREATE TEMPORARY TABLE" if temporary else "CREATE TABLE"
    return (
        f"{head} `{table.name}` (\n  "
        + ",\n  ".join(lines)
        + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"
    )


def create_database(src: SourceServer, db: str, thread_id: int) -> None:
    src.ddl(
        f"CREATE DATABASE `{db}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci */",
        db=db,
        thread_id=thread_id,
        apply=lambda: src.oracle.create_database(db),
        create_database=True,
    )


def create_table(src: SourceServer, table: TableDef, thread_id: int) -> None:
    def apply() -> None:
        src.oracle.create_table(table)
        src.forget_table((table.db, table.name))

    src.ddl(
        create_table_sql(table),
        db=table.db,
        thread_id=thread_id,
        apply=apply,
        table_options=True,
        timestamp_columns=any(c.type.base == "timestamp" for c in table.columns),
    )


def _pool(rng: random.Random, n: int, make: Callable[[random.Random], str]) -> list[str]:
    return [make(rng) for _ in range(n)]


def _digits_groups(groups: int) -> Callable[[random.Random], str]:
    # sysbench's c/pad values: groups of 11 digits joined by '-'
    def make(rng: random.Random) -> str:
        return "-".join("".join(rng.choices(string.digits, k=11)) for _ in range(groups))

    return make


def _money(rng: random.Random, low: int, high: int) -> Decimal:
    return Decimal(f"{rng.randint(low * 100, high * 100)}E-2")


# --------------------------------------------------------------------------------------------
# Workloads


class Workload(ABC):
    """One family of sessions. setup() creates its schema; step() logs a burst of transactions."""

    name = ""
    default_size_mb = 0.3
    weight = 1
    # Whether the constructor takes namespace=, a suffix for every database name, so that several
    # generated logs of this workload can fan in to one slave without sharing databases.
    takes_namespace = False

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        self.rng = rng
        self.target_bytes = target_bytes

    @abstractmethod
    def setup(self, src: SourceServer) -> None:
        """Create the workload's databases and tables (and rows they start with)."""

    @abstractmethod
    def step(self, src: SourceServer) -> None:
        """Log the next burst of transactions."""


class Oltp(Workload):
    """sysbench oltp_write_only over 3 databases x 2 tables, transactions interleaved across them."""

    name = "oltp"
    default_size_mb = 0.4
    weight = 4
    takes_namespace = True
    DBS = ("sbtest1", "sbtest2", "sbtest3")
    TABLES = ("sbtest1", "sbtest2")
    THREADS = range(10, 18)

    def __init__(self, rng: random.Random, target_bytes: int, namespace: str = "") -> None:
        super().__init__(rng, target_bytes)
        self.dbs = tuple(db + namespace for db in self.DBS)
        self.table_size = max(50, min(10000, target_bytes // 4000))
        self.c_pool = _pool(rng, 512, _digits_groups(10))
        self.pad_pool = _pool(rng, 512, _digits_groups(5))
        self.keys: list[TableKey] = [(db, t) for db in self.dbs for t in self.TABLES]
        self.next_id: dict[TableKey, int] = {}

    @staticmethod
    def schema(db: str, name: str) -> TableDef:
        return table_def(
            db,
            name,
            [
                col("id", "int", nullable=False, auto_increment=True),
                col("k", "int", nullable=False, default_sql="'0'"),
                col("c", "char(120)", nullable=False, default_sql="''"),
                col("pad", "char(60)", nullable=False, default_sql="''"),
            ],
            ["id"],
            keys=[("k_1", ["k"])],
        )

    def _row(self, pk: int) -> Row:
        rng = self.rng
        return (pk, rng.randint(1, self.table_size), rng.choice(self.c_pool), rng.choice(self.pad_pool))

    def setup(self, src: SourceServer) -> None:
        for db in self.dbs:
            create_database(src, db, 10)
        for key in self.keys:
            create_table(src, self.schema(*key), 10)
        for key in self.keys:
            # sysbench prepare: bulk inserts of up to 1000 rows per statement
            for start in range(1, self.table_size + 1, 1000):
                txn = src.rows(10)
                txn.insert(
                    key, [self._row(pk) for pk in range(start, min(start + 1000, self.table_size + 1))]
                )
                txn.commit()
            self.next_id[key] = self.table_size + 1

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        key = rng.choice(self.keys)
        state = src.oracle.state(key)
        txn = src.rows(rng.choice(self.THREADS))
        choice = rng.random()
        if choice < 0.8:
            # UPDATE ... SET k=k+1 WHERE id=?; UPDATE ... SET c=? WHERE id=?; DELETE; INSERT (same id)
            row = state.rows.get((rng.randint(1, self.table_size),))
            if row is not None:
                txn.update(key, [(row, (row[0], row[1] + 1, row[2], row[3]))])  # type: ignore[operator]
            row = state.rows.get((rng.randint(1, self.table_size),))
            if row is not None:
                txn.update(key, [(row, (row[0], row[1], rng.choice(self.c_pool), row[3]))])
            pk = rng.randint(1, self.table_size)
            row = state.rows.get((pk,))
            if row is not None:
                txn.delete(key, [row])
                txn.insert(key, [self._row(pk)])
        elif choice < 0.9:
            # an insert of fresh ids paired with a delete keeps the table size steady
            pk = self.next_id[key]
            self.next_id[key] = pk + 1
            txn.insert(key, [self._row(pk)])
            victim = state.rows.get((rng.randint(1, pk),))
            if victim is not None and victim[0] != pk:
                txn.delete(key, [victim])
        else:
            # a second database in the same transaction
            other = rng.choice([k for k in self.keys if k[0] != key[0]])
            for k in (key, other):
                row = src.oracle.state(k).rows.get((rng.randint(1, self.table_size),))
                if row is not None:
                    txn.update(k, [(row, (row[0], row[1] - 1, row[2], row[3]))])  # type: ignore[operator]
        txn.commit()


class Hot(Workload):
    """A handful of hot rows hammered by every session: long last_committed chains."""

    name = "hot"
    THREADS = range(20, 24)

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.counter = 0

    def setup(self, src: SourceServer) -> None:
        create_database(src, "hotdb", 20)
        counters = table_def(
            "hotdb",
            "counters",
            [
                col("id", "int", nullable=False),
                col("hits", "bigint", nullable=False, default_sql="'0'"),
                col("tag", "varchar(32)", nullable=False),
                col("updated_at", "datetime(6)", nullable=False),
            ],
            ["id"],
        )
        kv = table_def(
            "hotdb",
            "kv",
            [
                col("id", "int", nullable=False),
                col("name", "varchar(32)", nullable=False),
                col("val", "int", nullable=False),
            ],
            ["id"],
            unique_keys=[("uk_name", ["name"])],
        )
        create_table(src, counters, 20)
        create_table(src, kv, 20)
        txn = src.rows(20)
        txn.insert(("hotdb", "counters"), [(i, 0, f"hot-{i}", src.now()) for i in range(1, 7)])
        txn.insert(("hotdb", "kv"), [(i, f"key-{i}", i * 10) for i in range(1, 7)])
        txn.commit()

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        txn = src.rows(rng.choice(self.THREADS))
        counters = src.oracle.state(("hotdb", "counters"))
        for _ in range(rng.randint(1, 3)):
            pk = rng.choice((1, 1, 2, 2, 3, 4, 5, 6))  # skewed: ids 1 and 2 are the hottest
            row = counters.rows[(pk,)]
            txn.update(("hotdb", "counters"), [(row, (pk, row[1] + 1, row[2], src.now()))])  # type: ignore[operator]
        if rng.random() < 0.25:
            kv = src.oracle.state(("hotdb", "kv"))
            pk = rng.randint(1, 6)
            row = kv.rows[(pk,)]
            self.counter += 1
            # renaming changes the UNIQUE key, so both names enter the writeset
            txn.update(("hotdb", "kv"), [(row, (pk, f"key-{pk}-{self.counter}", row[2] + 1))])  # type: ignore[operator]
        txn.commit()


class MultiDb(Workload):
    """Transfers between banks in different databases plus an audit database, one transaction each."""

    name = "multidb"
    BANKS = ("bank_eu", "bank_us", "bank_asia")
    THREADS = range(30, 34)
    ACCOUNTS = 40

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.transfer_id = 0

    def setup(self, src: SourceServer) -> None:
        for db in (*self.BANKS, "audit"):
            create_database(src, db, 30)
        for db in self.BANKS:
            create_table(
                src,
                table_def(
                    db,
                    "accounts",
                    [
                        col("id", "int", nullable=False),
                        col("owner", "varchar(40)", nullable=False),
                        col("balance", "decimal(14,2)", nullable=False),
                        col("updated", "datetime", nullable=True, default_sql="NULL"),
                    ],
                    ["id"],
                ),
                30,
            )
        create_table(
            src,
            table_def(
                "audit",
                "transfers",
                [
                    col("id", "bigint", nullable=False),
                    col("src_db", "varchar(16)", nullable=False),
                    col("src_id", "int", nullable=False),
                    col("dst_db", "varchar(16)", nullable=False),
                    col("dst_id", "int", nullable=False),
                    col("amount", "decimal(14,2)", nullable=False),
                    col("at", "datetime(6)", nullable=False),
                ],
                ["id"],
            ),
            30,
        )
        create_table(
            src,
            table_def(
                "audit",
                "transfer_legs",
                [
                    col("transfer_id", "bigint", nullable=False),
                    col("leg", "tinyint", nullable=False),
                    col("db_name", "varchar(16)", nullable=False),
                    col("delta", "decimal(14,2)", nullable=False),
                ],
                ["transfer_id", "leg"],
            ),
            30,
        )
        owners = ["Ana", "Bo", "Chen Wei", "Dário", "Émile", "Farah", "Göran", "Hiro", "Ines", "Jamal"]
        for db in self.BANKS:
            txn = src.rows(30)
            rows = [
                (i, f"{self.rng.choice(owners)} #{i}", _money(self.rng, 100, 5000), None)
                for i in range(1, self.ACCOUNTS + 1)
            ]
            txn.insert((db, "accounts"), rows)
            txn.commit()

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        txn = src.rows(rng.choice(self.THREADS))
        now = src.now()
        banks = rng.sample(self.BANKS, 3 if rng.random() < 0.2 else 2)
        src_db, dst_dbs = banks[0], banks[1:]
        amount = _money(rng, 1, 200)
        src_row = src.oracle.state((src_db, "accounts")).rows[(rng.randint(1, self.ACCOUNTS),)]
        changes: list[tuple[str, Row, Row]] = []
        total = Decimal("0.00")
        for db in dst_dbs:
            dst_row = src.oracle.state((db, "accounts")).rows[(rng.randint(1, self.ACCOUNTS),)]
            changes.append(
                (db, dst_row, (dst_row[0], dst_row[1], dst_row[2] + amount, now.replace(microsecond=0)))
            )  # type: ignore[operator]
            total += amount
        src_after = (src_row[0], src_row[1], src_row[2] - total, now.replace(microsecond=0))  # type: ignore[operator]
        if len(dst_dbs) == 1 and rng.random() < 0.3:
            # UPDATE bank_a.accounts a JOIN bank_b.accounts b ...: one statement, two table maps
            db, before, after = changes[0]
            txn.statement(
                [
                    ((src_db, "accounts"), EventType.UPDATE_ROWS, [(src_row, src_after)]),
                    ((db, "accounts"), EventType.UPDATE_ROWS, [(before, after)]),
                ]
            )
        else:
            txn.update((src_db, "accounts"), [(src_row, src_after)])
            for db, before, after in changes:
                txn.update((db, "accounts"), [(before, after)])
        for db, before, _ in changes:
            self.transfer_id += 1
            tid = self.transfer_id
            txn.insert(("audit", "transfers"), [(tid, src_db, src_row[0], db, before[0], amount, now)])
            txn.insert(("audit", "transfer_legs"), [(tid, 1, src_db, -amount), (tid, 2, db, amount)])
        txn.commit()


class Ddl(Workload):
    """DDL in the stream: ALTERs of every kind interleaved with row changes to the altered tables."""

    name = "ddl"
    THREAD = 40
    DB = "ddldb"

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.round = 0
        self.script: Iterator[None] = iter(())

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.THREAD)

    def step(self, src: SourceServer) -> None:
        for _ in range(2):
            if next(self.script, StopIteration) is StopIteration:
                self.round += 1
                self.script = self._round(src, self.round)
                next(self.script)

    # helpers over the current schema of a table

    def _alter(
        self,
        src: SourceServer,
        key: TableKey,
        sql: str,
        new_table: TableDef,
        row_map: Callable[[dict[str, object]], dict[str, object]],
    ) -> None:
        def apply() -> None:
            src.oracle.alter_table(key, new_table, row_map)
            src.forget_table(key)

        src.ddl(sql, db=key[0], thread_id=self.THREAD, apply=apply, table_options=True)

    def _insert(self, src: SourceServer, key: TableKey, values: list[dict[str, object]]) -> None:
        state = src.oracle.state(key)
        ai = state.next_auto_increment
        rows = []
        for i, v in enumerate(values):
            v = dict(v)
            auto = [c.name for c in state.table.columns if c.auto_increment]
            for name in auto:
                v.setdefault(name, ai + i)
            rows.append(tuple(v.get(c.name) for c in state.table.columns))
        txn = src.rows(self.THREAD)
        txn.insert(key, rows)
        txn.commit()

    def _update_some(
        self,
        src: SourceServer,
        key: TableKey,
        change: Callable[[dict[str, object]], dict[str, object]],
        fraction: float = 0.4,
    ) -> None:
        state = src.oracle.state(key)
        names = [c.name for c in state.table.columns]
        pairs = []
        for pk in sorted(state.rows)[: max(1, int(len(state.rows) * fraction))]:
            before = state.rows[pk]
            after = change(dict(zip(names, before, strict=True)))
            pairs.append((before, tuple(after[n] for n in names)))
        txn = src.rows(self.THREAD)
        txn.update(key, pairs)
        txn.commit()

    def _delete_some(self, src: SourceServer, key: TableKey, count: int) -> None:
        state = src.oracle.state(key)
        victims = [state.rows[pk] for pk in sorted(state.rows)[-count:]]
        txn = src.rows(self.THREAD)
        txn.delete(key, victims)
        txn.commit()

    def _round(self, src: SourceServer, r: int) -> Iterator[None]:
        rng = self.rng
        db = self.DB
        key = (db, f"items_{r}")
        base = table_def(
            db,
            key[1],
            [
                col("id", "int", nullable=False, auto_increment=True),
                col("name", "varchar(32)", nullable=False),
                col("qty", "int", nullable=False, default_sql="'0'"),
            ],
            ["id"],
        )
        create_table(src, base, self.THREAD)
        yield
        seq = iter(range(1, 1_000_000))
        self._insert(
            src,
            key,
            [{"name": f"item-{r}-{next(seq)}", "qty": rng.randint(0, 50)} for _ in range(rng.randint(5, 12))],
        )
        yield

        def cols() -> list[ColumnDef]:
            return list(src.oracle.state(key).table.columns)

        def with_columns(columns: list[ColumnDef], **kw: object) -> TableDef:
            t = src.oracle.state(key).table
            return table_def(
                db,
                t.name,
                columns,
                kw.get("pk", t.primary_key),
                kw.get("uniques", t.unique_keys),
                kw.get("keys", t.keys),
            )  # type: ignore[arg-type]

        # ADD COLUMN ... AFTER
        c = cols()
        price = col("price", "decimal(10,2)", nullable=True, default_sql="NULL")
        c.insert(2, price)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {price.ddl()} AFTER `name`",
            with_columns(c),
            lambda r_: {**r_, "price": None},
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "price": _money(rng, 1, 999)})
        self._insert(src, key, [{"name": f"item-{r}-{next(seq)}", "qty": 1, "price": Decimal("9.99")}])
        yield
        # ADD COLUMN ... FIRST with a default existing rows take
        c = cols()
        code = col("code", "char(8)", nullable=False, default_sql="'none'")
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {code.ddl()} FIRST",
            with_columns([code, *c]),
            lambda r_: {**r_, "code": "none"},
        )
        yield
        self._insert(
            src,
            key,
            [
                {"code": f"C{r}-{i}", "name": f"item-{r}-{next(seq)}", "qty": 2, "price": None}
                for i in range(3)
            ],
        )
        yield
        # MODIFY COLUMN: a widening type change
        c = cols()
        i = [x.name for x in c].index("qty")
        c[i] = col("qty", "bigint", nullable=False, default_sql="'0'")
        self._alter(
            src, key, f"ALTER TABLE `{key[1]}` MODIFY COLUMN {c[i].ddl()}", with_columns(c), lambda r_: r_
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "qty": r_["qty"] + 5_000_000_000})  # type: ignore[operator]
        yield
        # CHANGE COLUMN: rename and retype
        c = cols()
        i = [x.name for x in c].index("name")
        c[i] = col("title", "varchar(64)", nullable=False)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` CHANGE COLUMN `name` {c[i].ddl()}",
            with_columns(c),
            lambda r_: {**{k: v for k, v in r_.items() if k != "name"}, "title": r_["name"]},
        )
        yield
        # RENAME COLUMN
        c = cols()
        i = [x.name for x in c].index("code")
        c[i] = col("sku", "char(8)", nullable=False, default_sql="'none'")
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` RENAME COLUMN `code` TO `sku`",
            with_columns(c),
            lambda r_: {**{k: v for k, v in r_.items() if k != "code"}, "sku": r_["code"]},
        )
        yield
        self._insert(
            src, key, [{"sku": "new", "title": f"item-{r}-{next(seq)}", "qty": 7, "price": Decimal("-1.50")}]
        )
        yield
        # CREATE INDEX / CREATE UNIQUE INDEX (titles are unique): the unique key joins writesets
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"CREATE INDEX `idx_qty` ON `{key[1]}` (`qty`)",
            with_columns(list(t.columns), keys=(("idx_qty", ("qty",)),)),
            lambda r_: r_,
        )
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"CREATE UNIQUE INDEX `uk_title` ON `{key[1]}` (`title`)",
            with_columns(list(t.columns), uniques=(("uk_title", ("title",)),)),
            lambda r_: r_,
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "title": str(r_["title"]) + "*"}, 0.5)
        self._delete_some(src, key, 2)
        yield
        # DROP COLUMN / DROP INDEX
        c = [x for x in cols() if x.name != "price"]
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` DROP COLUMN `price`",
            with_columns(c),
            lambda r_: {k: v for k, v in r_.items() if k != "price"},
        )
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"DROP INDEX `idx_qty` ON `{key[1]}`",
            with_columns(list(t.columns), keys=()),
            lambda r_: r_,
        )
        yield
        # ADD with AFTER on a later column, then rows that fill it
        c = cols()
        note = col("note", "varchar(40)", nullable=True, default_sql="NULL")
        c.insert([x.name for x in c].index("title") + 1, note)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {note.ddl()} AFTER `title`",
            with_columns(c),
            lambda r_: {**r_, "note": None},
        )
        self._update_some(src, key, lambda r_: {**r_, "note": 'naïve, "quoted"'}, 0.3)
        yield
        # RENAME TABLE, then keep writing under the new name
        new_key = (db, f"items_{r}_old")

        def rename() -> None:
            src.oracle.rename_table(key, new_key)
            src.forget_table(key)

        src.ddl(f"RENAME TABLE `{key[1]}` TO `{new_key[1]}`", db=db, thread_id=self.THREAD, apply=rename)
        yield
        key = new_key
        self._insert(src, key, [{"sku": "renamed", "title": f"item-{r}-{next(seq)}", "qty": 3, "note": None}])
        self._delete_some(src, key, 1)
        yield
        # TRUNCATE and DROP on scratch tables
        scratch = table_def(
            db,
            f"scratch_{r}",
            [col("id", "int", nullable=False), col("v", "varchar(10)", nullable=True, default_sql="NULL")],
            ["id"],
        )
        skey = (db, scratch.name)
        create_table(src, scratch, self.THREAD)
        self._insert(src, skey, [{"id": i, "v": f"v{i}"} for i in range(1, 6)])
        yield

        def truncate() -> None:
            src.oracle.truncate(skey)
            src.forget_table(skey)

        src.ddl(f"TRUNCATE TABLE `{scratch.name}`", db=db, thread_id=self.THREAD, apply=truncate)
        self._insert(src, skey, [{"id": 1, "v": "after"}])
        yield
        dropme = table_def(
            db, f"dropme_{r}", [col("id", "int", nullable=False), col("v", "int", nullable=False)], ["id"]
        )
        dkey = (db, dropme.name)
        create_table(src, dropme, self.THREAD)
        self._insert(src, dkey, [{"id": i, "v": i} for i in range(1, 4)])

        def drop() -> None:
            src.oracle.drop_table(dkey)
            src.forget_table(dkey)

        src.ddl(
            f"DROP TABLE `{dropme.name}` /* generated by server */", db=db, thread_id=self.THREAD, apply=drop
        )
        yield


class Large(Workload):
    """A few very large transactions: thousands of rows each, rows events split at 8 KB."""

    name = "large"
    default_size_mb = 0.5
    weight = 1
    THREAD = 50
    KEY = ("bulk", "events")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.next_id = 1
        self.batch = 0
        # thousands of rows per transaction, fewer when blended into a small mixed run
        self.batch_rows = max(1000, min(2000, target_bytes // 400))
        self.batches: list[tuple[int, int, int]] = []  # (batch, first id, last id)
        self.payloads = _pool(
            rng,
            256,
            lambda r: "".join(r.choices(string.ascii_letters + string.digits + " ", k=r.randint(20, 120))),
        )

    def setup(self, src: SourceServer) -> None:
        create_database(src, "bulk", self.THREAD)
        create_table(
            src,
            table_def(
                "bulk",
                "events",
                [
                    col("id", "bigint", nullable=False),
                    col("batch", "int", nullable=False),
                    col("payload", "varchar(200)", nullable=False),
                    col("amount", "decimal(12,2)", nullable=False),
                    col("created", "datetime(6)", nullable=False),
                ],
                ["id"],
                keys=[("idx_batch", ["batch"])],
            ),
            self.THREAD,
        )

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        state = src.oracle.state(self.KEY)
        self.batch += 1
        n = rng.randint(self.batch_rows, 2 * self.batch_rows)
        first = self.next_id
        self.next_id += n
        now = src.now()
        rows = [
            (first + i, self.batch, rng.choice(self.payloads), _money(rng, -500, 500), now) for i in range(n)
        ]
        txn = src.rows(self.THREAD)
        half = n // 2  # two INSERT statements in one transaction
        txn.insert(self.KEY, rows[:half])
        txn.insert(self.KEY, rows[half:])
        txn.commit()
        self.batches.append((self.batch, first, first + n - 1))
        if len(self.batches) >= 2:
            # UPDATE bulk.events SET amount = amount + 1 WHERE batch = <previous batch>
            _, lo, hi = self.batches[-2]
            txn = src.rows(self.THREAD)
            pairs = []
            for pk in range(lo, hi + 1):
                row = state.rows.get((pk,))
                if row is not None:
                    pairs.append((row, (row[0], row[1], row[2], row[3] + 1, row[4])))  # type: ignore[operator]
            txn.update(self.KEY, pairs)
            txn.commit()
        if len(self.batches) > 3:
            # DELETE FROM bulk.events WHERE batch = <oldest>
            _, lo, hi = self.batches.pop(0)
            txn = src.rows(self.THREAD)
            txn.delete(self.KEY, [state.rows[(pk,)] for pk in range(lo, hi + 1) if (pk,) in state.rows])
            txn.commit()


def _t(h: int, m: int, s: int, us: int = 0, negative: bool = False) -> timedelta:
    value = timedelta(hours=h, minutes=m, seconds=s, microseconds=us)
    return -value if negative else value


class Types(Workload):
    """One table per type family with edge values: every row encoder and renderer is exercised."""

    name = "types"
    default_size_mb = 0.5
    THREAD = 60
    DB = "typesdb"

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.next_id: dict[str, int] = {}

    def tables(self) -> list[tuple[TableDef, list[Row]]]:
        db = self.DB
        max_d65 = Decimal("9" * 35 + "." + "9" * 30)
        big_text = "漢字テスト😀 " * 6000  # > 64 KB: needs MEDIUMTEXT
        big_blob = bytes(range(256)) * 300
        json_big = [
            {"i": i, "s": f"entry {i}", "ok": i % 2 == 0} for i in range(2500)
        ]  # > 64 KB: large format
        return [
            (
                table_def(
                    db,
                    "t_int",
                    [col("id", "int", nullable=False)]
                    + [
                        col(n, t)
                        for n, t in [
                            ("ti", "tinyint"),
                            ("tiu", "tinyint unsigned"),
                            ("si", "smallint"),
                            ("siu", "smallint unsigned"),
                        ]
                    ]
                    + [
                        col(n, t)
                        for n, t in [
                            ("mi", "mediumint"),
                            ("miu", "mediumint unsigned"),
                            ("i", "int"),
                            ("iu", "int unsigned"),
                        ]
                    ]
                    + [col("bi", "bigint"), col("biu", "bigint unsigned")],
                    ["id"],
                ),
                [
                    (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -(2**63), 0),
                    (
                        2,
                        127,
                        255,
                        32767,
                        65535,
                        8388607,
                        16777215,
                        2147483647,
                        4294967295,
                        2**63 - 1,
                        2**64 - 1,
                    ),
                    (3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                    (4, None, None, None, None, None, None, None, None, None, None),
                    (5, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1),
                ],
            ),
            (
                table_def(
                    db,
                    "t_decimal",
                    [
                        col("id", "int", nullable=False),
                        col("d65", "decimal(65,30)"),
                        col("d10", "decimal(10,2)"),
                        col("d5", "decimal(5,0)"),
                        col("d18u", "decimal(18,9) unsigned"),
                        col("d4", "decimal(4,4)"),
                    ],
                    ["id"],
                ),
                [
                    (
                        1,
                        max_d65,
                        Decimal("99999999.99"),
                        Decimal("99999"),
                        Decimal("999999999.999999999"),
                        Decimal("0.9999"),
                    ),
                    (
                        2,
                        max_d65.copy_negate(),
                        Decimal("-99999999.99"),
                        Decimal("-99999"),
                        Decimal("0"),
                        Decimal("-0.9999"),
                    ),
                    (
                        3,
                        Decimal("0"),
                        Decimal("12.30"),
                        Decimal("0"),
                        Decimal("1.000000000"),
                        Decimal("0.0000"),
                    ),
                    (
                        4,
                        Decimal("-0.000000000000000000000000000001"),
                        Decimal("-0.01"),
                        Decimal("-1"),
                        Decimal("0.000000001"),
                        Decimal("-0.0001"),
                    ),
                    (
                        5,
                        Decimal("123456789012345678901234567890.5"),
                        Decimal("1.00"),
                        Decimal("100"),
                        None,
                        None,
                    ),
                    (6, None, None, None, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_float",
                    [col("id", "int", nullable=False), col("f", "float"), col("d", "double")],
                    ["id"],
                ),
                [
                    (1, 1.5, -1234.5),
                    (2, -0.25, 0.001953125),
                    (3, 3.75, 123456789.125),
                    (4, 0.0, 0.0),
                    (5, 100.5, -2.5),
                    (6, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_time",
                    [
                        col("id", "int", nullable=False),
                        col("d", "date"),
                        col("dt", "datetime"),
                        col("dt6", "datetime(6)"),
                        col("ts3", "timestamp(3)", default_sql="NULL"),
                        col("tm", "time"),
                        col("tm2", "time(2)"),
                        col("tm6", "time(6)"),
                        col("yr", "year"),
                    ],
                    ["id"],
                ),
                [
                    (
                        1,
                        date(1000, 1, 1),
                        datetime(1000, 1, 1),
                        datetime(1000, 1, 1, 0, 0, 0, 0),
                        datetime(1970, 1, 1, 0, 0, 1),
                        _t(838, 59, 59, negative=True),
                        _t(0, 0, 0, 10000, True),
                        _t(838, 59, 59, negative=True),
                        1901,
                    ),
                    (
                        2,
                        date(9999, 12, 31),
                        datetime(9999, 12, 31, 23, 59, 59),
                        datetime(9999, 12, 31, 23, 59, 59, 999999),
                        datetime(2038, 1, 19, 3, 14, 7, 999000),
                        _t(838, 59, 59),
                        _t(100, 0, 0, 990000),
                        _t(838, 59, 59),
                        2155,
                    ),
                    (
                        3,
                        date(2020, 2, 29),
                        datetime(2020, 2, 29, 12, 34, 56),
                        datetime(2020, 2, 29, 12, 34, 56, 1),
                        datetime(2000, 1, 1, 0, 0, 0, 500000),
                        _t(0, 0, 0),
                        _t(12, 30, 45, 500000, True),
                        _t(0, 0, 1, 1, True),
                        0,
                    ),
                    (
                        4,
                        date(1999, 12, 31),
                        datetime(1999, 12, 31, 23, 59, 59),
                        datetime(2001, 9, 9, 1, 46, 40, 123456),
                        datetime(2024, 6, 30, 12, 0, 0, 123000),
                        _t(25, 0, 0),
                        _t(0, 0, 1, 500000, True),
                        _t(24, 0, 0, 500000),
                        2024,
                    ),
                    (5, None, None, None, None, None, None, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_string",
                    [
                        col("id", "int", nullable=False),
                        col("c10", "char(10)"),
                        col("c64", "char(64)"),
                        col("vc20", "varchar(20)"),
                        col("vc255", "varchar(255)"),
                        col("tt", "tinytext"),
                        col("tx", "text"),
                        col("mt", "mediumtext"),
                        col("lt", "longtext"),
                    ],
                    ["id"],
                ),
                [
                    (1, "", "", "", "", "", "", "", ""),
                    (
                        2,
                        "漢字漢字漢字漢字漢字",
                        "😀" * 64,
                        "😀🎉 emoji",
                        "🎉" * 255,
                        "ü" * 127,
                        'He said "hi", ok',
                        big_text,
                        "line1\nline2\r\nend",
                    ),
                    (
                        3,
                        "a",
                        "tab\there",
                        "C:\\path\\x",
                        'comma, "quote"',
                        "naïve café",
                        "x" * 5000,
                        "short",
                        "0x00 \x00 nul",
                    ),
                    (4, None, None, None, None, None, None, None, None),
                    (
                        5,
                        "trail",
                        "spaces?  no",
                        "trailing  ",
                        " lead",
                        "\\N literal",
                        "NULL",
                        "'single'",
                        "ok",
                    ),
                ],
            ),
            (
                table_def(
                    db,
                    "t_binary",
                    [
                        col("id", "int", nullable=False),
                        col("vb", "varbinary(16)"),
                        col("tb", "tinyblob"),
                        col("bl", "blob"),
                        col("mb", "mediumblob"),
                        col("lb", "longblob"),
                    ],
                    ["id"],
                ),
                [
                    (1, b"", b"", b"", b"", b""),
                    (2, b"\x00", b"\x00\x00\x00", b"\x00\x01\x02\xff", big_blob, b"\xff" * 300),
                    (3, bytes(range(16)), b"abc\x00def", bytes(range(256)), b"\x00", b"end\x00"),
                    (4, None, None, None, None, None),
                ],
            ),
            (
                table_def(db, "t_json", [col("id", "int", nullable=False), col("doc", "json")], ["id"]),
                [
                    (1, {"a": 1}),
                    (
                        2,
                        {"bb": [1, 2.5, "x"], "a": None, "ccc": {"t": True, "f": False}, "émoji😀": "日本語"},
                    ),
                    (3, []),
                    (4, {}),
                    (5, 'just a string, with "quotes"\nand a newline'),
                    (6, 42),
                    (7, [70000, -70000, 5000000000, -1.25, "s", [], {}]),
                    (8, None),
                    (9, json_big),
                    (10, {"nested": {"deeper": {"deepest": [1, {"k": "v"}]}}}),
                ],
            ),
            (
                table_def(
                    db,
                    "t_enum_set",
                    [
                        col("id", "int", nullable=False),
                        col("e", "enum('small','medium','large','x-large')"),
                        col("s", "set('red','green','blue','it''s')"),
                    ],
                    ["id"],
                ),
                [
                    (1, "small", ""),
                    (2, "x-large", "red,blue"),
                    (3, "medium", "red,green,blue,it's"),
                    (4, None, None),
                    (5, "large", "it's"),
                ],
            ),
            (
                table_def(
                    db,
                    "t_bit",
                    [
                        col("id", "int", nullable=False),
                        col("b1", "bit(1)"),
                        col("b8", "bit(8)"),
                        col("b13", "bit(13)"),
                        col("b64", "bit(64)"),
                    ],
                    ["id"],
                ),
                [
                    (1, 0, 0, 0, 0),
                    (2, 1, 255, 8191, 2**64 - 1),
                    (3, 1, 170, 4096, 2**63),
                    (4, None, None, None, None),
                ],
            ),
        ]

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.THREAD)
        for table, rows in self.tables():
            create_table(src, table, self.THREAD)
            txn = src.rows(self.THREAD)
            txn.insert((table.db, table.name), rows)
            txn.commit()
            self.next_id[table.name] = len(rows) + 1

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        name = rng.choice(sorted(self.next_id))
        key = (self.DB, name)
        state = src.oracle.state(key)
        table = state.table
        txn = src.rows(self.THREAD)
        roll = rng.random()
        existing = state.rows.get((rng.randint(1, self.next_id[name] - 1),))
        if roll < 0.6 or existing is None:
            pk = self.next_id[name]
            self.next_id[name] = pk + 1
            txn.insert(key, [(pk, *[random_value(c, rng) for c in table.columns[1:]])])
        elif roll < 0.85:
            i = rng.randint(1, len(table.columns) - 1)
            after = existing[:i] + (random_value(table.columns[i], rng),) + existing[i + 1 :]
            txn.update(key, [(existing, after)])
        elif existing[0] > 10:  # type: ignore[operator]
            txn.delete(key, [existing])  # the edge-value rows the setup wrote stay
        txn.commit()


def random_value(column: ColumnDef, rng: random.Random) -> object:
    """A random, valid, unambiguously printable value for a column (NULL now and then)."""
    t = column.type
    if column.nullable and rng.random() < 0.1:
        return None
    base = t.base
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[base]
        return (
            rng.randint(0, 2**bits - 1)
            if t.unsigned
            else rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
    if base == "decimal":
        value = Decimal(f"{rng.randint(0, 10**t.precision - 1)}E-{t.scale}")  # exact, any precision
        return value if t.unsigned or rng.random() < 0.5 else value.copy_negate()
    if base in ("float", "double"):
        return rng.randint(-4000, 4000) / 8 + (0.125 if base == "double" else 0.5)
    if base == "date":
        return date(1000, 1, 1) + timedelta(days=rng.randint(0, 3_000_000))
    if base in ("datetime", "timestamp"):
        low, high = (1, 2**31 - 2) if base == "timestamp" else (-30_610_224_000, 253_402_300_799)
        us = rng.randint(0, 999_999) // 10 ** (6 - t.fsp) * 10 ** (6 - t.fsp)
        return _EPOCH + timedelta(seconds=rng.randint(low, high), microseconds=us)
    if base == "time":
        us = rng.randint(0, 999_999) // 10 ** (6 - t.fsp) * 10 ** (6 - t.fsp)
        value = timedelta(seconds=rng.randint(0, 838 * 3600 + 59 * 60 + 58), microseconds=us)
        return -value if rng.random() < 0.3 else value
    if base == "year":
        return rng.choice([0, rng.randint(1901, 2155)])
    if base in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        limit = {"tinytext": 60, "text": 400, "mediumtext": 400, "longtext": 400}.get(base, t.length)
        alphabet = "abcxyz ÄÖü漢字😀,\"'\\"
        text = "".join(rng.choices(alphabet, k=rng.randint(0, min(limit, 40))))
        return text.rstrip(" ") if base == "char" else text
    if base in ("varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        limit = t.length if base == "varbinary" else 64
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, limit)))
    if base == "json":
        return {
            "n": rng.randint(-1000, 1000),
            "tags": [rng.choice(["a", "b", "ç"]) for _ in range(rng.randint(0, 3))],
            "ok": rng.random() < 0.5,
        }
    if base == "enum":
        return rng.choice(t.elements)
    if base == "set":
        return ",".join(e for e in t.elements if rng.random() < 0.5)
    if base == "bit":
        return rng.getrandbits(t.length)
    raise ValueError(f"no random values for {t.sql}")


class Statement(Workload):
    """STATEMENT-format DML: USER_VAR, INTVAR (INSERT_ID, LAST_INSERT_ID), RAND and NOW(6)."""

    name = "statement"
    default_size_mb = 0.2
    DB = "stmtdb"
    THREADS = range(70, 73)
    LOG = ("stmtdb", "stmt_log")
    CHILD = ("stmtdb", "stmt_child")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.last_parent: dict[int, int] = {}

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, 70)
        create_table(
            src,
            table_def(
                self.DB,
                "stmt_log",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("k", "int", nullable=False),
                    col("note", "varchar(64)", nullable=False),
                    col("r", "int", nullable=True, default_sql="NULL"),
                    col("ts", "datetime(6)", nullable=True, default_sql="NULL"),
                ],
                ["id"],
                keys=[("idx_k", ["k"])],
            ),
            70,
        )
        create_table(
            src,
            table_def(
                self.DB,
                "stmt_child",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("parent_id", "int", nullable=False),
                    col("amount", "decimal(10,2)", nullable=False),
                ],
                ["id"],
            ),
            70,
        )

    def _insert_log(self, values: list[tuple[int, str, object, object]]) -> Callable[[TableState], list[int]]:
        def insert(state: TableState) -> list[int]:
            ids = []
            for k, note, r, ts in values:
                pk = state.next_auto_increment
                state.insert((pk, k, note, r, ts))
                ids.append(pk)
            return ids

        return insert

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        thread = rng.choice(self.THREADS)
        txn = src.statements(thread, self.DB)
        log = src.oracle.state(self.LOG)
        child = src.oracle.state(self.CHILD)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(9)
            if kind == 0:
                v = rng.randint(-1000, 1000)
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note) VALUES (@v, 'user var')",
                    apply=lambda _, v=v: self._insert_log([(v, "user var", None, None)])(log),
                    user_vars=[UserVar("v", v)],
                    insert_id=pk,
                )
            elif kind == 1:
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note, ts) VALUES (5, 'parent', NOW(6))",
                    apply=lambda now, pk=pk: log.insert((pk, 5, "parent", None, now)),
                    insert_id=pk,
                    uses_now=True,
                )
                amount = _money(rng, 1, 999)
                cpk = child.next_auto_increment
                txn.query(
                    f"INSERT INTO stmt_child (parent_id, amount) VALUES (LAST_INSERT_ID(), {amount})",
                    apply=lambda _, cpk=cpk, amount=amount, pk=pk: child.insert((cpk, pk, amount)),
                    last_insert_id=pk,
                    insert_id=cpk,
                )
                self.last_parent[thread] = pk
            elif kind == 2 and log.rows:
                ids = sorted(pk[0] for pk in log.rows)  # type: ignore[misc]
                lo = rng.choice(ids)
                hi = min(lo + rng.randint(0, 6), ids[-1])
                seeds = (rng.randrange(MysqlRand.MAX_VALUE), rng.randrange(MysqlRand.MAX_VALUE))

                def rand_update(
                    _: datetime, lo: int = lo, hi: int = hi, seeds: tuple[int, int] = seeds
                ) -> None:
                    gen = MysqlRand(*seeds)
                    for pk in range(lo, hi + 1):  # InnoDB walks the primary key in order
                        row = log.rows.get((pk,))
                        if row is not None:
                            r = int(gen.next() * 1000)
                            log.update(row, (row[0], row[1], row[2], r, row[4]))

                txn.query(
                    f"UPDATE stmt_log SET r = FLOOR(RAND()*1000) WHERE id BETWEEN {lo} AND {hi}",
                    apply=rand_update,
                    rand_seeds=seeds,
                )
            elif kind == 3:
                note = rng.choice(["héllo 😀", "it's", "back\\slash", "名前"])
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note) VALUES (7, @note)",
                    apply=lambda _, note=note: self._insert_log([(7, note, None, None)])(log),
                    user_vars=[UserVar("note", note)],
                    insert_id=pk,
                )
            elif kind == 4:
                amt = _money(rng, -50, 50)
                parent_id = self.last_parent.get(thread, 0)
                cpk = child.next_auto_increment
                txn.query(
                    f"INSERT INTO stmt_child (parent_id, amount) VALUES ({parent_id}, @amt)",
                    apply=lambda _, cpk=cpk, parent_id=parent_id, amt=amt: child.insert(
                        (cpk, parent_id, amt)
                    ),
                    user_vars=[UserVar("amt", amt)],
                    insert_id=cpk,
                )
            elif kind == 5:
                n = rng.randint(2, 4)
                values = [(rng.randint(0, 9), f"multi-{i}", None, None) for i in range(n)]
                pk = log.next_auto_increment
                text = ", ".join(f"({k}, {sql_string(note)})" for k, note, _, _ in values)
                txn.query(
                    f"INSERT INTO stmt_log (k, note) VALUES {text}",
                    apply=lambda _, values=values: self._insert_log(values)(log),
                    insert_id=pk,
                )
            elif kind == 6:
                target = rng.randint(0, 9)
                # rows older than the last few hundred ids go too, so the table stays small
                cutoff = max(1, log.next_auto_increment - 300)

                def delete(_: datetime, target: int = target, cutoff: int = cutoff) -> None:
                    for row in [r for r in log.rows.values() if r[1] == target or r[0] < cutoff]:  # type: ignore[operator]
                        log.delete(row)

                txn.query(f"DELETE FROM stmt_log WHERE k = {target} OR id < {cutoff}", apply=delete)

                def orphans(_: datetime) -> None:
                    for row in [r for r in child.rows.values() if (r[1],) not in log.rows]:
                        child.delete(row)

                # keeps stmt_child bounded; a subquery on another table is safe in STATEMENT format
                txn.query(
                    "DELETE FROM stmt_child WHERE parent_id NOT IN (SELECT id FROM stmt_log)", apply=orphans
                )
            elif kind == 7 and child.rows:
                parent_id = rng.choice(sorted(r[1] for r in child.rows.values()))  # type: ignore[type-var]

                def bump(_: datetime, parent_id: object = parent_id) -> None:
                    for row in [r for r in child.rows.values() if r[1] == parent_id]:
                        child.update(row, (row[0], row[1], row[2] + Decimal("1.25")))  # type: ignore[operator]

                txn.query(
                    f"UPDATE stmt_child SET amount = amount + 1.25 WHERE parent_id = {parent_id}", apply=bump
                )
            else:
                pk = log.next_auto_increment
                if rng.random() < 0.5:
                    txn.query(
                        "INSERT INTO stmt_log (k, note, r) VALUES (11, 'null var', @nv)",
                        apply=lambda _: self._insert_log([(11, "null var", None, None)])(log),
                        user_vars=[UserVar("nv", None)],
                        insert_id=pk,
                    )
                else:
                    f = rng.randint(0, 400) / 4 + 0.25
                    txn.query(
                        "INSERT INTO stmt_log (k, note, r) VALUES (12, 'real var', FLOOR(@f))",
                        apply=lambda _, f=f: self._insert_log([(12, "real var", int(f // 1), None)])(log),
                        user_vars=[UserVar("f", f)],
                        insert_id=pk,
                    )
        txn.commit()


class Temporary(Workload):
    """Sessions staging data in same-named temporary tables, folding it into a real table."""

    name = "temporary"
    default_size_mb = 0.2
    DB = "tmpdb"
    SESSIONS = (1001, 1002, 1003, 1004)
    TOTALS = ("tmpdb", "totals")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.scripts: dict[int, Iterator[None]] = {}

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.SESSIONS[0])
        create_table(
            src,
            table_def(
                self.DB,
                "totals",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("session_id", "int", nullable=False),
                    col("n", "int", nullable=False),
                    col("total", "decimal(12,2)", nullable=False),
                ],
                ["id"],
            ),
            self.SESSIONS[0],
        )

    def step(self, src: SourceServer) -> None:
        thread = self.rng.choice(self.SESSIONS)
        script = self.scripts.get(thread)
        if script is None or next(script, StopIteration) is StopIteration:
            self.scripts[thread] = self._session(src, thread)
            next(self.scripts[thread])

    def _session(self, src: SourceServer, thread: int) -> Iterator[None]:
        rng = self.rng
        db = self.DB
        stage = table_def(
            db,
            "tmp_stage",
            [col("id", "int", nullable=False), col("amount", "decimal(10,2)", nullable=False)],
            ["id"],
        )
        tkey: TempKey = (thread, db, "tmp_stage")
        src.standalone_query(
            create_table_sql(stage, temporary=True),
            db=db,
            thread_id=thread,
            apply=lambda: src.oracle.create_table(stage, temporary_thread=thread),
        )
        yield
        next_id = 1
        for _ in range(rng.randint(1, 3)):
            values = [(next_id + i, _money(rng, 0, 300)) for i in range(rng.randint(1, 4))]
            next_id += len(values)
            text = ", ".join(f"({pk}, {amount})" for pk, amount in values)
            txn = src.statements(thread, db)

            def stage_rows(_: datetime, values: list[tuple[int, Decimal]] = values) -> None:
                state = src.oracle.state(tkey)
                for row in values:
                    state.insert(row)

            txn.query(f"INSERT INTO tmp_stage VALUES {text}", apply=stage_rows, temporary=True)
            txn.commit()
            yield
        if rng.random() < 0.5:
            txn = src.statements(thread, db)

            def double(_: datetime) -> None:
                state = src.oracle.state(tkey)
                for row in [r for r in state.rows.values() if r[0] <= 2]:  # type: ignore[operator]
                    state.update(row, (row[0], row[1] * 2))  # type: ignore[operator]

            txn.query("UPDATE tmp_stage SET amount = amount * 2 WHERE id <= 2", apply=double, temporary=True)
            txn.commit()
            yield
        txn = src.statements(thread, db)
        totals = src.oracle.state(self.TOTALS)
        pk = totals.next_auto_increment

        def fold(_: datetime) -> None:
            rows = list(src.oracle.state(tkey).rows.values())
            totals.insert((pk, thread, len(rows), sum((r[1] for r in rows), Decimal("0.00"))))  # type: ignore[misc]

        txn.query(
            f"INSERT INTO totals (session_id, n, total) SELECT {thread}, COUNT(*), SUM(amount) FROM tmp_stage",
            apply=fold,
            insert_id=pk,
            temporary=True,
        )
        txn.commit()
        yield
        src.standalone_query(
            "DROP TEMPORARY TABLE IF EXISTS `tmp_stage` /* generated by server */",
            db=db,
            thread_id=thread,
            apply=lambda: src.oracle.drop_table(tkey),
        )


class Mixed(Workload):
    """A blend of every workload, each with its own schema, transactions interleaved."""

    name = "mixed"
    default_size_mb = 2.0

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.parts = [cls(rng, target_bytes // 4) for cls in BLENDED]

    def setup(self, src: SourceServer) -> None:
        for part in self.parts:
            part.setup(src)

    def step(self, src: SourceServer) -> None:
        part = self.rng.choices(self.parts, weights=[p.weight for p in self.parts])[0]
        part.step(src)


BLENDED: tuple[type[Workload], ...] = (Oltp, Hot, MultiDb, Ddl, Large, Types, Statement, Temporary)
WORKLOAD_CLASSES: dict[str, type[Workload]] = {cls.name: cls for cls in (*BLENDED, Mixed)}

__all__ = [
    "WORKLOAD_CLASSES",
    "RowTransaction",
    "SourceServer",
    "StatementTransaction",
    "Workload",
    "create_table_sql",
    "random_value",
]
