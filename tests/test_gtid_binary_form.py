"""MySQL's binary form of a GTID set, as a replica sends it in COM_BINLOG_DUMP_GTID: what
GtidSet.encode writes, GtidSet.decode and the Previous_gtids decoder (held to MySQL's own files in
test_public_fixture_values.py) read back, tagged or not; and the mysql::serialization varints and
strings a tag is written with."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.binlog.events.base import DecodeContext, EventHeader
from engine.binlog.events.gtid import decode_previous_gtids
from engine.binlog.serialization import read_string, read_varlen_unsigned, string_bytes, varlen_unsigned_bytes
from engine.gtids import GtidSet, Sid

_uuids = st.sampled_from(
    [
        "3e11fa47-71ca-11e1-9e33-c80aa9429562",
        "4f22fb58-82db-22f2-0f44-d91bb0530673",
        "00000000-0000-0000-0000-000000000001",
    ]
)
# MySQL's tags: a letter or underscore, then up to 31 letters, digits or underscores ('' untagged)
_tags = st.one_of(st.just(""), st.from_regex(r"[a-z_][a-z0-9_]{0,31}", fullmatch=True))
_ranges = st.lists(st.tuples(st.integers(1, 2**40), st.integers(0, 50)), min_size=1, max_size=4)
_sets = st.dictionaries(st.builds(Sid, _uuids, _tags), _ranges, max_size=5).map(
    lambda spec: GtidSet({sid: [(lo, lo + span) for lo, span in ranges] for sid, ranges in spec.items()})
)


@given(_sets)
def test_a_set_decodes_to_itself_and_the_previous_gtids_decoder_reads_it_alike(gtids):
    encoded = gtids.encode()
    assert GtidSet.decode(encoded) == gtids
    header = EventHeader(0, 35, 1, 19 + len(encoded), 0, 0)
    assert decode_previous_gtids(header, encoded, DecodeContext()).gtid_set == gtids


@given(_sets)
def test_only_a_set_with_a_tag_takes_the_tagged_form(gtids):
    encoded = gtids.encode()
    sids = [sid for sid, ranges in gtids.intervals().items() if ranges]
    tagged = any(sid.tag for sid in sids)
    intervals = sum(len(ranges) for ranges in gtids.intervals().values())
    tag_bytes = sum(len(string_bytes(sid.tag)) for sid in sids) if tagged else 0
    assert len(encoded) == 8 + 24 * len(sids) + 16 * intervals + tag_bytes
    head = int.from_bytes(encoded[:8], "little")
    assert head == (1 | len(sids) << 8 | 1 << 56 if tagged else len(sids))


@given(st.integers(0, 2**64 - 1))
def test_a_varint_reads_back_in_the_fewest_bytes(value):
    written = varlen_unsigned_bytes(value)
    assert read_varlen_unsigned(written, 0) == (value, len(written))
    fewest = next((n for n in range(1, 9) if value < 1 << (7 * n)), 9)
    assert len(written) == fewest


@given(st.text(max_size=40))
def test_a_string_reads_back(text):
    written = string_bytes(text) + b"after"
    assert read_string(written, 0, 200) == (text, len(written) - len(b"after"))


def test_a_varint_past_64_bits_is_refused():
    with pytest.raises(ValueError):
        varlen_unsigned_bytes(2**64)
    with pytest.raises(ValueError):
        varlen_unsigned_bytes(-1)


def test_a_tag_longer_than_mysql_allows_is_not_read_as_one():
    too_long = GtidSet.parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:" + "t" * 33 + ":1")
    with pytest.raises(ValueError, match="tag"):
        GtidSet.decode(too_long.encode())
