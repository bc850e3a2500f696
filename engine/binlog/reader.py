"""Reading one binlog/relay-log file: framing, checksums, format descriptions, positions.

The reader verifies every event before decoding it (size within the file, CRC32 when the current
FORMAT_DESCRIPTION says so) and turns any decoding failure into a BinlogError naming the file and
the event's offset, so that bad input ends in one clear line, never a traceback or a hang.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..errors import BinlogError, ChecksumMismatch, TruncatedEvent, UnknownEvent
from . import primitives as p
from .compiled import load
from .constants import (
    BINLOG_MAGIC,
    CHECKSUM_LEN,
    COMMON_HEADER_LEN,
    ChecksumAlg,
    EventFlag,
    EventType,
    event_type_name,
)
from .events import (
    DECODERS,
    HEADER,
    BinlogEvent,
    DecodeContext,
    EventHeader,
    FormatDescription,
    IgnoredEvent,
    Rotate,
    TransactionPayload,
    decode_format_description,
)
from .primitives import failure_text


class LoggedEvent(NamedTuple):
    """An event where it stands: in the relay file (log_name, pos) and in the source's binlog.

    A named tuple rather than a frozen dataclass: one is made per event, and a frozen dataclass
    costs three times as much to build.
    """

    event: BinlogEvent
    header: EventHeader  # this event's own header (identical table maps share one event object)
    log_name: str
    pos: int
    end_pos: int
    source_log_file: str | None
    artificial: bool = False  # written by the replica, not the source (artificial rotate, own FDE)
    copied_fde: bool = False  # a source FORMAT_DESCRIPTION copied into the relay log
    inner: bool = False  # decoded from inside a TRANSACTION_PAYLOAD at `pos`

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def event_type(self) -> str:
        return event_type_name(self.header.type_code)

    @property
    def server_id(self) -> int:
        return self.header.server_id

    @property
    def source_end_pos(self) -> int:
        return self.header.log_pos


@dataclass(slots=True)
class ReaderState:
    """What carries over from one relay file to the next: the source file name and format."""

    source_log_file: str | None = None
    context: DecodeContext = field(default_factory=DecodeContext)
    ignored_events: int = 0
    # How far the last read got, so that reading a file again once it has grown can go on from
    # there (events(resume=True)) instead of walking its headers from position 4 each time.
    read_file: str | None = None  # path of the file last read
    read_pos: int = 4  # an event boundary in it: every event before it is reflected in this state
    read_file_server_id: int | None = None  # that file's writer (server id of its FORMAT_DESCRIPTION at 4)


# Plain ints: IntFlag arithmetic costs microseconds per event on the hot path.
_IGNORABLE = int(EventFlag.IGNORABLE)
_ARTIFICIAL = int(EventFlag.ARTIFICIAL)
_FDE = int(EventType.FORMAT_DESCRIPTION)
_ROTATE = int(EventType.ROTATE)
_CRC32 = int(ChecksumAlg.CRC32)


class BinlogFile:
    """One binlog or relay-log file, mapped read-only."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.name = self.path.name
        try:
            self._fh = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        except FileNotFoundError:
            raise BinlogError(str(self.path), None, "file does not exist") from None
        except OSError as exc:
            raise BinlogError(str(self.path), None, f"cannot open: {exc.strerror}") from None
        self.size = os.fstat(self._fh.fileno()).st_size
        self._data: bytes | mmap.mmap = (
            mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        )
        if self.size < 4:
            raise TruncatedEvent(self.name, 0, f"file is {self.size} bytes, shorter than the binlog magic")
        if self._data[:4] != BINLOG_MAGIC:
            raise BinlogError(self.name, 0, "not a binlog file (bad magic number)")

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
        self._fh.close()

    def __enter__(self) -> BinlogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def events(
        self,
        state: ReaderState | None = None,
        start: int = 4,
        stop: int | None = None,
        partial_tail_ok: bool = False,
        resume: bool = False,
    ) -> Iterator[LoggedEvent]:
        """Decoded events from `start` (an event boundary) to `stop` or the end of the file.

        With partial_tail_ok an incomplete event at the end stops the iteration quietly (a live
        log still being written); otherwise it is an error.

        The events before `start` are walked over (headers only) for the format and the source
        file name. With resume, if `state` last read this same file and got no further than
        `start`, the walk goes on from where that read stopped instead of from position 4.
        """
        state = state if state is not None else ReaderState()
        end = self.size if stop is None else min(stop, self.size)
        # the loop's generator itself, not a generator around it: one frame less per event
        if _framing is not None:
            return _framing.events(self, state, start, end, partial_tail_ok, resume, _FRAMING_KIT)
        return self._events(state, start, end, partial_tail_ok, resume)

    def _events(  # the pure-Python form of _framing.events (keep the two in step)
        self,
        state: ReaderState,
        start: int,
        end: int,
        partial_tail_ok: bool,
        resume: bool,
    ) -> Iterator[LoggedEvent]:
        data, name, path = self._data, self.name, str(self.path)
        own_server_id: int | None  # the writer of this file (its first FORMAT_DESCRIPTION)
        if resume and state.read_file == path and state.read_pos <= start:
            pos, own_server_id = state.read_pos, state.read_file_server_id
        else:
            pos, own_server_id = 4, None
            state.read_file, state.read_file_server_id = path, None
        # Locals: this loop runs once per event of every relay log.
        crc32, unpack_header, unpack_u32 = zlib.crc32, HEADER.unpack_from, p.U32.unpack_from
        new_tuple = tuple.__new__
        decoders = DECODERS
        context = state.context
        while pos < end:
            # Kept at every boundary (not only at the end) so that it also holds when the caller
            # closes the iterator or an error stops it: re-reading the event at `pos` is harmless.
            state.read_pos = pos
            if end - pos < COMMON_HEADER_LEN:
                if partial_tail_ok:
                    return
                raise TruncatedEvent(name, pos, f"file ends {end - pos} bytes into an event header")
            fields = unpack_header(data, pos)
            timestamp, type_code, server_id, size, log_pos, flags = fields
            if size < COMMON_HEADER_LEN:
                raise BinlogError(name, pos, f"event length {size} is shorter than the event header")
            if pos + size > end:
                if partial_tail_ok:
                    return
                raise TruncatedEvent(
                    name,
                    pos,
                    f"{event_type_name(type_code)} event of {size} bytes runs past the end of the file ({end - pos} bytes left)",
                )
            header = new_tuple(EventHeader, fields)  # the named tuple without its Python-level __new__
            next_pos = pos + size
            if pos < start and type_code != _FDE and type_code != _ROTATE:
                pos = next_pos  # skipping to `start`: only the format and source name matter
                continue
            if type_code == _FDE:
                event = self._format_description(header, pos, state)
                context = state.context
                if pos == 4:
                    own_server_id = state.read_file_server_id = server_id
                if pos >= start:
                    yield LoggedEvent(
                        event, header, name, pos, next_pos, state.source_log_file or name, copied_fde=pos != 4
                    )
                pos = next_pos
                continue
            body_end = next_pos
            raw = None
            if context.checksum_alg == _CRC32:
                body_end -= CHECKSUM_LEN
                if body_end < pos + COMMON_HEADER_LEN:
                    raise BinlogError(name, pos, f"event length {size} leaves no room for its checksum")
                # one copy of the event, checked, then its body: slicing a memoryview of the map
                # costs more per event than copying the bytes
                raw = data[pos:body_end]
                if crc32(raw) != unpack_u32(data, body_end)[0]:
                    raise ChecksumMismatch(
                        name, pos, f"{event_type_name(type_code)} event fails its CRC32 check (corrupt data)"
                    )
            decoder = decoders.get(type_code)
            if decoder is None:
                if flags & _IGNORABLE:
                    state.ignored_events += 1
                    if pos >= start:
                        body = data[pos + COMMON_HEADER_LEN : body_end]
                        yield LoggedEvent(
                            IgnoredEvent(header, body),
                            header,
                            name,
                            pos,
                            next_pos,
                            state.source_log_file or name,
                        )
                    pos = next_pos
                    continue
                raise UnknownEvent(name, pos, f"unknown event type {type_code} without the ignorable flag")
            try:
                body = (
                    raw[COMMON_HEADER_LEN:] if raw is not None else data[pos + COMMON_HEADER_LEN : body_end]
                )
                event = decoder(header, body, context)
            except _DECODE_ERRORS as exc:
                raise BinlogError(
                    name,
                    pos,
                    f"bad {event_type_name(type_code)} event: {failure_text(exc, body_end - pos - COMMON_HEADER_LEN)}",
                ) from None
            artificial = bool(flags & _ARTIFICIAL) or (type_code == _ROTATE and log_pos == 0)
            if isinstance(event, Rotate):
                # The file's own writer rotating to its next file (relay-log rotation, or a binlog's
                # last event) does not change which source binlog the events come from.
                from_source = server_id != own_server_id
                if artificial:
                    state.source_log_file = event.next_file
                if pos >= start:
                    yield LoggedEvent(
                        event, header, name, pos, next_pos, state.source_log_file or name, artificial
                    )
                if from_source and not artificial:
                    state.source_log_file = event.next_file
                pos = next_pos
                continue
            if pos >= start:
                yield new_tuple(
                    LoggedEvent,
                    (
                        event,
                        header,
                        name,
                        pos,
                        next_pos,
                        state.source_log_file or name,
                        artificial,
                        False,
                        False,
                    ),
                )
                if isinstance(event, TransactionPayload):
                    yield from self._inner_events(event, pos, next_pos, state)
            pos = next_pos
        state.read_pos = pos

    def _format_description(self, header: EventHeader, pos: int, state: ReaderState) -> FormatDescription:
        body = self._data[pos + COMMON_HEADER_LEN : pos + header.event_size]
        try:
            event = decode_format_description(header, body)
        except ValueError as exc:
            raise BinlogError(self.name, pos, f"bad Format_desc event: {failure_text(exc)}") from None
        if event.checksum_alg == ChecksumAlg.CRC32:
            end = pos + header.event_size - CHECKSUM_LEN
            stored = p.U32.unpack_from(self._data, end)[0]
            raw = bytearray(self._data[pos:end])
            # The server clears BINLOG_IN_USE when it closes the file without recomputing the
            # checksum, which it computed over the flags as they were at close time… or not:
            # accept either form of the flags byte.
            crc_as_is = zlib.crc32(raw)
            raw[17] ^= EventFlag.BINLOG_IN_USE
            if stored not in (crc_as_is, zlib.crc32(raw)):
                raise ChecksumMismatch(
                    self.name, pos, "Format_desc event fails its CRC32 check (corrupt data)"
                )
        elif event.checksum_alg not in (ChecksumAlg.OFF, ChecksumAlg.UNDEFINED):
            raise BinlogError(self.name, pos, f"unknown checksum algorithm {event.checksum_alg}")
        if event.binlog_version != 4:
            raise BinlogError(
                self.name, pos, f"binlog version {event.binlog_version} is not supported (v4 only)"
            )
        state.context = event.context()
        return event

    def _inner_events(
        self, payload: TransactionPayload, pos: int, next_pos: int, state: ReaderState
    ) -> Iterator[LoggedEvent]:
        """The events inside a TRANSACTION_PAYLOAD: no checksums of their own, positions of the payload."""
        data = payload.events_data
        at = 0
        while at < len(data):
            if len(data) - at < COMMON_HEADER_LEN:
                raise BinlogError(self.name, pos, "transaction payload ends inside an event header")
            timestamp, type_code, server_id, size, log_pos, flags = HEADER.unpack_from(data, at)
            if size < COMMON_HEADER_LEN or at + size > len(data):
                raise BinlogError(self.name, pos, f"transaction payload holds an event of bad length {size}")
            header = EventHeader(timestamp, type_code, server_id, size, log_pos, flags)
            decoder = DECODERS.get(type_code)
            if decoder is None:
                raise UnknownEvent(
                    self.name, pos, f"transaction payload holds unknown event type {type_code}"
                )
            try:
                event = decoder(header, data[at + COMMON_HEADER_LEN : at + size], state.context)
            except _DECODE_ERRORS as exc:
                raise BinlogError(
                    self.name,
                    pos,
                    f"bad {event_type_name(type_code)} event inside the transaction payload: "
                    f"{failure_text(exc, size - COMMON_HEADER_LEN)}",
                ) from None
            yield LoggedEvent(
                event, header, self.name, pos, next_pos, state.source_log_file or self.name, inner=True
            )
            at += size


# What a decoder may raise on a malformed body (failure_text words it).
_DECODE_ERRORS = (ValueError, OverflowError, IndexError, KeyError, TypeError, struct.error)

_framing = load("_framing")  # the C form of BinlogFile._events; None: the Python loop runs
# What the compiled loop builds and raises (it cannot import this module: it is imported by it).
_FRAMING_KIT = (
    LoggedEvent,
    EventHeader,
    DECODERS,
    event_type_name,
    BinlogError,
    ChecksumMismatch,
    TruncatedEvent,
    UnknownEvent,
    IgnoredEvent,
    Rotate,
    TransactionPayload,
    _DECODE_ERRORS,
    failure_text,
)


def read_file_events(path: str | os.PathLike[str], start: int = 4) -> Iterator[LoggedEvent]:
    """Every event of one file (convenience for tools and tests)."""
    with BinlogFile(path) as binlog:
        yield from binlog.events(start=start)
