"""The DuckDB slave: one file holding the replicated databases (one schema each) and, in the
schema ``__relaydeck``, what was applied — committed in the same DuckDB transaction as the data.

Exactly once rests on that: a batch's rows, its catalog changes, the channel's new position and
the commit records of its transactions become durable together or not at all, so a restart after
any stop resumes from the last position DuckDB says it committed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from ..errors import ER_CANT_LOCK, ER_CANT_OPEN_FILE, SlaveFileError
from ..private_files import restrict_new_files
from .arrow_inputs import ArrowInputs
from .names import INTERNAL_SCHEMA, TEMPORARY_SCHEMA, mysql_database
from .schema import WHOLE_CATALOG_FORMAT, Catalog

if TYPE_CHECKING:
    from ..transactions import Transaction, TransactionRecord


# DuckDB checkpoints when its WAL passes the threshold (16 MB by default), inside the commit that
# passed it, rewriting every changed row group. A replay changes the same rows again and again:
# checkpointing a quarter as often measured 5-9% faster on the MariaDB capture (four alternating
# pairs); a restart replays at most that much WAL.
CHECKPOINT_THRESHOLD = "64MB"
# DuckDB's own threads for the applier's connection. Its statements are many and small (a batch's
# deletes and inserts per table, commit records): spreading each over a task scheduler cost more
# CPU than it saved, and the workers already run statements side by side on their own threads.
# Measured on 2 cores against the default (one per core), interleaved: MariaDB capture 3-7% faster
# and 7% less engine CPU, a bulk-load log 5-8%, DDL-heavy logs 4-15%. Readers keep the default.
APPLIER_DUCKDB_THREADS = "1"
_SETUP = f"""
CREATE SCHEMA IF NOT EXISTS {INTERNAL_SCHEMA};
CREATE TABLE IF NOT EXISTS {INTERNAL_SCHEMA}.progress (
    channel VARCHAR PRIMARY KEY,
    relay_log_file VARCHAR,
    relay_log_pos BIGINT,
    source_log_file VARCHAR,
    source_log_pos BIGINT,
    executed_gtids VARCHAR,
    transactions BIGINT,
    last_transaction VARCHAR,
    updated_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS {INTERNAL_SCHEMA}.commits (
    channel VARCHAR,
    seqno BIGINT,
    gtid VARCHAR,
    relay_log_file VARCHAR,
    relay_log_pos BIGINT,
    source_log_file VARCHAR,
    source_log_pos BIGINT,
    worker INTEGER,
    committed_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS {INTERNAL_SCHEMA}.catalog (id INTEGER PRIMARY KEY, body VARCHAR);
CREATE TABLE IF NOT EXISTS {INTERNAL_SCHEMA}.catalog_tables (
    kind VARCHAR,
    schema_name VARCHAR,
    table_name VARCHAR,
    body VARCHAR
);
"""


def sandbox_config(**settings: str) -> dict[str, str]:
    """DuckDB settings for a connection that runs statements from relay logs.

    A relay log is input: nothing in it may make DuckDB read or write files other than the
    database's own (its WAL and temporary spill files stay usable), reach the network, or install
    or load extensions; slave/guard.py refuses such statements and this holds even if one slipped
    through. DuckDB allows external access to be switched off only, never on again; with the
    configuration locked, nothing can change any setting afterwards. Registered Arrow tables (how
    row events are applied) are not external access. `settings` are set before the lock."""
    return {
        **settings,
        "enable_external_access": "false",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "false",
        "allow_community_extensions": "false",
        "lock_configuration": "true",
    }


@dataclass(slots=True, unsafe_hash=True)
class ChannelProgress:
    """Where a channel's applier stands, as last committed to the slave."""

    channel: str
    relay_log_file: str | None = None
    relay_log_pos: int = 4
    source_log_file: str | None = None
    source_log_pos: int = 0
    executed_gtids: str = ""
    transactions: int = 0
    last_transaction: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class CommitRecord:
    channel: str
    seqno: int  # the transaction's ordinal in the channel's stream since the slave was created
    gtid: str | None
    relay_log_file: str
    relay_log_pos: int
    source_log_file: str | None
    source_log_pos: int
    worker: int = 0


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def open_slave_file(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """DuckDB's connection to the slave; a file another process holds, or one that is not a DuckDB
    database, is a one-line error naming the file (and the process, where DuckDB names it)."""
    try:
        settings = {"checkpoint_threshold": CHECKPOINT_THRESHOLD}
        if not read_only:
            settings["threads"] = APPLIER_DUCKDB_THREADS
        return duckdb.connect(path, read_only=read_only, config=sandbox_config(**settings))
    except duckdb.Error as exc:
        message = str(exc).removeprefix("IO Error: ")
        holder = re.search(r"Conflicting lock is held in .*\(PID (\d+)\)", message)
        if holder is None:
            raise SlaveFileError(
                ER_CANT_OPEN_FILE, f"slave file {path} cannot be opened: {message}"
            ) from None
        pid = int(holder.group(1))
        who = "another relaydeck process" if _is_relaydeck(pid) else "another process"
        raise SlaveFileError(ER_CANT_LOCK, f"slave file {path} is in use by {who} (pid {pid})") from None


def _is_relaydeck(pid: int) -> bool:
    try:
        return b"relaydeck" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class _SharedDatabase:
    """What every session on one slave file shares: the connection, the catalog, the DDL lock."""

    def __init__(self, path: str, read_only: bool = False) -> None:
        self.path = path
        if not read_only:
            restrict_new_files()  # the replicated data: the file and the WAL DuckDB creates later
        self.con = open_slave_file(path, read_only)
        if not read_only:
            self.con.execute(_SETUP)
        self.catalog = Catalog()
        # What the file holds of the catalog: the header and each table's text (Catalog.parts);
        # a DDL writes only what differs. None: the header is not in the parts' form yet.
        self.saved_catalog: tuple[str | None, dict[tuple[str, str, str], str]] = (None, {})
        # The file's catalog name (its stem): every replicated table is named with it, since a
        # database of that name would otherwise be ambiguous to DuckDB (catalog or schema?).
        self.duckdb_catalog: str = self.con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        # Definitions change one transaction at a time across channels: the catalog's rows (its
        # header and its tables') are shared, and two channels rewriting them at once would
        # conflict in DuckDB.
        self.ddl_lock = threading.RLock()
        # The last committed position of each channel applied through this handle (lower-case
        # name): status publishing reads it here several times a second instead of querying.
        self.committed: dict[str, ChannelProgress] = {}


class Slave:
    """A DuckDB database file under replication; `session()` gives another thread its own cursor."""

    def __init__(
        self, path: str | Path, _shared: _SharedDatabase | None = None, read_only: bool = False
    ) -> None:
        """read_only: inspect a slave without changing it (the file must exist)."""
        self.path = str(path)
        self._db = _shared or _SharedDatabase(self.path, read_only)
        self.con = self._db.con if _shared is None else self._db.con.cursor()
        self.arrow_inputs = ArrowInputs(self.con)  # what this cursor's statements read by name
        self._owns = _shared is None
        self._catalog_changed = False
        # The catalog the open transaction's DDL left, written to the file at its commit (save_catalog)
        self._catalog_to_write: Catalog | None = None
        self._holds_ddl_lock = False
        self._pending_progress: ChannelProgress | None = None
        if _shared is None:
            self._db.catalog = self._load_catalog()

    def session(self) -> Slave:
        """A handle on the same slave with its own DuckDB cursor (one per applier thread)."""
        return Slave(self.path, self._db)

    @property
    def catalog(self) -> Catalog:
        return self._db.catalog

    @property
    def duckdb_catalog(self) -> str:
        """The DuckDB catalog (the attached database) the replicated tables are in."""
        return self._db.duckdb_catalog

    def close(self) -> None:
        if self._owns:
            self._db.con.close()
        else:
            self.con.close()

    # -- transactions --------------------------------------------------------------------------

    def begin(self, changes_definitions: bool = False) -> None:
        if changes_definitions:
            self._db.ddl_lock.acquire()
            self._holds_ddl_lock = True
        self.con.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        try:
            if self._catalog_to_write is not None:
                self._write_catalog(self._catalog_to_write)
            self.con.execute("COMMIT")
        except BaseException:
            self.rollback()  # nothing of it stays: the catalog in memory is the file's again
            raise
        if self._pending_progress is not None:
            self._db.committed[self._pending_progress.channel.lower()] = self._pending_progress
        self._pending_progress = None
        self._catalog_changed = False
        self._release_ddl_lock()

    def rollback(self) -> None:
        self._pending_progress = None
        self._catalog_to_write = None
        try:
            self.con.execute("ROLLBACK")
        except duckdb.TransactionException:
            pass  # no transaction open (the error came from BEGIN itself)
        self.arrow_inputs.rolled_back()
        if self._catalog_changed:
            self._db.catalog = self._load_catalog()
            self._catalog_changed = False
        self._release_ddl_lock()

    def _release_ddl_lock(self) -> None:
        if self._holds_ddl_lock:
            self._holds_ddl_lock = False
            self._db.ddl_lock.release()

    # -- what was applied ----------------------------------------------------------------------

    def progress(self, channel: str) -> ChannelProgress | None:
        row = self.con.execute(
            f"SELECT channel, relay_log_file, relay_log_pos, source_log_file, source_log_pos, executed_gtids, "
            f"transactions, last_transaction FROM {INTERNAL_SCHEMA}.progress WHERE lower(channel) = lower(?)",
            [channel],
        ).fetchall()
        return ChannelProgress(*row[0]) if row else None

    def committed_progress(self, channel: str) -> ChannelProgress | None:
        """progress(), from memory when this process committed the channel's last position."""
        known = self._db.committed.get(channel.lower())
        return known if known is not None else self.progress(channel)

    def all_progress(self) -> list[ChannelProgress]:
        rows = self.con.execute(
            f"SELECT channel, relay_log_file, relay_log_pos, source_log_file, source_log_pos, executed_gtids, "
            f"transactions, last_transaction FROM {INTERNAL_SCHEMA}.progress ORDER BY channel"
        ).fetchall()
        return [ChannelProgress(*row) for row in rows]

    def record(self, progress: ChannelProgress, commits: list[CommitRecord]) -> None:
        """Inside the open transaction: the channel's new position and its transactions' records."""
        self.record_progress(progress)
        self.record_commits(commits)

    def record_progress(self, progress: ChannelProgress) -> None:
        """Inside the open transaction: where the channel stands (for parallel appliers, the LWM)."""
        self._pending_progress = progress
        values = [
            progress.relay_log_file,
            progress.relay_log_pos,
            progress.source_log_file,
            progress.source_log_pos,
            progress.executed_gtids,
            progress.transactions,
            progress.last_transaction,
            _utc_now(),
            progress.channel,
        ]
        self._update_or_insert(
            f"UPDATE {INTERNAL_SCHEMA}.progress SET relay_log_file = ?, relay_log_pos = ?, "
            "source_log_file = ?, source_log_pos = ?, executed_gtids = ?, transactions = ?, "
            "last_transaction = ?, updated_at = ? WHERE channel = ?",
            f"INSERT INTO {INTERNAL_SCHEMA}.progress (relay_log_file, relay_log_pos, source_log_file, "
            "source_log_pos, executed_gtids, transactions, last_transaction, updated_at, channel) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )

    def _update_or_insert(self, update: str, insert: str, values: list[object]) -> None:
        """The row updated in place, inserted when it is not there yet: measured a third of the
        cost of INSERT OR REPLACE, and the row is there after the first time."""
        (updated,) = self.con.execute(update, values).fetchone()
        if not updated:
            self.con.execute(insert, values)

    def record_commits(self, commits: list[CommitRecord]) -> None:
        """Inside the open transaction: one record per transaction it commits (exactly once rests
        on these: a parallel worker's records are how recovery tells applied from missing)."""
        if not commits:
            return
        self._insert_commits(
            [c.channel for c in commits],
            [c.seqno for c in commits],
            [c.gtid for c in commits],
            [c.relay_log_file for c in commits],
            [c.relay_log_pos for c in commits],
            [c.source_log_file for c in commits],
            [c.source_log_pos for c in commits],
            [c.worker for c in commits],
        )

    def record_transactions(
        self,
        channel: str,
        seqnos: Sequence[int],
        transactions: Sequence[Transaction | TransactionRecord],
        worker: int,
    ) -> None:
        """record_commits for transactions one worker commits together, built column-wise (a
        CommitRecord per transaction measured an eighth of a parallel worker's time)."""
        n = len(transactions)
        self._insert_commits(
            [channel] * n,
            seqnos,
            [t.gtid for t in transactions],
            [t.end.log_name for t in transactions],
            [t.end.pos for t in transactions],
            [t.source_log_file for t in transactions],
            [t.source_end_pos for t in transactions],
            [worker] * n,
        )

    def _insert_commits(
        self,
        channel: list[str],
        seqno: Iterable[int],
        gtid: list[str | None],
        relay_file: list[str],
        relay_pos: list[int],
        source_file: list[str | None],
        source_pos: list[int],
        worker: list[int],
    ) -> None:
        now = _utc_now()
        if len(gtid) == 1:
            # one record (a DDL, a transaction committed alone): measured a third of the cost of
            # registering an Arrow table for it
            self.con.execute(
                f"INSERT INTO {INTERNAL_SCHEMA}.commits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [channel[0], next(iter(seqno)), gtid[0], relay_file[0], relay_pos[0], source_file[0]]
                + [source_pos[0], worker[0], now],
            )
            return
        table = pa.table(
            {
                "channel": pa.array(channel, pa.string()),
                "seqno": pa.array(list(seqno), pa.int64()),
                "gtid": pa.array(gtid, pa.string()),
                "relay_log_file": pa.array(relay_file, pa.string()),
                "relay_log_pos": pa.array(relay_pos, pa.int64()),
                "source_log_file": pa.array(source_file, pa.string()),
                "source_log_pos": pa.array(source_pos, pa.int64()),
                "worker": pa.array(worker, pa.int32()),
                "committed_at": pa.repeat(pa.scalar(now, pa.timestamp("us")), len(gtid)),
            }
        )
        source = self.arrow_inputs.put(table)
        try:
            self.con.execute(f"INSERT INTO {INTERNAL_SCHEMA}.commits SELECT * FROM {source}")
        finally:
            self.arrow_inputs.release(source)

    def commits_after(self, channel: str, seqno: int) -> list[CommitRecord]:
        """The channel's commit records after ordinal `seqno` (after the LWM: the committed side of
        any gaps), in ordinal order."""
        rows = self.con.execute(
            f"SELECT channel, seqno, gtid, relay_log_file, relay_log_pos, source_log_file, source_log_pos, "
            f"worker FROM {INTERNAL_SCHEMA}.commits WHERE lower(channel) = lower(?) AND seqno > ? ORDER BY seqno",
            [channel, seqno],
        ).fetchall()
        return [CommitRecord(*row) for row in rows]

    def reset_position(self, channel: str) -> None:
        """RESET REPLICA: the channel reads its relay logs from the start again; the data and the
        executed GTIDs stay (as in MySQL, where RESET REPLICA leaves gtid_executed alone), and the
        commit records that told recovery about gaps go."""
        self.begin()
        try:
            self.con.execute(
                f"UPDATE {INTERNAL_SCHEMA}.progress SET relay_log_file = NULL, relay_log_pos = 4, "
                f"source_log_file = NULL, source_log_pos = 0 WHERE lower(channel) = lower(?)",
                [channel],
            )
            self.con.execute(
                f"DELETE FROM {INTERNAL_SCHEMA}.commits WHERE lower(channel) = lower(?)", [channel]
            )
            self._db.committed.pop(channel.lower(), None)
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def set_relay_position(self, channel: str, relay_log_file: str, relay_log_pos: int) -> None:
        """CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE/RELAY_LOG_POS: where the next START reads."""
        current = self.progress(channel) or ChannelProgress(channel)
        self.begin()
        try:
            self.record_progress(
                ChannelProgress(
                    current.channel,
                    relay_log_file,
                    relay_log_pos,
                    None,
                    0,
                    current.executed_gtids,
                    current.transactions,
                    current.last_transaction,
                )
            )
        except BaseException:
            self.rollback()
            raise
        self.commit()

    # -- the catalog of MySQL table definitions ------------------------------------------------

    def save_catalog(self, catalog: Catalog) -> None:
        """Inside the open transaction, with the DDL that produced it (begin(changes_definitions=True)):
        the catalog in force from now on, written to the file when the transaction commits. A
        worker applies a chain of DDL as one transaction (see the parallel applier's
        _settle_definitions): only its last catalog is written, once, where writing each cost
        about a millisecond per DDL on the applier's serial path."""
        self._db.catalog = catalog
        self._catalog_changed = True
        self._catalog_to_write = catalog

    def _write_catalog(self, catalog: Catalog) -> None:
        """The catalog into the file, in the open transaction.

        The header is one row and each table one row of catalog_tables, and only what changed
        is written: the catalog as one document, rewritten whole at every DDL, made a DDL-heavy
        log quadratic (relaydeck generate --workload ddl, 4.2 MB, some 800 tables held: a quarter
        of the replay writing that document after its serializing was cached; 96 s in all)."""
        header, tables = catalog.parts()
        saved_header, saved_tables = self._db.saved_catalog
        where = "kind = ? AND schema_name = ? AND table_name = ?"
        for key, text in tables.items():
            if saved_tables.get(key) != text:
                self._update_or_insert(
                    f"UPDATE {INTERNAL_SCHEMA}.catalog_tables SET body = ? WHERE {where}",
                    f"INSERT INTO {INTERNAL_SCHEMA}.catalog_tables (body, kind, schema_name, table_name) "
                    "VALUES (?, ?, ?, ?)",
                    [text, *key],
                )
        gone = [key for key in saved_tables if key not in tables]
        if gone:
            self.con.executemany(f"DELETE FROM {INTERNAL_SCHEMA}.catalog_tables WHERE {where}", gone)
        if header != saved_header:
            self._update_or_insert(
                f"UPDATE {INTERNAL_SCHEMA}.catalog SET body = ? WHERE id = 1",
                f"INSERT INTO {INTERNAL_SCHEMA}.catalog (body, id) VALUES (?, 1)",
                [header],
            )
        self._db.saved_catalog = (header, tables)
        self._catalog_to_write = None

    def _load_catalog(self) -> Catalog:
        """The catalog the file holds, and what it holds of it (a slave written before tables
        were stored apart holds one document: its first DDL writes the parts)."""
        row = self.con.execute(f"SELECT body FROM {INTERNAL_SCHEMA}.catalog WHERE id = 1").fetchall()
        if not row:
            self._db.saved_catalog = (None, {})
            return Catalog()
        body = row[0][0]
        if json.loads(body).get("format") == WHOLE_CATALOG_FORMAT:
            self._db.saved_catalog = (None, {})
            return Catalog.from_json(body)
        rows = self.con.execute(
            f"SELECT kind, schema_name, table_name, body FROM {INTERNAL_SCHEMA}.catalog_tables"
        ).fetchall()
        catalog = Catalog.from_parts(body, ((kind, text) for kind, _, _, text in rows))
        self._db.saved_catalog = (body, {(kind, schema, name): text for kind, schema, name, text in rows})
        return catalog

    def user_tables(self) -> list[tuple[str, str]]:
        """(MySQL database, table) of every replicated table the slave file holds."""
        rows = self.con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            f"WHERE table_catalog = current_database() "
            f"AND table_schema NOT IN ('{INTERNAL_SCHEMA}', '{TEMPORARY_SCHEMA}', 'main') "
            "AND table_type = 'BASE TABLE'"
        ).fetchall()
        return sorted((mysql_database(schema), table) for schema, table in rows)
