"""Statement events and the session context logged with them: QUERY, XID, INTVAR, RAND, USER_VAR."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from decimal import Decimal

from .. import primitives as p
from ..constants import (
    BINARY_CHARSET,
    INTVAR_INSERT_ID,
    INTVAR_LAST_INSERT_ID,
    OVER_MAX_DBS_IN_EVENT_MTS,
    USER_VAR_DECIMAL,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_STRING,
    EventType,
    QueryStatus,
)
from ..values import decode_decimal
from .base import BinlogEvent, DecodeContext, EventHeader
from .compression import mariadb_uncompress

# The BEGIN events decoded so far, each body less its thread id and execution time (which vary
# from one to the next): the process pool's scanner (binlog/_runscan.pyx) takes a MySQL
# transaction's BEGIN as read when its bytes are among them, and leaves any other to this decoder.
_BEGINS: set[bytes] = set()
_BEGINS_MAX = 4096
_BEGIN = b"BEGIN"


def decoded_begins() -> set[bytes]:
    """The bodies of the BEGIN events decoded so far, from their database name's length on."""
    return _BEGINS


@dataclass(slots=True, unsafe_hash=True)
class QueryStatusVars:
    """The status variables of a QUERY event; None where the event did not carry one."""

    flags2: int | None = None
    sql_mode: int | None = None
    catalog: str | None = None
    auto_increment_increment: int | None = None
    auto_increment_offset: int | None = None
    character_set_client: int | None = None
    collation_connection: int | None = None
    collation_server: int | None = None
    time_zone: str | None = None
    lc_time_names: int | None = None
    collation_database: int | None = None
    table_map_for_update: int | None = None
    master_data_written: int | None = None
    invoker_user: str | None = None
    invoker_host: str | None = None
    # WL#5754's "Updated-db:s": () = logged as none; None = not logged; OVER_MAX = too many to list
    updated_db_names: tuple[str, ...] | None = None
    updated_db_over_max: bool = False
    microseconds: int | None = None
    explicit_defaults_for_timestamp: bool | None = None
    ddl_xid: int | None = None
    default_collation_for_utf8mb4: int | None = None
    sql_require_primary_key: bool | None = None
    default_table_encryption: bool | None = None
    mariadb_hrnow: int | None = None
    mariadb_xid: int | None = None
    enable_cascade_triggers: bool | None = None
    mariadb_gtid_flags3: int | None = None
    mariadb_start_alter_seq_no: int | None = None
    character_set_collations: tuple[tuple[int, int], ...] | None = None
    unknown_code: int | None = None  # parsing stopped at a code this decoder does not know


def _short_string(buf: bytes, pos: int) -> tuple[str, int]:
    length = p.u8(buf, pos)
    raw, pos = p.take(buf, pos + 1, length, "a status variable string")
    return p.text(raw), pos


# A session repeats the same status variables in every statement (BEGIN above all): each
# distinct block is parsed once and the result shared.
_STATUS_CACHE: dict[bytes, QueryStatusVars] = {}
_STATUS_CACHE_MAX = 4096


def decode_status_vars(buf: bytes) -> QueryStatusVars:
    """Parse status variables; an unknown code ends parsing (its length cannot be known)."""
    key = bytes(buf)
    cached = _STATUS_CACHE.get(key)
    if cached is not None:
        return cached
    status = _decode_status_vars(key)
    if len(_STATUS_CACHE) >= _STATUS_CACHE_MAX:
        _STATUS_CACHE.clear()
    _STATUS_CACHE[key] = status
    return status


