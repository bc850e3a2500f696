"""One channel's receiver: connect as a replica, ask for the binary log, write relay logs.

The connection and its authentication are PyMySQL's; only the dump is spoken here: the session
variables a MariaDB replica sets (checksums as the source writes them, its GTID capability,
the heartbeat period), COM_REGISTER_SLAVE, then COM_BINLOG_DUMP from a file and position, whose
answer is one packet per event (0x00 then the event), an EOF at the end of the binary logs when
the dump does not block, or an error.

With a repository, the position reached is recorded in its master_info (with the
Retrieved_Gtid_Set and where the relay logs end for it) at most every RECORD_INTERVAL seconds and at
the end, always after the relay bytes it covers are fsynced; a restart cuts the relay logs back to
that point and asks the source for what follows. Replica_IO_Running and Last_IO_Errno/Last_IO_Error
go there too.

Without a position given or recorded, the receiver goes on from the relay logs it already wrote
(after their last whole transaction: a transaction cut short at their tail is fetched again from
its start, which the applier's continuity check accepts; an event cut short is cut off), or starts
at the source's first binary log.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pymysql

from ..binlog.constants import BINLOG_MAGIC, COMMON_HEADER_LEN, EventType
from ..binlog.events import HEADER
from ..binlog.events.control import fde_has_checksum_byte
from ..errors import NumberedError
from .relay_files import RelayLogFiles
from .stream import SourcePosition, StreamTracker

if TYPE_CHECKING:
    from ..repository import Repository

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
BINLOG_DUMP_NON_BLOCK = 1
MARIA_SLAVE_CAPABILITY_GTID = 4
DEFAULT_MAX_RELAY_LOG_SIZE = 1 << 30  # max_relay_log_size 0 means max_binlog_size: 1 GiB
RECORD_INTERVAL = 0.2  # seconds between two recordings of the position: one fsync and one commit each

ER_SLAVE_RELAY_LOG_WRITE_FAILURE = 1595
ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE = 1743
CR_CONN_HOST_ERROR = 2003
CR_SERVER_LOST = 2013

_ROTATE = int(EventType.ROTATE)
_FDE = int(EventType.FORMAT_DESCRIPTION)
_HEARTBEAT = int(EventType.HEARTBEAT)
_HEARTBEAT_V2 = int(EventType.HEARTBEAT_V2)
_ARTIFICIAL = 0x20


class ReceiverError(NumberedError):
    """The receiver stopped: MySQL's Last_IO_Errno and Last_IO_Error."""


@dataclass(frozen=True)
class SourceAccount:
    host: str
    port: int
    user: str
    password: str = ""

    def __repr__(self) -> str:  # the password never shows
        return f"SourceAccount({self.user}@{self.host}:{self.port})"


@dataclass(frozen=True)
class ReceiverSettings:
    channel: str
    relay_dir: Path
    server_id: int = 2
    max_relay_log_size: int = DEFAULT_MAX_RELAY_LOG_SIZE
    relay_log_base: str = "relay-bin"
    heartbeat_period: float = 1.0  # seconds; also how often a blocking dump looks at its deadline


@dataclass(frozen=True)
class ReceiveResult:
    index_file: Path
    relay_files: list[Path]
    events: int
    transactions_at: SourcePosition | None  # after the last whole transaction received
    caught_up: bool


def resume_position(files: RelayLogFiles, tracker: StreamTracker | None = None) -> SourcePosition | None:
    """After the last whole transaction the relay logs hold (None: they hold nothing yet)."""
    tracker = StreamTracker() if tracker is None else tracker
    for path in files.files:
        data = path.read_bytes()
        pos, own_server_id = 4, None
        if data[:4] != BINLOG_MAGIC:
            continue
        while pos + COMMON_HEADER_LEN <= len(data):
            _, type_code, server_id, size, _, _ = HEADER.unpack_from(data, pos)
            if size < COMMON_HEADER_LEN or pos + size > len(data):
                break  # a partly written tail: fetched again
            event = data[pos : pos + size]
            if pos == 4 and type_code == _FDE:
                own_server_id = server_id
                tracker.checksum = _has_checksum(event)
            elif not (server_id == own_server_id and type_code == _ROTATE):
                if type_code == _FDE:
                    tracker.checksum = _has_checksum(event)
                elif server_id != own_server_id:
                    tracker.event(event)
            pos += size
    return tracker.committed


def cut_partial_tail(files: RelayLogFiles) -> int:
    """A receiver stopped while writing (killed, out of space) may leave the last relay file ending
    inside an event: cut it back to its last whole event; the bytes cut."""
    if not files.files:
        return 0
    path = files.files[-1]
    data = path.read_bytes()
    pos = 4
    while pos + COMMON_HEADER_LEN <= len(data):
        size = HEADER.unpack_from(data, pos)[3]
        if size < COMMON_HEADER_LEN or pos + size > len(data):
            break
        pos += size
    if data[:4] != BINLOG_MAGIC or pos >= len(data):
        return 0
    with path.open("r+b") as fh:
        fh.truncate(pos)
    return len(data) - pos


