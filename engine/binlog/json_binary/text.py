"""JSON text as MySQL prints it (SELECT of a JSON column, mysqlbinlog)."""

from __future__ import annotations

import base64
import datetime as _dt
import math
import re
import struct
from decimal import Decimal

from engine.binlog.constants import ColumnType
from engine.binlog.json_binary.decoder import (
    MAX_DEPTH,
    TEMPORAL_TYPES,
    JsonOpaque,
    unpack_datetime,
    unpack_time,
)

_I64 = struct.Struct("<q")

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


def format_double(x: float) -> str:
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
    if ft in TEMPORAL_TYPES and len(op.data) == 8:
        packed = _I64.unpack(op.data)[0]
        if ft == ColumnType.TIME:
            return f'"{_format_time(*unpack_time(packed))}"'
        _, year, month, day, hh, mm, ss, us = unpack_datetime(packed)
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
        if depth >= MAX_DEPTH:
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
        if depth >= MAX_DEPTH:
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
        out.append(format_double(v))  # type: ignore[arg-type]
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
