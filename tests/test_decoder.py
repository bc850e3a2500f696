"""The decoder on real MariaDB relay-log bytes, and on variants of them built the way servers write
compressed, ignorable and unknown events."""

from __future__ import annotations

import struct
import zlib
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from engine.binlog.columns import decode_rows_event
from engine.binlog.constants import EventType
from engine.binlog.events import Query, RowsEvent, TableMap
from engine.binlog.reader import BinlogFile, read_file_events
from engine.errors import UnknownEvent

from .conftest import MULTISOURCE

SHOP = MULTISOURCE / "relay" / "relay-bin-m2.000002"
HEADER = struct.Struct("<IBIIIH")


def raw_events(path: Path) -> list[tuple[int, bytes]]:
    """(type, whole event bytes) of every event, straight from the file."""
    data = path.read_bytes()
    out, pos = [], 4
    while pos < len(data):
        size = HEADER.unpack_from(data, pos)[3]
        out.append((data[pos + 4], data[pos : pos + size]))
        pos += size
    return out


def rebuild(
    event: bytes, type_code: int | None = None, body: bytes | None = None, flags: int | None = None
) -> bytes:
    """An event with another type, body or flags; size and CRC32 recomputed (CRC32 logs only)."""
    ts, old_type, server_id, _size, log_pos, old_flags = HEADER.unpack_from(event, 0)
    body = event[19:-4] if body is None else body
    size = 19 + len(body) + 4
    head = HEADER.pack(
        ts,
        old_type if type_code is None else type_code,
        server_id,
        size,
        log_pos,
        old_flags if flags is None else flags,
    )
    return head + body + struct.pack("<I", zlib.crc32(head + body))


def mariadb_compress(data: bytes) -> bytes:
    """MariaDB's compressed record: 0x80 | length-bytes, big-endian length, zlib stream."""
    return bytes([0x80 | 4]) + len(data).to_bytes(4, "big") + zlib.compress(data)


def write_binlog(path: Path, events: list[bytes]) -> Path:
    path.write_bytes(b"\xfebin" + b"".join(events))
    return path


@pytest.fixture(scope="module")
def shop_events() -> list[tuple[int, bytes]]:
    return raw_events(SHOP)


def first_of(events: list[tuple[int, bytes]], type_code: int) -> bytes:
    return next(raw for t, raw in events if t == type_code)


def test_every_shop_value_decodes_to_exact_python_types():
    table_maps: dict[int, TableMap] = {}
    seen: dict[str, set[type]] = {}
    for logged in read_file_events(SHOP):
        event = logged.event
        if isinstance(event, TableMap):
            table_maps[event.table_id] = event
        elif isinstance(event, RowsEvent):
            for before, after in decode_rows_event(event, table_maps[event.table_id]).rows():
                for image in (before, after):
                    for name, value in (image or {}).items():
                        seen.setdefault(name, set()).add(type(value))
    assert seen["balance"] == {Decimal}
    assert seen["avatar"] <= {bytes, type(None)} and bytes in seen["avatar"]
    assert str in seen["email"] and str in seen["prefs"]
    assert {t.__name__ for t in seen["last_login"]} <= {"datetime", "NoneType"}
    assert {t.__name__ for t in seen["birthday"]} <= {"date", "NoneType"}


def test_rows_become_arrow_tables_with_exact_types():
    table_maps: dict[int, TableMap] = {}
    for logged in read_file_events(SHOP):
        event = logged.event
        if isinstance(event, TableMap):
            table_maps[event.table_id] = event
        elif isinstance(event, RowsEvent) and table_maps[event.table_id].table == "orders":
            images = decode_rows_event(event, table_maps[event.table_id])
            table = images.to_arrow("before" if images.after is None else "after")
            break
    schema = table.schema
    assert schema.field("total").type == pa.decimal128(14, 4)
    assert schema.field("id").type == pa.int64()
    assert schema.field("placed_at").type == pa.timestamp("us")
    assert schema.field("receipt").type == pa.large_binary()
    assert table.num_rows == images.count


def test_compressed_query_event_decodes_like_the_plain_one(tmp_path, shop_events):
    fde = shop_events[0][1]
    plain = next(raw for t, raw in shop_events if t == EventType.QUERY and b"CREATE TABLE" in raw)
    status_len = struct.unpack_from("<H", plain, 19 + 11)[0]
    db_len = plain[19 + 8]
    split = 19 + 13 + status_len + db_len + 1
    query_text = plain[split:-4]
    compressed = rebuild(plain, EventType.QUERY_COMPRESSED, plain[19:split] + mariadb_compress(query_text))
    path = write_binlog(tmp_path / "compressed-query.000001", [fde, plain, compressed])
    events = [e.event for e in read_file_events(path)]
    assert isinstance(events[2], Query) and events[2].query == events[1].query
    assert events[2].database == events[1].database == "shop"


