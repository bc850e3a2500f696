"""mysql::serialization primitives (MySQL 8.3+): variable-length integers and strings.

Unsigned varints carry their byte count as the trailing one-bits of the first byte (0xFF: eight
more bytes follow); signed ones are zig-zag encoded on top; strings are a varint length + bytes.
"""

from __future__ import annotations

from . import primitives as p


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


def varlen_unsigned_bytes(value: int) -> bytes:
    """read_varlen_unsigned's form of `value`: the fewest bytes n (1-8) whose 8n - n bits hold it,
    the low n - 1 bits of the first byte set; 0xFF and eight bytes beyond 56 bits."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{value} is not an unsigned 64-bit integer")
    for n in range(1, 9):
        if value < 1 << (7 * n):
            return ((value << n) | ((1 << (n - 1)) - 1)).to_bytes(n, "little")
    return b"\xff" + value.to_bytes(8, "little")


def string_bytes(text: str) -> bytes:
    """read_string's form of `text`: its UTF-8 length as a varint, then the bytes."""
    raw = text.encode()
    return varlen_unsigned_bytes(len(raw)) + raw
