"""MySQL's binary JSON, read: a JSON column's value decoded into Python values."""

from __future__ import annotations

import datetime as _dt
import struct
from dataclasses import dataclass
from decimal import Decimal

from engine.binlog.constants import ColumnType
from engine.binlog.primitives import failure_text


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """An opaque JSON scalar that has no natural Python counterpart."""

    field_type: int
    data: bytes


# Type codes 0x00-0x03: small object, large object, small array, large array.
_LARGE_OBJECT = 0x01
_LARGE_ARRAY = 0x03
_LITERAL = 0x04
_INT16 = 0x05
_UINT16 = 0x06
_INT32 = 0x07
_UINT32 = 0x08
_STRING = 0x0C
_OPAQUE = 0x0F

_LITERALS: dict[int, object] = {0: None, 1: True, 2: False}

# Non-inlined fixed-size scalars.
_SCALARS: dict[int, struct.Struct] = {
    _INT16: struct.Struct("<h"),
    _UINT16: struct.Struct("<H"),
    _INT32: struct.Struct("<i"),
    _UINT32: struct.Struct("<I"),
    0x09: struct.Struct("<q"),
    0x0A: struct.Struct("<Q"),
    0x0B: struct.Struct("<d"),
}

_SMALL_COUNTS = struct.Struct("<HH")
_LARGE_COUNTS = struct.Struct("<II")
_SMALL_KEY_ENTRY = struct.Struct("<HH")
_LARGE_KEY_ENTRY = struct.Struct("<IH")
_SMALL_VALUE_ENTRY = struct.Struct("<BH")
_LARGE_VALUE_ENTRY = struct.Struct("<BI")
_I64 = struct.Struct("<q")

# MySQL refuses documents nested deeper than 100; leave headroom but stay far from
# Python's recursion limit.
MAX_DEPTH = 150

TEMPORAL_TYPES = frozenset((ColumnType.DATE, ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP))


def _malformed(what: str) -> ValueError:
    return ValueError(f"malformed binary JSON: {what}")


