"""Continuity.scanned takes the usual transaction (its GTID where the source's last event ended,
next in its domain) without building the GTID's facts. Whatever the state it meets, it must leave
the state, and raise the error, that checking the GTID (Continuity.gtid) and then each event's
source position one by one leaves: the definition the shortcut stands for."""

from __future__ import annotations

import copy
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import RelayLogGap
from engine.relaylog.continuity import Continuity, Entry, GtidFacts, _Open

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, size, log_pos, flags
MARIA_GTID, TABLE_MAP, WRITE_ROWS, XID = 162, 19, 30, 16
SOURCE = "source-bin.000001"
GTID_SIZE = 30


def event(type_code: int, size: int, log_pos: int) -> bytes:
    return HEADER.pack(0, type_code, 1, size, log_pos, 0) + bytes(size - HEADER.size)


def transaction(source_start: int, strays: list[int], gtid_logged: bool) -> bytes:
    """A GTID, a table map, rows events and an XID; strays: how far each event after the GTID
    logs its end past the contiguous one."""
    out = [event(MARIA_GTID, GTID_SIZE, source_start + GTID_SIZE if gtid_logged else 0)]
    end = source_start + GTID_SIZE
    kinds = [TABLE_MAP] + [WRITE_ROWS] * (len(strays) - 2) + [XID]
    for kind, stray in zip(kinds, strays, strict=True):
        end += 40 + stray
        out.append(event(kind, 40, end))
    return b"".join(out)


def by_definition(state: Continuity, data: bytes, domain: int, seq: int) -> None:
    """The GTID checked as gtid() checks it, then every other event's source position."""
    _, _, server_id, size, log_pos, _ = HEADER.unpack_from(data, 0)
    if server_id == state.relay_writer:
        return
    start = log_pos - size if log_pos else None
    state.gtid(
        GtidFacts(
            f"{domain}-{server_id}-{seq}", domain, seq, True, "relay-bin.000002", 0, SOURCE, start, log_pos
        )
    )
    at = size
    while at < len(data):
        _, type_code, _, size, log_pos, _ = HEADER.unpack_from(data, at)
        if log_pos and state.positions_logged and not state.skipping:
            state._source_event("relay-bin.000002", at, type_code, SOURCE, log_pos - size, log_pos)
        at += size
    state.open = None


def outcome(state: Continuity, check, data: bytes, seq: int) -> tuple[object, ...]:
    try:
        check(state, data, 0, seq)
    except RelayLogGap as exc:
        return ("gap", str(exc))
    entry = state.entry
    return (
        state.source_file,
        state.expected,
        state.resync,
        state.at_start,
        dict(state.last_seq),
        state.open,
        state.skipping,
        state.accepted,
        None if entry is None else (entry.first_gtid, dict(entry.domains), entry.started),
    )


def scanned(state: Continuity, data: bytes, domain: int, seq: int) -> None:
    state.scanned("relay-bin.000002", SOURCE, data, 0, len(data), domain, seq)


@settings(max_examples=500, deadline=None)
@given(
    source_start=st.integers(100, 1000),
    strays=st.lists(st.sampled_from([0, 0, 0, 0, 7, -7]), min_size=2, max_size=5),
    gtid_logged=st.sampled_from([True, True, False]),
    expected_off=st.sampled_from([0, 0, 0, 5, -5, None]),
    same_file=st.sampled_from([True, True, False]),
    last=st.sampled_from([6, 6, 6, 5, 7, None]),
    at_start=st.booleans(),
    resync=st.booleans(),
    entry=st.sampled_from([None, None, "started", "fresh"]),
    open_before=st.sampled_from([False, False, True]),
    positions_logged=st.sampled_from([True, True, False]),
    skipping=st.sampled_from([False, False, True]),
    let_past=st.booleans(),
)
def test_scanned_leaves_what_checking_its_gtid_and_events_leaves(
    source_start: int,
    strays: list[int],
    gtid_logged: bool,
    expected_off: int | None,
    same_file: bool,
    last: int | None,
    at_start: bool,
    resync: bool,
    entry: str | None,
    open_before: bool,
    positions_logged: bool,
    skipping: bool,
    let_past: bool,
) -> None:
    data = transaction(source_start, strays, gtid_logged)
    state = Continuity(
        source_file=SOURCE if same_file else "source-bin.000000",
        expected=None if expected_off is None else source_start + expected_off,
        resync=resync,
        at_start=at_start,
        positions_logged=positions_logged,
        skipping=skipping,
    )
    if last is not None:
        state.last_seq[0] = last
    if entry is not None:
        state.entry = Entry(started=entry == "started")
    if open_before:
        # a transaction left open by a receiver that reconnected: the next GTID may repeat it
        facts = GtidFacts("0-1-7", 0, 7, True, "relay-bin.000001", 4, SOURCE, source_start, source_start + 30)
        state.open = _Open(facts, True, reconnected=True)
    if let_past:
        state.accept = lambda: True
    accept, state.accept = state.accept, None
    other = copy.deepcopy(state)
    state.accept = other.accept = accept
    assert outcome(state, scanned, data, 7) == outcome(other, by_definition, data, 7)
    # and the transaction after it, on whatever state each left
    if state.expected is not None:
        following = transaction(state.expected, [0, 0, 0], True)
        assert outcome(state, scanned, following, 8) == outcome(other, by_definition, following, 8)


def test_a_gap_inside_a_transaction_names_the_transaction_cut_off() -> None:
    """The GTID follows (the shortcut's case), a rows event does not: the error names the open
    transaction, as the check one event at a time words it."""
    data = transaction(1000, [0, 9, 0], True)
    state = Continuity(source_file=SOURCE, expected=1000, at_start=False)
    state.last_seq[0] = 6
    got = outcome(state, scanned, data, 7)
    assert got[0] == "gap"
    assert str(got[1]).endswith(
        "events of source-bin.000001 from 1070 to 1079 are missing; transaction 0-1-7 is cut off"
    )
