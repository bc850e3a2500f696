"""The source side of a clone: one connection holding a consistent snapshot, the binary-log
position of that snapshot, the tables' definitions and their rows, read unbuffered.

Consistency, per server:

- MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT makes the binary log take part in the
  snapshot: the status variables binlog_snapshot_file / binlog_snapshot_position are the position
  of exactly the transactions the snapshot sees (no lock is taken), and BINLOG_GTID_POS() turns
  that position into the GTID position (what mariadb-dump --single-transaction --gtid records).
  @@gtid_binlog_pos would not do: it moves on with every commit after the snapshot.
- MySQL has no such variables: FLUSH TABLES WITH READ LOCK stops commits while the snapshot
  starts and SHOW BINARY LOG STATUS (SHOW MASTER STATUS before 8.2) gives its file, position and
  Executed_Gtid_Set; UNLOCK TABLES follows once every table is held (what mysqldump does since
  MySQL bug #33630199, for the same reason). That needs the RELOAD privilege.

A consistent read does not isolate a table from DDL: each table is opened at once (SELECT … LIMIT
0), which holds its metadata lock until the clone ends, so later DDL waits. DDL logged between
the snapshot and that moment would be replayed on top of a definition that already has it; on
MariaDB the binary log of that window is read (SHOW BINLOG EVENTS) and the clone refuses when it
holds a statement that changes a table (on MySQL the read lock covers the window).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pymysql
import pymysql.cursors

from ..errors import NumberedError
from ..receiver.connection import ConnectionLost, SourceAccount, connect, source_error
from ..transactions import statement_verb
from .values import quote_mysql

SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
# Engines whose reads the snapshot covers; others are read as they are when read
TRANSACTIONAL_ENGINES = frozenset({"innodb", "rocksdb", "tokudb"})
ER_NO_BINARY_LOGGING = 1381
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_TABLE_DEF_CHANGED = 1412
_NOT_DEFINITIONS = frozenset(
    {"BEGIN", "COMMIT", "ROLLBACK", "XA", "SAVEPOINT", "RELEASE", "INSERT", "UPDATE", "DELETE", "REPLACE"}
)


class CloneError(NumberedError):
    """The clone stopped: MySQL's error number and words, never the password."""


@dataclass(frozen=True)
class SnapshotPosition:
    """Where the source's binary log stood for the snapshot: replication goes on from here."""

    file: str
    pos: int
    gtids: str  # MariaDB's 'domain-server-seq,…' or MySQL's gtid_executed; '' without GTIDs

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}" + (f" ({self.gtids})" if self.gtids else "")


@dataclass(frozen=True)
class SourceTable:
    database: str
    name: str
    kind: str  # 'BASE TABLE', 'VIEW', 'SEQUENCE', 'SYSTEM VERSIONED'
    engine: str


@dataclass(frozen=True)
class LoggedStatement:
    """A statement the source logged in the snapshot's window (its binlog position, database)."""

    where: str
    database: str | None
    sql: str


