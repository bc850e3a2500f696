"""The compiled decoders of GTID, TABLE_MAP, rows and XID events against the Python ones.

Every such event of every bundled relay log goes through both forms, then generated bodies:
well-formed ones (every rows event type and post-header length, GTIDs with and without their
optional fields) and damaged ones (cut short, inconsistent lengths, arbitrary bytes). Same
events, same errors.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.binlog import events
from engine.binlog.constants import ROWS_EVENT_TYPES, EventType
from engine.binlog.events import DECODERS, gtid, query, rows
from engine.binlog.events.base import DecodeContext, EventHeader
from engine.binlog.reader import read_file_events
from engine.errors import BinlogError

from .test_framing_compiled import bundled_logs

ROOT = Path(__file__).resolve().parent.parent
COMPILED = events.COMPILED_DECODERS or {}
compiled_only = pytest.mark.skipif(not COMPILED, reason="the compiled decoders are not built")
# each compiled decoder, the Python one it stands for, and the event types it decodes
PAIRS = {
    "rows": (rows.decode_rows, tuple(ROWS_EVENT_TYPES)),
    "gtid": (gtid.decode_gtid, (EventType.GTID, EventType.ANONYMOUS_GTID)),
    "maria_gtid": (gtid.decode_maria_gtid, (EventType.MARIADB_GTID,)),
    "table_map": (rows.decode_table_map, (EventType.TABLE_MAP,)),
    "xid": (query.decode_xid, (EventType.XID,)),
}


def test_the_compiled_decoders_are_built_and_used() -> None:
    assert set(COMPILED) == set(PAIRS)
    for name, (_, codes) in PAIRS.items():
        assert all(DECODERS[code] is COMPILED[name] for code in codes)


def outcome(decode, header: EventHeader, body: bytes, ctx: DecodeContext) -> object:
    try:
        return decode(header, body, ctx)
    except Exception as exc:  # the same exception, same words, is what is compared
        return (type(exc).__name__, str(exc))


@compiled_only
def test_every_event_of_the_bundled_logs_decodes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    compared = []

    def both(name: str):  # type: ignore[no-untyped-def]
        fast, python = COMPILED[name], PAIRS[name][0]

        def decode(header: EventHeader, body: bytes, ctx: DecodeContext) -> object:
            # the Python decoder first: a table map it decodes is what the C form must then find
            expected = outcome(python, header, body, ctx)
            assert outcome(fast, header, body, ctx) == expected, (header, body.hex())
            compared.append(header.type_code)
            return fast(header, body, ctx)

        return decode

    for name, (_, codes) in PAIRS.items():
        for code in codes:
            monkeypatch.setitem(DECODERS, code, both(name))
    for path in bundled_logs():
        try:
            for _ in read_file_events(path):
                pass
        except BinlogError:  # the deliberately damaged fixtures: their rows events before it count
            pass
    # the fixtures hold v1 and v2 rows events of each kind, MySQL and MariaDB GTIDs
    assert len(compared) > 1000
    assert {EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS} <= set(compared)
    assert {EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_V1} <= set(compared)
    assert {EventType.GTID, EventType.ANONYMOUS_GTID, EventType.MARIADB_GTID} <= set(compared)
    assert {EventType.TABLE_MAP, EventType.XID} <= set(compared)


def context(type_code: int, post: int | None) -> DecodeContext:
    """A format description giving the event type `post` bytes of post-header (None: unlisted)."""
    lengths = [0] * (type_code if post is not None else type_code - 1)
    if post is not None:
        lengths[type_code - 1] = post
    return DecodeContext(post_header_lengths=tuple(lengths))


@st.composite
def rows_bodies(draw: st.DrawFn) -> tuple[EventHeader, bytes, DecodeContext]:
    type_code = draw(st.sampled_from(sorted(ROWS_EVENT_TYPES)))
    _, version, _ = ROWS_EVENT_TYPES[type_code]
    post = draw(st.sampled_from([6, 8, 10, None, 0, 4, 12]))
    width = draw(st.integers(0, 300))
    nbytes = (width + 7) // 8
    body = struct.pack("<IHH", draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 0xFFFF)), 1)
    if post == 6:
        body = body[:6]
    if version == 2 and draw(st.booleans()):
        extra = draw(st.binary(max_size=8))
        declared = draw(st.sampled_from([len(extra) + 2, 0, 1, len(extra) + 5]))
        body += struct.pack("<H", declared) + extra
    elif version == 2:
        body += b"\x02\x00"
    body += bytes([width]) if width < 251 else b"\xfc" + struct.pack("<H", width)
    all_set = draw(st.booleans())
    for _ in range(2):
        body += b"\xff" * nbytes if all_set else draw(st.binary(min_size=nbytes, max_size=nbytes))
    body += draw(st.binary(max_size=24))
    cut = draw(st.none() | st.integers(0, len(body)))
    if cut is not None:
        body = body[:cut]
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.binary(max_size=40))
    header = EventHeader(0, type_code, 1, 19 + len(body), 0, 0)
    return header, body, context(type_code, post)


@compiled_only
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_bodies())
def test_generated_rows_events_decode_the_same(case: tuple[EventHeader, bytes, DecodeContext]) -> None:
    header, body, ctx = case
    assert outcome(COMPILED["rows"], header, body, ctx) == outcome(rows.decode_rows, header, body, ctx)


@st.composite
def gtid_bodies(draw: st.DrawFn) -> bytes:
    """MySQL GTID bodies: flags, source id, GNO, then each optional field present or not."""
    sid = draw(st.sampled_from([bytes(16), bytes(range(16)), b"\xab" * 16]))
    body = (
        bytes([draw(st.integers(0, 255))]) + sid + struct.pack("<q", draw(st.integers(-(2**63), 2**63 - 1)))
    )
    if draw(st.booleans()):
        body += bytes([draw(st.sampled_from([2, 2, 1]))]) + draw(st.binary(min_size=16, max_size=16))
    if draw(st.booleans()):
        stamp = draw(st.integers(0, 2**56 - 1))
        body += stamp.to_bytes(7, "little")
        if stamp >> 55 and draw(st.booleans()):
            body += draw(st.binary(min_size=7, max_size=7))
    if draw(st.booleans()):
        body += draw(
            st.sampled_from(
                [
                    bytes([draw(st.integers(0, 250))]),
                    b"\xfa",
                    b"\xfc\x00\x01",
                    b"\xfd\x01\x02\x03",
                    b"\xfb",
                    b"\xfe" + bytes(8),
                    b"\xff" + bytes(range(8)),
                    b"\xfd\x01",
                ]
            )
        )
    if draw(st.booleans()):
        version = draw(st.integers(0, 2**32 - 1))
        body += struct.pack("<I", version)
        if version >> 31 and draw(st.booleans()):
            body += draw(st.binary(min_size=4, max_size=4))
    body += draw(st.binary(max_size=10))
    cut = draw(st.none() | st.integers(0, len(body)))
    return body if cut is None else body[:cut]


@st.composite
def maria_gtid_bodies(draw: st.DrawFn) -> bytes:
    flags = draw(st.integers(0, 255))
    body = struct.pack("<QIB", draw(st.integers(0, 2**64 - 1)), draw(st.integers(0, 2**32 - 1)), flags)
    if flags & 2:
        body += struct.pack("<Q", draw(st.integers(0, 2**64 - 1)))
    tail = draw(st.integers(0, 3))
    if tail == 0:
        body += draw(st.binary(max_size=24))
    elif tail == 1:
        body += b"\0" * max(0, 19 - len(body))  # the zero padding MariaDB writes
    cut = draw(st.none() | st.integers(0, len(body)))
    return body if cut is None else body[:cut]


def _other_bodies(draw: st.DrawFn) -> tuple[EventHeader, bytes, DecodeContext]:
    name = draw(st.sampled_from(["gtid", "maria_gtid", "xid", "table_map"]))
    code = draw(st.sampled_from(PAIRS[name][1]))
    if name == "gtid":
        body = draw(gtid_bodies())
    elif name == "maria_gtid":
        body = draw(maria_gtid_bodies())
    else:
        body = draw(st.binary(max_size=40))
    header = EventHeader(0, code, draw(st.integers(0, 2**32 - 1)), 19 + len(body), 0, 0)
    post = draw(st.sampled_from([None, 8, 6, 300])) if name == "table_map" else None
    ctx = context(code, post)
    if draw(st.booleans()):
        ctx.is_mariadb = True
    return header, body, ctx


@compiled_only
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_gtid_table_map_and_xid_events_decode_the_same(data: st.DataObject) -> None:
    header, body, ctx = _other_bodies(data.draw)
    name = next(n for n, (_, codes) in PAIRS.items() if header.type_code in codes)
    python = PAIRS[name][0]
    expected = outcome(python, header, body, ctx)
    assert outcome(COMPILED[name], header, body, ctx) == expected
    if name == "table_map" and not isinstance(expected, tuple):
        # decoded once, a table map is shared: the C form finds the very object
        assert COMPILED[name](header, body, ctx) is python(header, body, ctx)
