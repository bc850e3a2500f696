"""Row images -> column values, with one decoder compiled per table map and reused for every row.

Decoding rows is the hot path of everything downstream, so a table map (plus the bitmaps of the
columns present) is compiled once into Python source specialised to its column types: no
per-value dispatch on the type, struct formats bound as constants, values appended straight into
one list per column. `RowImages.to_arrow` turns those lists into Arrow tables for the appliers.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .charsets import codec_for
from .compiled import load
from .constants import BINARY_CHARSET, ColumnType, RowsKind
from .events.rows import RowsEvent, TableMap, real_type
from .json_binary import decode_json, json_text, read_json_diff_column
from .primitives import failure_text
from .values import decode_decimal

if TYPE_CHECKING:  # loaded where Arrow is used: listing events needs none of it
    import pyarrow as pa

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)


_compiled = load("_rowimage")  # the C form of RowDecoder; None: generated Python only
# The C form of json_text(decode_json(...)), which the compiled decoder reads JSON columns with
_json_text = load("_jsontext") if _compiled is not None else None
COMPILED_ROW_DECODER = _compiled is not None
# A column decoded into Arrow's layout (RowDecoder.column_buffers); None without the C form
ColumnBuffer = _compiled.ColumnBuffer if _compiled is not None else None


class InvalidTemporal(str):
    """A MySQL date/time no Python or Arrow type can hold ('0000-00-00', '2020-00-15'): kept as text."""

    __slots__ = ()


def make_date(year: int, month: int, day: int) -> dt.date | InvalidTemporal:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return InvalidTemporal(f"{year:04d}-{month:02d}-{day:02d}")


def make_datetime(
    year: int, month: int, day: int, hour: int, minute: int, second: int, micro: int
) -> dt.datetime | InvalidTemporal:
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        frac = f".{micro:06d}" if micro else ""
        return InvalidTemporal(f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{frac}")


def make_timestamp(seconds: int, micro: int) -> dt.datetime | InvalidTemporal:
    if seconds == 0 and micro == 0:
        return InvalidTemporal("0000-00-00 00:00:00")  # TIMESTAMP 0 is MySQL's zero date
    return _EPOCH + dt.timedelta(seconds=seconds, microseconds=micro)


def datetime2(packed: int, micro: int) -> dt.datetime | InvalidTemporal:
    ymdhms = packed - 0x8000000000
    ymd, hms = ymdhms >> 17, ymdhms & 0x1FFFF
    ym = ymd >> 5
    return make_datetime(ym // 13, ym % 13, ymd & 31, hms >> 12, hms >> 6 & 63, hms & 63, micro)


def time_from_packed(packed: int) -> dt.timedelta:
    """MySQL's packed TIME (hms << 24 | microseconds, signed) -> timedelta (may be negative, > 24 h)."""
    negative = packed < 0
    packed = -packed if negative else packed
    hms, micro = packed >> 24, packed & 0xFFFFFF
    value = dt.timedelta(hours=hms >> 12 & 0x3FF, minutes=hms >> 6 & 63, seconds=hms & 63, microseconds=micro)
    return -value if negative else value


def time2(buf: bytes, pos: int, fsp: int) -> tuple[dt.timedelta, int]:
    int_part = int.from_bytes(buf[pos : pos + 3], "big") - 0x800000
    if fsp == 0:
        return time_from_packed(int_part << 24), pos + 3
    if fsp <= 2:
        frac = buf[pos + 3]
        if int_part < 0 and frac:
            int_part += 1
            frac -= 0x100
        return time_from_packed((int_part << 24) + frac * 10000), pos + 4
    if fsp <= 4:
        frac = int.from_bytes(buf[pos + 3 : pos + 5], "big")
        if int_part < 0 and frac:
            int_part += 1
            frac -= 0x10000
        return time_from_packed((int_part << 24) + frac * 100), pos + 5
    return time_from_packed(int.from_bytes(buf[pos : pos + 6], "big") - 0x800000000000), pos + 6