def _decode_status_vars(buf: bytes) -> QueryStatusVars:
    values: dict[str, object] = {}
    pos, end = 0, len(buf)
    while pos < end:
        code = buf[pos]
        pos += 1
        if code == QueryStatus.FLAGS2:
            values["flags2"] = p.u32(buf, pos)
            pos += 4
        elif code == QueryStatus.SQL_MODE:
            values["sql_mode"] = p.u64(buf, pos)
            pos += 8
        elif code == QueryStatus.CATALOG:
            values["catalog"], pos = _short_string(buf, pos)
            pos += 1  # the old form also stored a NUL
        elif code == QueryStatus.AUTO_INCREMENT:
            values["auto_increment_increment"] = p.u16(buf, pos)
            values["auto_increment_offset"] = p.u16(buf, pos + 2)
            pos += 4
        elif code == QueryStatus.CHARSET:
            values["character_set_client"] = p.u16(buf, pos)
            values["collation_connection"] = p.u16(buf, pos + 2)
            values["collation_server"] = p.u16(buf, pos + 4)
            pos += 6
        elif code == QueryStatus.TIME_ZONE:
            values["time_zone"], pos = _short_string(buf, pos)
        elif code == QueryStatus.CATALOG_NZ:
            values["catalog"], pos = _short_string(buf, pos)
        elif code == QueryStatus.LC_TIME_NAMES:
            values["lc_time_names"] = p.u16(buf, pos)
            pos += 2
        elif code == QueryStatus.CHARSET_DATABASE:
            values["collation_database"] = p.u16(buf, pos)
            pos += 2
        elif code == QueryStatus.TABLE_MAP_FOR_UPDATE:
            values["table_map_for_update"] = p.u64(buf, pos)
            pos += 8
        elif code == QueryStatus.MASTER_DATA_WRITTEN:
            values["master_data_written"] = p.u32(buf, pos)
            pos += 4
        elif code == QueryStatus.INVOKER:
            values["invoker_user"], pos = _short_string(buf, pos)
            values["invoker_host"], pos = _short_string(buf, pos)
        elif code == QueryStatus.UPDATED_DB_NAMES:
            count = p.u8(buf, pos)
            pos += 1
            if count == OVER_MAX_DBS_IN_EVENT_MTS:
                values["updated_db_over_max"] = True
                values["updated_db_names"] = ()
            else:
                names = []
                for _ in range(count):
                    raw, pos = p.cstring(buf, pos)
                    names.append(p.text(raw))
                values["updated_db_names"] = tuple(names)
        elif code == QueryStatus.MICROSECONDS:
            values["microseconds"] = p.u24(buf, pos)
            pos += 3
        elif code == QueryStatus.EXPLICIT_DEFAULTS_FOR_TIMESTAMP:
            values["explicit_defaults_for_timestamp"] = bool(p.u8(buf, pos))
            pos += 1
        elif code == QueryStatus.DDL_LOGGED_WITH_XID:
            values["ddl_xid"] = p.u64(buf, pos)
            pos += 8
        elif code == QueryStatus.DEFAULT_COLLATION_FOR_UTF8MB4:
            values["default_collation_for_utf8mb4"] = p.u16(buf, pos)
            pos += 2
        elif code == QueryStatus.SQL_REQUIRE_PRIMARY_KEY:
            values["sql_require_primary_key"] = bool(p.u8(buf, pos))
            pos += 1
        elif code == QueryStatus.DEFAULT_TABLE_ENCRYPTION:
            values["default_table_encryption"] = bool(p.u8(buf, pos))
            pos += 1
        elif code == QueryStatus.HRNOW:
            values["mariadb_hrnow"] = p.u24(buf, pos)
            pos += 3
        elif code == QueryStatus.XID:
            values["mariadb_xid"] = p.u64(buf, pos)
            pos += 8
        elif code == QueryStatus.GTID_FLAGS3:
            flags3 = values["mariadb_gtid_flags3"] = p.u8(buf, pos)
            pos += 1
            if flags3 & (4 | 8):  # commit/rollback of an ALTER started earlier: its seq_no
                values["mariadb_start_alter_seq_no"] = p.u64(buf, pos)
                pos += 8
        elif code == QueryStatus.ENABLE_CASCADE_TRIGGERS:
            values["enable_cascade_triggers"] = bool(p.u8(buf, pos))
            pos += 1
        elif code == QueryStatus.CHARACTER_SET_COLLATIONS:
            count = p.u8(buf, pos)
            pos += 1
            pairs = []
            for _ in range(count):
                pairs.append((p.u16(buf, pos), p.u16(buf, pos + 2)))
                pos += 4
            values["character_set_collations"] = tuple(pairs)
        else:
            values["unknown_code"] = code
            break
    return QueryStatusVars(**values)  # type: ignore[arg-type]


