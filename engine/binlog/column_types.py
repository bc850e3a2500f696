"""Column types as the binlog writer sees them, parsed from their SQL spelling.

Each type gives its type code, its table-map metadata and an encoder of its values into a row
image (MySQL's binary DECIMAL, temporal and string layouts; JSON through
engine.binlog.json_binary). ColumnDef and TableDef describe a table as the writer logs it. The
reader's side of the same layouts is engine.binlog.columns.
"""

from __future__ import annotations

import decimal
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cached_property, lru_cache

from engine.binlog.constants import ColumnType
from engine.binlog.json_binary import encode_json

UTF8MB4_0900_AI_CI = 255
BINARY_COLLATION = 63

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
DECIMAL_CONTEXT = decimal.Context(prec=100)  # room for DECIMAL(65,30) whatever the thread's context
_INT_FORMATS = {
    "tinyint": ("<b", "<B", 1),
    "smallint": ("<h", "<H", 2),
    "mediumint": ("", "", 3),
    "int": ("<i", "<I", 4),
    "bigint": ("<q", "<Q", 8),
}
_INT_CODES = {
    "tinyint": ColumnType.TINY,
    "smallint": ColumnType.SHORT,
    "mediumint": ColumnType.INT24,
    "int": ColumnType.LONG,
    "bigint": ColumnType.LONGLONG,
}
_TEXT_PACK = {"tinytext": 1, "text": 2, "mediumtext": 3, "longtext": 4}
_BLOB_PACK = {"tinyblob": 1, "blob": 2, "mediumblob": 3, "longblob": 4}
_NUMERIC_CODES = frozenset(
    {
        ColumnType.TINY,
        ColumnType.SHORT,
        ColumnType.INT24,
        ColumnType.LONG,
        ColumnType.LONGLONG,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.NEWDECIMAL,
    }
)
_TYPE_RE = re.compile(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*(unsigned)?\s*$", re.IGNORECASE | re.DOTALL)
_ELEMENT_RE = re.compile(r"'((?:[^']|'')*)'")


def decimal_to_bin(value: Decimal, precision: int, scale: int) -> bytes:
    """MySQL's binary DECIMAL: 9 digits per 4 bytes, big-endian, negatives inverted, sign bit flipped."""
    return _decimal_encoder(precision, scale)(value)


@lru_cache(maxsize=256)
def _decimal_encoder(precision: int, scale: int) -> Callable[[Decimal], bytes]:
    intg = precision - scale
    full_int, lead = divmod(intg, 9)
    full_frac, trail = divmod(scale, 9)
    # (divisor, modulus, width) per group, most significant first, over the scaled integer
    plan: list[tuple[int, int, int]] = []
    if lead:
        plan.append((10 ** (scale + 9 * full_int), 10**lead, _DIG2BYTES[lead]))
    plan += [(10 ** (scale + 9 * i), 10**9, 4) for i in range(full_int - 1, -1, -1)]
    plan += [(10 ** (scale - 9 * (i + 1)), 10**9, 4) for i in range(full_frac)]
    if trail:
        plan.append((1, 10**trail, _DIG2BYTES[trail]))
    limit = 10**precision
    quantum = Decimal(1).scaleb(-scale)
    size = sum(width for _, _, width in plan)
    sign_bit = 0x80 << (8 * (size - 1))
    all_ones = ((1 << (8 * size)) - 1) ^ sign_bit

    def encode(value: Decimal) -> bytes:
        n = int(value.quantize(quantum, context=DECIMAL_CONTEXT).scaleb(scale, context=DECIMAL_CONTEXT))
        negative = n < 0
        n = -n if negative else n
        if n >= limit:
            raise ValueError(f"{value} does not fit DECIMAL({precision},{scale})")
        packed = 0
        for div, mod, width in plan:
            packed = (packed << (8 * width)) | ((n // div) % mod)
        # Negatives store every bit inverted; then the top bit is flipped either way.
        packed ^= all_ones if negative else sign_bit
        return packed.to_bytes(size, "big")

    return encode


def _frac_bytes(usec: int, fsp: int) -> bytes:
    if fsp == 0:
        return b""
    if fsp <= 2:
        return (usec // 10000).to_bytes(1, "big")
    if fsp <= 4:
        return (usec // 100).to_bytes(2, "big")
    return usec.to_bytes(3, "big")


def _check_fsp(usec: int, fsp: int) -> None:
    if usec % (10 ** (6 - fsp)):
        raise ValueError(f"{usec} microseconds do not fit fractional precision {fsp}")


def datetime2_bytes(value: datetime, fsp: int) -> bytes:
    _check_fsp(value.microsecond, fsp)
    ymd = ((value.year * 13 + value.month) << 5) | value.day
    hms = (value.hour << 12) | (value.minute << 6) | value.second
    return (((ymd << 17) | hms) + 0x8000000000).to_bytes(5, "big") + _frac_bytes(value.microsecond, fsp)


_EPOCH = datetime(1970, 1, 1)


def timestamp2_bytes(value: datetime, fsp: int) -> bytes:
    """TIMESTAMP2: seconds since the epoch (naive values are UTC) + fraction."""
    _check_fsp(value.microsecond, fsp)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    seconds = (value - _EPOCH) // timedelta(seconds=1)
    return seconds.to_bytes(4, "big") + _frac_bytes(value.microsecond, fsp)


def time2_bytes(value: timedelta, fsp: int) -> bytes:
    """TIME2: packed hh:mm:ss + fraction; negative values keep MySQL's reversed-fraction order."""
    total = value // timedelta(microseconds=1)
    magnitude = abs(total)
    usec = magnitude % 1_000_000
    _check_fsp(usec, fsp)
    seconds = magnitude // 1_000_000
    hms = ((seconds // 3600) << 12) | (((seconds // 60) % 60) << 6) | (seconds % 60)
    packed = (hms << 24) + usec
    if total < 0:
        packed = -packed
    if fsp >= 5:
        return (packed + 0x800000000000).to_bytes(6, "big")
    int_part = (0x800000 + (packed >> 24)).to_bytes(3, "big")
    if fsp == 0:
        return int_part
    # C's % truncates toward zero, so a negative value has a negative fractional remainder.
    frac = -((-packed) % (1 << 24)) if packed < 0 else packed % (1 << 24)
    if fsp <= 2:
        return int_part + ((int(frac / 10000)) & 0xFF).to_bytes(1, "big")
    return int_part + ((int(frac / 100)) & 0xFFFF).to_bytes(2, "big")


def date_bytes(value: date) -> bytes:
    return ((value.year << 9) | (value.month << 5) | value.day).to_bytes(3, "little")


@dataclass(frozen=True)
class ColumnTypeInfo:
    """One column type as the binlog sees it, parsed from its SQL spelling (e.g. "decimal(10,2)")."""

    sql: str
    base: str
    code: ColumnType
    metadata: bytes
    unsigned: bool = False
    charset: int = 0  # collation id for character/binary columns, 0 otherwise
    length: int = 0  # characters (char/varchar), bytes (varbinary), bits (bit)
    precision: int = 0
    scale: int = 0
    fsp: int = 0
    pack_length: int = 0  # length-prefix bytes of blob/text/json, value bytes of enum/set
    elements: tuple[str, ...] = ()
    encode: Callable[[object], bytes] = field(default=bytes, compare=False, repr=False)

    @property
    def is_numeric(self) -> bool:
        return self.code in _NUMERIC_CODES

    @property
    def is_character(self) -> bool:
        """Columns that carry a collation in the table map (text and binary strings, not enum/set)."""
        return (
            self.base in ("char", "varchar", "binary", "varbinary")
            or self.base in _TEXT_PACK
            or self.base in _BLOB_PACK
        )

    @property
    def is_enum_or_set(self) -> bool:
        return self.base in ("enum", "set")


def _memo_last(encode: Callable[[object], bytes]) -> Callable[[object], bytes]:
    """Remember the last value's bytes: bulk statements repeat one timestamp row after row."""
    last: list[object] = [None, b""]

    def memo(value: object) -> bytes:
        if value == last[0] and value is not None:
            return last[1]  # type: ignore[return-value]
        raw = encode(value)
        last[0], last[1] = value, raw
        return raw

    return memo


def _length_prefixed(width: int) -> Callable[[bytes], bytes]:
    def encode(raw: bytes) -> bytes:
        return len(raw).to_bytes(width, "little") + raw

    return encode


@lru_cache(maxsize=1024)
def parse_column_type(sql: str) -> ColumnTypeInfo:
    """Parse a MySQL column type ("int unsigned", "varchar(40)", "enum('a','b')") into binlog terms."""
    m = _TYPE_RE.match(sql)
    if not m:
        raise ValueError(f"cannot parse column type {sql!r}")
    base = m.group(1).lower()
    args = m.group(2)
    unsigned = m.group(3) is not None
    norm = base + (f"({args})" if args is not None else "") + (" unsigned" if unsigned else "")
    nums = [int(a) for a in args.split(",")] if args and base not in ("enum", "set") else []

    if base in _INT_FORMATS:
        signed_fmt, unsigned_fmt, width = _INT_FORMATS[base]
        if width == 3:

            def encode_int(v: object, _m: int = 0xFFFFFF) -> bytes:
                return (v & _m).to_bytes(3, "little")  # type: ignore[operator]

        else:
            encode_int = struct.Struct(unsigned_fmt if unsigned else signed_fmt).pack  # type: ignore[assignment]
        return ColumnTypeInfo(norm, base, _INT_CODES[base], b"", unsigned, encode=encode_int)
    if base == "decimal":
        precision = nums[0] if nums else 10
        scale = nums[1] if len(nums) > 1 else 0

        return ColumnTypeInfo(
            norm,
            base,
            ColumnType.NEWDECIMAL,
            bytes((precision, scale)),
            unsigned,
            precision=precision,
            scale=scale,
            encode=_decimal_encoder(precision, scale),  # type: ignore[arg-type]
        )
    if base == "float":
        return ColumnTypeInfo(
            norm, base, ColumnType.FLOAT, b"\x04", unsigned, encode=struct.Struct("<f").pack
        )
    if base == "double":
        return ColumnTypeInfo(
            norm, base, ColumnType.DOUBLE, b"\x08", unsigned, encode=struct.Struct("<d").pack
        )
    if base == "date":
        return ColumnTypeInfo(norm, base, ColumnType.DATE, b"", encode=date_bytes)  # type: ignore[arg-type]
    if base == "year":
        return ColumnTypeInfo(
            norm, base, ColumnType.YEAR, b"", encode=lambda v: bytes((v - 1900 if v else 0,))
        )  # type: ignore[operator]
    if base in ("datetime", "timestamp", "time"):
        fsp = nums[0] if nums else 0
        code, fn = {
            "datetime": (ColumnType.DATETIME2, datetime2_bytes),
            "timestamp": (ColumnType.TIMESTAMP2, timestamp2_bytes),
            "time": (ColumnType.TIME2, time2_bytes),
        }[base]
        return ColumnTypeInfo(
            norm, base, code, bytes((fsp,)), fsp=fsp, encode=_memo_last(lambda v, _f=fn, _p=fsp: _f(v, _p))
        )  # type: ignore[misc]
    if base in ("char", "binary"):
        length = nums[0] if nums else 1
        charset = UTF8MB4_0900_AI_CI if base == "char" else BINARY_COLLATION
        max_bytes = length * 4 if base == "char" else length
        # Lengths over 255 borrow two bits of the type byte (Field_string::save_field_metadata).
        meta = bytes((ColumnType.STRING ^ ((max_bytes & 0x300) >> 4), max_bytes & 0xFF))
        prefix = _length_prefixed(2 if max_bytes > 255 else 1)
        pad = b" " if base == "char" else b"\x00"

        def encode_char(v: object, _prefix: Callable[[bytes], bytes] = prefix, _pad: bytes = pad) -> bytes:
            raw = v.encode() if isinstance(v, str) else bytes(v)  # type: ignore[arg-type]
            return _prefix(raw.rstrip(_pad))  # CHAR/BINARY are logged without their padding

        return ColumnTypeInfo(
            norm, base, ColumnType.STRING, meta, charset=charset, length=length, encode=encode_char
        )
    if base in ("varchar", "varbinary"):
        length = nums[0]
        charset = UTF8MB4_0900_AI_CI if base == "varchar" else BINARY_COLLATION
        max_bytes = length * 4 if base == "varchar" else length
        prefix = _length_prefixed(1 if max_bytes < 256 else 2)
        if base == "varchar":

            def encode_var(v: object, _prefix: Callable[[bytes], bytes] = prefix) -> bytes:
                return _prefix(v.encode())  # type: ignore[attr-defined]

        else:
            encode_var = prefix  # type: ignore[assignment]
        return ColumnTypeInfo(
            norm,
            base,
            ColumnType.VARCHAR,
            max_bytes.to_bytes(2, "little"),
            charset=charset,
            length=length,
            encode=encode_var,
        )
    if base in _TEXT_PACK or base in _BLOB_PACK:
        text = base in _TEXT_PACK
        pack = _TEXT_PACK[base] if text else _BLOB_PACK[base]
        prefix = _length_prefixed(pack)
        if text:

            def encode_blob(v: object, _prefix: Callable[[bytes], bytes] = prefix) -> bytes:
                return _prefix(v.encode())  # type: ignore[attr-defined]

        else:
            encode_blob = prefix  # type: ignore[assignment]
        charset = UTF8MB4_0900_AI_CI if text else BINARY_COLLATION
        return ColumnTypeInfo(
            norm, base, ColumnType.BLOB, bytes((pack,)), charset=charset, pack_length=pack, encode=encode_blob
        )
    if base == "json":
        json_prefix = _length_prefixed(4)
        return ColumnTypeInfo(
            norm,
            base,
            ColumnType.JSON,
            b"\x04",
            pack_length=4,
            encode=lambda v, _p=json_prefix: _p(encode_json(v)),  # type: ignore[arg-type,misc]
        )
    if base in ("enum", "set"):
        elements = tuple(e.replace("''", "'") for e in _ELEMENT_RE.findall(args or ""))
        if base == "enum":
            pack = 1 if len(elements) < 256 else 2
            code = ColumnType.ENUM
            index = {e: i + 1 for i, e in enumerate(elements)}

            def encode_enum(v: object, _index: dict[str, int] = index, _pack: int = pack) -> bytes:
                return _index[v].to_bytes(_pack, "little")  # type: ignore[index]

            encoder = encode_enum
        else:
            pack = (len(elements) + 7) // 8
            pack = 8 if pack > 4 else pack
            code = ColumnType.SET
            bits = {e: 1 << i for i, e in enumerate(elements)}

            def encode_set(v: object, _bits: dict[str, int] = bits, _pack: int = pack) -> bytes:
                mask = 0
                for member in v.split(",") if v else ():  # type: ignore[attr-defined]
                    mask |= _bits[member]
                return mask.to_bytes(_pack, "little")

            encoder = encode_set
        norm = base + "(" + ",".join("'" + e.replace("'", "''") + "'" for e in elements) + ")"
        # Table maps carry ENUM/SET as STRING with the real type in the metadata's first byte.
        return ColumnTypeInfo(
            norm,
            base,
            ColumnType.STRING,
            bytes((code, pack)),
            charset=UTF8MB4_0900_AI_CI,
            pack_length=pack,
            elements=elements,
            encode=encoder,
        )
    if base == "bit":
        bits = nums[0] if nums else 1
        width = (bits + 7) // 8
        return ColumnTypeInfo(
            norm,
            base,
            ColumnType.BIT,
            bytes((bits % 8, bits // 8)),
            length=bits,
            encode=lambda v, _w=width: v.to_bytes(_w, "big"),  # type: ignore[attr-defined,misc]
        )
    raise ValueError(f"unsupported column type {sql!r}")


@dataclass(frozen=True)
class ColumnDef:
    """A column of a table: name, type and the attributes its DDL spells out."""

    name: str
    type: ColumnTypeInfo
    nullable: bool = True
    default_sql: str | None = None  # DEFAULT clause text, e.g. "'0'" or "NULL"
    auto_increment: bool = False

    @classmethod
    def of(
        cls,
        name: str,
        sql_type: str,
        *,
        nullable: bool = True,
        default_sql: str | None = None,
        auto_increment: bool = False,
    ) -> ColumnDef:
        return cls(name, parse_column_type(sql_type), nullable, default_sql, auto_increment)

    def ddl(self) -> str:
        """The column's definition as CREATE/ALTER TABLE spell it."""
        parts = [f"`{self.name}` {self.type.sql}"]
        if not self.nullable:
            parts.append("NOT NULL")
        if self.default_sql is not None:
            parts.append(f"DEFAULT {self.default_sql}")
        if self.auto_increment:
            parts.append("AUTO_INCREMENT")
        return " ".join(parts)


@dataclass(frozen=True)
class TableDef:
    """A table's shape: what TABLE_MAP describes and what writesets and expected output key on."""

    db: str
    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...]
    unique_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @cached_property
    def positions(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.columns)}

    @cached_property
    def pk_positions(self) -> tuple[int, ...]:
        return tuple(self.positions[n] for n in self.primary_key)

    @cached_property
    def unique_positions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """PRIMARY and every UNIQUE key with their column positions: the keys writesets hash."""
        keys = [("PRIMARY", self.pk_positions)] if self.primary_key else []
        keys += [(name, tuple(self.positions[c] for c in cols)) for name, cols in self.unique_keys]
        return tuple(keys)

    @cached_property
    def row_encoder(self) -> Callable[[Sequence[object]], bytes]:
        return make_row_encoder(self.columns)

    def column(self, name: str) -> ColumnDef:
        return self.columns[self.positions[name]]


def make_row_encoder(columns: Sequence[ColumnDef]) -> Callable[[Sequence[object]], bytes]:
    """Encoder of one full row image: null bitmap then the non-NULL values."""
    encoders = tuple(c.type.encode for c in columns)
    width = (len(columns) + 7) // 8
    if not any(c.nullable for c in columns):
        zero = bytes(width)

        def encode_not_null(row: Sequence[object]) -> bytes:
            return zero + b"".join([f(v) for f, v in zip(encoders, row, strict=True)])

        return encode_not_null

    def encode(row: Sequence[object]) -> bytes:
        nulls = 0
        parts = []
        for i, (f, v) in enumerate(zip(encoders, row, strict=True)):
            if v is None:
                nulls |= 1 << i
            else:
                parts.append(f(v))
        return nulls.to_bytes(width, "little") + b"".join(parts)

    return encode
