"""MySQL binary JSON (the storage format of JSON columns) and partial JSON updates.

Format facts follow MySQL's sql-common/json_binary.h and sql/json_diff.cc:

* A document is one type byte followed by the value.  An empty document means JSON null.
* Objects and arrays come in a small (2-byte counts/offsets) and a large (4-byte) form.
  Offsets are relative to the first byte after the container's type byte.
* Literals, int16 and uint16 are always inlined in the value entry; int32 and uint32 are
  inlined only in the large form.
* Strings and opaque values carry a length of 7 bits per byte, high bit = more bytes.
* Opaque values are a MySQL field type byte, a length and raw bytes; NEWDECIMAL holds
  precision, scale and MySQL's binary decimal, temporal types hold a packed int64.

A partial JSON update (PARTIAL_UPDATE_ROWS_EVENT, binlog_row_value_options=PARTIAL_JSON)
logs a column as ``uint32 length`` + diffs; each diff is ``operation byte``, packed
path length + path text and, unless the operation is REMOVE, packed value length +
binary JSON value.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from engine.binlog.constants import ColumnType
from engine.binlog.primitives import failure_text

__all__ = [
    "JsonDiff",
    "JsonOpaque",
    "apply_json_diffs",
    "decode_json",
    "decode_json_diffs",
    "json_text",
    "read_json_diff_column",
    "read_packed_int",
]


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """An opaque JSON scalar that has no natural Python counterpart."""

    field_type: int
    data: bytes


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logical change of a partially updated JSON column."""

    operation: str  # "REPLACE" | "INSERT" | "REMOVE"
    path: str
    value: object | None


# ---------------------------------------------------------------------------
# Binary JSON decoding
# ---------------------------------------------------------------------------

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
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")

# MySQL refuses documents nested deeper than 100; leave headroom but stay far from
# Python's recursion limit.
_MAX_DEPTH = 150

_TEMPORAL_TYPES = frozenset((ColumnType.DATE, ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP))


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
        if depth >= _MAX_DEPTH:
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


