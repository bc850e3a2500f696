"""The continuity check of a scanned transaction (Continuity.scanned) gives the same verdicts with
the compiled walk of its events' source positions (binlog/_framing.pyx) as with the Python loop:
the same error at the same event, the same state after it, and with gaps let past, the same
check from there on."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import RelayLogGap
from engine.relaylog import continuity
from engine.relaylog.continuity import Continuity

HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, size, log_pos, flags
MARIA_GTID, TABLE_MAP, WRITE_ROWS, XID = 162, 19, 30, 16
compiled_only = pytest.mark.skipif(continuity._framing is None, reason="the compiled walk is not built")


def test_the_compiled_walk_is_built_and_current() -> None:
    assert continuity._framing is not None


def event(type_code: int, size: int, log_pos: int) -> bytes:
    return HEADER.pack(0, type_code, 1, size, log_pos, 0) + bytes(size - HEADER.size)


# an event after the GTID: its type, its size, and how its logged end_log_pos strays from the
# contiguous one (0: contiguous; None: not logged, end_log_pos 0)
events_after_gtid = st.lists(
    st.tuples(
        st.sampled_from([TABLE_MAP, WRITE_ROWS, XID]),
        st.integers(19, 60),
        st.one_of(st.just(0), st.just(0), st.just(0), st.none(), st.integers(-30, 30)),
    ),
    min_size=1,
    max_size=8,
)


def transaction(
    source_start: int, after: list[tuple[int, int, int | None]], gtid_logged: bool = True
) -> bytes:
    gtid_size = 30
    out = [event(MARIA_GTID, gtid_size, source_start + gtid_size if gtid_logged else 0)]
    end = source_start + gtid_size
    for type_code, size, stray in after:
        if stray is None:
            out.append(event(type_code, size, 0))
            continue
        end += size + stray
        out.append(event(type_code, size, max(0, end)))
    return b"".join(out)


def check(
    compiled: bool,
    data: bytes,
    expected: int | None,
    resync: bool,
    let_past: bool,
    known_seq: int | None = None,
    then: tuple[int, int, list[tuple[int, int, int | None]]] = (1, 0, [(XID, 31, 0)]),
) -> list[object]:
    """What scanning the transaction (seq_no 7 of domain 0; known_seq: the domain's last one
    before it), then a next one leaves: the error, or the state the check goes on with, after
    each. `then`: how far the next one's seq_no is from 7, how far it starts from where the check
    expects it, and its events after the GTID."""
    saved = continuity._framing
    if not compiled:
        continuity._framing = None
    state = Continuity(source_file="source-bin.000001", expected=expected, at_start=False, resync=resync)
    if known_seq is not None:
        state.last_seq[0] = known_seq
    if let_past:
        state.accept = lambda: True
    seen: list[object] = []
    try:
        state.scanned("relay-bin.000002", "source-bin.000001", data, 0, len(data), 0, 7)
        seen.append((state.expected, state.resync, state.skipping, state.accepted, dict(state.last_seq)))
        seq_step, stray, after = then
        begins = (state.expected if state.expected is not None else 20_000) + stray
        following = transaction(max(4, begins), after)
        state.scanned("relay-bin.000002", "source-bin.000001", following, 0, len(following), 0, 7 + seq_step)
        seen.append((state.expected, state.resync, state.skipping, state.accepted, dict(state.last_seq)))
    except RelayLogGap as exc:
        seen.append(("gap", str(exc)))
    finally:
        continuity._framing = saved
    return seen


@compiled_only
@settings(max_examples=400, deadline=None)
@given(
    source_start=st.integers(4, 10_000),
    after=events_after_gtid,
    expected=st.one_of(st.none(), st.integers(0, 10_100)),
    gtid_logged=st.booleans(),
    resync=st.booleans(),
    let_past=st.booleans(),
    known_seq=st.one_of(st.none(), st.integers(4, 8)),
    then=st.tuples(st.sampled_from([1, 1, 1, 2, 0]), st.sampled_from([0, 0, 0, 9, -9]), events_after_gtid),
)
def test_scanned_transactions_get_the_same_verdicts_in_both_forms(
    source_start: int,
    after: list[tuple[int, int, int | None]],
    expected: int | None,
    gtid_logged: bool,
    resync: bool,
    let_past: bool,
    known_seq: int | None,
    then: tuple[int, int, list[tuple[int, int, int | None]]],
) -> None:
    """Two transactions in a row, the next one's seq_no next or not, starting where expected or
    not, with gaps of its own. resync (the receiver reconnected) still holds inside a transaction
    whose GTID logs no position: the events after it are checked under it."""
    data = transaction(source_start, after, gtid_logged)
    assert check(True, data, expected, resync, let_past, known_seq, then) == check(
        False, data, expected, resync, let_past, known_seq, then
    )


@compiled_only
def test_a_position_gap_inside_a_transaction_is_reported_at_its_event_in_both_forms() -> None:
    """A rows event that starts past where the table map before it ended: a gap at that event."""
    data = transaction(1000, [(TABLE_MAP, 40, 0), (WRITE_ROWS, 50, 25), (XID, 31, 0)])
    compiled = check(True, data, None, False, False)
    assert compiled == check(False, data, None, False, False)
    assert compiled[0][0] == "gap" and "at position 70" in compiled[0][1]
    # a table map may start later (MariaDB leaves out the Annotate_rows before it): no gap
    data = transaction(1000, [(TABLE_MAP, 40, 25), (WRITE_ROWS, 50, 0), (XID, 31, 0)])
    assert len(check(True, data, None, False, False)) == 2  # both scanned without a gap
