"""Row-based replication: TABLE_MAP (with its optional metadata) and the rows events."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .. import primitives as p
from ..constants import (
    ROWS_EVENT_TYPES,
    ROWS_FLAG_STMT_END,
    ColumnType,
    EventType,
    RowsKind,
    TableMapMetadata,
)
from .base import BinlogEvent, DecodeContext, EventHeader
from .compression import mariadb_uncompress

# Metadata bytes each column type carries in TABLE_MAP.
_META_LEN: dict[int, int] = {
    ColumnType.FLOAT: 1,
    ColumnType.DOUBLE: 1,
    ColumnType.TIMESTAMP2: 1,
    ColumnType.DATETIME2: 1,
    ColumnType.TIME2: 1,
    ColumnType.TINY_BLOB: 1,
    ColumnType.MEDIUM_BLOB: 1,
    ColumnType.LONG_BLOB: 1,
    ColumnType.BLOB: 1,
    ColumnType.GEOMETRY: 1,
    ColumnType.JSON: 1,
    ColumnType.VECTOR: 1,
    ColumnType.VARCHAR: 2,
    ColumnType.VAR_STRING: 2,
    ColumnType.BIT: 2,
    ColumnType.NEWDECIMAL: 2,
    ColumnType.STRING: 2,
    ColumnType.ENUM: 2,
    ColumnType.SET: 2,
}
_NUMERIC = frozenset(
    {
        ColumnType.TINY,
        ColumnType.SHORT,
        ColumnType.INT24,
        ColumnType.LONG,
        ColumnType.LONGLONG,
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.NEWDECIMAL,
        ColumnType.DECIMAL,
        ColumnType.YEAR,
    }
)
_BLOBS = frozenset({ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB})


def real_type(type_code: int, meta: int) -> int:
    """The column's real type: STRING columns may really be ENUM or SET (told by their metadata)."""
    if type_code == ColumnType.STRING and meta >= 256:
        byte0 = meta >> 8
        if byte0 & 0x30 != 0x30:
            return byte0 | 0x30
        if byte0 in (ColumnType.ENUM, ColumnType.SET):
            return byte0
    return type_code


def is_character(type_code: int, meta: int) -> bool:
    """Columns that get an entry in the charset metadata lists (text-like, not ENUM/SET)."""
    rt = real_type(type_code, meta)
    # MySQL 9 counts VECTOR among them (binary collation 63).
    return (
        rt in (ColumnType.STRING, ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.VECTOR)
        or rt in _BLOBS
    )


@dataclass(slots=True, unsafe_hash=True)
class TableMap(BinlogEvent):
    table_id: int
    flags: int
    schema: str
    table: str
    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    # Optional metadata (binlog_row_metadata=FULL / MINIMAL); empty or None where not logged.
    signedness: tuple[bool, ...] | None = None  # per column; True = UNSIGNED (numeric only)
    charsets: tuple[int | None, ...] | None = None  # per column collation id (character columns)
    enum_set_charsets: tuple[int | None, ...] | None = None
    column_names: tuple[str, ...] | None = None
    set_values: tuple[tuple[str, ...] | None, ...] | None = None
    enum_values: tuple[tuple[str, ...] | None, ...] | None = None
    geometry_types: tuple[int | None, ...] | None = None
    primary_key: tuple[int, ...] | None = None
    primary_key_prefixes: tuple[int, ...] | None = None  # 0 = whole column
    visibility: tuple[bool, ...] | None = None  # True = visible
    vector_dimensions: tuple[int | None, ...] | None = None
    mariadb: bool = False  # written by MariaDB: its own TIMESTAMP byte order and hires temporals
    raw_metadata_key: bytes = field(default=b"", repr=False, compare=False)

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    def real_types(self) -> tuple[int, ...]:
        return tuple(real_type(t, m) for t, m in zip(self.column_types, self.column_meta, strict=True))

    def info(self) -> str:
        return f"table_id: {self.table_id} ({self.schema}.{self.table})"


def _table_id(body: bytes, post: int) -> tuple[int, int]:
    if post == 6:
        return p.u32(body, 0), 4
    return p.u48(body, 0), 6


# Sources repeat the same table map before every statement; its shape is parsed once.
_SHAPES: dict[bytes, dict[str, object]] = {}
_SHAPES_MAX = 8192


