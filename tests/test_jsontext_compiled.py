"""The compiled JSON reader (engine/binlog/_jsontext.pyx) against the Python forms it stands for:
json_text(decode_json(document)), for documents MySQL writes and for bytes it never would."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.binlog import columns
from engine.binlog.columns import RowDecoder
from engine.binlog.constants import ColumnType, RowsKind
from engine.binlog.events import EventHeader, RowsEvent, TableMap
from engine.binlog.json_binary import decode_json, encode_json, json_text
from engine.binlog.json_binary.encoder import JsonValue

_jsontext = columns._json_text
pytestmark = pytest.mark.skipif(_jsontext is None, reason="the compiled JSON reader is not built")

HEADER = EventHeader(0, 30, 1, 0, 0, 0)


def python_text(document: bytes) -> str | None:
    """The Python forms' text, None where they refuse the document."""
    try:
        return json_text(decode_json(document))
    except ValueError:
        return None


def test_the_compiled_json_reader_is_built_and_current() -> None:
    # a missing or stale build falls back to Python silently elsewhere: here it shows
    assert _jsontext is not None


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.sampled_from([0, -1, 1 << 15, -(1 << 15) - 1, 1 << 31, -(1 << 31) - 1, (1 << 63) - 1, -(1 << 63)])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, 1e15, 1e16, 1e-5, 123456789012345678.0, 5e-324, 1.7976931348623157e308])
    | st.text(max_size=30)
    | st.text(st.characters(max_codepoint=0x40), max_size=10)  # control characters, quotes, '\'
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=6), inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_documents_mysql_writes_are_printed_as_the_python_forms_print_them(value: JsonValue) -> None:
    document = encode_json(value)
    assert _jsontext.json_document_text(document) == json_text(decode_json(document))


@settings(max_examples=3000, deadline=None)
@given(
    st.floats()
    | st.integers(-400, 400).map(lambda e: 10.0**e if -324 < e < 309 else 0.0)
    | st.integers().map(float)
)
def test_doubles_are_laid_out_as_mysqls_my_gcvt_lays_them_out(value: float) -> None:
    # the layout switches between fixed and exponent forms by digits and exponent: every one
    document = encode_json([value, -value])
    assert _jsontext.json_document_text(document) == json_text(decode_json(document))


def test_large_containers_inline_and_offset_values_and_every_number_type() -> None:
    # past 64 KB a container takes its large form (4-byte counts, offsets and inlined int32)
    big = {"text": "x" * 70_000, "numbers": [1, -2, 1 << 20, -(1 << 20), 1 << 40, (1 << 64) - 1, 2.5]}
    document = encode_json(big)
    assert document[0] == 0x01  # a large object
    assert _jsontext.json_document_text(document) == json_text(decode_json(document))
    # uint16 and uint32 scalars, which the encoder never writes: at an offset and inlined
    small_array = (
        bytes([0x02]) + struct.pack("<HH", 2, 4 + 2 * 3 + 4) + bytes([0x06]) + struct.pack("<H", 65535)
    )
    small_array += bytes([0x08]) + struct.pack("<H", 10) + struct.pack("<I", 4_000_000_000)
    assert _jsontext.json_document_text(small_array) == "[65535, 4000000000]" == python_text(small_array)
    assert _jsontext.json_document_text(b"") == "null" == json_text(decode_json(b""))


def test_opaque_values_and_keys_out_of_mysqls_order_are_left_to_python() -> None:
    from engine.binlog.json_binary.encoder import _json_layout

    # a DECIMAL inside JSON: an opaque value (type 0x0F), which only Python reads
    digits = bytes([0x80, 0x00, 0x0C])  # DECIMAL(5,2) 0.12 in MySQL's binary form
    opaque = bytes([0x0F, ColumnType.NEWDECIMAL, 2 + len(digits), 5, 2]) + digits
    assert json_text(decode_json(opaque)) == "0.12"
    assert _jsontext.json_document_text(opaque) is None
    # the same key twice: the Python decoder keeps one, as a dict does
    encoded = [(0x04, b"\x01"), (0x04, b"\x02")]
    twice = bytes([0x00]) + (_json_layout(["k", "k"], encoded, False) or b"")
    assert python_text(twice) == '{"k": false}'
    assert _jsontext.json_document_text(twice) is None
    backwards = bytes([0x00]) + (_json_layout(["bb", "a"], encoded, False) or b"")
    assert python_text(backwards) == '{"bb": true, "a": false}'
    assert _jsontext.json_document_text(backwards) is None


@st.composite
def damaged_documents(draw: st.DrawFn) -> bytes:
    document = bytearray(encode_json(draw(json_values)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(document) - 1))
        document[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        document = document[: draw(st.integers(0, len(document)))]
    return bytes(document)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged_documents() | st.binary(max_size=40))
def test_any_bytes_are_printed_as_python_prints_them_or_left_to_python(document: bytes) -> None:
    text = _jsontext.json_document_text(document)
    if text is not None:
        assert text == python_text(document)


def _json_rows_event(
    documents: list[bytes | None], length_bytes: int, cut: int = 0
) -> tuple[TableMap, RowsEvent]:
    table_map = TableMap(HEADER, 1, 0, "db", "t", (ColumnType.JSON,), (length_bytes,), (True,))
    data = b"".join(
        b"\x01" if d is None else b"\x00" + len(d).to_bytes(length_bytes, "little") + d for d in documents
    )
    data = data[: len(data) - cut]
    event = RowsEvent(HEADER, RowsKind.WRITE, 2, 1, 0, b"", 1, (True,), None, data)
    return table_map, event


def _decoded(table_map: TableMap, event: RowsEvent, compiled: bool) -> object:
    try:
        images = RowDecoder(table_map, event, compiled=compiled).decode(event, table_map)
    except ValueError as exc:
        return ("ValueError", str(exc))
    assert images.after is not None
    return images.after[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.none() | json_values.map(encode_json) | damaged_documents(), min_size=1, max_size=4),
    st.sampled_from([1, 2, 3, 4]),
    st.integers(0, 3),
)
def test_json_columns_decode_the_same_in_both_decoders(
    documents: list[bytes | None], length_bytes: int, cut: int
) -> None:
    documents = [d if d is None or len(d) < 1 << (8 * length_bytes) else d[:10] for d in documents]
    table_map, event = _json_rows_event(documents, length_bytes, cut)
    assert _decoded(table_map, event, True) == _decoded(table_map, event, False)


def test_a_json_column_with_an_opaque_value_is_read_by_python_in_the_compiled_decoder() -> None:
    value = {"price": Decimal("0.12")}
    digits = bytes([0x80, 0x00, 0x0C])
    opaque = bytes([ColumnType.NEWDECIMAL, 2 + len(digits), 5, 2]) + digits
    # {"price": <opaque DECIMAL>}: a small object, one key, its value at an offset
    head = struct.pack("<HH", 1, 4 + 4 + 3 + 5 + len(opaque))
    document = bytes([0x00]) + head + struct.pack("<HH", 11, 5) + bytes([0x0F]) + struct.pack("<H", 16)
    document += b"price" + opaque
    assert json_text(decode_json(document)) == json_text(value) == '{"price": 0.12}'
    table_map, event = _json_rows_event([document, encode_json([1, "a"])], 4)
    assert (
        _decoded(table_map, event, True)
        == ['{"price": 0.12}', '[1, "a"]']
        == _decoded(table_map, event, False)
    )
