"""The replication repository: one SQLite file of per-channel replica state, laid out as MySQL lays it out.

Tables, each keyed by channel name (compared case-insensitively, stored as first given):

- ``master_info``, ``relay_log_info``, ``worker_info``: the columns of MySQL 8.0's
  ``mysql.slave_master_info``, ``mysql.slave_relay_log_info`` and ``mysql.slave_worker_info``
  (``scripts/mysql_system_tables.sql``; Reference Manual, "Replication Metadata Repositories"),
  with MySQL's names, so a DBA can read the file with the queries they already know.
- ``replication_applier_status_by_coordinator``, ``replication_applier_status_by_worker``,
  ``replication_connection_status``: the live status of performance_schema's tables of those names
  (column lists from ``storage/perfschema/table_replication_*.cc``), written while an applier runs.
- ``relaydeck_channel_stats``: relaydeck's own counters for a channel.
- ``relaydeck_pool_stats``: what each slot of a channel's preparing pool is doing.

relaydeck's additions to the MySQL tables, all in ``relay_log_info``:

- ``Relay_log_index``: path of the channel's relay-log index file.
- ``Executed_gtid_set``: the GTIDs this channel has applied (MySQL keeps one server-wide set in
  ``mysql.gtid_executed``; relaydeck's channels replay into separate targets, so each keeps its own).
- ``Applier_state``: ``ON`` while an applier runs the channel, ``OFF`` after a clean stop, ``ERROR``
  after it stopped on an error (the coordinator row's ``LAST_ERROR_*`` say which).

Timestamps in the status tables are UTC text in MySQL's ``YYYY-MM-DD hh:mm:ss.ffffff`` form, with
MySQL's ``0000-00-00 00:00:00.000000`` for "none"; callers may pass datetimes or epoch seconds.

The file is in WAL mode with a busy timeout, so a console process can read status while an applier
writes it several times a second. Every write is one short ``BEGIN IMMEDIATE`` transaction: taking
the write lock up front means a transaction that reads before it writes never fails on a stale
snapshot, it waits its turn instead.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils

from .errors import RelaydeckError
from .private_files import restrict_new_files
from .relaylog.index import validate_channel_name

__all__ = [
    "DEFAULT_CHANNEL",
    "MAX_CHANNELS",
    "ZERO_TIMESTAMP",
    "ChannelStatus",
    "InvalidChannelName",
    "Repository",
    "RepositoryError",
    "TooManyChannels",
    "UnknownChannel",
    "UnknownField",
    "mysql_timestamp",
]

DEFAULT_CHANNEL = ""
MAX_CHANNELS = 256  # WL#1697: the default channel counts towards the limit
ZERO_TIMESTAMP = "0000-00-00 00:00:00.000000"
BUSY_TIMEOUT_S = 10.0


class RepositoryError(RelaydeckError):
    """A replication-repository operation that could not be done."""


class InvalidChannelName(RepositoryError):
    """A channel name WL#1697 does not allow (over 64 characters, or not a file-name part)."""


class TooManyChannels(RepositoryError):
    """Creating the channel would exceed the 256 channels a replica may have."""


class UnknownChannel(RepositoryError):
    """The channel does not exist."""


class UnknownField(RepositoryError):
    """A row names a column its table does not have."""


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    kind: type
    default: Any = None
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class _Table:
    name: str
    pk: tuple[str, ...]
    columns: tuple[_Column, ...]

    @property
    def key(self) -> str:
        """The channel-name column."""
        return self.pk[0]


def _text(name: str, default: str = "") -> _Column:
    return _Column(name, str, default)


def _int(name: str, default: int = 0) -> _Column:
    return _Column(name, int, default)


def _opt(name: str, kind: type = str, default: Any = None) -> _Column:
    return _Column(name, kind, default, nullable=True)


def _ts(name: str) -> _Column:
    return _Column(name, str, ZERO_TIMESTAMP)


def _key(name: str) -> _Column:
    return _Column(name, str)


def _gtid(name: str) -> _Column:
    # CHAR(57)/CHAR(90) NULL in performance_schema; '' when no transaction
    return _opt(name, str, "")


# mysql.slave_master_info, MySQL 8.0.27+: 33 columns. Defaults are what a fresh channel shows.
MASTER_INFO = _Table(
    "master_info",
    ("Channel_name",),
    (
        _int("Number_of_lines", 33),
        _text("Master_log_name"),
        _int("Master_log_pos", 4),  # BIN_LOG_HEADER_SIZE: where the first event of a log starts
        _opt("Host"),
        _opt("User_name"),
        _opt("User_password"),
        _int("Port", 3306),
        _int("Connect_retry", 60),
        _int("Enabled_ssl"),
        _opt("Ssl_ca"),
        _opt("Ssl_capath"),
        _opt("Ssl_cert"),
        _opt("Ssl_cipher"),
        _opt("Ssl_key"),
        _int("Ssl_verify_server_cert"),
        _Column("Heartbeat", float, 30.0),
        _opt("Bind"),
        _text("Ignored_server_ids", "0"),  # count first, then the ids
        _opt("Uuid"),
        _int("Retry_count", 86400),
        _opt("Ssl_crl"),
        _opt("Ssl_crlpath"),
        _int("Enabled_auto_position"),
        _key("Channel_name"),
        _opt("Tls_version"),
        _opt("Public_key_path"),
        _int("Get_public_key"),
        _opt("Network_namespace"),
        _text("Master_compression_algorithm", "uncompressed"),
        _int("Master_zstd_compression_level", 3),
        _opt("Tls_ciphersuites"),
        _int("Source_connection_auto_failover"),
        _int("Gtid_only"),
        _text("Using_gtid", "No"),  # MariaDB's MASTER_USE_GTID: No, Slave_Pos or Current_Pos
    ),
)

# mysql.slave_relay_log_info, MySQL 8.0.23+: 15 columns, then relaydeck's three.
RELAY_LOG_INFO = _Table(
    "relay_log_info",
    ("Channel_name",),
    (
        _int("Number_of_lines", 15),
        _text("Relay_log_name"),
        _int("Relay_log_pos", 4),
        _text("Master_log_name"),
        _int("Master_log_pos"),
        _int("Sql_delay"),
        _int("Number_of_workers"),  # 0: the single applier, relaydeck's replica_parallel_workers default
        _int("Id", 1),
        _key("Channel_name"),
        _opt("Privilege_checks_username"),
        _opt("Privilege_checks_hostname"),
        _int("Require_row_format"),
        _text("Require_table_primary_key_check", "STREAM"),
        _text("Assign_gtids_to_anonymous_transactions_type", "OFF"),
        _text("Assign_gtids_to_anonymous_transactions_value"),
        _text("Relay_log_index"),
        _text("Executed_gtid_set"),
        _text("Applier_state", "OFF"),
    ),
)