def test_compressed_rows_event_decodes_like_the_plain_one(tmp_path, shop_events):
    fde = shop_events[0][1]
    table_map = first_of(shop_events, EventType.TABLE_MAP)
    rows = next(
        raw for t, raw in shop_events if t == EventType.WRITE_ROWS_V1 and raw[19:25] == table_map[19:25]
    )
    # v1 rows: table id (6) + flags (2), width (1 byte here), one bitmap; the rest is row images
    width = rows[27]
    plain_part = 19 + 8 + 1 + (width + 7) // 8
    compressed = rebuild(
        rows, EventType.WRITE_ROWS_COMPRESSED_V1, rows[19:plain_part] + mariadb_compress(rows[plain_part:-4])
    )
    path = write_binlog(tmp_path / "compressed-rows.000001", [fde, table_map, rows, compressed])
    events = [e.event for e in read_file_events(path)]
    tm = events[1]
    assert decode_rows_event(events[3], tm).rows() == decode_rows_event(events[2], tm).rows()
    assert events[3].kind == events[2].kind


def test_unknown_event_with_ignorable_flag_is_skipped_and_counted(tmp_path, shop_events):
    fde, xid = shop_events[0][1], first_of(shop_events, EventType.XID)
    ignorable = rebuild(xid, 99, b"padding", flags=0x80)
    path = write_binlog(tmp_path / "ignorable.000001", [fde, ignorable, xid])
    with BinlogFile(path) as binlog:
        from engine.binlog.reader import ReaderState

        state = ReaderState()
        kinds = [e.event_type for e in binlog.events(state)]
    assert kinds == ["Format_desc", "Unknown(99)", "Xid"]
    assert state.ignored_events == 1


def test_unknown_event_without_ignorable_flag_is_an_error_at_its_offset(tmp_path, shop_events):
    fde, xid = shop_events[0][1], first_of(shop_events, EventType.XID)
    unknown = rebuild(xid, 99, b"whatever", flags=0)
    path = write_binlog(tmp_path / "unknown.000001", [fde, unknown])
    with pytest.raises(UnknownEvent) as caught:
        list(read_file_events(path))
    assert caught.value.pos == 4 + len(fde)
    assert "99" in str(caught.value)


def test_a_decoder_is_compiled_once_per_table_shape():
    from engine.binlog import columns

    columns._CACHE.clear()
    table_maps: dict[int, TableMap] = {}
    decoded = 0
    for logged in read_file_events(SHOP):
        event = logged.event
        if isinstance(event, TableMap):
            table_maps[event.table_id] = event
        elif isinstance(event, RowsEvent):
            decode_rows_event(event, table_maps[event.table_id])
            decoded += 1
    # three tables, three row-event kinds at most, one decoder each (update images share one)
    assert decoded > 100
    assert len(columns._CACHE) <= 9


def test_events_rows_text_lines_show_each_row_of_each_event_in_order():
    # The text listing formats rows straight from the decoded column lists; RowImages.rows() is
    # the row-wise view. Every line must show that row's images, columns in order, values quoted.
    from engine.listing.lines import row_lines as _row_lines
    from engine.render import quoted
    from engine.transactions import row_kind_name

    table_maps: dict[int, TableMap] = {}
    checked = 0
    for path in sorted((MULTISOURCE / "relay").glob("relay-bin-m*.0*")):
        for logged in read_file_events(path):
            event = logged.event
            if isinstance(event, TableMap):
                table_maps[event.table_id] = event
            elif isinstance(event, RowsEvent):
                images = decode_rows_event(event, table_maps[event.table_id])
                table = f"`{images.table_map.schema}`.`{images.table_map.table}`"
                expected = [
                    f"### {row_kind_name(images.kind)} {table} "
                    + " -> ".join(
                        "(" + ", ".join(f"{k}={quoted(v)}" for k, v in image.items()) + ")"
                        for image in (before, after)
                        if image is not None
                    )
                    for before, after in images.rows()
                ]
                assert _row_lines(images) == "".join(line + "\n" for line in expected)
                checked += len(expected)
    assert checked > 1000
