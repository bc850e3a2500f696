"""Live status: what performance_schema shows while an applier or receiver runs, and
SHOW REPLICA STATUS built from it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from typing import Any

from .errors import RepositoryError, UnknownChannel
from .store import Store
from .tables import (
    CHANNEL_STATS,
    CONNECTION_STATUS,
    COORDINATOR_STATUS,
    MASTER_INFO,
    POOL_STATS,
    RELAY_LOG_INFO,
    WORKER_STATS,
    WORKER_STATUS,
    ZERO_TIMESTAMP,
    Table,
    check_name,
    epoch_seconds,
    mysql_timestamp,
    normalize,
)


def _error_timestamp(value: str | None) -> str:
    """A stored error timestamp as SHOW REPLICA STATUS prints it: YYMMDD hh:mm:ss, empty for none."""
    at = epoch_seconds(value)
    return "" if at is None else datetime.fromtimestamp(at, UTC).strftime("%y%m%d %H:%M:%S")


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
    head = epoch_seconds(connection.get("LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"))
    if head is None:
        head = epoch_seconds(coordinator.get("LAST_PROCESSED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"))
    done = [
        t
        for t in (epoch_seconds(w["LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP"]) for w in applied)
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


class LiveStatus(Store):
    """The channel's live status: applier, workers, receiver, relaydeck's counters."""

    def set_receiver_state(
        self, name: str, service_state: str, io_state: str = "", *, host: str | None = None,
        port: int | None = None, user: str | None = None, clear_error: bool = False,
    ) -> None:  # fmt: skip
        """Replica_IO_Running (SERVICE_STATE: ON, CONNECTING or OFF) and Replica_IO_State; the source
        account (never its password); with clear_error, the last IO error cleared (a START, a
        connection made)."""
        name = check_name(name)
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
        name = check_name(name)
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

    def channel_stats(self, name: str) -> dict[str, Any]:
        """relaydeck's counters row of the channel ({} before its first run)."""
        return self._row(CHANNEL_STATS, name) or {}

    def worker_stats(self, name: str) -> list[dict[str, Any]]:
        """relaydeck's per-worker rows of the channel (while or after a multi-threaded run)."""
        name = check_name(name)
        with self._snapshot():
            return self._query(
                "SELECT * FROM relaydeck_worker_stats WHERE channel = ? ORDER BY worker", [name]
            )

    def pool_stats(self, name: str) -> list[dict[str, Any]]:
        """relaydeck's per-slot rows of the channel's preparing pool (while or after a run with one)."""
        name = check_name(name)
        with self._snapshot():
            return self._query(
                "SELECT * FROM relaydeck_pool_stats WHERE channel = ? ORDER BY slot_no", [name]
            )

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
        coord = normalize(COORDINATOR_STATUS, coordinator)
        name = coord.get("CHANNEL_NAME")
        if name is None:
            raise RepositoryError("the coordinator row needs CHANNEL_NAME")
        name = check_name(name)
        worker_rows = [normalize(WORKER_STATUS, w) for w in workers]
        connection_row = None if connection is None else normalize(CONNECTION_STATUS, connection)
        stats_row = None if stats is None else normalize(CHANNEL_STATS, stats)
        if stats_row is not None and stats_row.get("updated_at") is None:
            stats_row["updated_at"] = mysql_timestamp(datetime.now(UTC))
        # status only (crash recovery reads the slave and worker_info): not waited for on disk
        with self._write(f"publish the status of channel {name!r}", durable=False):
            channel = self._ensure(name)
            self._upsert(COORDINATOR_STATUS, channel, coord)
            self._replace_rows(WORKER_STATUS, channel, worker_rows)
            if connection_row is not None:
                self._upsert(CONNECTION_STATUS, channel, connection_row)
            if stats_row is not None:
                self._upsert(CHANNEL_STATS, channel, stats_row)
            if worker_stats is not None:
                self._replace_rows(WORKER_STATS, channel, [normalize(WORKER_STATS, w) for w in worker_stats])
            if pool_slots is not None:
                self._replace_rows(POOL_STATS, channel, [normalize(POOL_STATS, s) for s in pool_slots])
            if relay_log_info:
                self._upsert(RELAY_LOG_INFO, channel, normalize(RELAY_LOG_INFO, relay_log_info))

    def publish_applied(self, name: str, relay_log_info: Mapping[str, Any], stats: Mapping[str, Any]) -> None:
        """At each commit of the channel's applier: where it stands (relay_log_info's positions and
        Executed_gtid_set) and its stats row's counters, without waiting for the disk (a status
        reader sees them at once; the durable checkpoint stays the slave's and worker_info's)."""
        name = check_name(name)
        stats_row = normalize(CHANNEL_STATS, stats)
        stats_row.setdefault("updated_at", mysql_timestamp(datetime.now(UTC)))
        with self._write(f"publish what channel {name!r} applied", durable=False):
            channel = self._ensure(name)
            self._upsert(RELAY_LOG_INFO, channel, normalize(RELAY_LOG_INFO, relay_log_info))
            self._upsert(CHANNEL_STATS, channel, stats_row)

    def record_error(self, name: str, errno: int, message: str, when: datetime | float | None = None) -> None:
        """Record the error that stopped the channel's applier (Last_SQL_Errno / Last_SQL_Error)."""
        name = check_name(name)
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
        name = check_name(name)
        with self._write(f"clear the errors of channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in (COORDINATOR_STATUS, WORKER_STATUS):
                self._conn.execute(
                    f"UPDATE \"{table.name}\" SET LAST_ERROR_NUMBER = 0, LAST_ERROR_MESSAGE = '', "
                    f"LAST_ERROR_TIMESTAMP = ? WHERE CHANNEL_NAME = ?",
                    [ZERO_TIMESTAMP, channel],
                )
            self._conn.execute(
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
                channel = self._canonical(check_name(name))
                if channel is None:
                    return []
                where, params = " WHERE {key} = ?", [channel]

            def rows(table: Table) -> dict[str, list[dict[str, Any]]]:
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
