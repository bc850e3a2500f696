"""Encoders for MySQL 8.0 binlog events and row images: the writer side of engine/binlog.

Everything here is pure byte layout, no files: bodies for each event type, the common header and
CRC32 footer around them, column types parsed from their SQL spelling (type code, table-map
metadata, value encoder) and MySQL's binary JSON. Layout facts follow libbinlogevents and
sql/log_event.cc of MySQL 8.0; the relay-log choreography lives in engine.generate.relay_writer.
"""

from __future__ import annotations

import decimal
import re
import struct
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cached_property, lru_cache

from engine.binlog.constants import (
    COMMON_HEADER_LEN,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    USER_VAR_DECIMAL,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_STRING,
    ChecksumAlg,
    ColumnType,
    EventType,
    QueryStatus,
    TableMapMetadata,
)

SERVER_VERSION = "8.0.36"
SERVER_VERSION_ID = 80036
BINLOG_VERSION = 4

# Post-header lengths MySQL 8.0 writes into its FORMAT_DESCRIPTION, event types 1..41
# (8.4 added GTID_TAGGED as a 42nd). Index 40 really holds 40: 8.0 stores the constant
# TRANSACTION_PAYLOAD_EVENT there instead of a header length.
POST_HEADER_LENGTHS = bytes(
    [0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0]
    + [10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0]
)
FORMAT_DESCRIPTION_SIZE = COMMON_HEADER_LEN + 2 + 50 + 4 + 1 + len(POST_HEADER_LENGTHS) + 1 + 4

# sql_mode of a stock 8.0 server: ONLY_FULL_GROUP_BY, STRICT_TRANS_TABLES, NO_ZERO_IN_DATE,
# NO_ZERO_DATE, ERROR_FOR_DIVISION_BY_ZERO, NO_ENGINE_SUBSTITUTION.
DEFAULT_SQL_MODE = (1 << 5) | (1 << 21) | (1 << 23) | (1 << 24) | (1 << 26) | (1 << 30)
UTF8MB4_0900_AI_CI = 255
BINARY_COLLATION = 63
LATIN1_SWEDISH_CI = 8  # MySQL's "numeric" collation, carried by numeric user variables

GTID_FLAG_MAY_HAVE_SBR = 1
LOGICAL_TIMESTAMP_TYPECODE = 2
TABLE_MAP_BIT_LEN_EXACT = 1  # Table_map flags MySQL always sets
MAX_DBS_IN_EVENT_MTS = 16
OVER_MAX_DBS_IN_EVENT_MTS = 254

ROWS_EVENT_MAX_SIZE = 8192  # binlog_row_event_max_size default
_ROWS_POST_HEADER_LEN = 10

_HEADER = struct.Struct("<IBIIIH")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_ROTATE_POST = struct.Struct("<Q")
_GTID_HEAD = struct.Struct("<B16sqBqq")
_FDE_HEAD = struct.Struct("<H50sIB")
_QUERY_POST = struct.Struct("<IIBHH")
_XID = struct.Struct("<Q")
_INTVAR = struct.Struct("<BQ")
_RAND = struct.Struct("<QQ")
_TABLE_ID_FLAGS = struct.Struct("<IHH")  # 48-bit table id as low u32 + high u16, then flags
_ROWS_POST = struct.Struct("<IHHH")


# --------------------------------------------------------------------------------------------
# Framing


def packed_int(n: int) -> bytes:
    """MySQL's length-encoded integer (net_field_length)."""
    if n < 251:
        return bytes((n,))
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def event_size(body_len: int) -> int:
    """Bytes of a checksummed event whose body (post-header + payload) has body_len bytes."""
    return COMMON_HEADER_LEN + body_len + 4


def frame_event(
    type_code: int, timestamp: int, server_id: int, log_pos: int, flags: int, body: bytes
) -> bytes:
    """Header + body + CRC32 of both, as written to a binlog or relay log."""
    head = _HEADER.pack(timestamp, type_code, server_id, COMMON_HEADER_LEN + len(body) + 4, log_pos, flags)
    return b"".join((head, body, _U32.pack(zlib.crc32(body, zlib.crc32(head)))))


# --------------------------------------------------------------------------------------------
# Control events


def format_description_body(created: int, server_version: str = SERVER_VERSION) -> bytes:
    """FORMAT_DESCRIPTION: binlog v4, 8.0's post-header table, CRC32 as checksum algorithm."""
    head = _FDE_HEAD.pack(BINLOG_VERSION, server_version.encode(), created, COMMON_HEADER_LEN)
    return head + POST_HEADER_LENGTHS + bytes((ChecksumAlg.CRC32,))