# A session repeats byte-identical table maps before every statement: the event object is shared
# (its `header` is the first occurrence's; LoggedEvent.header is each occurrence's own).
_TABLE_MAPS: dict[bytes, TableMap] = {}


def shared_table_maps() -> dict[bytes, TableMap]:
    """The table maps decoded so far, by post-header length, MariaDB flag and body: whoever has a
    table map's bytes can look it up here instead of decoding it (the process pool's scanner)."""
    return _TABLE_MAPS


def decode_table_map(header: EventHeader, body: bytes, ctx: DecodeContext) -> TableMap:
    shared_key = bytes((ctx.post_header_len(EventType.TABLE_MAP, 8), ctx.is_mariadb)) + body
    shared = _TABLE_MAPS.get(shared_key)
    if shared is not None:
        return shared
    if len(_TABLE_MAPS) >= _SHAPES_MAX:
        _TABLE_MAPS.clear()
    event = _decode_table_map(header, body, ctx)
    _TABLE_MAPS[shared_key] = event
    return event


def _decode_table_map(header: EventHeader, body: bytes, ctx: DecodeContext) -> TableMap:
    post = ctx.post_header_len(EventType.TABLE_MAP, 8)
    table_id, pos = _table_id(body, post)
    flags = p.u16(body, pos)
    key = bytes(body[post:]) + (b"M" if ctx.is_mariadb else b"")
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _table_map_shape(body, post, ctx)
        shape["raw_metadata_key"] = key
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = shape
    return TableMap(header, table_id, flags, **shape)  # type: ignore[arg-type]


def _table_map_shape(body: bytes, pos: int, ctx: DecodeContext) -> dict[str, object]:
    schema_len = p.u8(body, pos)
    schema, pos = p.take(body, pos + 1, schema_len, "the schema name")
    pos += 1
    table_len = p.u8(body, pos)
    table, pos = p.take(body, pos + 1, table_len, "the table name")
    pos += 1
    count, pos = p.packed_len(body, pos)
    types, pos = p.take(body, pos, count, "the column types")
    meta_len, pos = p.packed_len(body, pos)
    meta_end = pos + meta_len
    p.need(body, pos, meta_len, "the column metadata")
    metas = []
    for t in types:
        n = _META_LEN.get(t, 0)
        if n == 1:
            metas.append(p.u8(body, pos))
        elif n == 2:
            if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
                metas.append(p.u16(body, pos))
            else:  # STRING/ENUM/SET/BIT/NEWDECIMAL store the first byte high
                metas.append(p.u8(body, pos) << 8 | p.u8(body, pos + 1))
        else:
            metas.append(0)
        pos += n
    if pos < meta_end and ctx.is_mariadb:
        # MariaDB's own high-resolution TIMESTAMP/DATETIME/TIME (before mysql56_temporal_format)
        # keep the old type codes and add one metadata byte, the fractional digits.
        hires = [i for i, t in enumerate(types) if t in _OLD_TEMPORALS]
        if meta_end - pos == len(hires):
            metas, pos = _with_hires_meta(body, meta_end - meta_len, types, metas, hires)
    if pos != meta_end:
        raise ValueError(f"column metadata takes {pos - meta_end + meta_len} bytes, block says {meta_len}")
    nullable, pos = p.bitmap(body, pos, count)
    shape: dict[str, object] = {
        "schema": p.text(schema),
        "table": p.text(table),
        "column_types": tuple(types),
        "column_meta": tuple(metas),
        "nullable": nullable,
        "mariadb": ctx.is_mariadb,
    }
    shape.update(_decode_optional_metadata(body, pos, tuple(types), tuple(metas)))
    return shape


_OLD_TEMPORALS = frozenset({ColumnType.TIMESTAMP, ColumnType.DATETIME, ColumnType.TIME})


def _with_hires_meta(
    body: bytes, pos: int, types: bytes, metas: list[int], hires: list[int]
) -> tuple[list[int], int]:
    """Re-read the metadata block giving MariaDB's hires temporal columns their byte."""
    metas = list(metas)
    for i, t in enumerate(types):
        n = 1 if i in hires else _META_LEN.get(t, 0)
        if n == 1:
            metas[i] = p.u8(body, pos)
        pos += n
    return metas, pos