def old_time(value: int) -> dt.timedelta:
    negative = value < 0
    value = -value if negative else value
    t = dt.timedelta(hours=value // 10000, minutes=value // 100 % 100, seconds=value % 100)
    return -t if negative else t


def old_datetime(value: int) -> dt.datetime | InvalidTemporal:
    d, t = divmod(value, 1000000)
    return make_datetime(d // 10000, d // 100 % 100, d % 100, t // 10000, t // 100 % 100, t % 100, 0)


def frac_micro(buf: bytes, pos: int, fsp: int) -> tuple[int, int]:
    """The fractional-seconds bytes of the *2 temporal types, as microseconds."""
    n = (fsp + 1) // 2
    if n == 0:
        return 0, pos
    value = int.from_bytes(buf[pos : pos + n], "big")
    return value * (10000 if n == 1 else 100 if n == 2 else 1), pos + n


# MariaDB's native high-resolution temporals (MariaDB 5.3–10.0 format): big-endian integers
# scaled by 10^decimals; TIME is offset by its zero point so that negative values sort.
_TIME_ZERO_SECONDS = 838 * 3600 + 59 * 60 + 59 + 1


def _scale(dec: int) -> int:
    return 10 ** (6 - dec)


def maria_timestamp(raw: bytes, dec: int) -> dt.datetime | InvalidTemporal:
    return make_timestamp(int.from_bytes(raw[:4], "big"), int.from_bytes(raw[4:], "big") * _scale(dec))


def maria_datetime(raw: bytes, dec: int) -> dt.datetime | InvalidTemporal:
    packed = int.from_bytes(raw, "big") * _scale(dec)
    packed, micro = divmod(packed, 1_000_000)
    packed, second = divmod(packed, 60)
    packed, minute = divmod(packed, 60)
    packed, hour = divmod(packed, 24)
    packed, day = divmod(packed, 32)
    year, month = divmod(packed, 13)
    return make_datetime(year, month, day, hour, minute, second, micro)


def maria_time(raw: bytes, dec: int) -> dt.timedelta:
    zero = _TIME_ZERO_SECONDS * 1_000_000 // _scale(dec)
    return dt.timedelta(microseconds=(int.from_bytes(raw, "big") - zero) * _scale(dec))


def set_text(bits: int, names: tuple[str, ...]) -> str:
    return ",".join(name for i, name in enumerate(names) if bits >> i & 1)


def enum_text(index: int, names: tuple[str, ...]) -> str:
    # Index 0 is the error value '' MySQL stores for invalid input.
    return names[index - 1] if 0 < index <= len(names) else ""


@dataclass(slots=True, unsafe_hash=True)
class ColumnInfo:
    """One column as the table map describes it, resolved for decoding."""

    index: int
    name: str
    type_code: int  # the real type (ENUM/SET resolved)
    meta: int
    unsigned: bool
    charset: int | None  # collation id; None = not logged
    nullable: bool
    enum_values: tuple[str, ...] | None
    set_values: tuple[str, ...] | None
    mariadb: bool = False

    @property
    def is_binary(self) -> bool:
        return self.charset == BINARY_CHARSET

    def arrow_type(self) -> pa.DataType:
        import pyarrow as pa

        t = self.type_code
        if t in _INT_ARROW:
            signed, unsigned = _INT_ARROW[t]
            return getattr(pa, unsigned if self.unsigned else signed)()
        if t == ColumnType.FLOAT:
            return pa.float32()
        if t == ColumnType.DOUBLE:
            return pa.float64()
        if t == ColumnType.NEWDECIMAL:
            precision, scale = self.meta >> 8, self.meta & 0xFF
            return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        if t == ColumnType.YEAR:
            return pa.int16()
        if t in (ColumnType.DATE, ColumnType.NEWDATE):
            return pa.date32()
        if t in (ColumnType.DATETIME, ColumnType.DATETIME2):
            return pa.timestamp("us")
        if t in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP2):
            return pa.timestamp("us", tz="UTC")
        if t in (ColumnType.TIME, ColumnType.TIME2):
            return pa.duration("us")
        if t == ColumnType.ENUM:
            return pa.string() if self.enum_values is not None else pa.uint16()
        if t == ColumnType.SET:
            return pa.string() if self.set_values is not None else pa.uint64()
        if t == ColumnType.BIT:
            return pa.uint64()
        if t == ColumnType.JSON:
            return pa.large_string()
        if t == ColumnType.VECTOR:
            return pa.list_(pa.float32())
        if t == ColumnType.NULL:
            return pa.null()
        if t == ColumnType.GEOMETRY or self.charset is None or self.is_binary:
            return pa.large_binary() if t in _BLOB_TYPES else pa.binary()
        return pa.large_string() if t in _BLOB_TYPES else pa.string()


_INT_ARROW = {  # Arrow's (signed, unsigned) type
    ColumnType.TINY: ("int8", "uint8"),
    ColumnType.SHORT: ("int16", "uint16"),
    ColumnType.INT24: ("int32", "uint32"),
    ColumnType.LONG: ("int32", "uint32"),
    ColumnType.LONGLONG: ("int64", "uint64"),
}
_BLOB_TYPES = frozenset({ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB})
_FIXED_STRUCT = {
    # type: (signed format, unsigned format, size)
    ColumnType.TINY: ("<b", "<B", 1),
    ColumnType.SHORT: ("<h", "<H", 2),
    ColumnType.LONG: ("<i", "<I", 4),
    ColumnType.LONGLONG: ("<q", "<Q", 8),
    ColumnType.FLOAT: ("<f", "<f", 4),
    ColumnType.DOUBLE: ("<d", "<d", 8),
}


def table_columns(table_map: TableMap) -> tuple[ColumnInfo, ...]:
    columns = []
    for i, (t, meta) in enumerate(zip(table_map.column_types, table_map.column_meta, strict=True)):
        rt = real_type(t, meta)
        names = table_map.column_names
        charset = None
        if table_map.charsets is not None:
            charset = table_map.charsets[i]
        if rt in (ColumnType.ENUM, ColumnType.SET) and table_map.enum_set_charsets is not None:
            charset = table_map.enum_set_charsets[i]
        columns.append(
            ColumnInfo(
                index=i,
                name=names[i] if names and i < len(names) else f"@{i + 1}",
                type_code=rt,
                meta=meta,
                unsigned=bool(table_map.signedness and table_map.signedness[i]),
                charset=charset,
                nullable=table_map.nullable[i] if i < len(table_map.nullable) else True,
                enum_values=table_map.enum_values[i] if table_map.enum_values else None,
                set_values=table_map.set_values[i] if table_map.set_values else None,
                mariadb=table_map.mariadb,
            )
        )
    return tuple(columns)


class _CodeGen:
    """Builds the source of one image decoder; constants go into the function's namespace."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "make_date": make_date,
            "make_datetime": make_datetime,
            "make_timestamp": make_timestamp,
            "datetime2": datetime2,
            "time2": time2,
            "old_time": old_time,
            "old_datetime": old_datetime,
            "frac_micro": frac_micro,
            "maria_timestamp": maria_timestamp,
            "maria_datetime": maria_datetime,
            "maria_time": maria_time,
            "decode_decimal": decode_decimal,
            "decode_json": decode_json,
            "json_text": json_text,
            "read_json_diff_column": read_json_diff_column,
            "set_text": set_text,
            "enum_text": enum_text,
            "from_bytes": int.from_bytes,
        }
        self._n = 0

    def const(self, value: Any) -> str:
        self._n += 1
        name = f"k{self._n}"
        self.namespace[name] = value
        return name

    def value_lines(self, col: ColumnInfo, out: str, partial_json: bool) -> list[str]:
        """Lines that read one non-NULL value of `col` at `pos`, append it to `out`, advance pos."""
        t, meta = col.type_code, col.meta
        if t in _FIXED_STRUCT:
            signed, unsigned, size = _FIXED_STRUCT[t]
            unpack = self.const(struct.Struct(unsigned if col.unsigned else signed).unpack_from)
            return [f"{out}({unpack}(buf, pos)[0])", f"pos += {size}"]
        if t == ColumnType.INT24:
            lines = ["v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16"]
            if not col.unsigned:
                lines.append("if v & 0x800000: v -= 0x1000000")
            return [*lines, f"{out}(v)", "pos += 3"]
        if t == ColumnType.YEAR:
            return ["v = buf[pos]", f"{out}(1900 + v if v else 0)", "pos += 1"]
        if t == ColumnType.NEWDECIMAL:
            precision, scale = meta >> 8, meta & 0xFF
            return [f"v, pos = decode_decimal(buf, pos, {precision}, {scale})", f"{out}(v)"]
        if t in (ColumnType.DATE, ColumnType.NEWDATE):
            return [
                "v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16",
                f"{out}(make_date(v >> 9, v >> 5 & 15, v & 31))",
                "pos += 3",
            ]
        if col.mariadb and meta and t in (ColumnType.TIMESTAMP, ColumnType.DATETIME, ColumnType.TIME):
            size = {
                ColumnType.TIMESTAMP: 4 + (0, 1, 1, 2, 2, 3, 3)[meta],
                ColumnType.DATETIME: (5, 6, 6, 7, 7, 7, 8)[meta],
                ColumnType.TIME: (3, 4, 4, 5, 5, 5, 6)[meta],
            }[t]
            fn = {
                ColumnType.TIMESTAMP: "maria_timestamp",
                ColumnType.DATETIME: "maria_datetime",
                ColumnType.TIME: "maria_time",
            }[t]
            return [f"{out}({fn}(buf[pos:pos + {size}], {meta}))", f"pos += {size}"]
        if t == ColumnType.TIME:
            return [
                "v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16",
                "if v & 0x800000: v -= 0x1000000",
                f"{out}(old_time(v))",
                "pos += 3",
            ]
        if t == ColumnType.DATETIME:
            return [f"{out}(old_datetime(from_bytes(buf[pos:pos + 8], 'little')))", "pos += 8"]
        if t == ColumnType.TIMESTAMP:
            return [f"{out}(make_timestamp(from_bytes(buf[pos:pos + 4], 'little'), 0))", "pos += 4"]
        if t == ColumnType.TIMESTAMP2:
            return [
                "s = from_bytes(buf[pos:pos + 4], 'big')",
                f"us, pos = frac_micro(buf, pos + 4, {meta})",
                f"{out}(make_timestamp(s, us))",
            ]
        if t == ColumnType.DATETIME2:
            return [
                "v = from_bytes(buf[pos:pos + 5], 'big')",
                f"us, pos = frac_micro(buf, pos + 5, {meta})",
                f"{out}(datetime2(v, us))",
            ]
        if t == ColumnType.TIME2:
            return [f"v, pos = time2(buf, pos, {meta})", f"{out}(v)"]
        if t == ColumnType.BIT:
            nbytes = (meta & 0xFF) + (1 if meta >> 8 else 0)
            return [f"{out}(from_bytes(buf[pos:pos + {nbytes}], 'big'))", f"pos += {nbytes}"]
        if t == ColumnType.ENUM:
            size = meta & 0xFF
            read = "buf[pos]" if size == 1 else "buf[pos] | buf[pos + 1] << 8"
            if col.enum_values is not None:
                return [f"{out}(enum_text({read}, {self.const(col.enum_values)}))", f"pos += {size}"]
            return [f"{out}({read})", f"pos += {size}"]
        if t == ColumnType.SET:
            size = meta & 0xFF
            read = f"from_bytes(buf[pos:pos + {size}], 'little')"
            if col.set_values is not None:
                return [f"{out}(set_text({read}, {self.const(col.set_values)}))", f"pos += {size}"]
            return [f"{out}({read})", f"pos += {size}"]
        if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING):
            max_len = string_max_length(t, meta)
            if max_len > 255:
                lines = ["n = buf[pos] | buf[pos + 1] << 8", "pos += 2"]
            else:
                lines = ["n = buf[pos]", "pos += 1"]
            raw = "buf[pos:pos + n]"
            if t == ColumnType.STRING and col.is_binary:
                # BINARY(n) is stored with its trailing 0x00 pad stripped; the column holds n bytes.
                raw = f"buf[pos:pos + n].ljust({max_len}, b'\\0')"
            return [*lines, f"{out}({self._text(col, raw)})", "pos += n"]
        if t in _BLOB_TYPES or t in (ColumnType.GEOMETRY, ColumnType.JSON, ColumnType.VECTOR):
            size = meta or 4
            read = "buf[pos]" if size == 1 else f"from_bytes(buf[pos:pos + {size}], 'little')"
            lines = [f"n = {read}", f"pos += {size}"]
            if t == ColumnType.JSON:
                if partial_json:
                    return [
                        "v, pos = read_json_diff_column(buf, pos)",
                        f"{out}(v)",
                    ]
                return [*lines, f"{out}(json_text(decode_json(buf[pos:pos + n])))", "pos += n"]
            if t == ColumnType.VECTOR:
                return [*lines, f"{out}(list(memoryview(buf[pos:pos + n]).cast('f')))", "pos += n"]
            if t == ColumnType.GEOMETRY:
                return [*lines, f"{out}(buf[pos:pos + n])", "pos += n"]
            return [*lines, f"{out}({self._text(col, 'buf[pos:pos + n]')})", "pos += n"]
        if t == ColumnType.NULL:
            return [f"{out}(None)"]
        raise ValueError(f"column {col.name} has type {t}, which rows events do not carry")

    def _text(self, col: ColumnInfo, raw: str) -> str:
        codec = text_codec(col)
        return raw if codec is None else f"{raw}.decode({codec!r}, 'surrogateescape')"


def string_max_length(type_code: int, meta: int) -> int:
    """The declared byte length of a CHAR/VARCHAR column (above 255: a 2-byte length prefix)."""
    if type_code != ColumnType.STRING:
        return meta
    byte0, byte1 = meta >> 8, meta & 0xFF
    return (((byte0 & 0x30) ^ 0x30) << 4) | byte1 if byte0 else byte1


def text_codec(col: ColumnInfo) -> str | None:
    """The codec a character column's bytes are decoded with; None: kept as bytes."""
    if col.charset is None or col.is_binary:
        return None
    return codec_for(col.charset)


def _image_lines(
    gen: _CodeGen, columns: tuple[ColumnInfo, ...], present: tuple[bool, ...], prefix: str, partial: bool
) -> list[str]:
    cols = [c for c, on in zip(columns, present, strict=False) if on]
    nbytes = (len(cols) + 7) // 8
    lines = [f"nulls = from_bytes(buf[pos:pos + {nbytes}], 'little')", f"pos += {nbytes}"]
    for k, col in enumerate(cols):
        out = f"{prefix}{col.index}"
        lines.append(f"if nulls & {1 << k}: {out}(None)")
        lines.append("else:")
        body = gen.value_lines(col, out, partial and col.type_code == ColumnType.JSON)
        lines.extend("    " + line for line in body)
    return lines


def _partial_after_lines(gen: _CodeGen, columns, present) -> list[str]:
    """PARTIAL_UPDATE_ROWS after image: value options, then a bitmap of JSON columns sent as diffs."""
    json_cols = [c for c, on in zip(columns, present, strict=False) if on and c.type_code == ColumnType.JSON]
    lines = ["opts, pos = packed_len(buf, pos)", "pbits = 0"]
    gen.namespace["packed_len"] = _packed_len
    nbytes = (len(json_cols) + 7) // 8
    if json_cols:
        lines += [
            "if opts & 1:",
            f"    pbits = from_bytes(buf[pos:pos + {nbytes}], 'little')",
            f"    pos += {nbytes}",
        ]
    cols = [c for c, on in zip(columns, present, strict=False) if on]
    nb = (len(cols) + 7) // 8
    lines += [f"nulls = from_bytes(buf[pos:pos + {nb}], 'little')", f"pos += {nb}"]
    for k, col in enumerate(cols):
        out = f"a{col.index}"
        lines.append(f"if nulls & {1 << k}: {out}(None)")
        if col.type_code == ColumnType.JSON:
            j = json_cols.index(col)
            lines.append(f"elif pbits & {1 << j}:")
            lines.extend("    " + line for line in gen.value_lines(col, out, True))
        lines.append("else:")
        lines.extend("    " + line for line in gen.value_lines(col, out, False))
    return lines


def _packed_len(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        return buf[pos + 1] | buf[pos + 2] << 8, pos + 3
    if first == 253:
        return int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    return int.from_bytes(buf[pos + 1 : pos + 9], "little"), pos + 9


@dataclass(slots=True, unsafe_hash=True)
class RowImages:
    """Decoded rows of one rows event, column-wise. `before`/`after` map column index -> values."""

    table_map: TableMap
    kind: RowsKind
    columns: tuple[ColumnInfo, ...]
    before: dict[int, list[Any]] | None
    after: dict[int, list[Any]] | None
    count: int

    def rows(self) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
        """Row-wise view (before, after) per row — for display and tests, not for the hot path."""
        out = []
        for r in range(self.count):
            b = {self.columns[i].name: v[r] for i, v in self.before.items()} if self.before else None
            a = {self.columns[i].name: v[r] for i, v in self.after.items()} if self.after else None
            out.append((b, a))
        return out

    def to_arrow(self, image: str = "after") -> pa.Table:
        """One image as an Arrow table; values Arrow cannot hold (zero dates) become NULL."""
        import pyarrow as pa

        values = self.after if image == "after" else self.before
        if values is None:
            raise ValueError(f"a {self.kind.name} event has no {image} image")
        arrays, names = [], []
        for index, column_values in values.items():
            col = self.columns[index]
            arrow_type = col.arrow_type()
            if arrow_type in (pa.date32(), pa.timestamp("us"), pa.timestamp("us", tz="UTC")):
                column_values = [None if isinstance(v, InvalidTemporal) else v for v in column_values]
            arrays.append(pa.array(column_values, type=arrow_type))
            names.append(col.name)
        return pa.Table.from_arrays(arrays, names=names)


# What decoding a malformed row image may raise (a column's reader indexing past the bytes, a
# struct too short...): decode_data_into words any of them as one ValueError
ROW_IMAGE_FAULTS = (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError, OverflowError)


class RowDecoder:
    """A compiled decoder for one (table map, event kind, present-column bitmaps).

    Two forms of the same decoder: generated Python, and (where the C extension is built, and
    the event is not a PARTIAL_UPDATE_ROWS) a RowProgram that reads the common column types in C
    and calls per-column Python readers, generated the same way, for the rest.
    """

    def __init__(self, table_map: TableMap, event: RowsEvent, compiled: bool | None = None) -> None:
        self.kind = event.kind
        self.columns = table_columns(table_map)
        if event.column_count > len(self.columns):
            raise ValueError(
                f"rows event has {event.column_count} columns, table map of "
                f"{_where(table_map)} has {len(self.columns)}"
            )
        self.before_present = event.columns_before
        self.after_present = event.columns_after
        gen = _CodeGen()
        two = event.kind == RowsKind.UPDATE
        first = [c.index for c, on in zip(self.columns, event.columns_before, strict=False) if on]
        second = (
            [c.index for c, on in zip(self.columns, event.columns_after or (), strict=False) if on]
            if two
            else []
        )
        self._first, self._second = first, second
        # every image of the event holds every column (binlog_row_image=FULL)
        width = len(self.columns)
        self.full = not event.partial and len(first) == width and (not two or len(second) == width)
        self._gen = gen
        self._partial = event.partial
        self._python_decode: Callable[..., tuple[int, int]] | None = None
        self._program = None
        if (compiled if compiled is not None else COMPILED_ROW_DECODER) and not event.partial:
            if _compiled is None:
                raise RuntimeError("the compiled row decoder is not built")
            self._program = _compiled.RowProgram(
                [_compiled_op(gen, self.columns[i]) for i in first],
                [_compiled_op(gen, self.columns[i]) for i in second],
                two,
                (make_date, make_datetime, make_timestamp, _EPOCH, datetime2),
            )
        else:
            self._python_decode = self._generated_decode()

    def _generated_decode(self) -> Callable[..., tuple[int, int]]:
        """The Python form, generated and compiled: made at once where there is no compiled
        form, else only if asked for (compiling it cost a listing of the bundled capture 20 ms,
        a decoder at a time, for code the compiled form never calls)."""
        gen, columns = self._gen, self.columns
        params = [f"b{i}" for i in self._first] + [f"a{i}" for i in self._second]
        src = [f"def decode(buf, pos, end, {', '.join(params)}):" if params else "def decode(buf, pos, end):"]
        src.append("    rows = 0")
        src.append("    while pos < end:")
        src.append("        start = pos")
        body = _image_lines(gen, columns, self.before_present, "b", False)
        if self.kind == RowsKind.UPDATE:
            if self._partial:
                body += _partial_after_lines(gen, columns, self.after_present)
            else:
                body += _image_lines(gen, columns, self.after_present, "a", False)
        # an image of no columns takes no bytes: a corrupt event must not loop forever
        body.append("if pos == start: raise ValueError('row image holds no columns')")
        body.append("rows += 1")
        src.extend("        " + line for line in body)
        src.append("    return pos, rows")
        exec(compile("\n".join(src), "<row decoder>", "exec"), gen.namespace)
        decode: Callable[..., tuple[int, int]] = gen.namespace["decode"]
        return decode

    @property
    def python_decode(self) -> Callable[..., tuple[int, int]]:
        """The generated Python form: decode(buf, pos, end, *appends) -> (end, rows)."""
        if self._python_decode is None:
            self._python_decode = self._generated_decode()
        return self._python_decode

    @property
    def present(self) -> tuple[list[int], list[int]]:
        """The indexes of the columns the event's first image holds, and its second's (an
        UPDATE's after image; none for the other kinds)."""
        return self._first, self._second

    @property
    def compiled_program(self) -> Any:
        """The compiled form decode_data_into() runs (binlog/_rowimage.pyx's RowProgram), None
        where it is not built: its decode_into(data, outs) gives (end, rows), unworded errors."""
        return self._program

    def column_buffers(self) -> list[Any] | None:
        """For each column, a ColumnBuffer (binlog/_rowimage.pyx) its values can be decoded into
        instead of a list, or a list where they stay Python objects; None without the compiled
        form (lists only). Every decoder of the same columns gives the same choice."""
        if self._program is None:
            return None
        return self._program.column_buffers()

    def decode_into(self, event: RowsEvent, table_map: TableMap, outs: list[list[Any]]) -> int:
        """decode(), appending each present column's values to the caller's lists: outs holds one
        list per present column of the first image, then of the second; an UPDATE's two images may
        share lists (each row's before and after values then follow each other). The rows; on
        ValueError, what came before the fault has been appended."""
        return self.decode_data_into(event.rows_data, table_map, outs)

    def decode_data_into(self, data: bytes, table_map: TableMap, outs: list[list[Any]]) -> int:
        """decode_into() for an event's row images given as bytes."""
        try:
            if self._program is not None:
                end, count = self._program.decode_into(data, outs)
            else:
                end, count = self.python_decode(data, 0, len(data), *[out.append for out in outs])
        except ROW_IMAGE_FAULTS as exc:
            raise ValueError(
                f"row image of {_where(table_map)} is malformed: {failure_text(exc, len(data))}"
            ) from None
        if end != len(data):
            raise ValueError(f"row image of {_where(table_map)} runs {end - len(data)} bytes past its event")
        return count

    def decode(self, event: RowsEvent, table_map: TableMap) -> RowImages:
        """Decode with this compiled code; `table_map` may be any map of identical structure."""
        first = {i: [] for i in self._first}
        second = {i: [] for i in self._second}
        count = self.decode_into(event, table_map, [*first.values(), *second.values()])
        if self.kind == RowsKind.UPDATE:
            return RowImages(table_map, self.kind, self.columns, first, second, count)
        if self.kind == RowsKind.WRITE:
            return RowImages(table_map, self.kind, self.columns, None, first, count)
        return RowImages(table_map, self.kind, self.columns, first, None, count)


_C_INTS = {
    ColumnType.TINY: ("i8", "u8"),
    ColumnType.SHORT: ("i16", "u16"),
    ColumnType.INT24: ("i24", "u24"),
    ColumnType.LONG: ("i32", "u32"),
    ColumnType.LONGLONG: ("i64", "u64"),
}


def _compiled_op(gen: _CodeGen, col: ColumnInfo) -> tuple[int, int, object]:
    """(opcode, argument, reference) of one column for the compiled decoder.

    Types without a C reader get a Python one, generated from the same lines as the Python
    decoder: (buf, pos) -> (value, pos).
    """
    assert _compiled is not None
    opcodes = _compiled.OPCODES
    t, meta = col.type_code, col.meta
    if t in _C_INTS:
        signed, unsigned = _C_INTS[t]
        return opcodes[unsigned if col.unsigned else signed], 0, None
    if t == ColumnType.FLOAT:
        return opcodes["float"], 0, None
    if t == ColumnType.DOUBLE:
        return opcodes["double"], 0, None
    if t == ColumnType.YEAR:
        return opcodes["year"], 0, None
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        return opcodes["date"], 0, None
    if t == ColumnType.DATETIME2 and meta <= 6:
        return opcodes["datetime2"], meta, None
    if t == ColumnType.TIMESTAMP2 and meta <= 6:
        return opcodes["timestamp2"], meta, None
    if t == ColumnType.TIME2 and meta <= 6:
        return opcodes["time2"], meta, None
    if t == ColumnType.BIT and 1 <= (nbytes := (meta & 0xFF) + (1 if meta >> 8 else 0)) <= 8:
        return opcodes["bit"], nbytes, None
    if t == ColumnType.ENUM and meta & 0xFF in (1, 2):
        if col.enum_values is not None:
            return opcodes["enum_text"], meta & 0xFF, tuple(col.enum_values)
        return opcodes["u8" if meta & 0xFF == 1 else "u16"], 0, None  # the member's index
    if t == ColumnType.SET and col.set_values is not None and 1 <= meta & 0xFF <= 8:
        return opcodes["set_text"], meta & 0xFF, tuple(col.set_values)
    if t == ColumnType.SET and meta & 0xFF in _SET_BITS:
        return opcodes[_SET_BITS[meta & 0xFF]], 0, None  # the members' bits as an integer
    codec = text_codec(col)
    encoded = None if codec is None else codec.encode()
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING) or (t == ColumnType.STRING and not col.is_binary):
        return opcodes["string"], 2 if string_max_length(t, meta) > 255 else 1, encoded
    if t in _BLOB_TYPES and 0 <= meta <= 4:
        return opcodes["string"], meta or 4, encoded
    reader = _python_reader(gen, col)
    if t == ColumnType.JSON and _json_text is not None and 0 <= meta <= 4:
        # read in C where the document allows (binlog/_jsontext.pyx), else by `reader`
        return opcodes["python"], 0, _json_text.JsonColumnReader(meta or 4, reader)
    precision, scale = meta >> 8, meta & 0xFF
    if t == ColumnType.NEWDECIMAL and 0 < precision <= _compiled.DECIMAL_MAX_PRECISION and scale <= precision:
        # read in C; the Python reader takes what C leaves (corrupt groups, cut-short images)
        return opcodes["decimal"], meta, reader
    return opcodes["python"], 0, reader


# A SET's bytes as the unsigned integer opcode of that width (5 to 7 bytes: read by Python)
_SET_BITS = {1: "u8", 2: "u16", 3: "u24", 4: "u32", 8: "u64"}


def _python_reader(gen: _CodeGen, col: ColumnInfo) -> Any:
    """One column's reader generated from the Python decoder's lines: (buf, pos) -> (value, pos)."""
    name = f"read{gen.const(None)}"
    body = gen.value_lines(col, "out", False)
    src = ["def " + name + "(buf, pos):", "    box = []", "    out = box.append"]
    src += ["    " + line for line in body]
    src.append("    return box[0], pos")
    exec(compile("\n".join(src), "<column reader>", "exec"), gen.namespace)
    return gen.namespace[name]


def _where(table_map: TableMap) -> str:
    # names come from the log: keep control characters from breaking the one-line error
    return repr(f"{table_map.schema}.{table_map.table}")


# One columns tuple per table map structure, shared by the cached decoders of its write, update
# and delete events: whoever compares the columns of two events finds them identical (`is`).
_COLUMNS: dict[bytes, tuple[ColumnInfo, ...]] = {}


_CACHE: OrderedDict[tuple, RowDecoder] = OrderedDict()
_CACHE_SIZE = 4096


def decode_rows_event(event: RowsEvent, table_map: TableMap) -> RowImages:
    """Decode a rows event with the decoder compiled for its table map (cached across table ids).

    Malformed row images raise ValueError with a one-line message; callers add the file and
    position they know (the event itself does not).
    """
    return row_decoder(event, table_map).decode(event, table_map)


_FULL: dict[int, tuple[bool, ...]] = {}


def cached_full_decoder(table_map: TableMap, kind: RowsKind, width: int) -> RowDecoder | None:
    """The decoder row_decoder() made before for a rows event of this kind with every one of its
    `width` columns present, on a table map of this structure; None when there is none yet."""
    bits = _FULL.get(width)
    if bits is None:
        bits = _FULL[width] = (True,) * width
    key = (table_map.raw_metadata_key, kind, bits, bits if kind == RowsKind.UPDATE else None, False)
    return _CACHE.get(key)


def row_decoder(event: RowsEvent, table_map: TableMap) -> RowDecoder:
    """The decoder compiled for the event's table map and present columns (cached); ValueError
    for column metadata no server writes."""
    key = (
        table_map.raw_metadata_key,
        event.kind,
        event.columns_before,
        event.columns_after,
        event.partial,
    )
    decoder = _CACHE.get(key)
    if decoder is None:
        try:
            decoder = RowDecoder(table_map, event)
        except (IndexError, KeyError, TypeError):  # metadata out of any valid range
            raise ValueError(
                f"table map of {_where(table_map)} has column metadata no server writes"
            ) from None
        if table_map.raw_metadata_key:
            if len(_COLUMNS) >= _CACHE_SIZE:
                _COLUMNS.clear()
            decoder.columns = _COLUMNS.setdefault(table_map.raw_metadata_key, decoder.columns)
        _CACHE[key] = decoder
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return decoder


__all__ = [
    "ROW_IMAGE_FAULTS",
    "ColumnInfo",
    "InvalidTemporal",
    "RowDecoder",
    "RowImages",
    "decode_rows_event",
    "row_decoder",
    "table_columns",
]