def previous_gtids_body(gtids: Mapping[bytes, Sequence[tuple[int, int]]]) -> bytes:
    """PREVIOUS_GTIDS: for each source UUID (16 raw bytes) its intervals [start, end)."""
    parts = [_U64.pack(len(gtids))]
    for sid in sorted(gtids):
        intervals = gtids[sid]
        parts.append(sid)
        parts.append(_U64.pack(len(intervals)))
        for start, end in intervals:
            parts.append(_I64.pack(start) + _I64.pack(end))
    return b"".join(parts)


def rotate_body(position: int, file_name: str) -> bytes:
    return _ROTATE_POST.pack(position) + file_name.encode()


def gtid_event_size(transaction_length: int) -> int:
    # post-header 42 + 7-byte commit timestamp + packed length + 4-byte server version
    return event_size(42 + 7 + len(packed_int(transaction_length)) + 4)


def transaction_length(rest: int) -> int:
    """transaction_length of a GTID event followed by `rest` bytes: it counts the GTID event too."""
    for width in (1, 3, 4, 9):
        total = rest + event_size(42 + 7 + width + 4)
        if len(packed_int(total)) == width:
            return total
    raise ValueError("transaction too large")


def gtid_body(
    *,
    sid: bytes,
    gno: int,
    last_committed: int,
    sequence_number: int,
    commit_timestamp_us: int,
    transaction_length: int,
    may_have_sbr: bool,
    server_version_id: int = SERVER_VERSION_ID,
) -> bytes:
    """GTID (type 33) as a source writes it: original == immediate, so one timestamp and one version."""
    flags = GTID_FLAG_MAY_HAVE_SBR if may_have_sbr else 0
    head = _GTID_HEAD.pack(flags, sid, gno, LOGICAL_TIMESTAMP_TYPECODE, last_committed, sequence_number)
    # High bit clear in the 7-byte timestamp and the 4-byte version: "original equals immediate".
    return b"".join(
        (
            head,
            commit_timestamp_us.to_bytes(7, "little"),
            packed_int(transaction_length),
            _U32.pack(server_version_id),
        )
    )


def xid_body(xid: int) -> bytes:
    return _XID.pack(xid)


def intvar_body(kind: int, value: int) -> bytes:
    if kind not in (INTVAR_INSERT_ID, INTVAR_LAST_INSERT_ID):
        raise ValueError(f"unknown INTVAR type {kind}")
    return _INTVAR.pack(kind, value)


def rand_body(seed1: int, seed2: int) -> bytes:
    return _RAND.pack(seed1, seed2)


def user_var_body(name: str, value: int | float | str | Decimal | None, *, unsigned: bool = False) -> bytes:
    """USER_VAR: the value of @name as the statement that follows read it."""
    raw_name = name.encode()
    head = _U32.pack(len(raw_name)) + raw_name
    if value is None:
        return head + b"\x01"
    if isinstance(value, bool):
        raise TypeError("user variables hold numbers, strings or decimals, not bools")
    if isinstance(value, int):
        val = value.to_bytes(8, "little", signed=not unsigned)
        # Only INT values carry the trailing flags byte (UNSIGNED_F = 1).
        return b"".join(
            (head, struct.pack("<BBII", 0, USER_VAR_INT, LATIN1_SWEDISH_CI, 8), val, bytes((int(unsigned),)))
        )
    if isinstance(value, float):
        return head + struct.pack("<BBII", 0, USER_VAR_REAL, LATIN1_SWEDISH_CI, 8) + struct.pack("<d", value)
    if isinstance(value, Decimal):
        _, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        precision = max(len(digits), scale + 1)
        val = bytes((precision, scale)) + decimal_to_bin(value, precision, scale)
        return head + struct.pack("<BBII", 0, USER_VAR_DECIMAL, LATIN1_SWEDISH_CI, len(val)) + val
    raw = value.encode()
    return head + struct.pack("<BBII", 0, USER_VAR_STRING, UTF8MB4_0900_AI_CI, len(raw)) + raw