def resume_recorded(files: RelayLogFiles, recorded: dict | None) -> SourcePosition | None:
    """master_info's position, with the relay logs cut back to where they ended for it; None when
    nothing is recorded or the relay logs do not match it (a crash between a new relay file and
    the next recording, relay files removed by hand): then the relay logs themselves tell."""
    if recorded is None or not files.files:
        return None
    path = files.files[-1]
    if path.name != recorded["relay_log_name"] or not path.exists():
        return None
    size, pos = path.stat().st_size, recorded["relay_log_pos"]
    if size < pos:
        return None
    if size > pos:
        with path.open("r+b") as fh:
            fh.truncate(pos)  # what followed was never recorded: fetched again
    return SourcePosition(recorded["Master_log_name"], recorded["Master_log_pos"])


def _has_checksum(fde: bytes) -> bool:
    version = fde[COMMON_HEADER_LEN + 2 : COMMON_HEADER_LEN + 52].split(b"\0", 1)[0]
    return fde_has_checksum_byte(version.decode("ascii", "replace")) and fde[-5] == 1


def first_binlog(conn) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        rows = cur.fetchall()
    if not rows:
        raise ReceiverError(1236, "the source has no binary logs (is log_bin on?)")
    return rows[0][0]


def connect(account: SourceAccount):
    try:
        return pymysql.connect(
            host=account.host,
            port=account.port,
            user=account.user,
            password=account.password,
            autocommit=True,
            connect_timeout=10,
        )
    except pymysql.err.MySQLError as exc:
        raise _io_error(exc, account) from None


def _io_error(exc: Exception, account: SourceAccount) -> ReceiverError:
    errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else CR_SERVER_LOST
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if account.password:
        message = message.replace(account.password, "***")
    if errno == CR_CONN_HOST_ERROR:
        return ReceiverError(
            errno, f"error connecting to source '{account.user}@{account.host}:{account.port}' - {message}"
        )
    return ReceiverError(errno, message)


def receive(
    account: SourceAccount,
    settings: ReceiverSettings,
    *,
    start: SourcePosition | None = None,
    gtid_start: str | None = None,
    until_caught_up: bool = True,
    stop_after: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    repository: Repository | None = None,
) -> ReceiveResult:
    """Receive into the channel's relay logs until the source has sent all it has (until_caught_up)
    or for `stop_after` seconds or until should_stop() says so, stopping between transactions."""
    try:
        files = RelayLogFiles(
            settings.relay_dir, settings.channel, settings.server_id, settings.max_relay_log_size,
            settings.relay_log_base,
        )  # fmt: skip
    except OSError as exc:
        raise _write_failure(exc, settings.relay_dir) from None
    channel = settings.channel
    if repository is not None:
        repository.set_receiver_state(channel, True, host=account.host, port=account.port, user=account.user)
    try:
        conn = connect(account)
    except ReceiverError as exc:
        _stopped(repository, channel, exc)
        raise
    failure: ReceiverError | None = None
    recorded = None if repository is None else repository.received(channel)
    tracker = StreamTracker()
    boundary = None  # (source position, relay file, relay pos, retrieved GTIDs) after a whole transaction
    recorded_boundary = None

    def record() -> None:
        nonlocal recorded_boundary
        if repository is None or boundary is None or boundary is recorded_boundary:
            return
        files.sync()
        source, relay_name, relay_pos, gtids = boundary
        repository.record_received(channel, source.file, source.pos, gtids, relay_name, relay_pos)
        recorded_boundary = boundary

    try:
        if gtid_start is not None:
            # MariaDB's GTID dump: the source finds the binlog itself and names it (artificial Rotate)
            cut_partial_tail(files)
            start = SourcePosition("", 4)
        elif start is None:
            start = resume_recorded(files, recorded)
            if start is not None:
                tracker.load_retrieved(recorded["retrieved_gtid_set"])
            else:
                cut_partial_tail(files)
                if recorded is not None:
                    tracker.load_retrieved(recorded["retrieved_gtid_set"])
                start = resume_position(files, tracker) or SourcePosition(first_binlog(conn), 4)
        else:
            cut_partial_tail(files)
        tracker.restart_at(start)
        last_recorded = time.monotonic()
        tracker.checksum = _dump(conn, settings, start, gtid_start, non_blocking=until_caught_up)
        deadline = None if stop_after is None else time.monotonic() + stop_after
        events, caught_up, pending_rotate = 0, False, None
        while True:
            if not tracker.in_transaction and (
                (deadline is not None and time.monotonic() >= deadline) or (should_stop and should_stop())
            ):
                break
            try:
                packet = conn._read_packet()
            except pymysql.err.MySQLError as exc:  # the source's (1236, …) or the network's (2013)
                raise _io_error(exc, account) from None
            data = packet.get_all_data()
            if data[0] == 0xFE and len(data) < 9:
                caught_up = True  # the end of the binary logs, for a dump that does not block
                break
            event = data[1:]
            _, type_code, _, size, log_pos, flags = HEADER.unpack_from(event, 0)
            if type_code in (_HEARTBEAT, _HEARTBEAT_V2):
                if not tracker.in_transaction:
                    record()  # the source has nothing more for now: what came is recorded
                continue  # keeps the connection alive; never written
            if (
                tracker.checksum
                and type_code != _FDE
                and zlib.crc32(event[:-4]) != struct.unpack_from("<I", event, len(event) - 4)[0]
            ):
                raise ReceiverError(
                    ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE,
                    "Replication event checksum verification failed while reading from network "
                    f"(the event after {tracker.position})",
                )
            if type_code == _ROTATE and (log_pos == 0 or flags & _ARTIFICIAL):
                # The dump (re)opens a binlog: a new relay file, once the source's format is known
                pending_rotate = event
                tracker.event(event)
                events += 1
                continue
            if type_code == _FDE:
                files.source_format(event)
                tracker.checksum = _has_checksum(event)
            if pending_rotate is not None:
                files.open_new(repeat_source_format=False)
                files.append(pending_rotate)
                pending_rotate = None
            elif type_code == _ROTATE:
                files.open_new(repeat_source_format=False)  # the source's own, at the end of its binlog
            files.append(event)
            tracker.event(event)
            events += 1
            if not tracker.in_transaction:
                files.flush()
                files.rotate_if_full()
                current = files.current
                if current is not None and tracker.committed is not None:
                    boundary = (tracker.committed, current.name, files.pos, tracker.retrieved_gtid_set())
                if time.monotonic() - last_recorded >= RECORD_INTERVAL:
                    record()
                    last_recorded = time.monotonic()
        record()
        return ReceiveResult(files.index_file, list(files.files), events, tracker.committed, caught_up)
    except pymysql.err.MySQLError as exc:  # the session setup or the commands: the source's answer
        failure = _io_error(exc, account)
        raise failure from None
    except OSError as exc:
        failure = _write_failure(exc, files.index_file)
        raise failure from None
    except ReceiverError as exc:
        failure = exc
        raise
    finally:
        try:
            if failure is not None and failure.errno != ER_SLAVE_RELAY_LOG_WRITE_FAILURE:
                record()  # the whole transactions received before the error stay received
        except OSError:
            pass
        files.close()
        try:
            conn.close()
        except Exception:  # the connection may be gone already
            pass
        _stopped(repository, channel, failure)


