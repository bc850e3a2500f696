"""One channel's receiver: connect as a replica, ask for the binary log, write relay logs.

The connection and its authentication are PyMySQL's; only the dump is spoken here. The source's
version string (the handshake's) tells MySQL from MariaDB, and each gets the session a replica of
its own kind sets up: MariaDB's (checksums as the source writes them, its GTID capability, the
heartbeat period), or MySQL 8.4's (its clock and server id, the heartbeat period under both names,
the checksum, GTID_MODE, SERVER_UUID and the replica's UUID, in the order its IO thread asks).
Then COM_REGISTER_SLAVE, then COM_BINLOG_DUMP from a file and position, or with SOURCE_AUTO_POSITION
MySQL's COM_BINLOG_DUMP_GTID with the GTIDs the replica has (its Retrieved_Gtid_Set united with
the ones it executed, as a MySQL replica sends them): the source sends the transactions outside
that set. The answer is one packet per event (0x00 then the event), an EOF at the end of the
binary logs when the dump does not block, or an error.

With a repository, the position reached is recorded in its master_info (with the
Retrieved_Gtid_Set and where the relay logs end for it) after each whole transaction received, so
that status shows it as it happens; every RECORD_INTERVAL seconds and at the end that recording is
made durable, after the relay bytes it covers are fsynced. A restart goes on from the recording
past every whole transaction the relay logs hold after it (never cutting them back: the applier may
have applied those), and asks the source for what follows. Replica_IO_Running, Replica_IO_State
and Last_IO_Errno/Last_IO_Error go there too.

With relay_log_purge, the relay files before the one the applier's committed position is in (and
before the one the receiver's recorded position is in) are taken off the index and deleted.

Without a position given or recorded, the receiver goes on from the relay logs it already wrote
(after their last whole transaction: a transaction cut short at their tail is fetched again from
its start, which the applier's continuity check accepts; an event cut short is cut off), or starts
at the source's first binary log.

When the connection fails or goes away, the receiver connects again (SOURCE_CONNECT_RETRY seconds
between attempts, at most SOURCE_RETRY_COUNT attempts in a row, 0: no limit) and asks for what
follows the last whole transaction received, in a new relay file. Silence for twice
SOURCE_HEARTBEAT_PERIOD is a dead connection: the source sends a heartbeat whenever it has had
nothing to send for a period, so only a connection that stalled is that quiet.
"""

from __future__ import annotations

import re
import socket
import struct
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pymysql

from ..binlog.constants import BINLOG_MAGIC, COMMON_HEADER_LEN, EventType
from ..binlog.events import HEADER
from ..binlog.events.control import fde_has_checksum_byte
from ..gtids import ExecutedGtids, GtidSet
from ..relaylog.index import read_index
from . import io_state
from .connection import CR_SERVER_LOST, ConnectionLost, ReceiverError, SourceAccount, connect, source_error
from .relay_files import RelayLogFiles
from .stream import SourcePosition, StreamTracker

if TYPE_CHECKING:
    from ..repository import Repository

__all__ = ["ReceiveResult", "ReceiverError", "ReceiverSettings", "SourceAccount", "receive"]

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_DUMP_NON_BLOCK = 1
BINLOG_THROUGH_GTID = 4  # COM_BINLOG_DUMP_GTID: the GTID set follows the position
MARIA_SLAVE_CAPABILITY_GTID = 4
DEFAULT_MAX_RELAY_LOG_SIZE = 1 << 30  # max_relay_log_size 0 means max_binlog_size: 1 GiB
RECORD_INTERVAL = 0.2  # seconds between two durable recordings of the position: an fsync and a commit each
PURGE_INTERVAL = 1.0  # seconds between two looks at what the applier no longer needs
# The heartbeat asked of the source is at most this many seconds apart, whatever the period: the
# blocking dump looks at STOP and its deadline between two packets.
POLL_INTERVAL = 1.0
NET_TIMEOUT = 60.0  # replica_net_timeout: the dead-connection limit when heartbeats are off (period 0)

ER_SLAVE_RELAY_LOG_WRITE_FAILURE = 1595
ER_NETWORK_READ_EVENT_CHECKSUM_FAILURE = 1743
ER_REPLICA_FATAL_ERROR = 1593
ER_UNKNOWN_SYSTEM_VARIABLE = 1193

