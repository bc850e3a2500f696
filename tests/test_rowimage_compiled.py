"""The compiled row-image decoder against the generated-Python one: the same values, the same errors.

Every rows event of the bundled relay logs, then random table shapes with row images that are
well-formed (any bytes inside each value: zero dates, bad fractions, invalid UTF-8) or arbitrary.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.binlog import columns
from engine.binlog.columns import RowDecoder
from engine.binlog.constants import BINARY_CHARSET, ColumnType, RowsKind
from engine.binlog.events import EventHeader, RowsEvent, TableMap
from engine.binlog.events.rows import real_type
from engine.binlog.reader import read_file_events
from engine.binlog.values import decimal_size
from engine.errors import BinlogError

ROOT = Path(__file__).resolve().parent.parent


def test_the_compiled_decoder_is_built_and_current() -> None:
    # ./dev.sh builds it; a missing compiler or a stale build falls back to Python silently
    # elsewhere, so this is where such a fallback shows.
    assert columns.COMPILED_ROW_DECODER


def typed(values: list[object]) -> list[tuple[str, str]]:
    # Decimal('1.0') == Decimal('1.00') and 1 == 1.0 == True: compare the exact type and repr
    return [(type(v).__name__, repr(v)) for v in values]


def outcome(table_map: TableMap, event: RowsEvent, compiled: bool) -> object:
    try:
        images = RowDecoder(table_map, event, compiled=compiled).decode(event, table_map)
    except ValueError as exc:
        return ("ValueError", "malformed" in str(exc) or "past its event" in str(exc) or str(exc))
    return (
        images.kind,
        images.count,
        None if images.before is None else {i: typed(v) for i, v in images.before.items()},
        None if images.after is None else {i: typed(v) for i, v in images.after.items()},
    )


def bundled_relay_logs() -> list[Path]:
    files = [
        path
        for path in sorted((ROOT / "fixtures").rglob("*"))
        if path.is_file() and path.suffix[1:].isdigit() and path.read_bytes()[:4] == b"\xfebin"
    ]
    assert files, "no relay logs under fixtures/"
    return files


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@pytest.mark.parametrize("path", bundled_relay_logs(), ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_every_bundled_rows_event_decodes_the_same_in_both_forms(path: Path) -> None:
    maps: dict[int, TableMap] = {}
    try:
        for logged in read_file_events(path):
            event = logged.event
            if isinstance(event, TableMap):
                maps[event.table_id] = event
            elif isinstance(event, RowsEvent) and event.table_id in maps:
                table_map = maps[event.table_id]
                assert outcome(table_map, event, True) == outcome(table_map, event, False), logged.pos
    except BinlogError:
        pass  # the bad-input samples: what precedes the damage is compared


# -- random table shapes --------------------------------------------------------------------

HEADER = EventHeader(0, 30, 1, 0, 0, 0)
CHARSETS = [None, BINARY_CHARSET, 33, 45, 8]  # not logged, binary, utf8, utf8mb4, latin1


@st.composite
def column(draw: st.DrawFn) -> tuple[int, int, bool, int | None]:
    """(type code, metadata, unsigned, charset) of one column, metadata in and out of range."""
    t = draw(
        st.sampled_from(
            [
                ColumnType.TINY,
                ColumnType.SHORT,
                ColumnType.INT24,
                ColumnType.LONG,
                ColumnType.LONGLONG,
                ColumnType.FLOAT,
                ColumnType.DOUBLE,
                ColumnType.YEAR,
                ColumnType.DATE,
                ColumnType.DATETIME2,
                ColumnType.TIMESTAMP2,
                ColumnType.TIME2,
                ColumnType.NEWDECIMAL,
                ColumnType.VARCHAR,
                ColumnType.STRING,
                ColumnType.BLOB,
                ColumnType.BIT,
                ColumnType.TIMESTAMP,
                ColumnType.DATETIME,
                ColumnType.ENUM,
                ColumnType.SET,
            ]
        )
    )
    if t in (ColumnType.ENUM, ColumnType.SET):
        # logged as STRING, the real type in the metadata's first byte; 3 and 5-9 bytes are
        # sizes no server writes (Python reads them its own way)
        size = draw(st.integers(1, 3) if t == ColumnType.ENUM else st.integers(1, 9))
        return ColumnType.STRING, t << 8 | size, draw(st.booleans()), draw(st.sampled_from(CHARSETS))
    if t in (ColumnType.DATETIME2, ColumnType.TIMESTAMP2, ColumnType.TIME2):
        meta = draw(st.integers(0, 7))
    elif t == ColumnType.NEWDECIMAL:
        precision = draw(st.integers(1, 65))
        meta = precision << 8 | draw(st.integers(0, min(precision, 30)))
    elif t == ColumnType.VARCHAR:
        meta = draw(st.sampled_from([1, 10, 255, 256, 1000]))
    elif t == ColumnType.STRING:
        meta = ColumnType.STRING << 8 | draw(st.sampled_from([1, 20, 200, 255]))
    elif t == ColumnType.BLOB:
        meta = draw(st.integers(0, 5))
    elif t == ColumnType.BIT:
        meta = draw(st.integers(0, 7)) << 8 | draw(st.integers(0, 8))
    else:
        meta = 0
    return t, meta, draw(st.booleans()), draw(st.sampled_from(CHARSETS))


def value_size(t: int, meta: int) -> int | None:
    """Bytes of a fixed-size value; None for length-prefixed ones."""
    if real_type(t, meta) in (ColumnType.ENUM, ColumnType.SET):
        return meta & 0xFF
    fixed = {
        ColumnType.TINY: 1,
        ColumnType.SHORT: 2,
        ColumnType.INT24: 3,
        ColumnType.LONG: 4,
        ColumnType.LONGLONG: 8,
        ColumnType.FLOAT: 4,
        ColumnType.DOUBLE: 8,
        ColumnType.YEAR: 1,
        ColumnType.DATE: 3,
        ColumnType.TIMESTAMP: 4,
        ColumnType.DATETIME: 8,
    }
    if t in fixed:
        return fixed[t]
    if t == ColumnType.DATETIME2:
        return 5 + (meta + 1) // 2
    if t == ColumnType.TIMESTAMP2:
        return 4 + (meta + 1) // 2
    if t == ColumnType.TIME2:
        return 3 + (meta + 1) // 2
    if t == ColumnType.NEWDECIMAL:
        return decimal_size(meta >> 8, meta & 0xFF)
    if t == ColumnType.BIT:
        return (meta & 0xFF) + (1 if meta >> 8 else 0)
    return None


@st.composite
def value_bytes(draw: st.DrawFn, t: int, meta: int) -> bytes:
    size = value_size(t, meta)
    if size is not None:
        return draw(st.binary(min_size=size, max_size=size))
    content = draw(st.binary(max_size=40) | st.text(max_size=20).map(lambda s: s.encode()))
    if t == ColumnType.BLOB:
        width = meta or 4
        if width > 4:
            return draw(st.binary(max_size=12))
        return len(content).to_bytes(width, "little") + content
    max_len = meta if t == ColumnType.VARCHAR else meta & 0xFF
    return len(content).to_bytes(2 if max_len > 255 else 1, "little") + content


@st.composite
def member_names(
    draw: st.DrawFn, cols: list[tuple[int, int, bool, int | None]], kind: int
) -> tuple[tuple[str, ...] | None, ...] | None:
    if not draw(st.booleans()):
        return None
    names = st.lists(st.text(max_size=4), max_size=70).map(tuple)
    return tuple(draw(names) if real_type(t, meta) == kind else None for t, meta, _, _ in cols)


@st.composite
def rows_case(draw: st.DrawFn) -> tuple[TableMap, RowsEvent]:
    cols = draw(st.lists(column(), min_size=1, max_size=6))
    kind = draw(st.sampled_from([RowsKind.WRITE, RowsKind.UPDATE, RowsKind.DELETE]))
    width = len(cols)
    present = tuple(draw(st.lists(st.booleans(), min_size=width, max_size=width)))
    present_after = (
        tuple(draw(st.lists(st.booleans(), min_size=width, max_size=width)))
        if kind == RowsKind.UPDATE
        else None
    )
    table_map = TableMap(
        HEADER,
        table_id=1,
        flags=0,
        schema="db",
        table="t",
        column_types=tuple(c[0] for c in cols),
        column_meta=tuple(c[1] for c in cols),
        nullable=(True,) * width,
        signedness=tuple(c[2] for c in cols),
        charsets=tuple(c[3] for c in cols),
        mariadb=draw(st.booleans()),
        raw_metadata_key=draw(st.binary(min_size=8, max_size=8)),
        # the member names, where the table map logs them (MySQL's full row metadata): up to 70,
        # past the 64 bits a SET has
        enum_values=draw(member_names(cols, ColumnType.ENUM)),
        set_values=draw(member_names(cols, ColumnType.SET)),
    )

    def image(flags: tuple[bool, ...]) -> bytes:
        chosen = [c for c, on in zip(cols, flags, strict=True) if on]
        nulls = [draw(st.booleans()) for _ in chosen]
        bitmap = sum(1 << k for k, null in enumerate(nulls) if null).to_bytes(
            (len(chosen) + 7) // 8, "little"
        )
        return bitmap + b"".join(
            draw(value_bytes(c[0], c[1])) for c, null in zip(chosen, nulls, strict=True) if not null
        )

    if draw(st.booleans()):
        data = b"".join(
            image(present) + (image(present_after) if present_after is not None else b"")
            for _ in range(draw(st.integers(1, 3)))
        )
        if draw(st.integers(0, 9)) == 0:
            data = data[: draw(st.integers(0, len(data)))]  # cut short somewhere
    else:
        data = draw(st.binary(max_size=60))
    event = RowsEvent(
        HEADER,
        kind=kind,
        version=2,
        table_id=1,
        flags=0,
        extra_data=b"",
        column_count=width,
        columns_before=present,
        columns_after=present_after,
        rows_data=data,
    )
    return table_map, event


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_case())
def test_random_row_images_decode_the_same_in_both_forms(case: tuple[TableMap, RowsEvent]) -> None:
    table_map, event = case
    assert outcome(table_map, event, True) == outcome(table_map, event, False)


def into_outcome(table_map: TableMap, event: RowsEvent, compiled: bool) -> object:
    """decode_into with an UPDATE's images sharing lists, laid out as decode() would give them."""
    decoder = RowDecoder(table_map, event, compiled=compiled)
    first = [c.index for c, on in zip(decoder.columns, event.columns_before, strict=False) if on]
    second = [c.index for c, on in zip(decoder.columns, event.columns_after or (), strict=False) if on]
    two = event.kind == RowsKind.UPDATE
    shared = two and first == second
    lists = {i: [] for i in first}
    outs = [lists[i] for i in first] + (
        [lists[i] for i in second] if shared else [[] for _ in second] if two else []
    )
    try:
        count = decoder.decode_into(event, table_map, outs)
    except ValueError as exc:
        return ("ValueError", "malformed" in str(exc) or "past its event" in str(exc) or str(exc))
    if not two:
        image = {i: typed(lists[i]) for i in first}
        return (
            (event.kind, count, None, image)
            if event.kind == RowsKind.WRITE
            else (event.kind, count, image, None)
        )
    if shared:  # before, after, before, after … in each list
        return (
            event.kind,
            count,
            {i: typed(lists[i][0::2]) for i in first},
            {i: typed(lists[i][1::2]) for i in second},
        )
    after = dict(zip(second, outs[len(first) :], strict=True))
    return (event.kind, count, {i: typed(lists[i]) for i in first}, {i: typed(after[i]) for i in second})


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_case(), st.booleans())
def test_decoding_into_the_callers_lists_gives_the_same_rows(
    case: tuple[TableMap, RowsEvent], compiled: bool
) -> None:
    table_map, event = case
    assert into_outcome(table_map, event, compiled) == outcome(table_map, event, compiled)


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
def test_the_compiled_form_reads_the_common_types_itself() -> None:
    # Not everything handed back to Python: integers, strings and DATETIME2 have C readers.
    from engine.binlog import _rowimage

    cols = (ColumnType.LONG, ColumnType.VARCHAR, ColumnType.DATETIME2, ColumnType.NEWDECIMAL)
    table_map = TableMap(
        HEADER, 1, 0, "db", "t", cols, (0, 100, 0, 10 << 8 | 2), (True,) * 4, charsets=(None, 33, None, None)
    )
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 4, (True,) * 4, None, b"")
    ops = [columns._compiled_op(columns._CodeGen(), c) for c in columns.table_columns(table_map)]
    assert [op for op, _, _ in ops] == [
        _rowimage.OPCODES["i32"],
        _rowimage.OPCODES["string"],
        _rowimage.OPCODES["datetime2"],
        _rowimage.OPCODES["decimal"],
    ]
    # a DECIMAL wider than 128 bits, and JSON, are read by Python
    wide = TableMap(
        HEADER, 1, 0, "db", "t", (ColumnType.NEWDECIMAL, ColumnType.JSON), (39 << 8 | 2, 4), (True,) * 2
    )
    assert [columns._compiled_op(columns._CodeGen(), c)[0] for c in columns.table_columns(wide)] == [
        _rowimage.OPCODES["python"],
        _rowimage.OPCODES["python"],
    ]
    row = b"\x00" + (7).to_bytes(4, "little", signed=True) + b"\x02hi" + bytes.fromhex("99b2c8a000")
    row += bytes.fromhex("800000000c")  # DECIMAL(10,2) 0.12
    images = RowDecoder(table_map, event, compiled=True).decode(
        RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 4, (True,) * 4, None, row), table_map
    )
    assert images.after is not None
    assert [images.after[i][0] for i in range(4)][:2] == [7, "hi"]
    assert images.after[3] == [Decimal("0.12")]