def _decode_optional_metadata(
    body: bytes, pos: int, types: tuple[int, ...], metas: tuple[int, ...]
) -> dict[str, object]:
    out: dict[str, object] = {}
    count = len(types)
    numeric = [i for i, t in enumerate(types) if t in _NUMERIC]
    character = [i for i in range(count) if is_character(types[i], metas[i])]
    enum_set = [i for i in range(count) if real_type(types[i], metas[i]) in (ColumnType.ENUM, ColumnType.SET)]
    enums = [i for i in range(count) if real_type(types[i], metas[i]) == ColumnType.ENUM]
    sets = [i for i in range(count) if real_type(types[i], metas[i]) == ColumnType.SET]
    geometries = [i for i in range(count) if types[i] == ColumnType.GEOMETRY]
    vectors = [i for i in range(count) if types[i] == ColumnType.VECTOR]
    while pos < len(body):
        kind = p.u8(body, pos)
        length, pos = p.packed_len(body, pos + 1)
        value, pos = p.take(body, pos, length, "a table-map metadata field")
        if kind == TableMapMetadata.SIGNEDNESS:
            bits = int.from_bytes(value, "big")
            total = len(value) * 8
            signs = [False] * count
            for n, col in enumerate(numeric):
                if n < total:
                    signs[col] = bool(bits >> (total - 1 - n) & 1)  # most significant bit first
            out["signedness"] = tuple(signs)
        elif kind in (TableMapMetadata.DEFAULT_CHARSET, TableMapMetadata.ENUM_AND_SET_DEFAULT_CHARSET):
            columns = character if kind == TableMapMetadata.DEFAULT_CHARSET else enum_set
            default, at = p.packed_len(value, 0)
            per = dict.fromkeys(columns, default)
            while at < len(value):
                index, at = p.packed_len(value, at)
                collation, at = p.packed_len(value, at)
                if index < len(columns):
                    per[columns[index]] = collation
            charsets = tuple(per.get(i) for i in range(count))
            name = "charsets" if kind == TableMapMetadata.DEFAULT_CHARSET else "enum_set_charsets"
            out[name] = charsets
        elif kind in (TableMapMetadata.COLUMN_CHARSET, TableMapMetadata.ENUM_AND_SET_COLUMN_CHARSET):
            columns = character if kind == TableMapMetadata.COLUMN_CHARSET else enum_set
            at, per = 0, {}
            for col in columns:
                if at >= len(value):
                    break
                per[col], at = p.packed_len(value, at)
            charsets = tuple(per.get(i) for i in range(count))
            name = "charsets" if kind == TableMapMetadata.COLUMN_CHARSET else "enum_set_charsets"
            out[name] = charsets
        elif kind == TableMapMetadata.COLUMN_NAME:
            at, names = 0, []
            while at < len(value):
                n, at = p.packed_len(value, at)
                raw, at = p.take(value, at, n, "a column name")
                names.append(p.text(raw))
            out["column_names"] = tuple(names)
        elif kind in (TableMapMetadata.SET_STR_VALUE, TableMapMetadata.ENUM_STR_VALUE):
            columns = sets if kind == TableMapMetadata.SET_STR_VALUE else enums
            at, per_col = 0, {}
            for col in columns:
                if at >= len(value):
                    break
                n, at = p.packed_len(value, at)
                strings = []
                for _ in range(n):
                    slen, at = p.packed_len(value, at)
                    raw, at = p.take(value, at, slen, "an ENUM/SET string")
                    strings.append(p.text(raw))
                per_col[col] = tuple(strings)
            name = "set_values" if kind == TableMapMetadata.SET_STR_VALUE else "enum_values"
            out[name] = tuple(per_col.get(i) for i in range(count))
        elif kind == TableMapMetadata.GEOMETRY_TYPE:
            at, per = 0, {}
            for col in geometries:
                if at >= len(value):
                    break
                per[col], at = p.packed_len(value, at)
            out["geometry_types"] = tuple(per.get(i) for i in range(count))
        elif kind == TableMapMetadata.SIMPLE_PRIMARY_KEY:
            at, cols = 0, []
            while at < len(value):
                col, at = p.packed_len(value, at)
                cols.append(col)
            out["primary_key"] = tuple(cols)
            out["primary_key_prefixes"] = (0,) * len(cols)
        elif kind == TableMapMetadata.PRIMARY_KEY_WITH_PREFIX:
            at, cols, prefixes = 0, [], []
            while at < len(value):
                col, at = p.packed_len(value, at)
                prefix, at = p.packed_len(value, at)
                cols.append(col)
                prefixes.append(prefix)
            out["primary_key"] = tuple(cols)
            out["primary_key_prefixes"] = tuple(prefixes)
        elif kind == TableMapMetadata.COLUMN_VISIBILITY:
            bits = int.from_bytes(value, "big")
            total = len(value) * 8
            out["visibility"] = tuple(bool(bits >> (total - 1 - i) & 1) for i in range(min(count, total)))
        elif kind == TableMapMetadata.VECTOR_DIMENSIONALITY:
            at, per = 0, {}
            for col in vectors:
                if at >= len(value):
                    break
                per[col], at = p.packed_len(value, at)
            out["vector_dimensions"] = tuple(per.get(i) for i in range(count))
        # Unknown metadata kinds are skipped: their length is always given.
    return out


