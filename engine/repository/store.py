"""The SQLite file under the replication repository: its connection, transactions and row primitives.

The file is in WAL mode with a busy timeout, so a console process can read status while an applier
writes it several times a second. Every write is one short ``BEGIN IMMEDIATE`` transaction: taking
the write lock up front means a transaction that reads before it writes never fails on a stale
snapshot, it waits its turn instead.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from ..private_files import restrict_new_files
from .errors import RepositoryError, TooManyChannels, UnknownChannel
from .migrations import create_missing_tables
from .tables import (
    DEFAULT_CHANNEL,
    MASTER_INFO,
    MAX_CHANNELS,
    RELAY_LOG_INFO,
    TABLES,
    Table,
    check_name,
    normalize,
)

BUSY_TIMEOUT_S = 10.0


class Store:
    """The connection, its transactions and the row operations every table's methods use."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        restrict_new_files()  # the repository holds the source's credentials; its WAL and -shm too
        try:
            # isolation_level=None: transactions are opened and closed here, never implicitly
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise RepositoryError(f"{self.path}: cannot open the replication repository: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._upsert_sql: dict[tuple[str, tuple[str, ...]], str] = {}
            if self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self._conn.execute("PRAGMA journal_mode = WAL")
            # FULL: a checkpoint that returned is on disk, even after a power loss
            self._conn.execute("PRAGMA synchronous = FULL")
            self._durable = True
            create_missing_tables(self._conn, self._write)
            if self._canonical(DEFAULT_CHANNEL) is None:
                self.ensure_channel(DEFAULT_CHANNEL)
        except sqlite3.Error as exc:
            self._conn.close()
            raise RepositoryError(f"{self.path}: cannot open the replication repository: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ---------------------------------------------------------------------------

    @contextmanager
    def _write(self, what: str, *, durable: bool = True) -> Iterator[None]:
        """One BEGIN IMMEDIATE transaction; rolled back whole on any exception.

        durable=False: committed without waiting for the disk (WAL, synchronous NORMAL: about 16 us
        against 180 us here). For status written at every transaction applied or received, which
        a power loss may take back to an earlier state but never corrupt; the next durable commit
        writes it to disk with its own."""
        with self._lock:
            if durable != self._durable:
                self._conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                self._durable = durable
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise RepositoryError(f"{self.path}: cannot {what}: {exc}") from exc
            try:
                yield
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise RepositoryError(f"{self.path}: cannot {what}: {exc}") from exc
                raise

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A read transaction, so rows from several tables come from the same commit."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    yield
                finally:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise RepositoryError(f"{self.path}: cannot read the replication repository: {exc}") from exc

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._conn.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _canonical(self, name: str) -> str | None:
        """The channel's name as first stored, or None if there is no such channel."""
        rows = self._query("SELECT Channel_name FROM master_info WHERE Channel_name = ?", [name])
        return rows[0]["Channel_name"] if rows else None

    def _ensure(self, name: str) -> str:
        """Inside a write transaction: the channel's stored name, creating the channel if need be."""
        found = self._canonical(name)
        if found is not None:
            return found
        count = self._query("SELECT count(*) AS n FROM master_info")[0]["n"]
        if count >= MAX_CHANNELS:
            raise TooManyChannels(
                f"cannot create channel {name!r}: a replica has at most {MAX_CHANNELS} channels"
            )
        self._upsert(MASTER_INFO, name, {})
        self._upsert(RELAY_LOG_INFO, name, {})
        return name

    def _upsert(self, table: Table, channel: str, row: dict[str, Any]) -> None:
        """Write the given columns of one row of `channel`; the others keep their values."""
        given = row.pop(table.key, None)
        if given is not None and str(given).lower() != channel.lower():
            raise RepositoryError(f"a {table.name} row for channel {given!r} was given for {channel!r}")
        row[table.key] = channel
        missing = [k for k in table.pk if k not in row or row[k] is None]
        if missing:
            raise RepositoryError(f"a {table.name} row needs {', '.join(missing)}")
        columns = tuple(row)
        sql = self._upsert_sql.get((table.name, columns))
        if sql is None:
            # one statement, cached per column set: status is written several times a second
            names = ", ".join(f'"{c}"' for c in columns)
            updates = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in table.pk)
            conflict = ", ".join(f'"{c}"' for c in table.pk)
            sql = (
                f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join("?" * len(columns))}) '
                f"ON CONFLICT ({conflict}) DO " + (f"UPDATE SET {updates}" if updates else "NOTHING")
            )
            self._upsert_sql[(table.name, columns)] = sql
        self._conn.execute(sql, [row[c] for c in columns])

    def _replace_rows(self, table: Table, channel: str, rows: list[dict[str, Any]]) -> None:
        """Make `rows` the channel's rows of a two-key table: others are deleted, these upserted."""
        id_column = table.pk[1]
        ids = [row.get(id_column) for row in rows]
        if any(i is None for i in ids):
            raise RepositoryError(f"every {table.name} row needs {id_column}")
        if len(set(ids)) != len(ids):
            raise RepositoryError(f"{table.name} rows repeat a {id_column}")
        placeholders = ", ".join("?" for _ in ids)
        self._conn.execute(
            f'DELETE FROM "{table.name}" WHERE "{table.key}" = ? AND "{id_column}" NOT IN ({placeholders})',
            [channel, *ids],
        )
        for row in rows:
            self._upsert(table, channel, row)

    # -- channels -------------------------------------------------------------------------------

    def channels(self) -> list[str]:
        """Every channel's name, the default channel '' first."""
        with self._snapshot():
            return [r["Channel_name"] for r in self._query("SELECT Channel_name FROM master_info ORDER BY 1")]

    def ensure_channel(self, name: str) -> None:
        """Create the channel unless a channel of that name (in any letter case) exists."""
        name = check_name(name)
        with self._write(f"create channel {name!r}"):
            self._ensure(name)

    def delete_channel(self, name: str) -> None:
        """Remove every row of the channel; the default channel is reset instead (it always exists)."""
        name = check_name(name)
        with self._write(f"delete channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in TABLES:
                self._conn.execute(f'DELETE FROM "{table.name}" WHERE "{table.key}" = ?', [channel])
            if channel == DEFAULT_CHANNEL:
                self._ensure(DEFAULT_CHANNEL)

    # -- metadata -------------------------------------------------------------------------------

    def _row(self, table: Table, name: str) -> dict[str, Any] | None:
        name = check_name(name)
        with self._snapshot():
            rows = self._query(f'SELECT * FROM "{table.name}" WHERE "{table.key}" = ?', [name])
        return rows[0] if rows else None

    def _update(self, table: Table, name: str, values: Mapping[str, Any]) -> None:
        name = check_name(name)
        row = normalize(table, values)
        with self._write(f"update {table.name} of channel {name!r}"):
            channel = self._ensure(name)
            if row:
                self._upsert(table, channel, row)

    def find_channel(self, name: str) -> str | None:
        """The channel's name as stored (any letter case matches), or None if there is none."""
        name = check_name(name)
        with self._snapshot():
            return self._canonical(name)