def test_time2_bit_enum_and_set_are_read_in_c_with_the_values_python_gives() -> None:
    from datetime import timedelta

    from engine.binlog import _rowimage
    from engine.binlog.column_types import time2_bytes

    string = ColumnType.STRING
    types = (ColumnType.TIME2, ColumnType.TIME2, ColumnType.BIT, string, string, string, string)
    meta = (
        0,
        3,
        2 << 8 | 1,
        ColumnType.ENUM << 8 | 1,
        ColumnType.SET << 8 | 1,
        ColumnType.ENUM << 8 | 2,
        ColumnType.SET << 8 | 2,
    )
    names = ("small", "medium", "large")
    table_map = TableMap(
        HEADER, 1, 0, "db", "t", types, meta, (True,) * 7,
        enum_values=(None, None, None, names, None, None, None),
        set_values=(None, None, None, None, names, None, None),
    )  # fmt: skip
    ops = [columns._compiled_op(columns._CodeGen(), c)[0] for c in columns.table_columns(table_map)]
    opcodes = _rowimage.OPCODES
    # the last ENUM and SET have no names logged: their numbers, as unsigned integers
    assert ops == [
        opcodes["time2"], opcodes["time2"], opcodes["bit"], opcodes["enum_text"], opcodes["set_text"],
        opcodes["u16"], opcodes["u16"],
    ]  # fmt: skip
    rows = [
        (timedelta(hours=-838, minutes=-59, seconds=-59), timedelta(seconds=-1, microseconds=1000), 0x1FF, 3, 5, 0, 0xFFFF),
        (timedelta(hours=12, minutes=3), timedelta(hours=838, microseconds=999000), 0, 0, 0, 700, 6),
        (timedelta(0), timedelta(microseconds=-999000), 1, 4, 0xFF, 1, 1),
    ]  # fmt: skip
    data = b"".join(
        b"\x00" + time2_bytes(a, 0) + time2_bytes(b, 3) + bit.to_bytes(2, "big") + bytes([enum, members])
        + number.to_bytes(2, "little") + set_bits.to_bytes(2, "little")
        for a, b, bit, enum, members, number, set_bits in rows
    )  # fmt: skip
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 7, (True,) * 7, None, data)
    compiled = RowDecoder(table_map, event, compiled=True).decode(event, table_map)
    python = RowDecoder(table_map, event, compiled=False).decode(event, table_map)
    assert compiled.after is not None and python.after is not None
    for i in range(7):
        assert typed(compiled.after[i]) == typed(python.after[i])
    assert compiled.after[0] == [r[0] for r in rows] and compiled.after[1] == [r[1] for r in rows]
    assert compiled.after[2] == [0x1FF, 0, 1]
    assert compiled.after[3] == ["large", "", ""]  # 0 and past the last member: ''
    assert compiled.after[4] == ["small,large", "", "small,medium,large"]
    assert compiled.after[5] == [0, 700, 1] and compiled.after[6] == [0xFFFF, 6, 1]