@dataclass(slots=True, unsafe_hash=True)
class RowsEvent(BinlogEvent):
    """WRITE/UPDATE/DELETE rows, any version; the row images stay raw until decoded with a table map."""

    kind: RowsKind
    version: int
    table_id: int
    flags: int
    extra_data: bytes
    column_count: int
    columns_before: tuple[bool, ...]  # the columns present in the before image (or the only image)
    columns_after: tuple[bool, ...] | None  # UPDATE only
    rows_data: bytes = field(repr=False)
    partial: bool = False  # PARTIAL_UPDATE_ROWS: JSON columns of the after image may be diffs

    @property
    def statement_end(self) -> bool:
        return bool(self.flags & ROWS_FLAG_STMT_END)

    def info(self) -> str:
        flags = " flags: STMT_END_F" if self.statement_end else ""
        return f"table_id: {self.table_id}{flags}"


_BITMAPS = p.BITMAPS
_ID4_FLAGS = struct.Struct("<IH").unpack_from
_ID6_FLAGS = struct.Struct("<IHH").unpack_from


def decode_rows(header: EventHeader, body: bytes, ctx: DecodeContext) -> RowsEvent:
    # Hot path (every rows event): plain struct reads; a short body raises struct.error or
    # IndexError, which the reader reports as a bad event at its position.
    kind, version, compressed = ROWS_EVENT_TYPES[header.type_code]
    lengths = ctx.post_header_lengths
    type_code = header.type_code
    post = lengths[type_code - 1] if type_code <= len(lengths) else (10 if version == 2 else 8)
    if post == 6:
        table_id, flags = _ID4_FLAGS(body, 0)
        pos = 6
    else:
        low, high, flags = _ID6_FLAGS(body, 0)
        table_id = low | high << 32
        pos = 8
    extra = b""
    if version == 2 and post >= pos + 2:
        extra_len = p.u16(body, pos)
        if extra_len < 2:
            raise ValueError(f"rows event extra-data length {extra_len} is below its own 2 bytes")
        extra, _ = p.take(body, pos + 2, extra_len - 2, "the rows extra data")
        pos = pos + extra_len
    pos = max(pos, post) if version != 2 else pos
    width = body[pos]
    if width < 251:
        pos += 1
    else:
        width, pos = p.packed_len(body, pos)
    if width > 4096:
        raise ValueError(f"rows event claims {width} columns (MySQL allows 4096)")
    # the same few bitmaps recur in every rows event: p.bitmap builds and caches each
    nbytes = (width + 7) >> 3
    if pos + nbytes * (2 if kind == RowsKind.UPDATE else 1) > len(body):
        raise ValueError(
            p.truncated("the column bitmaps", nbytes * (2 if kind == RowsKind.UPDATE else 1), pos, len(body))
        )
    before = _BITMAPS.get((body[pos : pos + nbytes], width)) or p.bitmap(body, pos, width)[0]
    pos += nbytes
    after = None
    if kind == RowsKind.UPDATE:
        after = _BITMAPS.get((body[pos : pos + nbytes], width)) or p.bitmap(body, pos, width)[0]
        pos += nbytes
    rows_data = bytes(body[pos:])
    if compressed:
        # MariaDB compresses only the row images; the header, width and bitmaps stay plain.
        rows_data = mariadb_uncompress(rows_data)
    return RowsEvent(
        header,
        kind,
        version,
        table_id,
        flags,
        extra,
        width,
        before,
        after,
        rows_data,
        partial=header.type_code == EventType.PARTIAL_UPDATE_ROWS,
    )