class _Decoder:
    __slots__ = ("buf", "view", "budget")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.view = memoryview(buf)
        # Entries, key bytes and string bytes of a well-formed document never add up to
        # more than its size; offsets that share data could otherwise blow up the result.
        self.budget = len(buf)

    def value(self, t: int, pos: int, end: int, depth: int) -> object:
        if t <= _LARGE_ARRAY:
            return self.container(t, pos, end, depth)
        if t == _STRING:
            return self.string(pos, end)
        s = _SCALARS.get(t)
        if s is not None:
            if pos + s.size > end:
                raise _malformed("truncated number")
            return s.unpack_from(self.buf, pos)[0]
        if t == _LITERAL:
            if pos >= end:
                raise _malformed("truncated literal")
            return _literal(self.buf[pos])
        if t == _OPAQUE:
            return self.opaque(pos, end)
        raise _malformed(f"unknown value type 0x{t:02x}")

    def container(self, t: int, pos: int, end: int, depth: int) -> object:
        if depth >= MAX_DEPTH:
            raise _malformed("nested too deeply")
        large = t & 1
        is_object = t <= _LARGE_OBJECT
        if large:
            counts, key_entry, value_entry = _LARGE_COUNTS, _LARGE_KEY_ENTRY, _LARGE_VALUE_ENTRY
        else:
            counts, key_entry, value_entry = _SMALL_COUNTS, _SMALL_KEY_ENTRY, _SMALL_VALUE_ENTRY
        if pos + counts.size > end:
            raise _malformed("truncated container header")
        count, size = counts.unpack_from(self.buf, pos)
        if size > end - pos:
            raise _malformed("container size exceeds the data")
        keys_start = pos + counts.size
        values_start = keys_start + (count * key_entry.size if is_object else 0)
        header = values_start + count * value_entry.size - pos
        if header > size:
            raise _malformed("container header exceeds its size")
        self.budget -= count
        if self.budget < 0:
            raise _malformed("overlapping values")

        buf = self.buf
        cend = pos + size
        inline_32 = bool(large)
        next_depth = depth + 1
        out: list[object] = []
        append = out.append
        for et, ev in value_entry.iter_unpack(self.view[values_start : pos + header]):
            if et == _INT16:
                ev &= 0xFFFF
                append(ev - 0x10000 if ev & 0x8000 else ev)
            elif et == _LITERAL:
                append(_literal(ev & 0xFF))
            elif et == _UINT16:
                append(ev & 0xFFFF)
            elif inline_32 and et == _INT32:
                append(ev - 0x100000000 if ev & 0x80000000 else ev)
            elif inline_32 and et == _UINT32:
                append(ev)
            else:
                if ev < header or ev > size:
                    raise _malformed("value offset out of range")
                at = pos + ev
                # Short strings dominate real documents: skip the generic dispatch for them.
                if et == _STRING and at < cend and buf[at] < 0x80:
                    stop = at + 1 + buf[at]
                    if stop > cend:
                        raise _malformed("string exceeds the data")
                    self.budget -= stop - at - 1
                    if self.budget < 0:
                        raise _malformed("overlapping strings")
                    append(buf[at + 1 : stop].decode("utf-8"))
                else:
                    append(self.value(et, at, cend, next_depth))
        if not is_object:
            return out

        keys: list[str] = []
        key_bytes = 0
        for koff, klen in key_entry.iter_unpack(self.view[keys_start:values_start]):
            if koff < header or koff + klen > size:
                raise _malformed("key offset out of range")
            key_bytes += klen
            keys.append(buf[pos + koff : pos + koff + klen].decode("utf-8"))
        self.budget -= key_bytes
        if self.budget < 0:
            raise _malformed("overlapping keys")
        return dict(zip(keys, out, strict=True))

    def length(self, pos: int, end: int) -> tuple[int, int]:
        """Read a 7-bits-per-byte length; at most 5 bytes, as it must fit in 32 bits."""
        buf = self.buf
        if pos >= end:
            raise _malformed("truncated length")
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        n = 0
        for i in range(min(5, end - pos)):
            b = buf[pos + i]
            n |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                if n > 0xFFFFFFFF:
                    break
                return n, pos + i + 1
        raise _malformed("bad length")

    def string(self, pos: int, end: int) -> str:
        n, pos = self.length(pos, end)
        stop = pos + n
        if stop > end:
            raise _malformed("string exceeds the data")
        self.budget -= n
        if self.budget < 0:
            raise _malformed("overlapping strings")
        return self.buf[pos:stop].decode("utf-8")

    def opaque(self, pos: int, end: int) -> object:
        if pos >= end:
            raise _malformed("truncated opaque value")
        field_type = self.buf[pos]
        n, pos = self.length(pos + 1, end)
        stop = pos + n
        if stop > end:
            raise _malformed("opaque value exceeds the data")
        self.budget -= n
        if self.budget < 0:
            raise _malformed("overlapping opaque values")
        return _opaque_value(field_type, self.buf[pos:stop])


def _literal(b: int) -> object:
    try:
        return _LITERALS[b]
    except KeyError:
        raise _malformed(f"unknown literal 0x{b:02x}") from None


def decode_json(data: bytes | memoryview) -> object:
    """Decode one binary JSON document into dict/list/str/int/float/bool/None and friends.

    Opaque values become Decimal, date, datetime, time/timedelta or JsonOpaque.
    """
    buf = data if type(data) is bytes else bytes(data)
    n = len(buf)
    if n == 0:
        # MySQL stores an empty value for e.g. INSERT IGNORE of NULL into NOT NULL JSON.
        return None
    try:
        return _Decoder(buf).value(buf[0], 1, n, 0)
    except UnicodeDecodeError:
        raise _malformed("invalid UTF-8") from None
    except (struct.error, IndexError) as exc:  # guards only; bounds are checked above
        raise _malformed(failure_text(exc, n)) from None