@dataclass(frozen=True)
class QueryStatusVars:
    """The status variables of a QUERY event; None means "not written"."""

    flags2: int = 0
    sql_mode: int = DEFAULT_SQL_MODE
    catalog: str = "std"
    auto_increment: tuple[int, int] | None = None
    charset: tuple[int, int, int] = (UTF8MB4_0900_AI_CI, UTF8MB4_0900_AI_CI, UTF8MB4_0900_AI_CI)
    time_zone: str | None = None
    updated_db_names: tuple[str, ...] | None = None
    microseconds: int | None = None
    explicit_defaults_for_timestamp: int | None = None
    ddl_xid: int | None = None
    default_collation_for_utf8mb4: int = UTF8MB4_0900_AI_CI
    sql_require_primary_key: int | None = None
    default_table_encryption: int | None = None


@lru_cache(maxsize=4096)
def encode_status_vars(s: QueryStatusVars) -> bytes:
    """Status variables in increasing code order, as Query_log_event::write emits them."""
    out = bytearray()
    out += bytes((QueryStatus.FLAGS2,)) + _U32.pack(s.flags2)
    out += bytes((QueryStatus.SQL_MODE,)) + _U64.pack(s.sql_mode)
    if s.catalog:
        raw = s.catalog.encode()
        out += bytes((QueryStatus.CATALOG_NZ, len(raw))) + raw
    if s.auto_increment is not None:
        out += bytes((QueryStatus.AUTO_INCREMENT,)) + struct.pack("<HH", *s.auto_increment)
    out += bytes((QueryStatus.CHARSET,)) + struct.pack("<HHH", *s.charset)
    if s.time_zone is not None:
        raw = s.time_zone.encode()
        out += bytes((QueryStatus.TIME_ZONE, len(raw))) + raw
    if s.updated_db_names is not None:
        names = s.updated_db_names
        out.append(QueryStatus.UPDATED_DB_NAMES)
        # A lone "" or more than 16 databases: no list, the applier must serialize.
        if len(names) > MAX_DBS_IN_EVENT_MTS or names == ("",) or not names:
            out.append(OVER_MAX_DBS_IN_EVENT_MTS)
        else:
            out.append(len(names))
            for db in names:
                out += db.encode() + b"\x00"
    if s.microseconds is not None:
        out += bytes((QueryStatus.MICROSECONDS,)) + s.microseconds.to_bytes(3, "little")
    if s.explicit_defaults_for_timestamp is not None:
        out += bytes((QueryStatus.EXPLICIT_DEFAULTS_FOR_TIMESTAMP, s.explicit_defaults_for_timestamp))
    if s.ddl_xid is not None:
        out += bytes((QueryStatus.DDL_LOGGED_WITH_XID,)) + _U64.pack(s.ddl_xid)
    if s.default_collation_for_utf8mb4:
        out += bytes((QueryStatus.DEFAULT_COLLATION_FOR_UTF8MB4,)) + struct.pack(
            "<H", s.default_collation_for_utf8mb4
        )
    if s.sql_require_primary_key is not None:
        out += bytes((QueryStatus.SQL_REQUIRE_PRIMARY_KEY, s.sql_require_primary_key))
    if s.default_table_encryption is not None:
        out += bytes((QueryStatus.DEFAULT_TABLE_ENCRYPTION, s.default_table_encryption))
    return bytes(out)


def query_body(
    *,
    thread_id: int,
    db: str,
    query: str,
    status: QueryStatusVars,
    exec_time: int = 0,
    error_code: int = 0,
) -> bytes:
    """QUERY: post-header, status variables, default database, NUL, statement text."""
    raw_db = db.encode()
    status_bytes = encode_status_vars(status)
    post = _QUERY_POST.pack(thread_id, exec_time, len(raw_db), error_code, len(status_bytes))
    return b"".join((post, status_bytes, raw_db, b"\x00", query.encode()))


# --------------------------------------------------------------------------------------------
# Column types


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


def decimal_bin_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


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


# --------------------------------------------------------------------------------------------
# Row events


def _msb_bitmap(bits: Iterable[bool]) -> bytes:
    out = bytearray()
    byte, mask = 0, 0x80
    for bit in bits:
        if bit:
            byte |= mask
        mask >>= 1
        if not mask:
            out.append(byte)
            byte, mask = 0, 0x80
    if mask != 0x80:
        out.append(byte)
    return bytes(out)


def _tlv(kind: int, value: bytes) -> bytes:
    return bytes((kind,)) + packed_int(len(value)) + value