class SourceSnapshot:
    """One connection to the source and the snapshot it holds until close()."""

    def __init__(self, account: SourceAccount, *, read_timeout: float | None = 600.0) -> None:
        self.account = account
        try:
            self.conn = connect(account, read_timeout=read_timeout)
        except ConnectionLost as exc:
            raise CloneError(
                exc.errno, f"error connecting to source {account.where}: {exc.message}"
            ) from None
        # Values as the server prints them: engine/clone/values.py converts each column at once
        self.conn.decoders = {}
        self.mariadb = self._is_mariadb()

    def _is_mariadb(self) -> bool:
        return "mariadb" in (self._value("SELECT VERSION()") or "").lower()

    def close(self) -> None:
        """The snapshot and its metadata locks end with the session (no ROLLBACK first: it would
        read what is left of an abandoned unbuffered result)."""
        try:
            self.conn.close()
        except Exception:  # the connection may be gone already
            pass

    # -- the snapshot ------------------------------------------------------------------------

    def require_global_select(self) -> None:
        """The clone copies every database: an account that may read only some of them would not
        even see the others (information_schema lists what it may read), and replication would
        then meet tables the slave never got."""
        granted = self._value(
            "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'SELECT' "
            "AND GRANTEE = CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
            "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')"
        )
        if granted == "0":
            raise CloneError(
                ER_SPECIFIC_ACCESS_DENIED,
                "Access denied; you need (at least one of) the SELECT privilege(s) on *.* for this operation: "
                f"the clone reads every database (GRANT SELECT, SHOW VIEW ON *.* TO {self.account.user})",
            )

    def open(self) -> SnapshotPosition:
        """Start the consistent snapshot; the binary-log position it corresponds to."""
        # '' sql_mode: SHOW CREATE TABLE in MySQL's own quoting (no ANSI_QUOTES), CHAR values
        # without their padding (no PAD_CHAR_TO_FULL_LENGTH); TIMESTAMPs as UTC instants
        self._run("SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'")
        self._run("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if self.mariadb:
            self._run("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            status = dict(self._rows("SHOW STATUS LIKE 'binlog_snapshot_%'"))
            file = status.get("Binlog_snapshot_file") or ""
            pos = int(status.get("Binlog_snapshot_position") or 0)
            self._require_binlog(file)
            gtids = self._value("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos)) or ""
            return SnapshotPosition(file, pos, gtids)
        self._run("FLUSH TABLES WITH READ LOCK")
        self._run("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        row = self._binary_log_status()
        self._require_binlog(row[0] if row else "")
        gtids = "".join(str(row[4]).split()) if len(row) > 4 and row[4] else ""
        return SnapshotPosition(row[0], int(row[1]), gtids)

    def hold(self, tables: list[SourceTable]) -> None:
        """Open every table in the snapshot's transaction: its metadata lock keeps DDL off it until
        the clone ends. On MySQL the read lock taken by open() is released after that."""
        for table in tables:
            if table.kind != "VIEW":
                self._run(f"SELECT 1 FROM {_qualified(table)} LIMIT 0", where=table)
        if not self.mariadb:
            self._run("UNLOCK TABLES")

    def tables(self) -> list[SourceTable]:
        """The tables and views of every database but the server's own, in name order."""
        rows = self._rows(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, COALESCE(ENGINE, '') FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        return [SourceTable(str(db), str(name), str(kind), str(engine)) for db, name, kind, engine in rows]

    def databases(self) -> list[str]:
        return sorted(
            str(db) for (db,) in self._rows("SHOW DATABASES") if str(db).lower() not in SYSTEM_DATABASES
        )

    def binlog_end(self) -> tuple[str, int]:
        """Where the source's binary log ends now."""
        row = self._binary_log_status()
        return str(row[0]), int(row[1])

    def statements_between(self, start: SnapshotPosition, end: tuple[str, int]) -> list[LoggedStatement]:
        """The statements other than DML and transaction delimiters that the source logged from
        `start` to `end` (MariaDB: what ran between the snapshot and the tables being held)."""
        end_file, end_pos = end
        names = [str(row[0]) for row in self._rows("SHOW BINARY LOGS")]
        files = names[names.index(start.file) :] if start.file in names else [start.file]
        if end_file in files:
            files = files[: files.index(end_file) + 1]
        found = []
        for file in files:
            first = start.pos if file == start.file else 4
            for _, pos, kind, _, _, info in self._rows(f"SHOW BINLOG EVENTS IN '{file}' FROM {first}"):
                if file == end_file and int(pos) >= end_pos:
                    break
                if str(kind) != "Query":
                    continue
                database, sql = _use_prefix(str(info))
                if statement_verb(sql) not in _NOT_DEFINITIONS:
                    found.append(LoggedStatement(f"{file}:{pos}", database, sql))
        return found

    # -- definitions and rows ------------------------------------------------------------------

    def create_database(self, database: str) -> str:
        return str(self._rows(f"SHOW CREATE DATABASE {quote_mysql(database)}")[0][1])

    def create_statement(self, table: SourceTable) -> str:
        kind = "VIEW" if table.kind == "VIEW" else "TABLE"
        return str(self._rows(f"SHOW CREATE {kind} {_qualified(table)}", where=table)[0][1])

    def collations(self, table: SourceTable) -> dict[str, int]:
        """Each character column's collation id (lower-cased column name -> id)."""
        rows = self._rows(
            "SELECT c.COLUMN_NAME, co.ID FROM information_schema.COLUMNS c "
            "JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME "
            "WHERE c.TABLE_SCHEMA = %s AND c.TABLE_NAME = %s",
            (table.database, table.name),
        )
        return {str(name).lower(): int(cid) for name, cid in rows}

    def rows(self, table: SourceTable, expressions: list[str], chunk_rows: int) -> Iterator[list[tuple]]:
        """The table's rows in the snapshot, `chunk_rows` at a time, streamed (an unbuffered
        cursor: the client holds one chunk, never the table)."""
        # An abandoned result is left unread: the session ends with close(), without reading it
        cursor = self.conn.cursor(pymysql.cursors.SSCursor)
        try:
            cursor.execute(f"SELECT {', '.join(expressions)} FROM {_qualified(table)}")
            while True:
                chunk = cursor.fetchmany(chunk_rows)
                if not chunk:
                    return
                yield list(chunk)
        except pymysql.err.MySQLError as exc:
            raise self._error(exc, table) from None

    # -- helpers --------------------------------------------------------------------------------

    def _binary_log_status(self) -> tuple:
        try:
            rows = self._rows("SHOW BINARY LOG STATUS") if not self.mariadb else []
        except CloneError:  # before MySQL 8.2
            rows = []
        rows = rows or self._rows("SHOW MASTER STATUS")
        return tuple(rows[0]) if rows else ()

    def _require_binlog(self, file: str) -> None:
        if not file:
            raise CloneError(
                ER_NO_BINARY_LOGGING,
                "You are not using binary logging: the source writes no binary log to replicate from (log_bin)",
            )

    def _value(self, sql: str, args: tuple = ()) -> str | None:
        rows = self._rows(sql, args)
        value = rows[0][0] if rows else None
        return None if value is None else str(value)

    def _run(self, *statements: str, where: SourceTable | None = None) -> None:
        for sql in statements:
            self._rows(sql, where=where)

    def _rows(self, sql: str, args: tuple = (), where: SourceTable | None = None) -> list[tuple]:
        try:
            with self.conn.cursor() as cursor:
                cursor.execute(sql, args or None)
                return list(cursor.fetchall())
        except pymysql.err.MySQLError as exc:
            raise self._error(exc, where) from None

    def _error(self, exc: Exception, table: SourceTable | None) -> CloneError:
        error = source_error(exc, self.account)
        message = error.message
        if table is not None:
            message += f" (reading `{table.database}`.`{table.name}`)"
        if error.errno == ER_TABLE_DEF_CHANGED:
            message += ": a DDL statement changed it while the clone started; run the clone again"
        return CloneError(error.errno, message)


def _qualified(table: SourceTable) -> str:
    return f"{quote_mysql(table.database)}.{quote_mysql(table.name)}"


_USE = re.compile(r"use `((?:[^`]|``)*)`; ", re.DOTALL)


def _use_prefix(info: str) -> tuple[str | None, str]:
    """SHOW BINLOG EVENTS shows a Query event's default database as a 'use `db`; ' prefix."""
    match = _USE.match(info)
    if match is None:
        return None, info
    return match.group(1).replace("``", "`"), info[match.end() :]