_ROTATE = int(EventType.ROTATE)
_FDE = int(EventType.FORMAT_DESCRIPTION)
_HEARTBEAT = int(EventType.HEARTBEAT)
_HEARTBEAT_V2 = int(EventType.HEARTBEAT_V2)
_ARTIFICIAL = 0x20


@dataclass(frozen=True)
class ReceiverSettings:
    channel: str
    relay_dir: Path
    server_id: int = 2
    max_relay_log_size: int = DEFAULT_MAX_RELAY_LOG_SIZE
    relay_log_base: str = "relay-bin"
    heartbeat_period: float = 30.0  # SOURCE_HEARTBEAT_PERIOD, seconds; 0: no heartbeat
    connect_retry: float = 60.0  # SOURCE_CONNECT_RETRY: seconds between connection attempts
    retry_count: int = 86400  # SOURCE_RETRY_COUNT: attempts in a row before giving up; 0: no limit
    relay_log_purge: bool = False  # delete the relay files the applier is done with (needs a repository)

    @property
    def dead_after(self) -> float:
        """Seconds of silence after which the connection counts as dead."""
        return 2 * self.heartbeat_period if self.heartbeat_period > 0 else NET_TIMEOUT

    @property
    def heartbeat_asked(self) -> float:
        return min(self.heartbeat_period, POLL_INTERVAL) if self.heartbeat_period > 0 else POLL_INTERVAL


@dataclass(frozen=True)
class ReceiveResult:
    index_file: Path
    relay_files: list[Path]
    events: int
    transactions_at: SourcePosition | None  # after the last whole transaction received
    caught_up: bool
    reconnects: int = 0  # connections lost and made again


RetryCallback = Callable[[ReceiverError, float], None]  # a failed attempt, the seconds to the next


def resume_position(
    files: RelayLogFiles, tracker: StreamTracker | None = None, start: tuple[str, int] | None = None
) -> SourcePosition | None:
    """After the last whole transaction the relay logs hold (None: they hold nothing yet), read
    from their first file, or from `start` (relay file, position) where `tracker` stands."""
    tracker = StreamTracker() if tracker is None else tracker
    reached = start is None
    for path in files.files:
        if not reached and path.name != start[0]:  # type: ignore[index]
            continue
        data = path.read_bytes()
        if data[:4] != BINLOG_MAGIC or len(data) < 4 + COMMON_HEADER_LEN:
            continue
        # the file's own Format_description tells the replica's server id (its own events)
        _, type_code, own_server_id, size, _, _ = HEADER.unpack_from(data, 4)
        if type_code != _FDE or 4 + size > len(data):
            continue
        tracker.checksum = _has_checksum(data[4 : 4 + size])
        pos = 4 + size if reached else max(4 + size, start[1])  # type: ignore[index]
        reached = True
        while pos + COMMON_HEADER_LEN <= len(data):
            _, type_code, server_id, size, _, _ = HEADER.unpack_from(data, pos)
            if size < COMMON_HEADER_LEN or pos + size > len(data):
                break  # a partly written tail: fetched again
            event = data[pos : pos + size]
            if not (server_id == own_server_id and type_code == _ROTATE):
                if type_code == _FDE:
                    tracker.checksum = _has_checksum(event)
                elif server_id != own_server_id:
                    tracker.event(event)
            pos += size
    return tracker.committed


def cut_partial_tail(files: RelayLogFiles) -> int:
    """A receiver stopped while writing (killed, out of space) may leave the last relay file ending
    inside an event: cut it back to its last whole event; the bytes cut."""
    if not files.files or not files.files[-1].exists():
        return 0
    return _cut_to_whole_events(files.files[-1])


def _cut_to_whole_events(path: Path) -> int:
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