@dataclass(slots=True, unsafe_hash=True)
class Query(BinlogEvent):
    thread_id: int
    exec_time: int
    error_code: int
    status: QueryStatusVars
    database: str
    query: str

    def info(self) -> str:
        if self.database and not self.header.flags & 0x8:
            return f"use `{self.database.replace('`', '``')}`; {self.query}"
        return self.query


@dataclass(slots=True, unsafe_hash=True)
class ExecuteLoadQuery(Query):
    file_id: int = 0


def decode_query(header: EventHeader, body: bytes, ctx: DecodeContext) -> Query:
    post = ctx.post_header_len(header.type_code, 13)
    thread_id = p.u32(body, 0)
    exec_time = p.u32(body, 4)
    db_len = p.u8(body, 8)
    error_code = p.u16(body, 9)
    status_len = p.u16(body, 11) if post >= 13 else 0
    pos = post
    status_raw, pos = p.take(body, pos, status_len, "the status variables")
    db_raw, pos = p.take(body, pos, db_len, "the database name")
    pos += 1  # NUL after the database name
    p.need(body, pos, 0, "the statement")
    query_raw = bytes(body[pos:])
    if header.type_code == EventType.QUERY_COMPRESSED:
        query_raw = mariadb_uncompress(query_raw)
    status = decode_status_vars(status_raw)
    if header.type_code == EventType.EXECUTE_LOAD_QUERY:
        return ExecuteLoadQuery(
            header,
            thread_id,
            exec_time,
            error_code,
            status,
            p.text(db_raw),
            p.text(query_raw),
            p.u32(body, 13),
        )
    query = Query(header, thread_id, exec_time, error_code, status, p.text(db_raw), p.text(query_raw))
    if query_raw == _BEGIN and post == 13 and header.type_code == EventType.QUERY:
        if len(_BEGINS) >= _BEGINS_MAX:
            _BEGINS.clear()
        _BEGINS.add(bytes(body[8:]))
    return query


@dataclass(slots=True, unsafe_hash=True)
class Xid(BinlogEvent):
    xid: int

    def info(self) -> str:
        return f"COMMIT /* xid={self.xid} */"


def decode_xid(header: EventHeader, body: bytes, ctx: DecodeContext) -> Xid:
    return Xid(header, p.u64(body, 0))


@dataclass(slots=True, unsafe_hash=True)
class XaPrepare(BinlogEvent):
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    def info(self) -> str:
        verb = "XA COMMIT" if self.one_phase else "XA PREPARE"
        suffix = " ONE PHASE" if self.one_phase else ""
        return f"{verb} X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}{suffix}"


def decode_xa_prepare(header: EventHeader, body: bytes, ctx: DecodeContext) -> XaPrepare:
    one_phase = bool(p.u8(body, 0))
    format_id = p.u32(body, 1)
    gtrid_len = p.u32(body, 5)
    bqual_len = p.u32(body, 9)
    if gtrid_len > 64 or bqual_len > 64:
        raise ValueError(f"XA id lengths {gtrid_len}/{bqual_len} exceed 64")
    gtrid, pos = p.take(body, 13, gtrid_len, "the XA gtrid")
    bqual, _ = p.take(body, pos, bqual_len, "the XA bqual")
    return XaPrepare(header, one_phase, format_id, gtrid, bqual)