# -- decoding into Arrow's layout (ColumnBuffer) ----------------------------------------------


def _shared_outs(decoder: RowDecoder, event: RowsEvent) -> tuple[list, bool]:  # type: ignore[type-arg]
    """The decoder's column buffers as decode_into takes them (an UPDATE's images sharing them),
    or None when the event's images hold different columns."""
    two = event.kind == RowsKind.UPDATE
    if two and event.columns_before != event.columns_after:
        return [], False
    buffers = decoder.column_buffers()
    assert buffers is not None
    return buffers + buffers if two else buffers, True


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_case(), st.booleans(), st.data())
def test_decoding_into_column_buffers_gives_the_values_and_arrays_lists_give(
    case: tuple[TableMap, RowsEvent], python_reader: bool, data: st.DataObject
) -> None:
    import pyarrow as pa

    table_map, event = case
    compiled = RowDecoder(table_map, event, compiled=True)
    outs, comparable = _shared_outs(compiled, event)
    if not comparable:
        return
    # the Python decoder appends its values one by one: a buffer takes them as well
    decoder = RowDecoder(table_map, event, compiled=False) if python_reader else compiled
    lists: list[list[object]] = [[] for _ in outs]
    if event.kind == RowsKind.UPDATE:
        half = len(outs) // 2
        lists = lists[:half] + lists[:half]
    try:
        expected_count = decoder.decode_into(event, table_map, lists)
    except ValueError:
        with pytest.raises(ValueError):
            decoder.decode_into(event, table_map, outs)
        return
    assert decoder.decode_into(event, table_map, outs) == expected_count
    present = [c for c, on in zip(compiled.columns, event.columns_before, strict=False) if on]
    for buffer, values, info in zip(outs, lists, present, strict=False):
        assert typed(list(buffer[:])) == typed(values)
        assert len(buffer) == len(values)
        if type(buffer) is list:
            continue
        arrow_type = info.arrow_type()
        try:
            expected = pa.array(values, type=arrow_type)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            with pytest.raises((pa.ArrowException, ValueError, TypeError, OverflowError)):
                buffer.to_arrow(arrow_type)
        else:
            assert buffer.to_arrow(arrow_type).equals(expected)
        integers = buffer.integers()
        if integers is not None:
            assert integers.equals(pa.array(values, type=pa.int64()))
        # a transaction taken back: the values from some point on dropped
        keep = data.draw(st.integers(0, len(values)))
        del buffer[keep:]
        assert typed(list(buffer[:])) == typed(values[:keep]) and len(buffer) == keep
        if not buffer.as_objects:
            assert buffer.to_arrow(arrow_type).equals(pa.array(values[:keep], type=arrow_type))


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
def test_integers_and_utf8_text_go_into_buffers_other_values_stay_objects() -> None:
    cols = (ColumnType.LONG, ColumnType.VARCHAR, ColumnType.VARCHAR, ColumnType.VARCHAR, ColumnType.DOUBLE)
    table_map = TableMap(
        HEADER,
        1,
        0,
        "db",
        "t",
        cols,
        (0, 100, 100, 100, 8),
        (True,) * 5,
        charsets=(None, 45, BINARY_CHARSET, 8, None),
    )
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 5, (True,) * 5, None, b"")
    buffers = RowDecoder(table_map, event, compiled=True).column_buffers()
    assert buffers is not None
    kinds = [b.kind if type(b) is not list else None for b in buffers]
    from engine.binlog import _rowimage

    assert kinds == [
        _rowimage.BUFFER_KINDS["integers"],
        _rowimage.BUFFER_KINDS["text"],  # utf8mb4
        _rowimage.BUFFER_KINDS["bytes"],  # binary
        None,  # latin1: decoded to str by Python's codec
        None,  # DOUBLE
    ]


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
def test_text_that_is_not_utf8_turns_the_buffer_into_python_values() -> None:
    from engine.binlog._rowimage import BUFFER_KINDS, ColumnBuffer

    buffer = ColumnBuffer(BUFFER_KINDS["text"])
    for value in ("a", None, "é€😀"):
        buffer.append(value)
    assert not buffer.as_objects
    buffer.append("x\udcff")  # a byte that was not UTF-8, kept as a lone surrogate
    assert buffer.as_objects
    assert buffer[:] == ["a", None, "é€😀", "x\udcff"]
    import pyarrow as pa

    with pytest.raises((pa.ArrowException, ValueError)):
        buffer.to_arrow(pa.string())  # refused as pa.array refuses it: the run goes back as read


