"""Relay logs written transaction by transaction, for tests that need one precise log: DDL,
statement-format DML and row events, as a MySQL 8.0 source logs them."""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.binlog.column_types import ColumnDef, TableDef
from engine.binlog.constants import ROWS_FLAG_STMT_END, EventType
from engine.binlog.writer import QueryStatusVars, query_body, rows_body_prefix, table_map_body, xid_body
from engine.generate.relay_writer import ChannelSettings, RelayLogWriter, SourceEvent

START = 1_700_000_000


class RelayLogBuilder:
    """A channel's relay log, one transaction at a time; its GTIDs are `source_uuid`:1, :2, …
    Each transaction is stamped `at` (default START), seconds since the epoch."""

    def __init__(self, folder: Path, source: int = 11) -> None:
        self.source_uuid = uuid.UUID(int=source)
        self.writer = RelayLogWriter(
            ChannelSettings(
                directory=folder,
                source_uuid=self.source_uuid.bytes,
                start_time=START,
                max_binlog_size=1 << 20,
                max_relay_log_size=1 << 20,
            )
        )
        self.status = QueryStatusVars()
        self.table_id = 100
        self.xid = 1

    def ddl(self, sql: str, db: str = "", at: int = START) -> None:
        """A statement logged on its own, as DDL is."""
        self._write([self._query(sql, db, at)], at)

    def statement(self, sql: str, db: str, at: int = START) -> None:
        """Statement-format DML: BEGIN, the statement, XID."""
        self._write([self._query("BEGIN", db, at), self._query(sql, db, at), self._xid(at)], at)

    def rows(self, table: TableDef, kind: int, rows: list[tuple], at: int = START) -> None:
        """One rows event of `kind` (WRITE_ROWS: the rows; UPDATE_ROWS: before, after, …) in its
        own transaction."""
        self.table_id += 1
        images = b"".join(table.row_encoder(r) for r in rows)
        body = rows_body_prefix(kind, self.table_id, ROWS_FLAG_STMT_END, len(table.columns)) + images
        events = [
            self._query("BEGIN", table.db, at),
            SourceEvent(EventType.TABLE_MAP, table_map_body(self.table_id, table), at),
            SourceEvent(kind, body, at),
            self._xid(at),
        ]
        self._write(events, at)

    def close(self) -> Path:
        """Ends the relay log; its index file."""
        return self.writer.close().index_file

    def _query(self, sql: str, db: str, at: int) -> SourceEvent:
        return SourceEvent(EventType.QUERY, query_body(thread_id=1, db=db, query=sql, status=self.status), at)

    def _xid(self, at: int) -> SourceEvent:
        self.xid += 1
        return SourceEvent(EventType.XID, xid_body(self.xid), at)

    def _write(self, events: list[SourceEvent], at: int) -> None:
        self.writer.write_transaction(
            events, writeset=None, may_have_sbr=True, commit_timestamp_us=at * 10**6
        )


def table_of(db: str, name: str = "t", value: str = "v", value_type: str = "VARCHAR(10)") -> TableDef:
    """`db`.`name` (id INT NOT NULL PRIMARY KEY, `value` `value_type`)."""
    columns = (ColumnDef.of("id", "INT", nullable=False), ColumnDef.of(value, value_type))
    return TableDef(db, name, columns, ("id",))


def write_relay_log(folder: Path, statements: list[tuple[str, bool]]) -> Path:
    """Relay logs of DDL (standalone) and statement-format DML (BEGIN … COMMIT via XID) transactions
    in database `shop`, from source UUID 7, one second apart."""
    log = RelayLogBuilder(folder, source=7)
    for i, (sql, is_ddl) in enumerate(statements):
        (log.ddl if is_ddl else log.statement)(sql, "shop", START + i)
    return log.close()
