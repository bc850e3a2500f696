"""Encoders for MySQL 8.0 binlog events: the writer side of engine/binlog.

Everything here is pure byte layout, no files: bodies for each event type, and the common header
and CRC32 footer around them. Column types parsed from their SQL spelling (type code, table-map
metadata, value encoder) are in engine.binlog.column_types, MySQL's binary JSON in
engine.binlog.json_binary. Layout facts follow libbinlogevents and sql/log_event.cc of MySQL 8.0;
the relay-log choreography lives in engine.generate.relay_writer.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from engine.binlog.column_types import UTF8MB4_0900_AI_CI, ColumnDef, TableDef, decimal_to_bin
from engine.binlog.constants import (
    COMMON_HEADER_LEN,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    USER_VAR_DECIMAL,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_STRING,
    ChecksumAlg,
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