# UTF-8 at its edges: the shortest and longest of each length, overlong forms, surrogates, beyond
# U+10FFFF, cut short, stray continuation bytes; and ASCII runs around them (read 8 bytes at a time)
UTF8_EDGES = [
    b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
    b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf",
    b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
    b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf8\x88\x80\x80\x80",
    b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3", b"\x80", b"\xbf", b"\xff", b"\xfe",
]  # fmt: skip


def _text_column_event(values: list[bytes]) -> tuple[TableMap, RowsEvent]:
    table_map = TableMap(HEADER, 1, 0, "db", "t", (ColumnType.VARCHAR,), (200,), (True,), charsets=(45,))
    rows = b"".join(b"\x00" + bytes([len(v)]) + v for v in values)
    return table_map, RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 1, (True,), None, rows)


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(st.sampled_from(UTF8_EDGES), st.binary(max_size=3), st.just(b"abcdefghij")), max_size=6
        ).map(b"".join),
        min_size=1,
        max_size=5,
    )
)
def test_text_buffers_take_exactly_the_bytes_pythons_utf8_decoder_takes(values: list[bytes]) -> None:
    values = [v[:200] for v in values]
    table_map, event = _text_column_event(values)
    decoder = RowDecoder(table_map, event, compiled=True)
    (buffer,) = decoder.column_buffers()  # type: ignore[misc]
    decoder.decode_into(event, table_map, [buffer])
    as_python = [v.decode("utf-8", "surrogateescape") for v in values]
    assert buffer[:] == as_python
    all_valid = all(_strict_utf8(v) for v in values)
    assert buffer.as_objects == (not all_valid)


