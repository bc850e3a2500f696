"""START REPLICA IO_THREAD: a channel's receiver run in a thread of the replica server.

It connects with master_info's SOURCE_HOST, SOURCE_PORT, SOURCE_USER and SOURCE_PASSWORD (over TLS
as SOURCE_SSL and its options ask, engine/receiver/connection.py), writes
into the channel's relay logs (RELAY_LOG's folder and base name), starts where the receiver last
recorded its position, else at SOURCE_LOG_FILE/SOURCE_LOG_POS, else after what the relay logs
hold or at the source's first binary log. With SOURCE_AUTO_POSITION = 1 (MySQL) or SOURCE_USE_GTID
(MariaDB) the source finds where to start from the GTIDs the channel received and applied. It reconnects per SOURCE_CONNECT_RETRY and
SOURCE_RETRY_COUNT, and takes silence for twice SOURCE_HEARTBEAT_PERIOD as a dead connection. Its
errors go to Last_IO_Errno/Last_IO_Error.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..errors import RelaydeckError
from ..relaylog.index import channel_relay_log_names
from ..repository import Repository

ER_SLAVE_RELAY_LOG_WRITE_FAILURE = 1595
ER_UNKNOWN_ERROR = 1105


def relay_base(index: Path, channel: str) -> tuple[Path, str] | None:
    """(folder, base name) of a channel's WL#1697 index `<base>-<channel>.index`; None if it is
    not named so (the receiver writes only relay logs it names itself)."""
    suffix = f"-{channel.lower()}.index" if channel else ".index"
    if not index.name.endswith(suffix):
        return None
    base = index.name[: -len(suffix)]
    if not base or channel_relay_log_names(base, channel)[0] != index.name:
        return None
    return index.parent, base


class ReceiverRun(threading.Thread):
    """One START REPLICA IO_THREAD of one channel, until caught up (or STOP, with follow)."""

    def __init__(
        self, repository: Repository, channel: str, index: Path, *, follow: bool, executed_gtids: str = ""
    ) -> None:
        super().__init__(name=f"receiver-{channel}", daemon=True)
        self.repository = repository
        self.channel = channel
        self.index = index
        self.follow = follow
        self.executed_gtids = executed_gtids  # the slave's, for SOURCE_USE_GTID / SOURCE_AUTO_POSITION
        self.stop = threading.Event()

    def run(self) -> None:
        from ..receiver.receiver import ReceiverError, ReceiverSettings, SourceAccount, receive
        from ..receiver.stream import SourcePosition
        from .variables import global_value

        mi = self.repository.master_info(self.channel) or {}
        global_texts = self.repository.global_variables()
        account = SourceAccount(mi.get("Host") or "", mi.get("Port") or 3306, mi.get("User_name") or "",
                                mi.get("User_password") or "", source_tls(mi))  # fmt: skip
        directory, base = relay_base(self.index, self.channel) or (self.index.parent, "")
        start = gtid_start = auto_position = None
        if mi.get("Enabled_auto_position"):
            # MySQL's SOURCE_AUTO_POSITION: the receiver asks with its Retrieved_Gtid_Set united
            # with the GTIDs the channel applied
            auto_position = self.executed_gtids
        elif mi.get("Using_gtid", "No") != "No":
            # MariaDB's slave_pos: after the GTIDs the channel applied (receive() goes on after what
            # the relay logs hold when they hold more). With no binary log of its own, a replica's
            # current_pos is the same.
            gtid_start = self.executed_gtids
        elif self.repository.received(self.channel) is None and mi.get("Master_log_name"):
            start = SourcePosition(mi["Master_log_name"], mi.get("Master_log_pos") or 4)
        try:
            receive(
                account,
                ReceiverSettings(
                    self.channel,
                    directory,
                    relay_log_base=base,
                    heartbeat_period=float(mi.get("Heartbeat") if mi.get("Heartbeat") is not None else 30.0),
                    connect_retry=float(
                        mi.get("Connect_retry") if mi.get("Connect_retry") is not None else 60
                    ),
                    retry_count=int(mi.get("Retry_count") if mi.get("Retry_count") is not None else 86400),
                    server_id=int(global_value(global_texts, "server_id")),
                    relay_log_purge=bool(global_value(global_texts, "relay_log_purge")),
                ),
                start=start,
                gtid_start=gtid_start,
                auto_position=auto_position,
                until_caught_up=not self.follow,
                should_stop=self.stop.is_set,
                repository=self.repository,
            )
        except ReceiverError:
            pass  # receive() recorded it as the channel's Last_IO_Errno / Last_IO_Error
        except RelaydeckError as exc:
            self.repository.record_io_error(self.channel, ER_SLAVE_RELAY_LOG_WRITE_FAILURE, exc.one_line())
        except Exception as exc:  # unforeseen: the IO thread stops with it shown, never silently
            message = account.scrub(
                f"The receiver stopped on an unforeseen error: {type(exc).__name__}: {exc}"
            )
            self.repository.record_io_error(self.channel, ER_UNKNOWN_ERROR, message)


def recover_relay_tail(repository: Repository, channel: str, index: Path) -> None:
    """A receiver killed while writing may have left its last relay file ending inside an event:
    cut back to the last whole one before anything follows the file. A failure is the receiver's
    to report when it starts."""
    from ..receiver.receiver import cut_partial_relay_tail

    try:
        cut_partial_relay_tail(index)
    except (OSError, RelaydeckError):
        pass


def source_tls(mi: dict):  # type: ignore[no-untyped-def]
    """SOURCE_SSL and its options from master_info's columns."""
    from ..receiver.connection import SourceTls

    return SourceTls(
        enabled=bool(mi.get("Enabled_ssl")),
        ca=mi.get("Ssl_ca") or "",
        capath=mi.get("Ssl_capath") or "",
        cert=mi.get("Ssl_cert") or "",
        key=mi.get("Ssl_key") or "",
        cipher=mi.get("Ssl_cipher") or "",
        verify_server_cert=bool(mi.get("Ssl_verify_server_cert")),
    )


def receives_from_source(repository: Repository, name: str) -> bool:
    """Whether START REPLICA runs the channel's receiver too: it names a source to connect to
    (SOURCE_HOST and SOURCE_USER). A SOURCE_HOST alone labels relay logs another replica writes."""
    mi = repository.master_info(name) or {}
    return bool(mi.get("Host") and mi.get("User_name"))