def _charset_field(columns: Sequence[ColumnDef], default_kind: int, column_kind: int) -> bytes:
    charsets = [c.type.charset for c in columns]
    if not charsets:
        return b""
    counts: dict[int, int] = {}
    for cs in charsets:
        counts[cs] = counts.get(cs, 0) + 1
    default = max(counts, key=lambda cs: (counts[cs], -charsets.index(cs)))
    as_default = packed_int(default) + b"".join(
        packed_int(i) + packed_int(cs) for i, cs in enumerate(charsets) if cs != default
    )
    as_columns = b"".join(packed_int(cs) for cs in charsets)
    # Like the server, keep whichever spelling is shorter.
    if len(as_default) < len(as_columns):
        return _tlv(default_kind, as_default)
    return _tlv(column_kind, as_columns)


def _str_values(columns: Sequence[ColumnDef]) -> bytes:
    out = bytearray()
    for c in columns:
        out += packed_int(len(c.type.elements))
        for e in c.type.elements:
            raw = e.encode()
            out += packed_int(len(raw)) + raw
    return bytes(out)


def table_map_optional_metadata(table: TableDef) -> bytes:
    """binlog_row_metadata=FULL fields, in the order Table_map_log_event writes them."""
    cols = table.columns
    out = bytearray()
    numeric = [c for c in cols if c.type.is_numeric]
    if numeric:
        out += _tlv(TableMapMetadata.SIGNEDNESS, _msb_bitmap(c.type.unsigned for c in numeric))
    out += _charset_field(
        [c for c in cols if c.type.is_character],
        TableMapMetadata.DEFAULT_CHARSET,
        TableMapMetadata.COLUMN_CHARSET,
    )
    names = b"".join(packed_int(len(raw)) + raw for raw in (c.name.encode() for c in cols))
    out += _tlv(TableMapMetadata.COLUMN_NAME, names)
    enum_set = [c for c in cols if c.type.is_enum_or_set]
    out += _charset_field(
        enum_set, TableMapMetadata.ENUM_AND_SET_DEFAULT_CHARSET, TableMapMetadata.ENUM_AND_SET_COLUMN_CHARSET
    )
    sets = [c for c in cols if c.type.base == "set"]
    if sets:
        out += _tlv(TableMapMetadata.SET_STR_VALUE, _str_values(sets))
    enums = [c for c in cols if c.type.base == "enum"]
    if enums:
        out += _tlv(TableMapMetadata.ENUM_STR_VALUE, _str_values(enums))
    if table.primary_key:
        out += _tlv(TableMapMetadata.SIMPLE_PRIMARY_KEY, b"".join(packed_int(i) for i in table.pk_positions))
    out += _tlv(TableMapMetadata.COLUMN_VISIBILITY, _msb_bitmap(True for _ in cols))
    return bytes(out)