def _strict_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@pytest.mark.parametrize("edge", UTF8_EDGES)
def test_each_utf8_edge_is_judged_as_python_judges_it(edge: bytes) -> None:
    for value in (edge, b"abcdefgh" + edge, edge + b"abcdefgh"):
        table_map, event = _text_column_event([value])
        decoder = RowDecoder(table_map, event, compiled=True)
        (buffer,) = decoder.column_buffers()  # type: ignore[misc]
        decoder.decode_into(event, table_map, [buffer])
        assert buffer.as_objects == (not _strict_utf8(value)), value
        assert buffer[:] == [value.decode("utf-8", "surrogateescape")]


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@pytest.mark.parametrize("cut", [b"\xe2\x82", b"\xf0\x9f\x98", b"\xf0\x9f", b"\xc3"])
def test_a_sequence_cut_short_at_the_end_of_a_value_is_not_completed_by_what_follows(cut: bytes) -> None:
    # the row's next column holds continuation bytes: the check must stop at the value's end
    table_map = TableMap(
        HEADER,
        1,
        0,
        "db",
        "t",
        (ColumnType.VARCHAR, ColumnType.SHORT),
        (200, 0),
        (True,) * 2,
        charsets=(45, None),
    )
    rows = b"\x00" + bytes([len(cut)]) + cut + b"\x80\xbf"
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 2, (True,) * 2, None, rows)
    decoder = RowDecoder(table_map, event, compiled=True)
    buffers = decoder.column_buffers()
    assert buffers is not None
    decoder.decode_into(event, table_map, buffers)
    assert buffers[0].as_objects
    assert buffers[0][:] == [cut.decode("utf-8", "surrogateescape")]
    assert buffers[1][:] == [-16512]  # 0xbf80 as a signed SMALLINT


