"""Little readers for the binlog's integer and string encodings, bounds-checked.

Every reader raises ValueError when the buffer is too short, so that a corrupt length can never
be turned into an IndexError, a struct.error or an allocation of the size the length claims.
"""

from __future__ import annotations

import re
import struct

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")


def need(buf: bytes | memoryview, pos: int, n: int, what: str) -> None:
    if n < 0:
        raise ValueError(f"{what} at offset {pos} claims a negative length ({n})")
    if pos + n > len(buf):
        raise ValueError(truncated(what, n, pos, len(buf)))


def truncated(what: str, n: int, pos: int, size: int) -> str:
    """The words for a field that runs past the end of the bytes it is read from."""
    return f"event truncated: needs {n} bytes at offset {pos} for {what}, has {max(0, size - pos)}"


_STRUCT_SHORT = re.compile(
    r"requires a buffer of at least \d+ bytes for unpacking (\d+) bytes at offset (-?\d+) "
    r"\(actual buffer size is (\d+)\)"
)


def failure_text(exc: BaseException, size: int | None = None) -> str:
    """A decoding failure in the binlog's terms: what Python's struct module, an index or a codec
    says is worded for a DBA, who should never read "unpack_from requires a buffer…".

    size: the length of the bytes being decoded, when the caller knows it."""
    body = f"the {size}-byte body" if size is not None else "the event"
    if isinstance(exc, struct.error):
        short = _STRUCT_SHORT.search(str(exc))
        if short is not None:
            n, pos, total = (int(g) for g in short.groups())
            return truncated("a field", n, pos, total)
        return f"event truncated: a field runs past the end of {body}"
    if isinstance(exc, IndexError):
        return f"event truncated: a field runs past the end of {body}"
    if isinstance(exc, UnicodeDecodeError):
        return f"text that is not valid {exc.encoding} at offset {exc.start}"
    if isinstance(exc, OverflowError):
        return "a length or a value in the event is out of any valid range"
    if isinstance(exc, (KeyError, TypeError)):
        return "a field holds a value no server writes"
    return str(exc)  # the decoders' own ValueErrors, already in these terms


def u8(buf: bytes | memoryview, pos: int) -> int:
    # the bounds test inline, need() only to word the error: these run for every field decoded
    if pos + 1 > len(buf):
        need(buf, pos, 1, "a 1-byte integer")
    return buf[pos]


def u16(buf: bytes | memoryview, pos: int) -> int:
    if pos + 2 > len(buf):
        need(buf, pos, 2, "a 2-byte integer")
    return U16.unpack_from(buf, pos)[0]


def u24(buf: bytes | memoryview, pos: int) -> int:
    need(buf, pos, 3, "a 3-byte integer")
    return buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)


def u32(buf: bytes | memoryview, pos: int) -> int:
    if pos + 4 > len(buf):
        need(buf, pos, 4, "a 4-byte integer")
    return U32.unpack_from(buf, pos)[0]


def u48(buf: bytes | memoryview, pos: int) -> int:
    need(buf, pos, 6, "a 6-byte integer")
    return int.from_bytes(buf[pos : pos + 6], "little")


def u56(buf: bytes | memoryview, pos: int) -> int:
    need(buf, pos, 7, "a 7-byte integer")
    return int.from_bytes(buf[pos : pos + 7], "little")


def u64(buf: bytes | memoryview, pos: int) -> int:
    if pos + 8 > len(buf):
        need(buf, pos, 8, "an 8-byte integer")
    return U64.unpack_from(buf, pos)[0]


def uint_le(buf: bytes | memoryview, pos: int, n: int) -> int:
    need(buf, pos, n, f"a {n}-byte integer")
    return int.from_bytes(buf[pos : pos + n], "little")


def packed_int(buf: bytes | memoryview, pos: int) -> tuple[int | None, int]:
    """MySQL's length-encoded integer (net_field_length); 251 is NULL. Returns (value, next pos)."""
    first = u8(buf, pos)
    if first < 251:
        return first, pos + 1
    if first == 251:
        return None, pos + 1
    if first == 252:
        return u16(buf, pos + 1), pos + 3
    if first == 253:
        return u24(buf, pos + 1), pos + 4
    return u64(buf, pos + 1), pos + 9


def packed_len(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A packed integer that must be a length (NULL is an error)."""
    value, pos = packed_int(buf, pos)
    if value is None:
        raise ValueError(f"unexpected NULL length at offset {pos - 1}")
    return value, pos


def take(buf: bytes | memoryview, pos: int, n: int, what: str = "a field") -> tuple[bytes, int]:
    if n < 0 or pos + n > len(buf):
        need(buf, pos, n, what)
    return bytes(buf[pos : pos + n]), pos + n


def cstring(buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[bytes, int]:
    """A NUL-terminated string; returns (bytes without NUL, position after the NUL)."""
    limit = len(buf) if end is None else end
    raw = bytes(buf[pos:limit])
    nul = raw.find(b"\0")
    if nul < 0:
        raise ValueError(f"unterminated string at offset {pos}")
    return raw[:nul], pos + nul + 1


BITMAPS: dict[tuple[bytes, int], tuple[bool, ...]] = {}


def bitmap(buf: bytes | memoryview, pos: int, nbits: int) -> tuple[tuple[bool, ...], int]:
    """A little-endian bit array of nbits bits (bit i of byte i//8)."""
    nbytes = (nbits + 7) // 8
    need(buf, pos, nbytes, "a bitmap")
    raw = bytes(buf[pos : pos + nbytes])
    bits = BITMAPS.get((raw, nbits))
    if bits is None:  # the same few bitmaps recur in every rows event: build each once
        value = int.from_bytes(raw, "little")
        bits = tuple(bool(value >> i & 1) for i in range(nbits))
        if len(BITMAPS) < 65536:
            BITMAPS[(raw, nbits)] = bits
    return bits, pos + nbytes


def text(raw: bytes) -> str:
    """Decode identifiers and statements: UTF-8 as servers write them, never failing on bad bytes."""
    return raw.decode("utf-8", errors="surrogateescape")


def uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