def _unpack_datetime(packed: int) -> tuple[bool, int, int, int, int, int, int, int]:
    negative = packed < 0
    if negative:
        packed = -packed
    frac = packed & 0xFFFFFF
    ymdhms = packed >> 24
    ymd = ymdhms >> 17
    ym = ymd >> 5
    hms = ymdhms & 0x1FFFF
    return (negative, ym // 13, ym % 13, ymd & 0x1F, hms >> 12, (hms >> 6) & 0x3F, hms & 0x3F, frac)


def _unpack_time(packed: int) -> tuple[bool, int, int, int, int]:
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
            negative, hour, minute, second, micro = _unpack_time(packed)
            if not negative and hour < 24:
                return _dt.time(hour, minute, second, micro)
            if minute > 59 or second > 59 or micro > 999_999:
                raise ValueError
            td = _dt.timedelta(hours=hour, minutes=minute, seconds=second, microseconds=micro)
            return -td if negative else td
        negative, year, month, day, hour, minute, second, micro = _unpack_datetime(packed)
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
    if field_type in _TEMPORAL_TYPES:
        return _decode_temporal(field_type, data)
    return JsonOpaque(field_type, data)


# ---------------------------------------------------------------------------
# JSON text as MySQL prints it
# ---------------------------------------------------------------------------

_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\"})

# my_gcvt() field width MySQL uses for JSON doubles: DBL_DIG + 4 + max(5, DBL_DIG).
_GCVT_WIDTH = 34
# MAX_DECPT_FOR_F_FORMAT (DBL_DIG): beyond this, whole numbers switch to 'e' notation.
_MAX_DECPT_F = 15


def _quote(s: str) -> str:
    # Same escapes as MySQL's double_quote(): control characters, '"' and '\'.
    if _NEEDS_ESCAPE.search(s) is None:
        return f'"{s}"'
    return f'"{s.translate(_ESCAPES)}"'


def _shortest_digits(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of abs(x) and the decimal point position, as dtoa gives."""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    stripped = digits.lstrip("0")
    decpt = len(whole) + (int(exp) if exp else 0) - (len(digits) - len(stripped))
    digits = stripped.rstrip("0")
    if not digits:
        return "0", 1
    return digits, decpt


def _format_double(x: float) -> str:
    """Print a double like MySQL's JSON output: my_gcvt() plus ".0" for whole numbers."""
    if not math.isfinite(x):
        # dtoa() reports overflow and my_gcvt() prints "0".
        return "0.0"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    width = _GCVT_WIDTH - (1 if x < 0 else 0)
    digits, decpt = _shortest_digits(x)
    n = len(digits)
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    if decpt <= 0:
        f_len = n - decpt + 2
    elif decpt < n:
        f_len = n + 1
    else:
        f_len = decpt
    have_space = f_len <= width
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    use_f = (
        have_space
        or (decpt <= width and (decpt >= -1 or (decpt == -2 and (n > 1 or not force_e))) and not force_e)
    ) and (not have_space or (decpt >= -_MAX_DECPT_F + 1 and (decpt <= _MAX_DECPT_F or n > decpt)))
    # Shortest digits never exceed 17, so the field width never forces rounding here.
    if use_f:
        if decpt <= 0:
            text = f"0.{'0' * -decpt}{digits}"
        elif decpt < n:
            text = f"{digits[:decpt]}.{digits[decpt:]}"
        else:
            text = digits + "0" * (decpt - n)
        if "." not in text:
            text += ".0"
        return sign + text
    mant = f"{digits[0]}.{digits[1:]}" if n > 1 else digits
    return f"{sign}{mant}e{decpt - 1}"


def _format_decimal(d: Decimal) -> str:
    return format(d, "f")


def _format_date(year: int, month: int, day: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}"


def _format_datetime(year: int, month: int, day: int, hh: int, mm: int, ss: int, us: int) -> str:
    return f"{year:04d}-{month:02d}-{day:02d} {hh:02d}:{mm:02d}:{ss:02d}.{us:06d}"


def _format_time(negative: bool, hh: int, mm: int, ss: int, us: int) -> str:
    return f"{'-' if negative else ''}{hh:02d}:{mm:02d}:{ss:02d}.{us:06d}"


def _format_timedelta(td: _dt.timedelta) -> str:
    total = td // _dt.timedelta(microseconds=1)
    negative = total < 0
    seconds, us = divmod(abs(total), 1_000_000)
    minutes, ss = divmod(seconds, 60)
    hh, mm = divmod(minutes, 60)
    return _format_time(negative, hh, mm, ss, us)


def _format_opaque(op: JsonOpaque) -> str:
    ft = op.field_type
    if ft == ColumnType.VAR_STRING:
        # MySQL prints strings kept as opaque VAR_STRING as plain JSON strings.
        return _quote(op.data.decode("utf-8", "replace"))
    if ft in _TEMPORAL_TYPES and len(op.data) == 8:
        packed = _I64.unpack(op.data)[0]
        if ft == ColumnType.TIME:
            return f'"{_format_time(*_unpack_time(packed))}"'
        _, year, month, day, hh, mm, ss, us = _unpack_datetime(packed)
        if ft == ColumnType.DATE:
            return f'"{_format_date(year, month, day)}"'
        return f'"{_format_datetime(year, month, day, hh, mm, ss, us)}"'
    # base64 with a newline every 76 characters, like MySQL's base64_encode().
    b64 = base64.b64encode(op.data).decode("ascii")
    if len(b64) > 76:
        b64 = "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))
    return _quote(f"base64:type{ft}:{b64}")


def _render(v: object, out: list[str], depth: int) -> None:
    t = type(v)
    if t is str:
        out.append(_quote(v))  # type: ignore[arg-type]
    elif t is dict:
        if depth >= _MAX_DEPTH:
            raise ValueError("JSON value nested too deeply")
        out.append("{")
        first = True
        for k, item in v.items():  # type: ignore[attr-defined]
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be str, not {type(k).__name__}")
            if not first:
                out.append(", ")
            first = False
            out.append(_quote(k))
            out.append(": ")
            _render(item, out, depth + 1)
        out.append("}")
    elif t is list or t is tuple:
        if depth >= _MAX_DEPTH:
            raise ValueError("JSON value nested too deeply")
        out.append("[")
        first = True
        for item in v:  # type: ignore[attr-defined]
            if not first:
                out.append(", ")
            first = False
            _render(item, out, depth + 1)
        out.append("]")
    elif v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(str(v))
    elif t is float:
        out.append(_format_double(v))  # type: ignore[arg-type]
    elif t is Decimal:
        out.append(_format_decimal(v))  # type: ignore[arg-type]
    elif t is _dt.datetime:
        out.append(f'"{_format_datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)}"')  # type: ignore[attr-defined]
    elif t is _dt.date:
        out.append(f'"{_format_date(v.year, v.month, v.day)}"')  # type: ignore[attr-defined]
    elif t is _dt.time:
        out.append(f'"{_format_time(False, v.hour, v.minute, v.second, v.microsecond)}"')  # type: ignore[attr-defined]
    elif t is _dt.timedelta:
        out.append(f'"{_format_timedelta(v)}"')  # type: ignore[arg-type]
    elif t is JsonOpaque:
        out.append(_format_opaque(v))  # type: ignore[arg-type]
    else:
        _render(_plain(v), out, depth)


def _plain(v: object) -> object:
    """Map subclasses (IntEnum, OrderedDict, pandas Timestamp, ...) to a type _render knows."""
    for base in (int, float, str, Decimal):
        if isinstance(v, base):
            return base(v)
    if isinstance(v, dict):
        return dict(v)
    if isinstance(v, list | tuple):
        return list(v)
    if isinstance(v, _dt.datetime):
        return _dt.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond)
    if isinstance(v, _dt.date):
        return _dt.date(v.year, v.month, v.day)
    if isinstance(v, _dt.time):
        return _dt.time(v.hour, v.minute, v.second, v.microsecond)
    if isinstance(v, _dt.timedelta):
        return _dt.timedelta(v.days, v.seconds, v.microseconds)
    raise TypeError(f"cannot render {type(v).__name__} as JSON")


def json_text(value: object) -> str:
    """Render a decoded value as MySQL prints JSON (SELECT of a JSON column, mysqlbinlog)."""
    out: list[str] = []
    _render(value, out, 0)
    return "".join(out)


# ---------------------------------------------------------------------------
# Partial JSON updates
# ---------------------------------------------------------------------------

_OPERATIONS = ("REPLACE", "INSERT", "REMOVE")
_REMOVE = 2
_U16 = struct.Struct("<H")
_U64 = struct.Struct("<Q")


def read_packed_int(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read MySQL's packed integer (net_field_length); return (value, new position)."""
    end = len(buf)
    if pos >= end:
        raise ValueError("truncated packed integer")
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        if pos + 3 > end:
            raise ValueError("truncated packed integer")
        return _U16.unpack_from(buf, pos + 1)[0], pos + 3
    if first == 253:
        if pos + 4 > end:
            raise ValueError("truncated packed integer")
        return int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    if first == 254:
        if pos + 9 > end:
            raise ValueError("truncated packed integer")
        return _U64.unpack_from(buf, pos + 1)[0], pos + 9
    # 251 is SQL NULL in the protocol and 255 is unused: neither is a length.
    raise ValueError(f"invalid packed integer prefix {first}")


def decode_json_diffs(data: bytes | memoryview) -> list[JsonDiff]:
    """Decode the diffs of one column, i.e. the bytes after its 4-byte length prefix."""
    buf = data if type(data) is bytes else bytes(data)
    n = len(buf)
    pos = 0
    diffs: list[JsonDiff] = []
    try:
        while pos < n:
            op = buf[pos]
            if op > _REMOVE:
                raise ValueError(f"malformed JSON diff: unknown operation {op}")
            path_len, pos = read_packed_int(buf, pos + 1)
            if pos + path_len > n:
                raise ValueError("malformed JSON diff: path exceeds the data")
            path = buf[pos : pos + path_len].decode("utf-8")
            pos += path_len
            _parse_path(path)
            value = None
            if op != _REMOVE:
                value_len, pos = read_packed_int(buf, pos)
                if pos + value_len > n:
                    raise ValueError("malformed JSON diff: value exceeds the data")
                value = decode_json(buf[pos : pos + value_len])
                pos += value_len
            diffs.append(JsonDiff(_OPERATIONS[op], path, value))
    except UnicodeDecodeError:
        raise ValueError("malformed JSON diff: invalid UTF-8 in path") from None
    return diffs


def read_json_diff_column(buf: bytes | memoryview, pos: int) -> tuple[list[JsonDiff], int]:
    """Read a partially logged JSON column at pos in a row image: uint32 length + diffs."""
    if pos < 0 or pos + 4 > len(buf):
        raise ValueError("truncated JSON diff column")
    length = _U32.unpack_from(buf, pos)[0]
    start = pos + 4
    stop = start + length
    if stop > len(buf):
        raise ValueError("JSON diff column exceeds the row data")
    return decode_json_diffs(buf[start:stop]), stop


# --- paths ------------------------------------------------------------------

_MEMBER = 0
_CELL = 1
_WS = re.compile(r"\s*")
_QUOTED_MEMBER = re.compile(r'"(?:[^"\\]|\\.)*"')
_PLAIN_MEMBER = re.compile(r'[^\s.\[\]"*]+')
_CELL_LEG = re.compile(r"\[\s*(?:(\d+)|last(?:\s*-\s*(\d+))?)\s*\]")

_Leg = tuple[int, str | int, bool]


@lru_cache(maxsize=1024)
def _parse_path(path: str) -> tuple[_Leg, ...]:
    """Parse a path as Json_path::to_string() prints it: $, .key, ."quoted", [n], [last-n]."""
    pos = _WS.match(path).end()  # type: ignore[union-attr]
    if not path.startswith("$", pos):
        raise ValueError(f"invalid JSON path {path!r}")
    pos += 1
    legs: list[_Leg] = []
    n = len(path)
    while True:
        pos = _WS.match(path, pos).end()  # type: ignore[union-attr]
        if pos == n:
            return tuple(legs)
        c = path[pos]
        if c == ".":
            pos = _WS.match(path, pos + 1).end()  # type: ignore[union-attr]
            m = _QUOTED_MEMBER.match(path, pos)
            if m is not None:
                try:
                    name = json.loads(m.group())
                except json.JSONDecodeError:
                    raise ValueError(f"invalid JSON path {path!r}") from None
            else:
                m = _PLAIN_MEMBER.match(path, pos)
                if m is None:
                    raise ValueError(f"unsupported JSON path {path!r}")
                name = m.group()
            legs.append((_MEMBER, name, False))
            pos = m.end()
        elif c == "[":
            m = _CELL_LEG.match(path, pos)
            if m is None:
                raise ValueError(f"unsupported JSON path {path!r}")
            if m.group(1) is not None:
                legs.append((_CELL, int(m.group(1)), False))
            else:
                legs.append((_CELL, int(m.group(2) or 0), True))
            pos = m.end()
        else:
            raise ValueError(f"invalid JSON path {path!r}")


def _cell_position(leg: _Leg, length: int) -> tuple[int, bool]:
    """Json_array_index: (position clamped to [0, length], within bounds)."""
    index = leg[1]
    assert isinstance(index, int)
    if leg[2]:
        return (length - index - 1 if index < length else 0), index < length
    return min(index, length), index < length


def _mysql_key_order(key: str) -> tuple[int, bytes]:
    # Json_object keeps members sorted by byte length, then bytes.
    b = key.encode("utf-8")
    return len(b), b


def _rejected(diff: JsonDiff, why: str) -> ValueError:
    return ValueError(f"cannot apply JSON diff {diff.operation} {diff.path}: {why}")


def _child(parent: object, leg: _Leg, diff: JsonDiff) -> tuple[str | int, object]:
    """Find the existing child a leg names, as seek_exact_path() does (no auto-wrap)."""
    if leg[0] == _MEMBER:
        if type(parent) is dict and leg[1] in parent:
            return leg[1], parent[leg[1]]
    elif type(parent) is list:
        position, within = _cell_position(leg, len(parent))
        if within:
            return position, parent[position]
    raise _rejected(diff, "path not found")


def _copy(value: object, diff: JsonDiff) -> dict | list:
    if type(value) is dict:
        return dict(value)
    if type(value) is list:
        return list(value)
    raise _rejected(diff, "path not found")


def _insert_member(obj: dict, name: str, value: object) -> None:
    order = _mysql_key_order(name)
    if not obj or _mysql_key_order(next(reversed(obj))) < order:
        obj[name] = value
        return
    items = list(obj.items())
    obj.clear()
    # The last key sorts after the new one, so the loop always places it.
    for k, v in items:
        if name not in obj and _mysql_key_order(k) > order:
            obj[name] = value
        obj[k] = v


def apply_json_diffs(document: object, diffs: list[JsonDiff]) -> object:
    """Apply diffs as a replica's apply_json_diffs() does and return the new document.

    REPLACE needs an existing value (like JSON_REPLACE, but a miss is an error);
    INSERT adds a new object member (JSON_INSERT; an existing key is an error) or
    inserts into an array at the clamped position (JSON_ARRAY_INSERT); REMOVE deletes
    an existing member or element (JSON_REMOVE; a miss is an error).  The root cannot
    be targeted.  Any rejected diff raises ValueError.  The input document is not
    modified: containers along changed paths are copied, everything else is shared.
    """
    root = document
    fresh: set[int] = set()  # ids of containers copied by this call, safe to mutate
    for diff in diffs:
        legs = _parse_path(diff.path)
        if not legs:
            raise _rejected(diff, "the document root cannot be changed by a diff")
        if id(root) not in fresh:
            root = _copy(root, diff)
            fresh.add(id(root))
        parent = root
        for leg in legs[:-1]:
            key, child = _child(parent, leg, diff)
            if id(child) not in fresh:
                child = _copy(child, diff)
                fresh.add(id(child))
                parent[key] = child  # type: ignore[index]
            parent = child
        leg = legs[-1]
        op = diff.operation
        if op == "REPLACE":
            key, _ = _child(parent, leg, diff)
            parent[key] = diff.value  # type: ignore[index]
        elif op == "INSERT":
            if leg[0] == _MEMBER and type(parent) is dict:
                if leg[1] in parent:
                    raise _rejected(diff, "member already exists")
                _insert_member(parent, leg[1], diff.value)  # type: ignore[arg-type]
            elif leg[0] == _CELL and type(parent) is list:
                parent.insert(_cell_position(leg, len(parent))[0], diff.value)
            else:
                raise _rejected(diff, "path not found")
        elif op == "REMOVE":
            key, _ = _child(parent, leg, diff)
            del parent[key]  # type: ignore[attr-defined]
        else:
            raise _rejected(diff, "unknown operation")
    return root