def resume_recorded(
    files: RelayLogFiles, recorded: dict | None, tracker: StreamTracker
) -> SourcePosition | None:
    """master_info's position, moved on past the whole transactions the relay logs hold after it
    (`tracker` then stands there, with their GTIDs retrieved). None when nothing is recorded or the
    relay logs do not reach the recording (relay files removed by hand, bytes lost with the
    machine): then the relay logs themselves tell.

    The relay logs are never cut back to the recording, as they were once: between two recordings
    the receiver writes and flushes whole transactions that a follower (this process's applier, or
    another's) may already have applied, and a relay log cut under an applied position leaves the
    applier stopped on bytes that are gone. What the files hold whole is received; only a partly
    written event at their tail is cut, and a transaction cut short there is fetched again from its
    start in the next relay file (the applier's continuity check drops the unfinished one)."""
    if recorded is None or not files.files:
        return None
    name, pos = recorded["relay_log_name"], recorded["relay_log_pos"]
    path = next((p for p in files.files if p.name == name), None)
    if path is None or not path.exists() or path.stat().st_size < pos:
        return None
    cut_partial_tail(files)
    tracker.load_retrieved(recorded["retrieved_gtid_set"])
    tracker.restart_at(SourcePosition(recorded["Master_log_name"], recorded["Master_log_pos"]))
    return resume_position(files, tracker, (name, pos))


def cut_partial_relay_tail(index_file: Path) -> int:
    """Before a channel's threads start after a crash: the last relay file cut back to its last
    whole event (see cut_partial_tail), so that no follower maps bytes that are cut later."""
    if not index_file.exists():
        return 0
    files = read_index(index_file).files
    if not files or not files[-1].exists():
        return 0
    return _cut_to_whole_events(files[-1])


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


def receive(
    account: SourceAccount,
    settings: ReceiverSettings,
    *,
    start: SourcePosition | None = None,
    gtid_start: str | None = None,
    auto_position: str | None = None,
    until_caught_up: bool = True,
    stop_after: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    repository: Repository | None = None,
    on_retry: RetryCallback | None = None,
) -> ReceiveResult:
    """Receive into the channel's relay logs until the source has sent all it has (until_caught_up)
    or for `stop_after` seconds or until should_stop() says so, stopping between transactions;
    reconnecting per the settings. on_retry hears of each failed connection attempt that is retried.

    gtid_start: MariaDB's GTID positioning (SOURCE_USE_GTID), after those GTIDs. auto_position:
    MySQL's (SOURCE_AUTO_POSITION = 1), with the GTID set the replica executed ('' for none)."""
    try:
        files = RelayLogFiles(
            settings.relay_dir, settings.channel, settings.server_id, settings.max_relay_log_size,
            settings.relay_log_base,
        )  # fmt: skip
    except OSError as exc:
        raise _write_failure(exc, settings.relay_dir) from None
    receiver = _Receiver(account, settings, files, repository, should_stop, on_retry)
    if auto_position is not None:
        receiver.executed_mysql = ExecutedGtids.parse(auto_position).mysql
    if stop_after is not None:
        receiver.deadline = time.monotonic() + stop_after
    return receiver.run(start, gtid_start, until_caught_up)


