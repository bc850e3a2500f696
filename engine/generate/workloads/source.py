"""The simulated source: a MySQL 8.0 server's binary-log layer for every session.

SourceServer turns row changes, statements and DDL into
the events MySQL would log (BEGIN, TABLE_MAP, rows events split at 8 KB, XID; GTID + QUERY for
DDL; INTVAR/RAND/USER_VAR before statement-format queries), applies each change to the oracle as
it logs it, and hands finished transactions with their writesets to the relay-log writer.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from engine.binlog.column_types import TableDef
from engine.binlog.constants import (
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    ROWS_FLAG_STMT_END,
    EventFlag,
    EventType,
)
from engine.binlog.writer import (
    QueryStatusVars,
    intvar_body,
    query_body,
    rand_body,
    rows_body_prefix,
    split_rows,
    table_map_body,
    user_var_body,
    xid_body,
)
from engine.generate.oracle import Oracle, TableKey, TableState, TempKey
from engine.generate.relay_writer import LoggedTransaction, RelayLogWriter, SourceEvent
from engine.scheduling.writeset import writeset_hash

Row = tuple[object, ...]
EPOCH = datetime(1970, 1, 1)
TIME_ZONE = "+00:00"  # sessions that use time functions run with time_zone='+00:00'


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
        return EPOCH + timedelta(microseconds=self.now_us)

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
        apply(EPOCH + timedelta(microseconds=start))
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
