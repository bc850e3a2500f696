"""The replication repository's tables, laid out as MySQL lays them out, and the rows they take.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..relaylog.index import validate_channel_name
from .errors import InvalidChannelName, RepositoryError, UnknownField

DEFAULT_CHANNEL = ""
MAX_CHANNELS = 256  # WL#1697: the default channel counts towards the limit
ZERO_TIMESTAMP = "0000-00-00 00:00:00.000000"


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: type
    default: Any = None
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    pk: tuple[str, ...]
    columns: tuple[Column, ...]

    @property
    def key(self) -> str:
        """The channel-name column."""
        return self.pk[0]


def _text(name: str, default: str = "") -> Column:
    return Column(name, str, default)


def _int(name: str, default: int = 0) -> Column:
    return Column(name, int, default)


def _opt(name: str, kind: type = str, default: Any = None) -> Column:
    return Column(name, kind, default, nullable=True)


def _ts(name: str) -> Column:
    return Column(name, str, ZERO_TIMESTAMP)


def _key(name: str) -> Column:
    return Column(name, str)


def _gtid(name: str) -> Column:
    # CHAR(57)/CHAR(90) NULL in performance_schema; '' when no transaction
    return _opt(name, str, "")


# mysql.slave_master_info, MySQL 8.0.27+: 33 columns. Defaults are what a fresh channel shows.
MASTER_INFO = Table(
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
        Column("Heartbeat", float, 30.0),
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
RELAY_LOG_INFO = Table(
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
WORKER_INFO = Table(
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
        Column("Checkpoint_group_bitmap", bytes, b""),
        _key("Channel_name"),
    ),
)

# performance_schema.replication_applier_status_by_coordinator
COORDINATOR_STATUS = Table(
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
WORKER_STATUS = Table(
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
CONNECTION_STATUS = Table(
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
CHANNEL_STATS = Table(
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
        Column("trx_per_s", float, 0.0),
        _text("state", "OFF"),  # ON, OFF, ERROR, RECOVERING, WAITING FOR RELAY LOG
        _opt("lag_s", float),  # source time between the last transaction read and the last applied
        _int("workers_busy"),
        _int("workers_total"),
        Column("queue_fill", float, 0.0),  # queued bytes / replica_pending_jobs_size_max
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
WORKER_STATS = Table(
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
        Column("trx_per_s", float, 0.0),
        _text("last_applied"),
        _opt("last_applied_at"),
        _int("checkpoint_seqno"),
        _text("error"),
    ),
)

# relaydeck's per-slot view of a running channel's preparing pool: a process, a Spark task slot,
# the in-process executor; `slot_no` orders them as the executor lists them.
POOL_STATS = Table(
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
CHANNEL_OPTIONS = Table(
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
RECEIVER_INFO = Table(
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


def epoch_seconds(value: str | None) -> float | None:
    """Seconds since the epoch of a stored timestamp, None for MySQL's zero timestamp."""
    if not value or value.startswith("0000-00-00"):
        return None
    return datetime.fromisoformat(value).replace(tzinfo=UTC).timestamp()


def check_name(name: str) -> str:
    """The channel name, checked against WL#1697's rules (InvalidChannelName if it breaks them)."""
    if not isinstance(name, str):
        raise InvalidChannelName(f"a channel name is a string, not {type(name).__name__}")
    try:
        return validate_channel_name(name)
    except ValueError as exc:
        raise InvalidChannelName(str(exc)) from None


def normalize(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
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