# --- opaque scalars ---------------------------------------------------------

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def _decode_decimal(data: bytes) -> Decimal:
    """Decode MySQL's binary DECIMAL preceded by precision and scale bytes."""
    if len(data) < 2:
        raise _malformed("truncated decimal")
    precision, scale = data[0], data[1]
    intg = precision - scale
    if intg < 0:
        raise _malformed("decimal scale exceeds precision")
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    lead = _DIG2BYTES[intg0x]
    trail = _DIG2BYTES[frac0x]
    size = lead + 4 * (intg0 + frac0) + trail
    if size != len(data) - 2:
        raise _malformed("decimal length does not match its precision")
    if size == 0:
        return Decimal(0)
    # The sign bit is stored inverted; negative numbers additionally invert every bit.
    negative = not data[2] & 0x80
    value = int.from_bytes(data[2:], "big") ^ (1 << (8 * size - 1))
    if negative:
        value ^= (1 << (8 * size)) - 1
    raw = value.to_bytes(size, "big")
    groups: list[str] = []
    pos = 0
    for nbytes, ndigits in [(lead, intg0x)] + [(4, 9)] * (intg0 + frac0) + [(trail, frac0x)]:
        if not nbytes:
            continue
        g = int.from_bytes(raw[pos : pos + nbytes], "big")
        pos += nbytes
        if g >= 10**ndigits:
            raise _malformed("decimal digit group out of range")
        groups.append(f"{g:0{ndigits}d}")
    digits = "".join(groups)
    text = digits[:intg] or "0"
    if scale:
        text = f"{text}.{digits[intg:]}"
    return Decimal(f"-{text}" if negative else text)


def unpack_datetime(packed: int) -> tuple[bool, int, int, int, int, int, int, int]:
    negative = packed < 0
    if negative:
        packed = -packed
    frac = packed & 0xFFFFFF
    ymdhms = packed >> 24
    ymd = ymdhms >> 17
    ym = ymd >> 5
    hms = ymdhms & 0x1FFFF
    return (negative, ym // 13, ym % 13, ymd & 0x1F, hms >> 12, (hms >> 6) & 0x3F, hms & 0x3F, frac)


def unpack_time(packed: int) -> tuple[bool, int, int, int, int]:
    negative = packed < 0
    if negative:
        packed = -packed
    hms = packed >> 24
    return (negative, (hms >> 12) & 0x3FF, (hms >> 6) & 0x3F, hms & 0x3F, packed & 0xFFFFFF)


def _decode_temporal(field_type: int, data: bytes) -> object:
    if len(data) != 8:
        raise _malformed("temporal value is not 8 bytes")
    packed = _I64.unpack(data)[0]
    try:
        if field_type == ColumnType.TIME:
            negative, hour, minute, second, micro = unpack_time(packed)
            if not negative and hour < 24:
                return _dt.time(hour, minute, second, micro)
            if minute > 59 or second > 59 or micro > 999_999:
                raise ValueError
            td = _dt.timedelta(hours=hour, minutes=minute, seconds=second, microseconds=micro)
            return -td if negative else td
        negative, year, month, day, hour, minute, second, micro = unpack_datetime(packed)
        if negative:
            raise ValueError
        if field_type == ColumnType.DATE:
            return _dt.date(year, month, day)
        return _dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        # Zero dates and the like have no Python counterpart; json_text still prints them.
        return JsonOpaque(field_type, data)


def _opaque_value(field_type: int, data: bytes) -> object:
    if field_type == ColumnType.NEWDECIMAL:
        return _decode_decimal(data)
    if field_type in TEMPORAL_TYPES:
        return _decode_temporal(field_type, data)
    return JsonOpaque(field_type, data)
