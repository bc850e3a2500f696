"""ExecutedGtids.add_all: what adding the GTIDs one by one leaves, MariaDB's folded per domain."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.gtids import ExecutedGtids

_maria = st.builds(
    lambda domain, server, seq: f"{domain}-{server}-{seq}",
    st.integers(0, 3),
    st.integers(1, 3),
    st.integers(1, 12),  # few values: equal seq_no from other servers, and going back, happen
)
_mysql = st.builds(
    lambda uuid, number: f"{uuid}:{number}",
    st.sampled_from(["3e11fa47-71ca-11e1-9e33-c80aa9429562", "4f22fb58-82db-22f2-0f44-d91bb0530673"]),
    st.integers(1, 30),
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