# mysql.slave_worker_info: one row per applier worker of a channel.
WORKER_INFO = _Table(
    "worker_info",
    ("Channel_name", "Id"),
    (
        _int("Id"),
        _text("Relay_log_name"),
        _int("Relay_log_pos"),
        _text("Master_log_name"),
        _int("Master_log_pos"),
        _text("Checkpoint_relay_log_name"),
        _int("Checkpoint_relay_log_pos"),
        _text("Checkpoint_master_log_name"),
        _int("Checkpoint_master_log_pos"),
        _int("Checkpoint_seqno"),
        _int("Checkpoint_group_size"),
        _Column("Checkpoint_group_bitmap", bytes, b""),
        _key("Channel_name"),
    ),
)

# performance_schema.replication_applier_status_by_coordinator
COORDINATOR_STATUS = _Table(
    "replication_applier_status_by_coordinator",
    ("CHANNEL_NAME",),
    (
        _key("CHANNEL_NAME"),
        _opt("THREAD_ID", int),
        _text("SERVICE_STATE", "OFF"),
        _int("LAST_ERROR_NUMBER"),
        _text("LAST_ERROR_MESSAGE"),
        _ts("LAST_ERROR_TIMESTAMP"),
        _gtid("LAST_PROCESSED_TRANSACTION"),
        _ts("LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("LAST_PROCESSED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("LAST_PROCESSED_TRANSACTION_START_BUFFER_TIMESTAMP"),
        _ts("LAST_PROCESSED_TRANSACTION_END_BUFFER_TIMESTAMP"),
        _gtid("PROCESSING_TRANSACTION"),
        _ts("PROCESSING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("PROCESSING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("PROCESSING_TRANSACTION_START_BUFFER_TIMESTAMP"),
    ),
)

# performance_schema.replication_applier_status_by_worker
WORKER_STATUS = _Table(
    "replication_applier_status_by_worker",
    ("CHANNEL_NAME", "WORKER_ID"),
    (
        _key("CHANNEL_NAME"),
        _int("WORKER_ID"),
        _opt("THREAD_ID", int),
        _text("SERVICE_STATE", "OFF"),
        _int("LAST_ERROR_NUMBER"),
        _text("LAST_ERROR_MESSAGE"),
        _ts("LAST_ERROR_TIMESTAMP"),
        _gtid("LAST_APPLIED_TRANSACTION"),
        _ts("LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("LAST_APPLIED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP"),
        _ts("LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"),
        _gtid("APPLYING_TRANSACTION"),
        _ts("APPLYING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("APPLYING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("APPLYING_TRANSACTION_START_APPLY_TIMESTAMP"),
        _int("LAST_APPLIED_TRANSACTION_RETRIES_COUNT"),
        _int("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER"),
        _opt("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", str, ""),
        _ts("LAST_APPLIED_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP"),
        _int("APPLYING_TRANSACTION_RETRIES_COUNT"),
        _int("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_NUMBER"),
        _opt("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_MESSAGE", str, ""),
        _ts("APPLYING_TRANSACTION_LAST_TRANSIENT_ERROR_TIMESTAMP"),
    ),
)

# performance_schema.replication_connection_status: in relaydeck the "receiver" is the relay-log
# reader, and "queued" means read from the relay log.
CONNECTION_STATUS = _Table(
    "replication_connection_status",
    ("CHANNEL_NAME",),
    (
        _key("CHANNEL_NAME"),
        _text("GROUP_NAME"),
        _text("SOURCE_UUID"),
        _opt("THREAD_ID", int),
        _text("SERVICE_STATE", "OFF"),
        _int("COUNT_RECEIVED_HEARTBEATS"),
        _ts("LAST_HEARTBEAT_TIMESTAMP"),
        _text("RECEIVED_TRANSACTION_SET"),
        _int("LAST_ERROR_NUMBER"),
        _text("LAST_ERROR_MESSAGE"),
        _ts("LAST_ERROR_TIMESTAMP"),
        _gtid("LAST_QUEUED_TRANSACTION"),
        _ts("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP"),
        _ts("LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"),
        _gtid("QUEUEING_TRANSACTION"),
        _ts("QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"),
        _ts("QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP"),
        _ts("QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP"),
        # relaydeck's: Replica_IO_State, which MySQL keeps in performance_schema.threads
        _text("IO_THREAD_STATE"),
    ),
)

# relaydeck's counters: totals since started_at; *_read is where the relay-log reader is, *_applied
# where the applier has committed up to.
CHANNEL_STATS = _Table(
    "relaydeck_channel_stats",
    ("channel",),
    (
        _key("channel"),
        _int("transactions_applied"),
        _int("bytes_applied"),
        _int("rows_applied"),
        _text("relay_log_file_read"),
        _int("relay_log_pos_read"),
        _text("relay_log_file_applied"),
        _int("relay_log_pos_applied"),
        _opt("started_at"),
        _opt("updated_at"),
        _Column("trx_per_s", float, 0.0),
        _text("state", "OFF"),  # ON, OFF, ERROR, RECOVERING, WAITING FOR RELAY LOG
        _opt("lag_s", float),  # source time between the last transaction read and the last applied
        _int("workers_busy"),
        _int("workers_total"),
        _Column("queue_fill", float, 0.0),  # queued bytes / replica_pending_jobs_size_max
        # the multi-threaded applier's preparing pool (engine/pool); pool_kind "": none
        _text("pool_kind"),  # threads (in-process), processes, spark
        _int("pool_workers"),
        _int("pool_segments_done"),
        _int("prepared_runs"),  # runs scheduled as the pool prepared them
        _int("runs_read_again"),  # prepared runs or transactions that went the ordinary way instead
    ),
)

# relaydeck's per-worker view of a running multi-threaded applier (performance_schema has no
# queue, rate or scheduler-state columns).
WORKER_STATS = _Table(
    "relaydeck_worker_stats",
    ("channel", "worker"),
    (
        _key("channel"),
        _int("worker"),
        _text("state", "idle"),
        _text("applying"),
        _int("queued"),
        _int("queued_bytes"),
        _int("transactions"),
        _int("batches"),
        _Column("trx_per_s", float, 0.0),
        _text("last_applied"),
        _opt("last_applied_at"),
        _int("checkpoint_seqno"),
        _text("error"),
    ),
)

# relaydeck's per-slot view of a running channel's preparing pool: a process, a Spark task slot,
# the in-process executor; `slot_no` orders them as the executor lists them.
POOL_STATS = _Table(
    "relaydeck_pool_stats",
    ("channel", "slot_no"),
    (
        _key("channel"),
        _int("slot_no"),
        _text("slot"),  # "process 1", "spark task 2", "in-process", "queue"
        _text("state", "idle"),  # idle, preparing, queued
        _text("segment"),  # where the segment it works on starts, file:position ("" none)
    ),
)

# The applier options a channel sets for itself (CHANGE REPLICATION SOURCE TO REPLICA_PARALLEL_...
# FOR CHANNEL); NULL means "the global variable". MySQL has one server-wide set; per channel is
# what WL#1697 leaves for "the future", and fan-in of unlike sources wants it.
CHANNEL_OPTIONS = _Table(
    "relaydeck_channel_options",
    ("channel",),
    (
        _key("channel"),
        _opt("replica_parallel_workers", int),
        _opt("replica_parallel_type"),
        _opt("replica_preserve_commit_order", int),
        _opt("replica_pending_jobs_size_max", int),
        _opt("replica_checkpoint_group", int),
        _opt("replica_checkpoint_period", int),
    ),
)

# Where the receiver's relay logs end for master_info's position: written in the same transaction,
# after those bytes were fsynced, so a restart cuts what follows and fetches it again.
RECEIVER_INFO = _Table(
    "relaydeck_receiver_info",
    ("channel",),
    (
        _key("channel"),
        _text("relay_log_name"),
        _int("relay_log_pos"),
    ),
)

TABLES = (
    MASTER_INFO,
    RELAY_LOG_INFO,
    WORKER_INFO,
    COORDINATOR_STATUS,
    WORKER_STATUS,
    CONNECTION_STATUS,
    CHANNEL_STATS,
    CHANNEL_OPTIONS,
    WORKER_STATS,
    RECEIVER_INFO,
    POOL_STATS,
)

# Not channel-keyed: SET GLOBAL's applier variables, and the `relaydeck serve` process (if any)
# that runs the channels of this repository, so `relaydeck sql` and the console can reach it.
GLOBAL_VARIABLES_SQL = (
    "CREATE TABLE IF NOT EXISTS relaydeck_global_variables (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
)
SERVER_SQL = (
    "CREATE TABLE IF NOT EXISTS relaydeck_server (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "pid INTEGER NOT NULL, socket TEXT NOT NULL, slave TEXT NOT NULL, started_at TEXT NOT NULL)"
)
SLAVE_SQL = "CREATE TABLE IF NOT EXISTS relaydeck_slave (id INTEGER PRIMARY KEY CHECK (id = 1), path TEXT)"

_STATS_TIMES = frozenset({"started_at", "updated_at", "last_applied_at"})
_COLUMNS_BY_LOWER = {t.name: {c.name.lower(): c.name for c in t.columns} for t in TABLES}


def mysql_timestamp(value: datetime | float | str | None) -> str:
    """A timestamp as performance_schema shows it, in UTC; None or 0 is MySQL's zero timestamp."""
    if value is None or (isinstance(value, int | float) and value == 0):
        return ZERO_TIMESTAMP
    if isinstance(value, str):
        if value.startswith("0000-00-00"):
            return ZERO_TIMESTAMP
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise RepositoryError(f"{value!r} is not a timestamp (YYYY-MM-DD hh:mm:ss.ffffff)") from None
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    elif isinstance(value, int | float):
        moment = datetime.fromtimestamp(value, UTC)
    else:
        raise RepositoryError(f"{value!r} is not a timestamp")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _epoch(value: str | None) -> float | None:
    """Seconds since the epoch of a stored timestamp, None for MySQL's zero timestamp."""
    if not value or value.startswith("0000-00-00"):
        return None
    return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()


def _error_timestamp(value: str | None) -> str:
    """A stored error timestamp as SHOW REPLICA STATUS prints it: YYMMDD hh:mm:ss, empty for none."""
    at = _epoch(value)
    return "" if at is None else datetime.fromtimestamp(at, UTC).strftime("%y%m%d %H:%M:%S")


def _check_name(name: str) -> str:
    if not isinstance(name, str):
        raise InvalidChannelName(f"a channel name is a string, not {type(name).__name__}")
    try:
        return validate_channel_name(name)
    except ValueError as exc:
        raise InvalidChannelName(str(exc)) from None


def _normalize(table: _Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """Map a row's keys onto the table's column names, case-insensitively; timestamps to MySQL's form."""
    known = _COLUMNS_BY_LOWER[table.name]
    out: dict[str, Any] = {}
    unknown = []
    for key, value in row.items():
        column = known.get(key.lower()) if isinstance(key, str) else None
        if column is None:
            unknown.append(key)
            continue
        if column.endswith("_TIMESTAMP"):
            value = mysql_timestamp(value)
        elif column in _STATS_TIMES and value is not None:
            value = mysql_timestamp(value)
        out[column] = value
    if unknown:
        raise UnknownField(f"{table.name} has no column {', '.join(map(repr, unknown))}")
    return out


def _create_table_sql(db: sqlite_utils.Database, table: _Table) -> str:
    """sqlite-utils' CREATE TABLE, with the channel column compared case-insensitively."""
    sql = db.create_table_sql(
        table.name,
        {c.name: c.kind for c in table.columns},
        pk=table.pk[0] if len(table.pk) == 1 else table.pk,
        not_null={c.name for c in table.columns if not c.nullable},
        defaults={c.name: c.default for c in table.columns if c.default is not None},
    )
    # sqlite-utils has no public per-column collation, so it is added to the generated definition.
    # NOCASE on the column (not just an index) makes the primary key, ON CONFLICT and every
    # `Channel_name = ?` ignore letter case, as MySQL's utf8mb3_general_ci channel names do
    # (NOCASE folds ASCII letters only).
    pattern = re.compile(rf'^(\s*(?:"{table.key}"|\[{table.key}\])\s+TEXT)\b', re.MULTILINE)
    sql, count = pattern.subn(r"\1 COLLATE NOCASE", sql)
    if count != 1:
        raise RepositoryError(f"cannot find the {table.key} column in sqlite-utils' SQL for {table.name}")
    return sql


@dataclass(frozen=True, slots=True)
class ChannelStatus:
    """What SHOW REPLICA STATUS tells a DBA about one channel, plus relaydeck's counters.

    ``seconds_behind_source`` is measured in the source's time: how much older the last applied
    transaction's original commit is than that of the newest transaction read from the relay log;
    0 when caught up, None until both are known. It stays meaningful when replaying captured logs.
    """

    channel_name: str  # Channel_Name
    service_state: str  # ON / OFF: the coordinator's SERVICE_STATE
    applier_state: str  # ON / OFF / ERROR: relay_log_info.Applier_state
    source_uuid: str  # Source_UUID
    source_host: str  # Source_Host: recorded by CHANGE REPLICATION SOURCE TO (display only)
    source_port: int  # Source_Port
    source_log_file: str  # Source_Log_File
    read_source_log_pos: int  # Read_Source_Log_Pos
    relay_log_file: str  # Relay_Log_File
    relay_log_pos: int  # Relay_Log_Pos
    relay_source_log_file: str  # Relay_Source_Log_File
    exec_source_log_pos: int  # Exec_Source_Log_Pos
    relay_log_index: str
    last_error_number: int  # Last_SQL_Errno
    last_error_message: str  # Last_SQL_Error
    last_error_timestamp: str  # Last_SQL_Error_Timestamp
    retrieved_gtid_set: str  # Retrieved_Gtid_Set
    executed_gtid_set: str  # Executed_Gtid_Set
    sql_delay: int  # SQL_Delay
    number_of_workers: int
    workers_running: int
    transactions_applied: int
    rows_applied: int
    bytes_applied: int
    last_applied_transaction: str
    last_applied_transaction_end_apply_timestamp: str
    processing_transaction: str
    relay_log_file_read: str
    relay_log_pos_read: int
    trx_per_s: float
    seconds_behind_source: float | None  # Seconds_Behind_Source, see above
    started_at: str | None
    updated_at: str | None
    # the receiver (`relaydeck receive --repository`): replication_connection_status
    io_service_state: str = "OFF"  # ON, CONNECTING (retrying), OFF
    replica_io_state: str = ""  # Replica_IO_State
    using_gtid: str = "No"  # MariaDB's Using_Gtid
    last_io_error_number: int = 0  # Last_IO_Errno
    last_io_error_message: str = ""  # Last_IO_Error
    last_io_error_timestamp: str = ZERO_TIMESTAMP  # Last_IO_Error_Timestamp
    # the receiver's TLS (CHANGE REPLICATION SOURCE TO SOURCE_SSL…), as SHOW REPLICA STATUS names them
    source_ssl_allowed: bool = False  # Source_SSL_Allowed: SOURCE_SSL
    source_ssl_ca_file: str = ""  # Source_SSL_CA_File
    source_ssl_ca_path: str = ""  # Source_SSL_CA_Path
    source_ssl_cert: str = ""  # Source_SSL_Cert
    source_ssl_cipher: str = ""  # Source_SSL_Cipher
    source_ssl_key: str = ""  # Source_SSL_Key
    source_ssl_verify_server_cert: bool = False  # Source_SSL_Verify_Server_Cert

    @property
    def replica_sql_running(self) -> str:
        """Replica_SQL_Running: Yes or No."""
        return "Yes" if self.service_state == "ON" else "No"

    @property
    def replica_io_running(self) -> str:
        """Replica_IO_Running: Yes while a receiver writes the channel's relay logs, Connecting while
        it tries to (re)connect, else No."""
        return {"ON": "Yes", "CONNECTING": "Connecting"}.get(self.io_service_state, "No")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with snake_case keys."""
        out = {f.name: getattr(self, f.name) for f in dataclass_fields(self)}
        out["replica_sql_running"] = self.replica_sql_running
        out["replica_io_running"] = self.replica_io_running
        return out

    def show_replica_status(self) -> dict[str, Any]:
        """The fields under SHOW REPLICA STATUS's own labels, in its order."""
        return {
            "Replica_IO_State": self.replica_io_state,
            "Source_Host": self.source_host,
            "Source_Port": self.source_port,
            "Source_UUID": self.source_uuid,
            "Source_Log_File": self.source_log_file,
            "Read_Source_Log_Pos": self.read_source_log_pos,
            "Relay_Log_File": self.relay_log_file,
            "Relay_Log_Pos": self.relay_log_pos,
            "Relay_Source_Log_File": self.relay_source_log_file,
            "Replica_IO_Running": self.replica_io_running,
            "Replica_SQL_Running": self.replica_sql_running,
            "Last_IO_Errno": self.last_io_error_number,
            "Last_IO_Error": self.last_io_error_message,
            "Last_SQL_Errno": self.last_error_number,
            "Last_SQL_Error": self.last_error_message,
            "Exec_Source_Log_Pos": self.exec_source_log_pos,
            "Source_SSL_Allowed": "Yes" if self.source_ssl_allowed else "No",
            "Source_SSL_CA_File": self.source_ssl_ca_file,
            "Source_SSL_CA_Path": self.source_ssl_ca_path,
            "Source_SSL_Cert": self.source_ssl_cert,
            "Source_SSL_Cipher": self.source_ssl_cipher,
            "Source_SSL_Key": self.source_ssl_key,
            "Seconds_Behind_Source": (
                None if self.seconds_behind_source is None else int(self.seconds_behind_source)
            ),
            "Source_SSL_Verify_Server_Cert": "Yes" if self.source_ssl_verify_server_cert else "No",
            "SQL_Delay": self.sql_delay,
            "Last_IO_Error_Timestamp": _error_timestamp(self.last_io_error_timestamp),
            "Last_SQL_Error_Timestamp": _error_timestamp(self.last_error_timestamp),
            "Retrieved_Gtid_Set": self.retrieved_gtid_set,
            "Executed_Gtid_Set": self.executed_gtid_set,
            "Channel_Name": self.channel_name,
            "Using_Gtid": self.using_gtid,
        }


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _channel_status(
    mi: Mapping[str, Any],
    rli: Mapping[str, Any],
    coordinator: Mapping[str, Any],
    workers: Sequence[Mapping[str, Any]],
    connection: Mapping[str, Any],
    stats: Mapping[str, Any],
) -> ChannelStatus:
    error: Mapping[str, Any] = coordinator
    if not coordinator.get("LAST_ERROR_NUMBER"):
        # Like Last_SQL_Error: the coordinator's error, else the first failed worker's
        error = next((w for w in workers if w["LAST_ERROR_NUMBER"]), coordinator)
    applied = [w for w in workers if w["LAST_APPLIED_TRANSACTION"]]
    last = max(
        applied,
        key=lambda w: (w["LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"], w["WORKER_ID"]),
        default=None,
    )
    head = _epoch(connection.get("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"))
    if head is None:
        head = _epoch(coordinator.get("LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"))
    done = [
        t
        for t in (_epoch(w["LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"]) for w in applied)
        if t is not None
    ]
    lag = None if head is None or not done else max(0.0, head - max(done))
    io_service_state = connection.get("SERVICE_STATE") or "OFF"
    if not _alive(connection.get("THREAD_ID")):
        io_service_state = "OFF"  # the receiving process was killed
    if stats.get("lag_s") is not None:
        lag = stats["lag_s"]  # the applier's own measure, for the single applier too
    return ChannelStatus(
        channel_name=mi["Channel_name"],
        service_state=coordinator.get("SERVICE_STATE") or "OFF",
        applier_state=rli.get("Applier_state") or "OFF",
        source_uuid=connection.get("SOURCE_UUID") or mi.get("Uuid") or "",
        source_host=mi.get("Host") or "",
        source_port=mi.get("Port") or 0,
        source_log_file=mi["Master_log_name"],
        read_source_log_pos=mi["Master_log_pos"],
        relay_log_file=rli.get("Relay_log_name", ""),
        relay_log_pos=rli.get("Relay_log_pos", 0),
        relay_source_log_file=rli.get("Master_log_name", ""),
        exec_source_log_pos=rli.get("Master_log_pos", 0),
        relay_log_index=rli.get("Relay_log_index", ""),
        last_error_number=error.get("LAST_ERROR_NUMBER") or 0,
        last_error_message=error.get("LAST_ERROR_MESSAGE") or "",
        last_error_timestamp=error.get("LAST_ERROR_TIMESTAMP") or ZERO_TIMESTAMP,
        retrieved_gtid_set=connection.get("RECEIVED_TRANSACTION_SET") or "",
        executed_gtid_set=rli.get("Executed_gtid_set", ""),
        sql_delay=rli.get("Sql_delay", 0),
        number_of_workers=rli.get("Number_of_workers", 0),
        # worker 0 is the single applier's thread, not a worker
        workers_running=sum(1 for w in workers if w["SERVICE_STATE"] == "ON" and w["WORKER_ID"]),
        transactions_applied=stats.get("transactions_applied", 0),
        rows_applied=stats.get("rows_applied", 0),
        bytes_applied=stats.get("bytes_applied", 0),
        last_applied_transaction=last["LAST_APPLIED_TRANSACTION"] if last else "",
        last_applied_transaction_end_apply_timestamp=(
            last["LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP"] if last else ZERO_TIMESTAMP
        ),
        processing_transaction=coordinator.get("PROCESSING_TRANSACTION") or "",
        relay_log_file_read=stats.get("relay_log_file_read", ""),
        relay_log_pos_read=stats.get("relay_log_pos_read", 0),
        trx_per_s=stats.get("trx_per_s", 0.0),
        seconds_behind_source=lag,
        started_at=stats.get("started_at"),
        updated_at=stats.get("updated_at"),
        io_service_state=io_service_state,
        using_gtid=mi.get("Using_gtid") or "No",
        replica_io_state=(connection.get("IO_THREAD_STATE") or "") if io_service_state != "OFF" else "",
        last_io_error_number=connection.get("LAST_ERROR_NUMBER") or 0,
        last_io_error_message=connection.get("LAST_ERROR_MESSAGE") or "",
        last_io_error_timestamp=connection.get("LAST_ERROR_TIMESTAMP") or ZERO_TIMESTAMP,
        source_ssl_allowed=bool(mi.get("Enabled_ssl")),
        source_ssl_ca_file=mi.get("Ssl_ca") or "",
        source_ssl_ca_path=mi.get("Ssl_capath") or "",
        source_ssl_cert=mi.get("Ssl_cert") or "",
        source_ssl_cipher=mi.get("Ssl_cipher") or "",
        source_ssl_key=mi.get("Ssl_key") or "",
        source_ssl_verify_server_cert=bool(mi.get("Ssl_verify_server_cert")),
    )


class Repository:
    """Channel-keyed replica metadata and live status in one SQLite file.

    Opening creates whatever tables are missing and the default channel; opening an existing
    file writes nothing, so readers can open it freely. One object may be shared by threads.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        # sqlite-utils 4 nests its writes in savepoints; 3.x commits from inside them, which would
        # break the single-transaction checkpoints below.
        if not hasattr(sqlite_utils.Database, "atomic"):
            raise RepositoryError("the replication repository needs sqlite-utils 4 or later")
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
            self._db = sqlite_utils.Database(self._conn)
            self._upsert_sql: dict[tuple[str, tuple[str, ...]], str] = {}
            self._db.enable_wal()
            # FULL: a checkpoint that returned is on disk, even after a power loss
            self._conn.execute("PRAGMA synchronous = FULL")
            self._create_missing_tables()
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

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ---------------------------------------------------------------------------

    @contextmanager
    def _write(self, what: str) -> Iterator[None]:
        """One BEGIN IMMEDIATE transaction; rolled back whole on any exception."""
        with self._lock:
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

    def _create_missing_tables(self) -> None:
        extra = ("relaydeck_global_variables", "relaydeck_server", "relaydeck_slave")

        def complete() -> bool:
            for table in TABLES:
                if not self._db[table.name].exists():
                    return False
                if {c.name for c in table.columns} - set(self._db[table.name].columns_dict):
                    return False
            return all(self._db[t].exists() for t in extra)

        if complete():
            return
        with self._write("create the repository tables"):
            # Checked again under the write lock: another process may have just created them
            existing = set(self._db.table_names())
            for table in TABLES:
                if table.name not in existing:
                    self._db.execute(_create_table_sql(self._db, table))
                    continue
                # A file from an earlier relaydeck: add the columns it lacks
                have = set(self._db[table.name].columns_dict)
                for column in table.columns:
                    if column.name not in have:
                        default = column.default
                        literal = "NULL" if default is None else repr(default)
                        kind = {int: "INTEGER", float: "FLOAT", bytes: "BLOB"}.get(column.kind, "TEXT")
                        self._db.execute(
                            f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind} DEFAULT {literal}'
                        )
            for sql in (GLOBAL_VARIABLES_SQL, SERVER_SQL, SLAVE_SQL):
                self._db.execute(sql)

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

    def _upsert(self, table: _Table, channel: str, row: dict[str, Any]) -> None:
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

    def _replace_rows(self, table: _Table, channel: str, rows: list[dict[str, Any]]) -> None:
        """Make `rows` the channel's rows of a two-key table: others are deleted, these upserted."""
        id_column = table.pk[1]
        ids = [row.get(id_column) for row in rows]
        if any(i is None for i in ids):
            raise RepositoryError(f"every {table.name} row needs {id_column}")
        if len(set(ids)) != len(ids):
            raise RepositoryError(f"{table.name} rows repeat a {id_column}")
        placeholders = ", ".join("?" for _ in ids)
        self._db.execute(
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
        name = _check_name(name)
        with self._write(f"create channel {name!r}"):
            self._ensure(name)

    def delete_channel(self, name: str) -> None:
        """Remove every row of the channel; the default channel is reset instead (it always exists)."""
        name = _check_name(name)
        with self._write(f"delete channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in TABLES:
                self._db[table.name].delete_where(f'"{table.key}" = ?', [channel])
            if channel == DEFAULT_CHANNEL:
                self._ensure(DEFAULT_CHANNEL)

    # -- metadata -------------------------------------------------------------------------------

    def _row(self, table: _Table, name: str) -> dict[str, Any] | None:
        name = _check_name(name)
        with self._snapshot():
            rows = self._query(f'SELECT * FROM "{table.name}" WHERE "{table.key}" = ?', [name])
        return rows[0] if rows else None

    def _update(self, table: _Table, name: str, values: Mapping[str, Any]) -> None:
        name = _check_name(name)
        row = _normalize(table, values)
        with self._write(f"update {table.name} of channel {name!r}"):
            channel = self._ensure(name)
            if row:
                self._upsert(table, channel, row)

    def master_info(self, name: str) -> dict[str, Any] | None:
        """The channel's master_info row, or None if there is no such channel."""
        return self._row(MASTER_INFO, name)

    def update_master_info(self, name: str, **fields: Any) -> None:
        """Set master_info columns of the channel, creating the channel if need be."""
        self._update(MASTER_INFO, name, fields)

    def record_received(
        self,
        name: str,
        source_log_file: str,
        read_source_log_pos: int,
        retrieved_gtid_set: str,
        relay_log_name: str,
        relay_log_pos: int,
    ) -> None:
        """The receiver's position, in one transaction: master_info's Master_log_name/pos, the
        Retrieved_Gtid_Set, and where the channel's relay logs (already on disk) end for them."""
        name = _check_name(name)
        with self._write(f"record the receiver's position of channel {name!r}"):
            channel = self._ensure(name)
            self._upsert(
                MASTER_INFO,
                channel,
                {"Master_log_name": source_log_file, "Master_log_pos": read_source_log_pos},
            )
            self._upsert(CONNECTION_STATUS, channel, {"RECEIVED_TRANSACTION_SET": retrieved_gtid_set})
            self._upsert(
                RECEIVER_INFO, channel, {"relay_log_name": relay_log_name, "relay_log_pos": relay_log_pos}
            )

    def received(self, name: str) -> dict[str, Any] | None:
        """What record_received() last recorded for the channel (None: nothing yet)."""
        name = _check_name(name)
        with self._snapshot():
            rows = self._query(
                "SELECT m.Master_log_name, m.Master_log_pos, r.relay_log_name, r.relay_log_pos, "
                "COALESCE(c.RECEIVED_TRANSACTION_SET, '') AS retrieved_gtid_set "
                "FROM master_info m JOIN relaydeck_receiver_info r ON r.channel = m.Channel_name "
                "LEFT JOIN replication_connection_status c ON c.CHANNEL_NAME = m.Channel_name "
                "WHERE m.Channel_name = ?",
                [name],
            )
        return rows[0] if rows and rows[0]["relay_log_name"] else None

    def forget_received(self, name: str) -> None:
        """CHANGE … SOURCE_LOG_FILE/POS: the receiver starts there, not where it last was."""
        name = _check_name(name)
        with self._write(f"forget the receiver's position of channel {name!r}"):
            channel = self._canonical(name)
            if channel is not None:
                self._db[RECEIVER_INFO.name].delete_where('"channel" = ?', [channel])

    def set_receiver_state(
        self, name: str, service_state: str, io_state: str = "", *, host: str | None = None,
        port: int | None = None, user: str | None = None, clear_error: bool = False,
    ) -> None:  # fmt: skip
        """Replica_IO_Running (SERVICE_STATE: ON, CONNECTING or OFF) and Replica_IO_State; the source
        account (never its password); with clear_error, the last IO error cleared (a START, a
        connection made)."""
        name = _check_name(name)
        # THREAD_ID: the receiving process, so a receiver that was killed does not show as running
        connection: dict[str, Any] = {
            "SERVICE_STATE": service_state, "THREAD_ID": os.getpid(), "IO_THREAD_STATE": io_state,
        }  # fmt: skip
        if clear_error:
            connection.update(LAST_ERROR_NUMBER=0, LAST_ERROR_MESSAGE="", LAST_ERROR_TIMESTAMP=ZERO_TIMESTAMP)
        with self._write(f"record the receiver's state of channel {name!r}"):
            channel = self._ensure(name)
            self._upsert(CONNECTION_STATUS, channel, connection)
            account = {"Host": host, "Port": port, "User_name": user}
            account = {k: v for k, v in account.items() if v is not None}
            if account:
                self._upsert(MASTER_INFO, channel, account)

    def record_io_error(self, name: str, errno: int, message: str, *, stopped: bool = True) -> None:
        """An error of the channel's receiver (Last_IO_Errno / Last_IO_Error): the one that stopped
        it, or (stopped=False) the last failed attempt of one that goes on retrying."""
        name = _check_name(name)
        error: dict[str, Any] = {
            "LAST_ERROR_NUMBER": int(errno),
            "LAST_ERROR_MESSAGE": str(message),
            "LAST_ERROR_TIMESTAMP": mysql_timestamp(datetime.now(UTC)),
        }
        if stopped:
            error.update(SERVICE_STATE="OFF", IO_THREAD_STATE="")
        with self._write(f"record an IO error of channel {name!r}"):
            channel = self._ensure(name)
            self._upsert(CONNECTION_STATUS, channel, error)

    def relay_log_info(self, name: str) -> dict[str, Any] | None:
        """The channel's relay_log_info row, or None if there is no such channel."""
        return self._row(RELAY_LOG_INFO, name)

    def update_relay_log_info(self, name: str, **fields: Any) -> None:
        """Set relay_log_info columns of the channel, creating the channel if need be."""
        self._update(RELAY_LOG_INFO, name, fields)

    def set_number_of_workers(self, name: str, workers: int) -> None:
        """Record the channel's applier worker count (relay_log_info.Number_of_workers)."""
        # MySQL's replica_parallel_workers range
        if not isinstance(workers, int) or isinstance(workers, bool) or not 0 <= workers <= 1024:
            raise RepositoryError(f"a channel has 0 to 1024 workers, not {workers!r}")
        self._update(RELAY_LOG_INFO, name, {"Number_of_workers": workers})

    def worker_infos(self, name: str) -> list[dict[str, Any]]:
        """The channel's worker_info rows by Id."""
        name = _check_name(name)
        with self._snapshot():
            return self._query('SELECT * FROM worker_info WHERE Channel_name = ? ORDER BY "Id"', [name])

    def write_checkpoint(
        self, name: str, relay_log_info: Mapping[str, Any], workers: Sequence[Mapping[str, Any]]
    ) -> None:
        """Write relay_log_info columns and all worker_info rows of the channel in one transaction.

        `workers` is the channel's whole set: rows with other Ids are deleted. Either all of it is
        written or, on any error, none of it.
        """
        name = _check_name(name)
        rli = _normalize(RELAY_LOG_INFO, relay_log_info)
        rows = [_normalize(WORKER_INFO, w) for w in workers]
        with self._write(f"write the checkpoint of channel {name!r}"):
            channel = self._ensure(name)
            if rli:
                self._upsert(RELAY_LOG_INFO, channel, rli)
            self._replace_rows(WORKER_INFO, channel, rows)

    def channel_stats(self, name: str) -> dict[str, Any]:
        """relaydeck's counters row of the channel ({} before its first run)."""
        return self._row(CHANNEL_STATS, name) or {}

    def worker_stats(self, name: str) -> list[dict[str, Any]]:
        """relaydeck's per-worker rows of the channel (while or after a multi-threaded run)."""
        name = _check_name(name)
        with self._snapshot():
            return self._query(
                "SELECT * FROM relaydeck_worker_stats WHERE channel = ? ORDER BY worker", [name]
            )

    def pool_stats(self, name: str) -> list[dict[str, Any]]:
        """relaydeck's per-slot rows of the channel's preparing pool (while or after a run with one)."""
        name = _check_name(name)
        with self._snapshot():
            return self._query(
                "SELECT * FROM relaydeck_pool_stats WHERE channel = ? ORDER BY slot_no", [name]
            )

    def find_channel(self, name: str) -> str | None:
        """The channel's name as stored (any letter case matches), or None if there is none."""
        name = _check_name(name)
        with self._snapshot():
            return self._canonical(name)

    def channel_options(self, name: str) -> dict[str, Any]:
        """The applier options the channel sets for itself (those it leaves to the globals are absent)."""
        row = self._row(CHANNEL_OPTIONS, name) or {}
        return {k: v for k, v in row.items() if k != CHANNEL_OPTIONS.key and v is not None}

    def set_channel_options(self, name: str, **options: Any) -> None:
        """Set per-channel applier options; None gives the option back to the global variable."""
        self._update(CHANNEL_OPTIONS, name, options)

    def reset_channel(self, name: str) -> None:
        """RESET REPLICA: forget where the channel is (positions, the source position received
        included, workers, errors, status), keep its configuration (the source account, the
        relay-log location, its options)."""
        name = _check_name(name)
        with self._write(f"reset channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in (
                WORKER_INFO, COORDINATOR_STATUS, WORKER_STATUS, CONNECTION_STATUS, CHANNEL_STATS, RECEIVER_INFO,
                POOL_STATS,
            ):  # fmt: skip
                self._db[table.name].delete_where(f'"{table.key}" = ?', [channel])
            # the source position received is forgotten too (the receiver starts afresh), not the account
            self._upsert(MASTER_INFO, channel, {"Master_log_name": "", "Master_log_pos": 4})
            self._upsert(
                RELAY_LOG_INFO,
                channel,
                {
                    "Relay_log_name": "",
                    "Relay_log_pos": 4,
                    "Master_log_name": "",
                    "Master_log_pos": 0,
                    "Applier_state": "OFF",
                },
            )

    # -- variables and the serving process ------------------------------------------------------

    def global_variables(self) -> dict[str, str]:
        """SET GLOBAL's applier variables as set (text); unset ones have their defaults elsewhere."""
        with self._snapshot():
            return {
                r["name"]: r["value"]
                for r in self._query("SELECT name, value FROM relaydeck_global_variables")
            }

    def set_global_variables(self, values: Mapping[str, str | None]) -> None:
        """Set (or, with None, return to the default) global variables, all in one transaction."""
        with self._write("set global variables"):
            for name, value in values.items():
                if value is None:
                    self._db.execute("DELETE FROM relaydeck_global_variables WHERE name = ?", [name])
                else:
                    self._db.execute(
                        "INSERT INTO relaydeck_global_variables (name, value) VALUES (?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        [name, str(value)],
                    )

    def slave_path(self) -> str | None:
        """The DuckDB slave this repository's channels apply to, once one has been used with it."""
        with self._snapshot():
            rows = self._query("SELECT path FROM relaydeck_slave")
        return rows[0]["path"] if rows else None

    def set_slave_path(self, path: str) -> None:
        with self._write("record the slave"):
            self._db.execute(
                "INSERT INTO relaydeck_slave (id, path) VALUES (1, ?) "
                "ON CONFLICT (id) DO UPDATE SET path = excluded.path",
                [path],
            )

    def server(self) -> dict[str, Any] | None:
        """The `relaydeck serve` process registered on this repository (it may have died since)."""
        with self._snapshot():
            rows = self._query("SELECT pid, socket, slave, started_at FROM relaydeck_server")
        return rows[0] if rows else None

    def register_server(self, pid: int, socket: str, slave: str) -> None:
        with self._write("register the server"):
            self._db.execute(
                "INSERT INTO relaydeck_server (id, pid, socket, slave, started_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, socket = excluded.socket, "
                "slave = excluded.slave, started_at = excluded.started_at",
                [pid, socket, slave, mysql_timestamp(datetime.now(UTC))],
            )

    def unregister_server(self, pid: int) -> None:
        with self._write("unregister the server"):
            self._db.execute("DELETE FROM relaydeck_server WHERE pid = ?", [pid])

    # -- live status ----------------------------------------------------------------------------

    def publish_status(
        self,
        coordinator: Mapping[str, Any],
        workers: Sequence[Mapping[str, Any]],
        connection: Mapping[str, Any] | None = None,
        stats: Mapping[str, Any] | None = None,
        worker_stats: Sequence[Mapping[str, Any]] | None = None,
        relay_log_info: Mapping[str, Any] | None = None,
        pool_slots: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Write a channel's live status in one transaction.

        The channel is the coordinator row's CHANNEL_NAME. Rows carry performance_schema's column
        names (any letter case); columns left out keep their values. `workers` is the channel's
        whole set of worker rows, `worker_stats` and `pool_slots` (when given) too. stats'
        updated_at defaults to now. `relay_log_info` columns, when given, are set in the same
        transaction.
        """
        coord = _normalize(COORDINATOR_STATUS, coordinator)
        name = coord.get("CHANNEL_NAME")
        if name is None:
            raise RepositoryError("the coordinator row needs CHANNEL_NAME")
        name = _check_name(name)
        worker_rows = [_normalize(WORKER_STATUS, w) for w in workers]
        connection_row = None if connection is None else _normalize(CONNECTION_STATUS, connection)
        stats_row = None if stats is None else _normalize(CHANNEL_STATS, stats)
        if stats_row is not None and stats_row.get("updated_at") is None:
            stats_row["updated_at"] = mysql_timestamp(datetime.now(UTC))
        with self._write(f"publish the status of channel {name!r}"):
            channel = self._ensure(name)
            self._upsert(COORDINATOR_STATUS, channel, coord)
            self._replace_rows(WORKER_STATUS, channel, worker_rows)
            if connection_row is not None:
                self._upsert(CONNECTION_STATUS, channel, connection_row)
            if stats_row is not None:
                self._upsert(CHANNEL_STATS, channel, stats_row)
            if worker_stats is not None:
                self._replace_rows(WORKER_STATS, channel, [_normalize(WORKER_STATS, w) for w in worker_stats])
            if pool_slots is not None:
                self._replace_rows(POOL_STATS, channel, [_normalize(POOL_STATS, s) for s in pool_slots])
            if relay_log_info:
                self._upsert(RELAY_LOG_INFO, channel, _normalize(RELAY_LOG_INFO, relay_log_info))

    def record_error(self, name: str, errno: int, message: str, when: datetime | float | None = None) -> None:
        """Record the error that stopped the channel's applier (Last_SQL_Errno / Last_SQL_Error)."""
        name = _check_name(name)
        with self._write(f"record an error of channel {name!r}"):
            channel = self._ensure(name)
            self._upsert(
                COORDINATOR_STATUS,
                channel,
                {
                    "LAST_ERROR_NUMBER": int(errno),
                    "LAST_ERROR_MESSAGE": str(message),
                    "LAST_ERROR_TIMESTAMP": mysql_timestamp(datetime.now(UTC) if when is None else when),
                },
            )
            self._upsert(RELAY_LOG_INFO, channel, {"Applier_state": "ERROR"})

    def clear_error(self, name: str) -> None:
        """Clear the applier errors of the channel (coordinator and workers), as START REPLICA does."""
        name = _check_name(name)
        with self._write(f"clear the errors of channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in (COORDINATOR_STATUS, WORKER_STATUS):
                self._db.execute(
                    f"UPDATE \"{table.name}\" SET LAST_ERROR_NUMBER = 0, LAST_ERROR_MESSAGE = '', "
                    f"LAST_ERROR_TIMESTAMP = ? WHERE CHANNEL_NAME = ?",
                    [ZERO_TIMESTAMP, channel],
                )
            self._db.execute(
                "UPDATE relay_log_info SET Applier_state = 'OFF' "
                "WHERE Channel_name = ? AND Applier_state = 'ERROR'",
                [channel],
            )

    def status(self, name: str | None = None) -> list[ChannelStatus]:
        """SHOW REPLICA STATUS for one channel (none if it does not exist) or for all, from one snapshot."""
        with self._snapshot():
            if name is None:
                where, params = "", []
            else:
                channel = self._canonical(_check_name(name))
                if channel is None:
                    return []
                where, params = " WHERE {key} = ?", [channel]

            def rows(table: _Table) -> dict[str, list[dict[str, Any]]]:
                order = ", ".join(f'"{k}"' for k in table.pk)
                sql = f'SELECT * FROM "{table.name}"' + where.format(key=f'"{table.key}"')
                grouped: dict[str, list[dict[str, Any]]] = {}
                for row in self._query(f"{sql} ORDER BY {order}", params):
                    grouped.setdefault(row[table.key], []).append(row)
                return grouped

            masters = rows(MASTER_INFO)
            relays = rows(RELAY_LOG_INFO)
            coordinators = rows(COORDINATOR_STATUS)
            workers = rows(WORKER_STATUS)
            connections = rows(CONNECTION_STATUS)
            stats = rows(CHANNEL_STATS)
        return [
            _channel_status(
                mi[0],
                relays.get(channel, [{}])[0],
                coordinators.get(channel, [{}])[0],
                workers.get(channel, []),
                connections.get(channel, [{}])[0],
                stats.get(channel, [{}])[0],
            )
            for channel, mi in masters.items()
        ]
