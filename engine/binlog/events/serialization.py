"""mysql::serialization primitives (MySQL 8.3+): variable-length integers and strings.

Unsigned varints carry their byte count as the trailing one-bits of the first byte (0xFF: eight
more bytes follow); signed ones are zig-zag encoded on top; strings are a varint length + bytes.
"""

from __future__ import annotations

from .. import primitives as p


def read_varlen_unsigned(buf: bytes, pos: int) -> tuple[int, int]:
    first = p.u8(buf, pos)
    if first == 0xFF:
        return p.u64(buf, pos + 1), pos + 9
    n = 1
    while first >> (n - 1) & 1:
        n += 1
    raw = p.uint_le(buf, pos, n)
    return raw >> n, pos + n


def read_varlen_signed(buf: bytes, pos: int) -> tuple[int, int]:
    value, pos = read_varlen_unsigned(buf, pos)
    return (value >> 1) if not value & 1 else -(value >> 1) - 1, pos


def read_string(buf: bytes, pos: int, limit: int) -> tuple[str, int]:
    length, pos = read_varlen_unsigned(buf, pos)
    if length > limit:
        raise ValueError(f"string of {length} bytes exceeds its limit of {limit}")
    raw, pos = p.take(buf, pos, length, "a serialized string")
    return p.text(raw), pos