def _decimal_column_event(
    precision: int, scale: int, images: list[bytes | None]
) -> tuple[TableMap, RowsEvent]:
    table_map = TableMap(
        HEADER, 1, 0, "db", "t", (ColumnType.NEWDECIMAL,), (precision << 8 | scale,), (True,)
    )
    rows = b"".join(b"\x01" if image is None else b"\x00" + image for image in images)
    return table_map, RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 1, (True,), None, rows)


@st.composite
def decimal_column(draw: st.DrawFn) -> tuple[int, int, list[Decimal | None]]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, min(precision, 30)))
    limit = 10**precision - 1
    unscaled = st.one_of(st.integers(-limit, limit), st.sampled_from([0, 1, -1, limit, -limit]))
    values = draw(st.lists(st.none() | unscaled.map(lambda n: Decimal(f"{n}e-{scale}")), max_size=8))
    return precision, scale, values


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=300, deadline=None)
@given(decimal_column())
def test_decimals_of_up_to_38_digits_go_into_arrows_decimal128_layout(
    column: tuple[int, int, list[Decimal | None]],
) -> None:
    import pyarrow as pa

    from engine.binlog.column_types import decimal_to_bin

    precision, scale, values = column
    images = [None if v is None else decimal_to_bin(v, precision, scale) for v in values]
    table_map, event = _decimal_column_event(precision, scale, images)
    expected = RowDecoder(table_map, event, compiled=False).decode(event, table_map).after[0]  # type: ignore[index]
    compiled = RowDecoder(table_map, event, compiled=True)
    assert typed(compiled.decode(event, table_map).after[0]) == typed(expected)  # type: ignore[index]
    (buffer,) = compiled.column_buffers()  # type: ignore[misc]
    compiled.decode_into(event, table_map, [buffer])
    assert not buffer.as_objects
    assert typed(buffer[:]) == typed(expected)
    arrow_type = pa.decimal128(precision, scale)
    assert buffer.to_arrow(arrow_type).equals(pa.array(expected, type=arrow_type))


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
def test_a_negative_zero_or_an_overfull_decimal_group_is_read_as_python_reads_it() -> None:
    from engine.binlog.column_types import decimal_to_bin

    # DECIMAL(12,2): 10 integral digits (one byte of 1 digit, then 4 bytes of 9), 2 after the point
    negative_zero = bytes(b ^ 0xFF for b in decimal_to_bin(Decimal(0), 12, 2))
    overfull = bytearray(decimal_to_bin(Decimal("5.25"), 12, 2))
    overfull[1:5] = (1_999_999_999).to_bytes(4, "big")  # a 4-byte group holds at most 999,999,999
    table_map, event = _decimal_column_event(
        12, 2, [decimal_to_bin(Decimal("-7.50"), 12, 2), negative_zero, bytes(overfull)]
    )
    expected = RowDecoder(table_map, event, compiled=False).decode(event, table_map).after[0]  # type: ignore[index]
    assert typed(expected[:2]) == typed([Decimal("-7.50"), Decimal("-0.00")])
    compiled = RowDecoder(table_map, event, compiled=True)
    assert typed(compiled.decode(event, table_map).after[0]) == typed(expected)  # type: ignore[index]
    (buffer,) = compiled.column_buffers()  # type: ignore[misc]
    compiled.decode_into(event, table_map, [buffer])
    assert buffer.as_objects  # the sign of a zero has no place in Arrow's layout
    assert typed(buffer[:]) == typed(expected)


