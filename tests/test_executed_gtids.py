"""ExecutedGtids.add_all and GtidBatch: what adding the GTIDs one by one leaves, MariaDB's folded
per domain, MySQL's as ranges; GtidSet's intervals against a plain set of numbers."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.gtids import ExecutedGtids, GtidBatch, GtidSet, Sid

_maria = st.builds(
    lambda domain, server, seq: f"{domain}-{server}-{seq}",
    st.integers(0, 3),
    st.integers(1, 3),
    st.integers(1, 12),  # few values: equal seq_no from other servers, and going back, happen
)
_mysql = st.builds(
    lambda uuid, number: f"{uuid}:{number}",
    # the same source written in either case, and a tagged one (MySQL 8.3+)
    st.sampled_from(
        [
            "3e11fa47-71ca-11e1-9e33-c80aa9429562",
            "3E11FA47-71CA-11E1-9E33-C80AA9429562",
            "4f22fb58-82db-22f2-0f44-d91bb0530673",
            "4f22fb58-82db-22f2-0f44-d91bb0530673:Tag_1",
        ]
    ),
    st.integers(1, 10),  # few values: runs of consecutive numbers, gaps of one, repeats
)


@given(
    start=st.lists(st.one_of(_maria, _mysql), max_size=6),
    added=st.lists(st.one_of(_maria, _mysql), max_size=30),
)
def test_adding_all_at_once_leaves_what_adding_one_by_one_leaves(start, added):
    one_by_one = ExecutedGtids.parse(",".join(start))
    at_once = ExecutedGtids.parse(",".join(start))
    for gtid in added:
        one_by_one.add(gtid)
    at_once.add_all(added)
    assert str(at_once) == str(one_by_one)
    assert at_once.maria == one_by_one.maria  # the server of the GTID kept too, not only its seq_no
    for gtid in added:
        assert at_once.contains(gtid) == one_by_one.contains(gtid)


def test_a_malformed_gtid_is_refused_as_add_refuses_it():
    with pytest.raises(ValueError, match="malformed MariaDB GTID"):
        ExecutedGtids().add_all(["0-1-5", "0-1"])


@given(
    start=st.lists(st.one_of(_maria, _mysql), max_size=6),
    added=st.lists(st.one_of(_maria, _mysql), max_size=30),
    split=st.integers(0, 30),
)
def test_a_batch_checks_and_adds_what_its_gtids_one_by_one_would(start, added, split):
    executed = ExecutedGtids.parse(",".join(start))
    batch = GtidBatch()
    for gtid in added[:split]:
        batch.add(gtid)
    later = GtidBatch()
    for gtid in added[split:]:
        later.add(gtid)
    batch.extend(later)  # as two runs summed up
    assert batch.any_in(executed) == any(executed.contains(gtid) for gtid in added)
    one_by_one = ExecutedGtids.parse(",".join(start))
    for gtid in added:
        one_by_one.add(gtid)
    batch.add_to(executed)
    assert str(executed) == str(one_by_one)
    assert executed.maria == one_by_one.maria


_ranges = st.lists(st.tuples(st.integers(1, 60), st.integers(0, 8)), max_size=25)


@given(ranges=_ranges, probes=_ranges)
def test_a_gtid_sets_intervals_hold_exactly_the_numbers_added(ranges, probes):
    sid = Sid("3e11fa47-71ca-11e1-9e33-c80aa9429562")
    gtids, numbers = GtidSet(), set()
    for first, length in ranges:
        gtids.add_range(sid, first, first + length)
        numbers.update(range(first, first + length + 1))
    intervals = gtids.intervals()[sid] if numbers else []
    assert [n for lo, hi in intervals for n in range(lo, hi + 1)] == sorted(numbers)
    # sorted, disjoint and not adjacent: 1-3 and 4-5 are one interval
    assert all(hi + 1 < lo for (_, hi), (lo, _) in pairwise(intervals))
    for first, length in probes:
        assert gtids.overlaps(sid, first, first + length) == bool(
            numbers & set(range(first, first + length + 1))
        )
        assert gtids.contains(sid, first) == (first in numbers)
