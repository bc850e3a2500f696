"""The common header every event shares, and what decoding an event body needs to know."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

HEADER = struct.Struct("<IBIIIH")


class EventHeader(NamedTuple):
    """The 19-byte common header (a named tuple: immutable, and built once per event, cheaply)."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int


# Events and the other records built once per event or per transaction are immutable by
# convention, not frozen dataclasses: a frozen dataclass sets each field through
# object.__setattr__ and costs four times as much to build (unsafe_hash keeps them hashable).
@dataclass(slots=True, unsafe_hash=True)
class BinlogEvent:
    """Base of every decoded event (never modified once decoded: table maps are shared)."""

    header: EventHeader

    def info(self) -> str:
        """The Info column of SHOW RELAYLOG EVENTS."""
        return ""


@dataclass(slots=True, unsafe_hash=True)
class DecodeContext:
    """What the current FORMAT_DESCRIPTION says about how to read the events after it."""

    binlog_version: int = 4
    server_version: str = ""
    post_header_lengths: tuple[int, ...] = ()
    checksum_alg: int = 0
    is_mariadb: bool = False
    version_tuple: tuple[int, int, int] = field(default=(0, 0, 0))

    def post_header_len(self, type_code: int, default: int) -> int:
        # The table is indexed by type code - 1; types past its end (newer than the writer) use
        # the default the format gives them.
        if 0 < type_code <= len(self.post_header_lengths):
            return self.post_header_lengths[type_code - 1]
        return default


_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_server_version(text: str) -> tuple[tuple[int, int, int], bool]:
    match = _VERSION.match(text)
    numbers = (int(match[1]), int(match[2]), int(match[3])) if match else (0, 0, 0)
    return numbers, "mariadb" in text.lower()