@dataclass(slots=True, unsafe_hash=True)
class Intvar(BinlogEvent):
    kind: int
    value: int

    @property
    def name(self) -> str:
        return {INTVAR_LAST_INSERT_ID: "LAST_INSERT_ID", INTVAR_INSERT_ID: "INSERT_ID"}.get(
            self.kind, "INVALID_INT"
        )

    def info(self) -> str:
        return f"{self.name}={self.value}"


def decode_intvar(header: EventHeader, body: bytes, ctx: DecodeContext) -> Intvar:
    return Intvar(header, p.u8(body, 0), p.u64(body, 1))


@dataclass(slots=True, unsafe_hash=True)
class Rand(BinlogEvent):
    seed1: int
    seed2: int

    def info(self) -> str:
        return f"rand_seed1={self.seed1},rand_seed2={self.seed2}"


def decode_rand(header: EventHeader, body: bytes, ctx: DecodeContext) -> Rand:
    return Rand(header, p.u64(body, 0), p.u64(body, 8))


UserVarValue = str | bytes | int | float | Decimal | None


@dataclass(slots=True, unsafe_hash=True)
class UserVar(BinlogEvent):
    name: str
    value_type: int | None  # None when the variable is NULL
    charset: int | None
    value: UserVarValue
    unsigned: bool = False

    def info(self) -> str:
        name = f"@`{self.name}`"
        if self.value is None:
            return f"{name}=NULL"
        if isinstance(self.value, bytes):
            return f"{name}=X'{self.value.hex()}'"
        if isinstance(self.value, str):
            escaped = self.value.replace("\\", "\\\\").replace("'", "\\'")
            return f"{name}=_utf8mb4'{escaped}' COLLATE {self.charset}"
        return f"{name}={self.value}"


_DOUBLE = struct.Struct("<d")


def decode_user_var(header: EventHeader, body: bytes, ctx: DecodeContext) -> UserVar:
    name_len = p.u32(body, 0)
    name_raw, pos = p.take(body, 4, name_len, "the variable name")
    name = p.text(name_raw)
    is_null = p.u8(body, pos)
    pos += 1
    if is_null:
        return UserVar(header, name, None, None, None)
    value_type = p.u8(body, pos)
    charset = p.u32(body, pos + 1)
    value_len = p.u32(body, pos + 5)
    raw, pos = p.take(body, pos + 9, value_len, "the variable value")
    flags = p.u8(body, pos) if pos < len(body) else 0
    unsigned = bool(flags & 1)
    value: UserVarValue
    if value_type == USER_VAR_STRING:
        value = raw if charset == BINARY_CHARSET else raw.decode("utf-8", errors="surrogateescape")
    elif value_type == USER_VAR_REAL:
        value = _DOUBLE.unpack_from(raw, 0)[0]
    elif value_type == USER_VAR_INT:
        value = int.from_bytes(raw[:8], "little", signed=not unsigned)
    elif value_type == USER_VAR_DECIMAL:
        value = decode_decimal(raw, 2, raw[0], raw[1])[0]
    else:
        raise ValueError(f"user variable @{name} has unknown value type {value_type}")
    return UserVar(header, name, value_type, charset, value, unsigned)


@dataclass(slots=True, unsafe_hash=True)
class RowsQuery(BinlogEvent):
    """MySQL's ROWS_QUERY and MariaDB's ANNOTATE_ROWS: the statement that produced the rows."""

    query: str

    def info(self) -> str:
        return f"# {self.query}"


def decode_rows_query(header: EventHeader, body: bytes, ctx: DecodeContext) -> RowsQuery:
    # MySQL prefixes one length byte that is wrong for long statements; the text is the rest.
    return RowsQuery(header, p.text(bytes(body[1:])))


def decode_annotate_rows(header: EventHeader, body: bytes, ctx: DecodeContext) -> RowsQuery:
    return RowsQuery(header, p.text(bytes(body)))
