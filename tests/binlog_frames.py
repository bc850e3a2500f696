"""An independent walk over a binlog file's event headers, not relaydeck's reader: where each whole
event is, to say where damage is, and to damage one event alone (its CRC32 made right again)."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, event_size, log_pos, flags
HEADER_LEN = 19


@dataclass(frozen=True)
class RawEvent:
    pos: int
    size: int
    type_code: int
    flags: int
    log_pos: int = 0  # the header's end_log_pos

    @property
    def end(self) -> int:
        return self.pos + self.size


def raw_events(data: bytes) -> tuple[list[RawEvent], int]:
    """The events whose header and length fit the file, and the position where that stops."""
    pos, events = 4, []
    while pos + HEADER_LEN <= len(data):
        _, type_code, _, size, log_pos, flags = HEADER.unpack_from(data, pos)
        if size < HEADER_LEN or pos + size > len(data):
            break
        events.append(RawEvent(pos, size, type_code, flags, log_pos))
        pos += size
    return events, pos


def with_crc(data: bytearray, ev: RawEvent) -> bytearray:
    """Recompute one event's CRC32 trailer, so that only the deliberate change is wrong."""
    struct.pack_into("<I", data, ev.end - 4, zlib.crc32(data[ev.pos : ev.end - 4]))
    return data