# -- the rows as JSON text, straight from the row images (RowProgram.json_rows) -------------------

column_name = st.one_of(
    st.sampled_from(["id", "k", "c", 'quo"te', "back\\slash", "new\nline", "é", "\x7f", "\u202e", "\udcff"]),
    st.text(max_size=4),
)


def written_outcome(table_map: TableMap, event: RowsEvent, as_json: bool) -> tuple[object, object]:
    """(the rows as the Python forms write them from decoded values, as RowProgram writes them
    from the row images: json_rows, or text_rows), ValueError for either where it refuses them."""
    from engine.listing import lines
    from engine.render import quoted, value_json

    python_form = lines.rows_json if as_json else lines.row_lines
    try:
        expected: object = python_form(RowDecoder(table_map, event, compiled=False).decode(event, table_map))
    except ValueError:
        expected = ValueError
    decoder = RowDecoder(table_map, event, compiled=True)
    _, json_layout, text_layout = lines._layouts(decoder)
    program = decoder.compiled_program
    try:
        if as_json:
            if json_layout is None:  # a name given twice: json.dumps keeps one, as rows_json_of does
                assert len({c.name for c in decoder.columns}) < len(decoder.columns)
                return expected, expected
            got: object = program.json_rows(event.rows_data, *json_layout, value_json)
        else:
            head = lines._row_head(decoder.kind, table_map).encode("utf-8", "surrogatepass")
            got = program.text_rows(event.rows_data, head, *text_layout, quoted)
    except columns.ROW_IMAGE_FAULTS:
        got = ValueError  # rows_json_of and rows_lines_of then decode the Python way, which words it
    return expected, got


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_case(), data=st.data())
def test_random_row_images_are_written_as_the_python_forms_write_their_values(
    as_json: bool, case: tuple[TableMap, RowsEvent], data: st.DataObject
) -> None:
    import dataclasses

    table_map, event = case
    if data.draw(st.booleans()):
        width = len(table_map.column_types)
        names = data.draw(st.lists(column_name, min_size=width, max_size=width))
        table_map = dataclasses.replace(
            table_map, column_names=tuple(names), schema=data.draw(column_name), table=data.draw(column_name)
        )
    expected, got = written_outcome(table_map, event, as_json)
    assert got == expected


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),  # any character: C1 controls, format characters, separators...
            st.text(
                st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Zp", "Co", "Cn", "Lo"])
            ),
            st.sampled_from(
                ["it's", "back\\slash", "\x1b[31m", "caf\u00e9", "\u00a0", "\u200b", "\U0001f600"]
            ),
        ).map(lambda text: text.encode("utf-8", "surrogatepass")),
        min_size=1,
        max_size=5,
    )
)
def test_utf8_text_is_written_as_the_python_forms_write_it(values: list[bytes]) -> None:
    values = [v[:200] for v in values]  # a VARCHAR(200)'s one-byte length
    table_map, event = _text_column_event(values)
    for as_json in (True, False):
        expected, got = written_outcome(table_map, event, as_json)
        assert got == expected


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
@settings(max_examples=300, deadline=None)
@given(decimal_column())
def test_decimals_are_written_as_python_writes_their_decimal(
    column: tuple[int, int, list[Decimal | None]],
) -> None:
    from engine.binlog.column_types import decimal_to_bin

    precision, scale, values = column
    images = [None if v is None else decimal_to_bin(v, precision, scale) for v in values]
    table_map, event = _decimal_column_event(precision, scale, images)
    if not values:
        return  # no rows: nothing to write
    for as_json in (True, False):
        expected, got = written_outcome(table_map, event, as_json)
        assert got == expected


