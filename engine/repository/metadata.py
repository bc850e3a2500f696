"""The replica's metadata: master_info (the source and the position received), relay_log_info,
worker_info checkpoints, per-channel applier options, RESET REPLICA; the global variables and
the serving process."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .errors import RepositoryError, UnknownChannel
from .store import Store
from .tables import (
    CHANNEL_OPTIONS,
    CHANNEL_STATS,
    CONNECTION_STATUS,
    COORDINATOR_STATUS,
    MASTER_INFO,
    POOL_STATS,
    RECEIVER_INFO,
    RELAY_LOG_INFO,
    WORKER_INFO,
    WORKER_STATUS,
    check_name,
    mysql_timestamp,
    normalize,
)


class Metadata(Store):
    """master_info, relay_log_info, worker_info and the channel's options; global state."""

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
        *,
        durable: bool = True,
    ) -> None:
        """The receiver's position, in one transaction: master_info's Master_log_name/pos, the
        Retrieved_Gtid_Set, and where the channel's relay logs end for them. durable=False: at
        each transaction received, committed without waiting for the disk (see Store._write)."""
        name = check_name(name)
        with self._write(f"record the receiver's position of channel {name!r}", durable=durable):
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
        name = check_name(name)
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
        name = check_name(name)
        with self._write(f"forget the receiver's position of channel {name!r}"):
            channel = self._canonical(name)
            if channel is not None:
                self._conn.execute(f'DELETE FROM "{RECEIVER_INFO.name}" WHERE "channel" = ?', [channel])

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
        name = check_name(name)
        with self._snapshot():
            return self._query('SELECT * FROM worker_info WHERE Channel_name = ? ORDER BY "Id"', [name])

    def write_checkpoint(
        self, name: str, relay_log_info: Mapping[str, Any], workers: Sequence[Mapping[str, Any]]
    ) -> None:
        """Write relay_log_info columns and all worker_info rows of the channel in one transaction.

        `workers` is the channel's whole set: rows with other Ids are deleted. Either all of it is
        written or, on any error, none of it.
        """
        name = check_name(name)
        rli = normalize(RELAY_LOG_INFO, relay_log_info)
        rows = [normalize(WORKER_INFO, w) for w in workers]
        with self._write(f"write the checkpoint of channel {name!r}"):
            channel = self._ensure(name)
            if rli:
                self._upsert(RELAY_LOG_INFO, channel, rli)
            self._replace_rows(WORKER_INFO, channel, rows)

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
        name = check_name(name)
        with self._write(f"reset channel {name!r}"):
            channel = self._canonical(name)
            if channel is None:
                raise UnknownChannel(f"there is no channel {name!r}")
            for table in (
                WORKER_INFO, COORDINATOR_STATUS, WORKER_STATUS, CONNECTION_STATUS, CHANNEL_STATS, RECEIVER_INFO,
                POOL_STATS,
            ):  # fmt: skip
                self._conn.execute(f'DELETE FROM "{table.name}" WHERE "{table.key}" = ?', [channel])
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
                    self._conn.execute("DELETE FROM relaydeck_global_variables WHERE name = ?", [name])
                else:
                    self._conn.execute(
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
            self._conn.execute(
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
            self._conn.execute(
                "INSERT INTO relaydeck_server (id, pid, socket, slave, started_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, socket = excluded.socket, "
                "slave = excluded.slave, started_at = excluded.started_at",
                [pid, socket, slave, mysql_timestamp(datetime.now(UTC))],
            )

    def unregister_server(self, pid: int) -> None:
        with self._write("unregister the server"):
            self._conn.execute("DELETE FROM relaydeck_server WHERE pid = ?", [pid])
