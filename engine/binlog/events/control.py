"""Events that describe the log itself: format description, rotate, stop, heartbeats, incidents."""

from __future__ import annotations

from dataclasses import dataclass

from .. import primitives as p
from ..constants import ChecksumAlg, EventType
from .base import BinlogEvent, DecodeContext, EventHeader, parse_server_version

# Checksums exist in FORMAT_DESCRIPTION from MySQL 5.6.1 and MariaDB 5.3.0 on.
_CHECKSUM_SINCE_MYSQL = (5, 6, 1)
_CHECKSUM_SINCE_MARIADB = (5, 3, 0)


@dataclass(slots=True, unsafe_hash=True)
class FormatDescription(BinlogEvent):
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: tuple[int, ...]
    checksum_alg: int

    def context(self) -> DecodeContext:
        version, mariadb = parse_server_version(self.server_version)
        return DecodeContext(
            binlog_version=self.binlog_version,
            server_version=self.server_version,
            post_header_lengths=self.post_header_lengths,
            checksum_alg=self.checksum_alg,
            is_mariadb=mariadb,
            version_tuple=version,
        )

    def info(self) -> str:
        return f"Server ver: {self.server_version}, Binlog ver: {self.binlog_version}"


def fde_has_checksum_byte(server_version: str) -> bool:
    version, mariadb = parse_server_version(server_version)
    return version >= (_CHECKSUM_SINCE_MARIADB if mariadb else _CHECKSUM_SINCE_MYSQL)


def decode_format_description(header: EventHeader, body: bytes) -> FormatDescription:
    """Decode an FDE from its whole body including any trailing checksum bytes."""
    binlog_version = p.u16(body, 0)
    server_version = p.text(p.take(body, 2, 50)[0].split(b"\0", 1)[0])
    create_timestamp = p.u32(body, 52)
    header_length = p.u8(body, 56)
    rest = body[57:]
    alg = ChecksumAlg.OFF
    if fde_has_checksum_byte(server_version):
        p.need(body, 57, 5, "the FORMAT_DESCRIPTION checksum trailer")
        alg = rest[-5]
        rest = rest[:-5]
    return FormatDescription(
        header, binlog_version, server_version, create_timestamp, header_length, tuple(rest), alg
    )


@dataclass(slots=True, unsafe_hash=True)
class StartV3(BinlogEvent):
    binlog_version: int
    server_version: str
    create_timestamp: int

    def info(self) -> str:
        return f"Server ver: {self.server_version}, Binlog ver: {self.binlog_version}"


def decode_start_v3(header: EventHeader, body: bytes, ctx: DecodeContext) -> StartV3:
    version = p.text(p.take(body, 2, 50)[0].split(b"\0", 1)[0])
    return StartV3(header, p.u16(body, 0), version, p.u32(body, 52))


@dataclass(slots=True, unsafe_hash=True)
class Rotate(BinlogEvent):
    position: int
    next_file: str

    @property
    def artificial(self) -> bool:
        # Written by the replica's receiver, not by the source: log_pos 0 or the flag says so.
        return self.header.log_pos == 0 or bool(self.header.flags & 0x20)

    def info(self) -> str:
        return f"{self.next_file};pos={self.position}"


def decode_rotate(header: EventHeader, body: bytes, ctx: DecodeContext) -> Rotate:
    post = ctx.post_header_len(EventType.ROTATE, 8)
    position = p.u64(body, 0) if post >= 8 else 4
    return Rotate(header, position, p.text(body[post:]))


@dataclass(slots=True, unsafe_hash=True)
class Stop(BinlogEvent):
    pass


def decode_stop(header: EventHeader, body: bytes, ctx: DecodeContext) -> Stop:
    return Stop(header)


@dataclass(slots=True, unsafe_hash=True)
class Incident(BinlogEvent):
    incident: int
    message: str

    def info(self) -> str:
        kind = {1: "LOST_EVENTS"}.get(self.incident, f"#{self.incident}")
        return f"#{self.incident} ({kind})" + (f" {self.message}" if self.message else "")


def decode_incident(header: EventHeader, body: bytes, ctx: DecodeContext) -> Incident:
    incident = p.u16(body, 0)
    message = ""
    if len(body) > 2:
        length = p.u8(body, 2)
        message = p.text(p.take(body, 3, length, "the incident message")[0])
    return Incident(header, incident, message)


@dataclass(slots=True, unsafe_hash=True)
class Heartbeat(BinlogEvent):
    log_file: str
    log_pos: int

    def info(self) -> str:
        return f"{self.log_file};pos={self.log_pos}"


def decode_heartbeat(header: EventHeader, body: bytes, ctx: DecodeContext) -> Heartbeat:
    return Heartbeat(header, p.text(bytes(body)), header.log_pos)


def decode_heartbeat_v2(header: EventHeader, body: bytes, ctx: DecodeContext) -> Heartbeat:
    # Type-length-value fields: 1 = log file name, 2 = position, 0 = end of header.
    pos, name, position = 0, "", header.log_pos
    while pos < len(body):
        field_type, pos = p.packed_len(body, pos)
        if field_type == 0:
            break
        length, pos = p.packed_len(body, pos)
        value, pos = p.take(body, pos, length, "a heartbeat field")
        if field_type == 1:
            name = p.text(value)
        elif field_type == 2:
            position = p.packed_len(value, 0)[0]
    return Heartbeat(header, name, position)


@dataclass(slots=True, unsafe_hash=True)
class ViewChange(BinlogEvent):
    view_id: str
    seq_number: int
    certification_info: tuple[tuple[str, bytes], ...]

    def info(self) -> str:
        return f"view_id={self.view_id}"


def decode_view_change(header: EventHeader, body: bytes, ctx: DecodeContext) -> ViewChange:
    view_id = p.text(p.take(body, 0, 40)[0].split(b"\0", 1)[0])
    seq = p.u64(body, 40)
    count = p.u32(body, 48)
    pos, entries = 52, []
    for _ in range(count):
        klen = p.u16(body, pos)
        key, pos = p.take(body, pos + 2, klen, "a certification key")
        vlen = p.u32(body, pos)
        value, pos = p.take(body, pos + 4, vlen, "a certification value")
        entries.append((p.text(key), value))
    return ViewChange(header, view_id, seq, tuple(entries))


@dataclass(slots=True, unsafe_hash=True)
class Opaque(BinlogEvent):
    """An event relaydeck carries without interpreting (legacy LOAD DATA blocks, ignorable events)."""

    payload: bytes

    def info(self) -> str:
        return f"{len(self.payload)} bytes"


def decode_opaque(header: EventHeader, body: bytes, ctx: DecodeContext) -> Opaque:
    return Opaque(header, bytes(body))


@dataclass(slots=True, unsafe_hash=True)
class IgnoredEvent(Opaque):
    """An event of a type this decoder does not know, flagged IGNORABLE by its writer: listed, not applied."""

    def info(self) -> str:
        return f"Ignorable event type {self.header.type_code} ({len(self.payload)} bytes)"


@dataclass(slots=True, unsafe_hash=True)
class LoadBlock(BinlogEvent):
    """LOAD DATA support events (Begin_load_query, Append_block, Delete_file…): a file id and data."""

    file_id: int
    data: bytes

    def info(self) -> str:
        return f";file_id={self.file_id};block_len={len(self.data)}"


def decode_load_block(header: EventHeader, body: bytes, ctx: DecodeContext) -> LoadBlock:
    return LoadBlock(header, p.u32(body, 0), bytes(body[4:]))