class _Receiver:
    """One receive(): its connections one after another, the relay files, the position."""

    def __init__(
        self,
        account: SourceAccount,
        settings: ReceiverSettings,
        files: RelayLogFiles,
        repository: Repository | None,
        should_stop: Callable[[], bool] | None,
        on_retry: RetryCallback | None,
    ) -> None:
        self.account = account
        self.settings = settings
        self.files = files
        self.repository = repository
        self._should_stop = should_stop
        self._on_retry = on_retry
        self.deadline: float | None = None
        self.tracker = StreamTracker()
        # (source position, relay file, relay pos, retrieved GTIDs) after a whole transaction
        self.boundary: tuple[SourcePosition, str, int, str] | None = None
        self.recorded_boundary: tuple[SourcePosition, str, int, str] | None = None
        self.durable_boundary: tuple[SourcePosition, str, int, str] | None = None
        self.last_recorded = time.monotonic()
        self.last_purged = 0.0
        self.events = 0
        self.reconnects = 0
        self.phase = "registration"  # where a lost connection was lost: registration, dump, read
        self.executed_mysql: GtidSet | None = None  # SOURCE_AUTO_POSITION: the replica's gtid_executed
        self.recovered: SourcePosition | None = None  # after what the relay logs held at the start

    # -- the whole run ----------------------------------------------------------------------------

    def run(
        self, start: SourcePosition | None, gtid_start: str | None, until_caught_up: bool
    ) -> ReceiveResult:
        channel = self.settings.channel
        self._state("CONNECTING", io_state.CONNECTING, account=True)
        failure: ReceiverError | None = None
        positioned = False
        lost: ConnectionLost | None = None
        caught_up = False
        try:
            while True:
                conn = self._connect(lost)
                if conn is None:
                    break  # stopped while (re)connecting
                try:
                    if not positioned:
                        start, gtid_start = self._starting_point(conn, start, gtid_start)
                        self.tracker.restart_at(start)
                        positioned = True
                        self._record_recovered()
                        self.purge_applied()
                    assert start is not None
                    caught_up = self._receive_from(conn, start, gtid_start, until_caught_up)
                    break
                except ConnectionLost as exc:
                    lost = exc
                finally:
                    try:
                        conn.close()
                    except Exception:  # the connection may be gone already
                        pass
                self.record()
                if self._stopping():
                    break
                self.reconnects += 1
                if positioned:
                    # after the last whole transaction: one cut short comes again from its start
                    start = self.tracker.committed
                    if gtid_start is not None:
                        gtid_start = later_gtids(gtid_start, self.tracker.retrieved_gtid_set())
                    assert start is not None
                    self.tracker.restart_at(start)
            self.record()
            return ReceiveResult(
                self.files.index_file, list(self.files.files), self.events, self.tracker.committed, caught_up,
                self.reconnects,
            )  # fmt: skip
        except OSError as exc:
            failure = _write_failure(exc, self.files.index_file)
            raise failure from None
        except ReceiverError as exc:
            failure = exc
            raise
        finally:
            try:
                if failure is not None and failure.errno != ER_SLAVE_RELAY_LOG_WRITE_FAILURE:
                    self.record()  # the whole transactions received before the error stay received
            except OSError:
                pass
            self.files.close()
            _stopped(self.repository, channel, failure)

    def _starting_point(
        self, conn, start: SourcePosition | None, gtid_start: str | None
    ) -> tuple[SourcePosition, str | None]:
        files, repository = self.files, self.repository
        recorded = None if repository is None else repository.received(self.settings.channel)
        if gtid_start is not None or self.executed_mysql is not None:
            # A GTID dump: the source finds the binlog itself and names it (artificial Rotate).
            # It goes on after what the relay logs already hold, so nothing is received twice.
            in_relay_logs = StreamTracker()
            if resume_recorded(files, recorded, in_relay_logs) is None:  # the tracker untouched
                cut_partial_tail(files)
                resume_position(files, in_relay_logs)
            held = in_relay_logs.retrieved_gtid_set()
            self.tracker.load_retrieved(held)
            self.recovered = in_relay_logs.committed
            if gtid_start is None:
                return SourcePosition("", 4), None  # MySQL's: the set is made at each dump
            return SourcePosition("", 4), later_gtids(gtid_start, held)
        if start is not None:
            cut_partial_tail(files)
            return start, None
        recovered = StreamTracker()
        start = resume_recorded(files, recorded, recovered)
        if start is not None:
            self.tracker = recovered
            self.recovered = start
            return start, None
        cut_partial_tail(files)
        if recorded is not None:
            self.tracker.load_retrieved(recorded["retrieved_gtid_set"])
        try:
            return resume_position(files, self.tracker) or SourcePosition(first_binlog(conn), 4), None
        except pymysql.err.MySQLError as exc:
            raise self._lost_or_fatal(exc) from None

    # -- connecting -------------------------------------------------------------------------------

    def _connect(self, lost: ConnectionLost | None):
        """A connection, after as many attempts as SOURCE_RETRY_COUNT allows (the first at once);
        None when stopped meanwhile; the last attempt's error when they all failed."""
        settings, account = self.settings, self.account
        attempt = 0
        while not self._stopping():
            attempt += 1
            if lost is not None:
                self._state("CONNECTING", io_state.RECONNECTING[lost.phase])
            try:
                conn = connect(account, read_timeout=settings.dead_after)
            except ConnectionLost as exc:
                doing = "connecting" if lost is None else "reconnecting"
                error = ConnectionLost(
                    exc.errno,
                    f"error {doing} to source {account.where} - retry-time: {settings.connect_retry:g} "
                    f"retries: {attempt} message: {exc.message}",
                )
            else:
                self.phase = "registration"
                return conn
            if settings.retry_count and attempt >= settings.retry_count:
                raise error
            if self.repository is not None:
                self.repository.record_io_error(settings.channel, error.errno, error.message, stopped=False)
            if self._on_retry is not None:
                self._on_retry(error, settings.connect_retry)
            if lost is not None:
                self._state("CONNECTING", io_state.WAITING_TO_RECONNECT[lost.phase])
            self._sleep(settings.connect_retry)
        return None

    def _sleep(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while not self._stopping() and time.monotonic() < until:
            time.sleep(min(0.1, max(0.0, until - time.monotonic())))

    def _stopping(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return True
        return self._should_stop is not None and self._should_stop()

    def _lost_or_fatal(self, exc: Exception) -> ReceiverError:
        error = source_error(exc, self.account)
        if isinstance(error, ConnectionLost):
            error.phase = self.phase
        return error

    def _state(
        self, service_state: str, state: str, *, account: bool = False, clear_error: bool = False
    ) -> None:
        if self.repository is None:
            return
        if account:
            self.repository.set_receiver_state(
                self.settings.channel, service_state, state, host=self.account.host, port=self.account.port,
                user=self.account.user, clear_error=True,
            )  # fmt: skip
        else:
            self.repository.set_receiver_state(
                self.settings.channel, service_state, state, clear_error=clear_error
            )

    # -- one connection's dump ----------------------------------------------------------------------

    def _receive_from(
        self, conn, start: SourcePosition, gtid_start: str | None, until_caught_up: bool
    ) -> bool:
        """The dump from `start` on this connection, into the relay logs; whether it reached the
        end of the source's binary logs. ConnectionLost when the connection goes away."""
        files, tracker = self.files, self.tracker
        try:
            tracker.checksum = self._dump(conn, start, gtid_start, non_blocking=until_caught_up)
            self.phase = "read"
            self._state("ON", io_state.WAITING_FOR_EVENT, clear_error=True)
            pending_rotate = None
            while True:
                if not tracker.in_transaction and self._stopping():
                    return False
                packet = conn._read_packet()  # the source's error (1236, …) or the network's (2013)
                data = packet.get_all_data()
                if data[0] == 0xFE and len(data) < 9:
                    if until_caught_up:
                        return True  # the end of the binary logs, for a dump that does not block
                    lost = ConnectionLost(
                        CR_SERVER_LOST, "received end packet from source, apparent source shutdown"
                    )
                    lost.phase = self.phase
                    raise lost
                event = data[1:]
                _, type_code, _, _, log_pos, flags = HEADER.unpack_from(event, 0)
                if type_code in (_HEARTBEAT, _HEARTBEAT_V2):
                    if not tracker.in_transaction:
                        self.record()  # the source has nothing more for now: what came is recorded
                        self._purge_now_and_then()
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
                    self.events += 1
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
                self.events += 1
                if not tracker.in_transaction:
                    self._transaction_received()
        except pymysql.err.MySQLError as exc:
            raise self._lost_or_fatal(exc) from None

    def _record_recovered(self) -> None:
        """What the relay logs held whole at the start is received: recorded at once, so that the
        channel's Retrieved_Gtid_Set is never behind what its applier executed from them."""
        last = self.files.files[-1] if self.files.files else None
        if self.recovered is None or last is None or not last.exists():
            return
        self.boundary = (self.recovered, last.name, last.stat().st_size, self.tracker.retrieved_gtid_set())
        self.record()

    def _transaction_received(self) -> None:
        files, tracker = self.files, self.tracker
        files.flush()
        files.rotate_if_full()
        current = files.current
        if current is not None and tracker.committed is not None:
            self.boundary = (tracker.committed, current.name, files.pos, tracker.retrieved_gtid_set())
        if time.monotonic() - self.last_recorded >= RECORD_INTERVAL:
            self.record()
            self.last_recorded = time.monotonic()
            self._purge_now_and_then()
        else:
            self.record(durable=False)

    def _purge_now_and_then(self) -> None:
        if time.monotonic() - self.last_purged >= PURGE_INTERVAL:
            self.purge_applied()

    def purge_applied(self) -> None:
        """relay_log_purge: the relay files before the one the applier stands in (its committed
        position, in relay_log_info) and before the one the receiver's recorded position is in."""
        if not self.settings.relay_log_purge or self.repository is None:
            return
        self.last_purged = time.monotonic()
        channel = self.settings.channel
        applied = (self.repository.relay_log_info(channel) or {}).get("Relay_log_name") or ""
        recorded = self.durable_boundary[1] if self.durable_boundary is not None else None
        if recorded is None:
            received = self.repository.received(channel)
            recorded = received["relay_log_name"] if received is not None else None
        names = [path.name for path in self.files.files]
        if applied not in names or recorded not in names:
            return
        self.files.purge_before(min(applied, recorded, key=names.index))

    def record(self, *, durable: bool = True) -> None:
        """The position after the last whole transaction, in master_info; durable: once its relay
        bytes are on disk, and committed to disk itself."""
        if self.repository is None or self.boundary is None:
            return
        if self.boundary is (self.durable_boundary if durable else self.recorded_boundary):
            return
        if durable:
            self.files.sync()
        source, relay_name, relay_pos, gtids = self.boundary
        self.repository.record_received(
            self.settings.channel, source.file, source.pos, gtids, relay_name, relay_pos, durable=durable
        )
        self.recorded_boundary = self.boundary
        if durable:
            self.durable_boundary = self.boundary

    def _dump(self, conn, start: SourcePosition, gtid_start: str | None, *, non_blocking: bool) -> bool:
        self.phase = "registration"
        self._state("ON", io_state.REGISTERING)
        dump_gtids = None
        if self.executed_mysql is not None:
            # what a MySQL replica asks with: its Retrieved_Gtid_Set united with its gtid_executed
            dump_gtids = GtidSet().update(self.tracker.retrieved_mysql).update(self.executed_mysql)
        try:
            return _dump(
                conn, self.settings, start, gtid_start, dump_gtids,
                non_blocking=non_blocking, requesting=self._requesting,
            )  # fmt: skip
        except pymysql.err.MySQLError as exc:
            raise self._lost_or_fatal(exc) from None

    def _requesting(self) -> None:
        self.phase = "dump"
        self._state("ON", io_state.REQUESTING_DUMP)


def later_gtids(*positions: str) -> str:
    """MariaDB GTID positions ('domain-server-seq,…') combined: per domain, the later GTID."""
    last: dict[int, tuple[int, int]] = {}
    for position in positions:
        for domain, server, seq in (
            map(int, g.split("-")) for g in re.findall(r"(?<![\w:-])\d+-\d+-\d+(?![\w:-])", position)
        ):
            if domain not in last or seq > last[domain][1]:
                last[domain] = (server, seq)
    return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(last.items()))


def _stopped(repository: Repository | None, channel: str, failure: ReceiverError | None) -> None:
    if repository is None:
        return
    if failure is None:
        repository.set_receiver_state(channel, "OFF", io_state.STOPPED)
    else:
        repository.record_io_error(channel, failure.errno, failure.message)


def _write_failure(exc: OSError, where: Path) -> ReceiverError:
    return ReceiverError(
        ER_SLAVE_RELAY_LOG_WRITE_FAILURE,
        f"Relay log write failure: {exc.filename or where}: {exc.strerror or exc}",
    )


def source_is_mariadb(conn) -> bool:
    """Whether the source is MariaDB, from the version string of its handshake."""
    version = conn.server_version
    if isinstance(version, bytes):
        version = version.decode("ascii", "replace")
    return "mariadb" in (version or "").lower()


def replica_uuid(settings: ReceiverSettings) -> str:
    """The replica's server UUID, as a MySQL source hears it (@replica_uuid): the same for a channel
    at each connection, so that the source ends a dump this replica left behind."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"relaydeck:{settings.server_id}:{settings.channel}"))


def _dump(
    conn,
    settings: ReceiverSettings,
    start: SourcePosition,
    gtid_start: str | None,
    dump_gtids: GtidSet | None,
    *,
    non_blocking: bool,
    requesting: Callable[[], None],
) -> bool:
    """The session a replica of the source's kind sets up, COM_REGISTER_SLAVE, then the dump;
    whether the events come with checksums. With gtid_start (MariaDB's 'domain-server-seq,…'), the
    dump begins after those GTIDs, as CHANGE MASTER … MASTER_USE_GTID asks for it; with dump_gtids
    (SOURCE_AUTO_POSITION), MySQL's COM_BINLOG_DUMP_GTID sends what is outside that set."""
    if source_is_mariadb(conn):
        if dump_gtids is not None:
            # MariaDB has no @@GLOBAL.GTID_MODE: a MySQL replica takes that as GTID_MODE = OFF
            raise ReceiverError(ER_REPLICA_FATAL_ERROR, _auto_position_refused("OFF"))
        checksum = _mariadb_session(conn, settings, gtid_start)
    else:
        if gtid_start is not None:
            raise ReceiverError(
                ER_REPLICA_FATAL_ERROR,
                f"SOURCE_USE_GTID is MariaDB's GTID positioning and the source is MySQL "
                f"{_version(conn)}: use SOURCE_AUTO_POSITION = 1",
            )
        checksum = _mysql_session(conn, settings, auto_position=dump_gtids is not None)
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
    requesting()
    flags = BINLOG_DUMP_NON_BLOCK if non_blocking else 0
    if dump_gtids is not None:
        encoded = dump_gtids.encode()
        conn._execute_command(
            COM_BINLOG_DUMP_GTID,
            struct.pack("<HII", flags | BINLOG_THROUGH_GTID, settings.server_id, 0)  # no file name
            + struct.pack("<QI", 4, len(encoded))
            + encoded,
        )
        return checksum
    name = start.file.encode()
    conn._execute_command(COM_BINLOG_DUMP, struct.pack("<IHI", start.pos, flags, settings.server_id) + name)
    return checksum


def _mariadb_session(conn, settings: ReceiverSettings, gtid_start: str | None) -> bool:
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
        # nanoseconds; asked often enough that STOP is heard within POLL_INTERVAL
        cur.execute(f"SET @master_heartbeat_period = {int(settings.heartbeat_asked * 1e9)}")
    return checksum


def _mysql_session(conn, settings: ReceiverSettings, *, auto_position: bool) -> bool:
    """MySQL 8.4's IO thread's queries (get_source_version_and_clock, get_source_uuid,
    io_thread_init_commands), in its order; whether the events come with CRC32 checksums."""
    with conn.cursor() as cur:
        cur.execute("SELECT UNIX_TIMESTAMP()")
        cur.fetchall()
        cur.execute("SELECT @@GLOBAL.SERVER_ID")
        cur.fetchall()
        period = int(settings.heartbeat_asked * 1e9)
        cur.execute(f"SET @master_heartbeat_period = {period}, @source_heartbeat_period = {period}")
        cur.execute(
            "SET @master_binlog_checksum = @@global.binlog_checksum, "
            "@source_binlog_checksum = @@global.binlog_checksum"
        )
        cur.execute("SELECT @source_binlog_checksum")
        checksum = str(cur.fetchone()[0]).upper() == "CRC32"
        try:
            cur.execute("SELECT @@GLOBAL.GTID_MODE")
            gtid_mode = str(cur.fetchone()[0]).upper()
        except pymysql.err.MySQLError as exc:
            if not exc.args or exc.args[0] != ER_UNKNOWN_SYSTEM_VARIABLE:
                raise
            gtid_mode = "OFF"  # a source older than GTIDs
        if auto_position and gtid_mode != "ON":
            raise ReceiverError(ER_REPLICA_FATAL_ERROR, _auto_position_refused(gtid_mode))
        cur.execute("SELECT @@GLOBAL.SERVER_UUID")
        cur.fetchall()
        own = replica_uuid(settings)
        cur.execute(f"SET @slave_uuid = '{own}', @replica_uuid = '{own}'")
    return checksum


def _auto_position_refused(gtid_mode: str) -> str:
    return (
        "The replication receiver thread cannot start in AUTO_POSITION mode: the source has "
        f"GTID_MODE = {gtid_mode} instead of ON."
    )


def _version(conn) -> str:
    version = conn.server_version
    return version.decode("ascii", "replace") if isinstance(version, bytes) else str(version)