@pytest.mark.skipif(not columns.COMPILED_ROW_DECODER, reason="the compiled decoder is not built")
def test_rows_are_written_from_strings_integers_and_decimals_in_c_and_the_rest_through_python() -> None:
    from engine.binlog.column_types import decimal_to_bin
    from engine.listing import lines

    # INT, BIGINT UNSIGNED, VARCHAR (utf8mb4), DECIMAL(20,10), DOUBLE
    table_map = TableMap(
        HEADER, 1, 0, "db", "t",
        (ColumnType.LONG, ColumnType.LONGLONG, ColumnType.VARCHAR, ColumnType.NEWDECIMAL, ColumnType.DOUBLE),
        (0, 0, 200, 20 << 8 | 10, 8), (True,) * 5,
        signedness=(False, True, False, False, False), charsets=(None, None, 45, None, None),
        column_names=("id", "big", "note", "price", "ratio"),
    )  # fmt: skip
    text = 'tab\t"quoted" \\ \x01 é😀'.encode()
    row = (
        b"\x00"
        + (-5).to_bytes(4, "little", signed=True)
        + (2**64 - 1).to_bytes(8, "little")
        + bytes([len(text)]) + text
        + decimal_to_bin(Decimal("0.0000000001"), 20, 10)  # E notation in Python's str(): '1E-10'
        + bytes.fromhex("000000000000f83f")  # 1.5
    )  # fmt: skip
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 5, (True,) * 5, None, row)
    written = lines.rows_json_of(event, table_map)
    assert written == (
        '[{"after": {"id": -5, "big": 18446744073709551615, '
        '"note": "tab\\t\\"quoted\\" \\\\ \\u0001 é😀", "price": "1E-10", "ratio": 1.5}}]'
    )
    python = RowDecoder(table_map, event, compiled=False).decode(event, table_map)
    assert written == lines.rows_json(python)
    line = lines.rows_lines_of(event, table_map)
    assert line == (
        "### INSERT `db`.`t` (id=-5, big=18446744073709551615, "
        "note='tab\\x09\"quoted\" \\\\ \\x01 é😀', price=1E-10, ratio=1.5)\n"
    )
    assert line == lines.row_lines(python)