def _stopped(repository: Repository | None, channel: str, failure: ReceiverError | None) -> None:
    if repository is None:
        return
    if failure is None:
        repository.set_receiver_state(channel, False)
    else:
        repository.record_io_error(channel, failure.errno, failure.message)


def _write_failure(exc: OSError, where: Path) -> ReceiverError:
    return ReceiverError(
        ER_SLAVE_RELAY_LOG_WRITE_FAILURE,
        f"Relay log write failure: {exc.filename or where}: {exc.strerror or exc}",
    )


def _dump(
    conn, settings: ReceiverSettings, start: SourcePosition, gtid_start: str | None, *, non_blocking: bool
) -> bool:
    """The session a MariaDB replica sets up, COM_REGISTER_SLAVE, then COM_BINLOG_DUMP; whether
    the events come with checksums. With gtid_start (MariaDB's 'domain-server-seq,…'), the dump
    begins after those GTIDs, as CHANGE MASTER … MASTER_USE_GTID asks for it."""
    with conn.cursor() as cur:
        if gtid_start is not None:
            cur.execute("SET @slave_connect_state = %s", (gtid_start,))
            cur.execute("SET @slave_gtid_strict_mode = 1")
            cur.execute("SET @slave_gtid_ignore_duplicates = 0")
        # the events come with the checksums the source's binlog holds (CRC32 by default)
        cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        cur.execute("SELECT @master_binlog_checksum")
        checksum = str(cur.fetchone()[0]).upper() == "CRC32"
        cur.execute(f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_GTID}")
        cur.execute(f"SET @master_heartbeat_period = {int(settings.heartbeat_period * 1e9)}")
    host = socket.gethostname().encode()[:255]
    register = (
        struct.pack("<I", settings.server_id)
        + bytes([len(host)]) + host
        + b"\0"  # report_user
        + b"\0"  # report_password: never the source account's
        + struct.pack("<HII", 0, 0, 0)  # report_port, replication rank, source id
    )  # fmt: skip
    conn._execute_command(COM_REGISTER_SLAVE, register)
    conn._read_ok_packet()
    flags = BINLOG_DUMP_NON_BLOCK if non_blocking else 0
    name = start.file.encode()
    conn._execute_command(COM_BINLOG_DUMP, struct.pack("<IHI", start.pos, flags, settings.server_id) + name)
    return checksum