def table_map_body(table_id: int, table: TableDef) -> bytes:
    """TABLE_MAP: ids, names, column types and metadata, nullability, optional metadata."""
    db = table.db.encode()
    name = table.name.encode()
    cols = table.columns
    metadata = b"".join(c.type.metadata for c in cols)
    nullable = sum(1 << i for i, c in enumerate(cols) if c.nullable).to_bytes((len(cols) + 7) // 8, "little")
    return b"".join(
        (
            _TABLE_ID_FLAGS.pack(table_id & 0xFFFFFFFF, table_id >> 32, TABLE_MAP_BIT_LEN_EXACT),
            bytes((len(db),)),
            db,
            b"\x00",
            bytes((len(name),)),
            name,
            b"\x00",
            packed_int(len(cols)),
            bytes(c.type.code for c in cols),
            packed_int(len(metadata)),
            metadata,
            nullable,
            table_map_optional_metadata(table),
        )
    )


@lru_cache(maxsize=4096)
def rows_body_prefix(type_code: int, table_id: int, flags: int, column_count: int) -> bytes:
    """Post-header and column bitmaps of a v2 rows event (FULL images: every column present)."""
    if type_code not in (EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS):
        raise ValueError(f"not a v2 rows event type: {type_code}")
    present = ((1 << column_count) - 1).to_bytes((column_count + 7) // 8, "little")
    bitmaps = present * 2 if type_code == EventType.UPDATE_ROWS else present
    # extra_data_len 2: the length field counts itself and there is no extra row info.
    return (
        _ROWS_POST.pack(table_id & 0xFFFFFFFF, table_id >> 32, flags, 2) + packed_int(column_count) + bitmaps
    )


def rows_fixed_size(type_code: int, column_count: int) -> int:
    """Bytes of a rows event body before its first row (what the size split counts from)."""
    width = (column_count + 7) // 8
    return (
        _ROWS_POST_HEADER_LEN
        + len(packed_int(column_count))
        + width * (2 if type_code == EventType.UPDATE_ROWS else 1)
    )


def split_rows(
    type_code: int, column_count: int, images: Sequence[bytes], max_size: int = ROWS_EVENT_MAX_SIZE
) -> list[list[bytes]]:
    """Group row images into events the way the server does: start a new event when the next row
    would push the pending one past binlog_row_event_max_size (a lone oversized row still fits)."""
    fixed = rows_fixed_size(type_code, column_count)
    groups: list[list[bytes]] = []
    current: list[bytes] = []
    size = fixed
    for image in images:
        if current and size + len(image) > max_size:
            groups.append(current)
            current, size = [], fixed
        current.append(image)
        size += len(image)
    if current:
        groups.append(current)
    return groups


# --------------------------------------------------------------------------------------------
# Binary JSON (json_binary.cc's format)

JSONB_SMALL_OBJECT = 0x00
JSONB_LARGE_OBJECT = 0x01
JSONB_SMALL_ARRAY = 0x02
JSONB_LARGE_ARRAY = 0x03
JSONB_LITERAL = 0x04
JSONB_INT16 = 0x05
JSONB_INT32 = 0x07
JSONB_INT64 = 0x09
JSONB_UINT64 = 0x0A
JSONB_DOUBLE = 0x0B
JSONB_STRING = 0x0C

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def json_key_order(keys: Iterable[str]) -> list[str]:
    """MySQL stores (and prints) object keys shortest first, then by their UTF-8 bytes."""
    return sorted(keys, key=lambda k: (len(k.encode()), k.encode()))


def encode_json(value: JsonValue) -> bytes:
    """A JSON document in MySQL's binary format: type byte + value."""
    kind, data = _json_value(value)
    return bytes((kind,)) + data


def _json_value(value: JsonValue) -> tuple[int, bytes]:
    if value is None:
        return JSONB_LITERAL, b"\x00"
    if value is True:
        return JSONB_LITERAL, b"\x01"
    if value is False:
        return JSONB_LITERAL, b"\x02"
    if isinstance(value, int):
        if -(1 << 15) <= value < 1 << 15:
            return JSONB_INT16, value.to_bytes(2, "little", signed=True)
        if -(1 << 31) <= value < 1 << 31:
            return JSONB_INT32, value.to_bytes(4, "little", signed=True)
        if -(1 << 63) <= value < 1 << 63:
            return JSONB_INT64, value.to_bytes(8, "little", signed=True)
        return JSONB_UINT64, value.to_bytes(8, "little")
    if isinstance(value, float):
        return JSONB_DOUBLE, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return JSONB_STRING, _json_varlen(len(raw)) + raw
    if isinstance(value, list):
        return _json_container(None, value)
    if isinstance(value, dict):
        keys = json_key_order(value)
        return _json_container(keys, [value[k] for k in keys])
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _json_varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _json_container(keys: list[str] | None, values: list[JsonValue]) -> tuple[int, bytes]:
    encoded = [_json_value(v) for v in values]
    for large in (False, True):
        data = _json_layout(keys, encoded, large)
        if data is not None:
            if keys is None:
                return (JSONB_LARGE_ARRAY if large else JSONB_SMALL_ARRAY), data
            return (JSONB_LARGE_OBJECT if large else JSONB_SMALL_OBJECT), data
    raise ValueError("JSON document too large")


def _json_layout(keys: list[str] | None, encoded: list[tuple[int, bytes]], large: bool) -> bytes | None:
    width = 4 if large else 2
    limit = 1 << (8 * width)
    count = len(encoded)
    raw_keys = [k.encode() for k in keys] if keys is not None else []
    pos = 2 * width + (count * (width + 2) if keys is not None else 0) + count * (1 + width)
    key_entries = bytearray()
    for raw in raw_keys:
        key_entries += pos.to_bytes(width, "little") + len(raw).to_bytes(2, "little")
        pos += len(raw)
    value_entries = bytearray()
    payload = bytearray()
    inline = {JSONB_LITERAL, JSONB_INT16} | ({JSONB_INT32} if large else set())
    for kind, data in encoded:
        if kind in inline:
            value_entries += bytes((kind,)) + data.ljust(width, b"\x00")
        else:
            if pos >= limit:
                return None
            value_entries += bytes((kind,)) + pos.to_bytes(width, "little")
            payload += data
            pos += len(data)
    if pos >= limit:
        return None
    head = count.to_bytes(width, "little") + pos.to_bytes(width, "little")
    return b"".join((head, bytes(key_entries), bytes(value_entries), b"".join(raw_keys), bytes(payload)))
