"""Relay-log files as a MySQL 8.0 replica's receiver thread writes them, plus their index.

The writer simulates both ends of one replication channel. The source side keeps its binary log
position (the log_pos of every source event), rotates its binlog past max_binlog_size (sequence
numbers restart, the writeset history starts afresh) and stamps each transaction's GTID event
with gno, last_committed, sequence_number and transaction_length. The replica side frames what it
receives into relay files the way rpl_replica.cc queues events:

* every relay file opens with the replica's FORMAT_DESCRIPTION and PREVIOUS_GTIDS (flag 0x40);
* every Rotate from the source rotates the relay log first, so a source binlog switch costs two
  relay files: one holding the source's real Rotate, one starting with the dump thread's
  artificial Rotate (timestamp 0, log_pos 0, flag 0x20) and the source's FORMAT_DESCRIPTION;
* the source's PREVIOUS_GTIDS is replaced by a Rotate to the position after it (server_id 0);
* past max_relay_log_size the relay log rotates between transactions and the new file repeats
  the source's FORMAT_DESCRIPTION marked artificial (log_pos 0, created 0);
* each relay file ends with the replica's own Rotate naming the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

from engine.binlog.constants import BINLOG_MAGIC, EventFlag, EventType
from engine.binlog.writer import (
    FORMAT_DESCRIPTION_SIZE,
    SERVER_VERSION,
    event_size,
    format_description_body,
    frame_event,
    gtid_body,
    previous_gtids_body,
    rotate_body,
    transaction_length,
)
from engine.scheduling.writeset import DEFAULT_HISTORY_SIZE, WritesetHistory

_FLUSH_AT = 1 << 20


class SourceEvent(NamedTuple):
    """One event of a transaction as the source logged it, before framing (a tuple: made often)."""

    type_code: int
    body: bytes
    timestamp: int
    flags: int = 0


@dataclass(frozen=True)
class ChannelSettings:
    """Everything that shapes the files: identities, names, rotation sizes, dependency history."""

    directory: Path
    source_uuid: bytes
    start_time: int
    max_binlog_size: int
    max_relay_log_size: int
    source_server_id: int = 1
    replica_server_id: int = 2
    server_version: str = SERVER_VERSION
    binlog_basename: str = "binlog"
    relay_basename: str = "relay-bin"
    history_size: int = DEFAULT_HISTORY_SIZE


@dataclass(frozen=True)
class LoggedTransaction:
    """Where a transaction landed and how it was stamped."""

    gno: int
    binlog_file: str
    sequence_number: int
    last_committed: int
    end_position: int
    relay_file: str


@dataclass(frozen=True)
class RelayLogResult:
    index_file: Path
    relay_files: list[Path]
    transactions: int
    events: int
    bytes: int
    binlog_files: list[str]


class RelayLogWriter:
    """Writes one channel's relay logs; feed it transactions, then close() it."""

    def __init__(self, settings: ChannelSettings) -> None:
        self.s = settings
        settings.directory.mkdir(parents=True, exist_ok=True)
        self._relay_files: list[Path] = []
        self._binlog_files: list[str] = []
        self._file: BinaryIO | None = None
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._relay_pos = 0
        self._total_bytes = 0
        self._events = 0
        self._transactions = 0
        self._now = settings.start_time
        self._gno = 0  # last GTID number logged by the source
        self._retrieved = 0  # last GTID number fully queued in the relay log
        self._sequence_number = 0
        self._history = WritesetHistory(settings.history_size)
        self._binlog_no = 0
        self._src_pos = 0
        self._src_fde_created = 0
        self._src_fde_time = 0
        self._src_prev_gtids_end = 0
        self._closed = False
        self._open_relay_file(created=settings.start_time)
        self._open_source_binlog(created=settings.start_time)
        self._dump_thread_connects()

    # ----------------------------------------------------------------------------------------
    # public

    @property
    def bytes_written(self) -> int:
        """Relay-log bytes so far, the current file included."""
        return self._total_bytes if self._closed else self._total_bytes + self._relay_pos

    @property
    def current_binlog(self) -> str:
        return self._binlog_files[-1]

    def write_transaction(
        self,
        events: Sequence[SourceEvent],
        *,
        writeset: Iterable[int] | None,
        may_have_sbr: bool,
        commit_timestamp_us: int,
    ) -> LoggedTransaction:
        """Log one transaction at the source (GTID + events) and queue it into the relay log."""
        if self._closed:
            raise RuntimeError("relay log writer is closed")
        self._gno += 1
        self._sequence_number += 1
        seq = self._sequence_number
        last_committed = self._history.dependency(seq, writeset)
        rest = sum(event_size(len(e.body)) for e in events)
        length = transaction_length(rest)
        gtid = gtid_body(
            sid=self.s.source_uuid,
            gno=self._gno,
            last_committed=last_committed,
            sequence_number=seq,
            commit_timestamp_us=commit_timestamp_us,
            transaction_length=length,
            may_have_sbr=may_have_sbr,
        )
        first_ts = events[0].timestamp if events else commit_timestamp_us // 1_000_000
        # Frame the whole transaction in one go: this is the per-event hot path.
        server_id = self.s.source_server_id
        pos = self._src_pos + event_size(len(gtid))
        framed = [frame_event(EventType.GTID, first_ts, server_id, pos, 0, gtid)]
        for type_code, body, timestamp, flags in events:
            pos += event_size(len(body))
            framed.append(frame_event(type_code, timestamp, server_id, pos, flags, body))
        self._src_pos = pos
        self._events += len(framed)
        self._write(b"".join(framed))
        self._now = max(self._now, commit_timestamp_us // 1_000_000)
        self._transactions += 1
        self._retrieved = self._gno
        logged = LoggedTransaction(
            self._gno, self.current_binlog, seq, last_committed, self._src_pos, self._relay_files[-1].name
        )
        if self._src_pos >= self.s.max_binlog_size:
            self._source_rotates()
        elif self._relay_pos >= self.s.max_relay_log_size:
            self._rotate_relay(repeat_source_fde=True)
        return logged

    def close(self) -> RelayLogResult:
        """Flush the last relay file and write the index."""
        if not self._closed:
            self._flush()
            assert self._file is not None
            self._file.close()
            self._total_bytes += self._relay_pos
            self._closed = True
            index = self.s.directory / f"{self.s.relay_basename}.index"
            index.write_text("".join(f"./{p.name}\n" for p in self._relay_files))
        return RelayLogResult(
            self.s.directory / f"{self.s.relay_basename}.index",
            list(self._relay_files),
            self._transactions,
            self._events,
            self._total_bytes,
            list(self._binlog_files),
        )

    # ----------------------------------------------------------------------------------------
    # relay side

    def _write(self, data: bytes) -> None:
        self._buffer.append(data)
        self._buffered += len(data)
        self._relay_pos += len(data)
        if self._buffered >= _FLUSH_AT:
            self._flush()

    def _flush(self) -> None:
        if self._buffer and self._file is not None:
            self._file.write(b"".join(self._buffer))
        self._buffer.clear()
        self._buffered = 0

    def _replica_event(self, type_code: int, flags: int, body: bytes, server_id: int | None = None) -> None:
        # Events the replica writes itself carry relay-log positions.
        sid = self.s.replica_server_id if server_id is None else server_id
        size = event_size(len(body))
        self._write(frame_event(type_code, self._now, sid, self._relay_pos + size, flags, body))
        self._events += 1

    def _retrieved_gtids(self) -> dict[bytes, list[tuple[int, int]]]:
        return {self.s.source_uuid: [(1, self._retrieved + 1)]} if self._retrieved else {}

    def _open_relay_file(self, created: int) -> None:
        path = self.s.directory / f"{self.s.relay_basename}.{len(self._relay_files) + 1:06d}"
        self._relay_files.append(path)
        self._file = path.open("wb")
        self._relay_pos = 0
        self._write(BINLOG_MAGIC)
        self._replica_event(
            EventType.FORMAT_DESCRIPTION,
            EventFlag.RELAY_LOG,
            format_description_body(created, self.s.server_version),
        )
        self._replica_event(
            EventType.PREVIOUS_GTIDS, EventFlag.RELAY_LOG, previous_gtids_body(self._retrieved_gtids())
        )

    def _rotate_relay(self, *, repeat_source_fde: bool) -> None:
        next_name = f"{self.s.relay_basename}.{len(self._relay_files) + 1:06d}"
        self._replica_event(EventType.ROTATE, EventFlag.RELAY_LOG, rotate_body(4, next_name))
        self._flush()
        assert self._file is not None
        self._file.close()
        self._total_bytes += self._relay_pos
        self._open_relay_file(created=0)
        if repeat_source_fde:
            # The source's format, so the new file can be read on its own; not in the source's log.
            body = format_description_body(0, self.s.server_version)
            self._write(
                frame_event(
                    EventType.FORMAT_DESCRIPTION,
                    self._src_fde_time,
                    self.s.source_server_id,
                    0,
                    EventFlag.ARTIFICIAL,
                    body,
                )
            )
            self._events += 1

    # ----------------------------------------------------------------------------------------
    # source side

    def _source_event(self, type_code: int, timestamp: int, flags: int, body: bytes) -> None:
        self._src_pos += event_size(len(body))
        self._write(frame_event(type_code, timestamp, self.s.source_server_id, self._src_pos, flags, body))
        self._events += 1

    def _open_source_binlog(self, created: int) -> None:
        self._binlog_no += 1
        self._binlog_files.append(f"{self.s.binlog_basename}.{self._binlog_no:06d}")
        self._src_fde_created = created
        self._src_fde_time = self._now
        prev = previous_gtids_body({self.s.source_uuid: [(1, self._gno + 1)]} if self._gno else {})
        self._src_prev_gtids_end = 4 + FORMAT_DESCRIPTION_SIZE + event_size(len(prev))
        self._sequence_number = 0
        self._history.reset(0)  # last_committed is relative to the binlog file

    def _dump_thread_connects(self) -> None:
        """What the dump thread sends when it (re)opens a binlog file at position 4."""
        name = self.current_binlog
        artificial = rotate_body(4, name)
        self._rotate_relay(repeat_source_fde=False)
        # Artificial rotate: timestamp 0 and log_pos 0 tell it apart from a logged one.
        self._write(
            frame_event(EventType.ROTATE, 0, self.s.source_server_id, 0, EventFlag.ARTIFICIAL, artificial)
        )
        self._events += 1
        fde = format_description_body(self._src_fde_created, self.s.server_version)
        self._write(
            frame_event(
                EventType.FORMAT_DESCRIPTION,
                self._src_fde_time,
                self.s.source_server_id,
                4 + FORMAT_DESCRIPTION_SIZE,
                0,
                fde,
            )
        )
        self._events += 1
        # The source's PREVIOUS_GTIDS arrives as a Rotate to the position after it.
        self._src_pos = self._src_prev_gtids_end
        self._replica_event(EventType.ROTATE, 0, rotate_body(self._src_pos, name), server_id=0)

    def _source_rotates(self) -> None:
        next_binlog = f"{self.s.binlog_basename}.{self._binlog_no + 1:06d}"
        body = rotate_body(4, next_binlog)
        # The receiver rotates the relay log before it writes the source's Rotate.
        self._rotate_relay(repeat_source_fde=False)
        self._source_event(EventType.ROTATE, self._now, 0, body)
        self._open_source_binlog(created=0)
        self._dump_thread_connects()
