"""How a relay log is cut into segments for the preparing processes: whole transactions,
contiguous, and, near the end of the stream, smaller ones so that the processes finish together."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.generate import generate
from engine.relaylog.index import read_index
from engine.relaylog.segments import plan_segments, segment_events
from engine.relaylog.stream import stream_events

BOUND = 256 << 10  # bytes per segment, so that the log below makes a handful of them


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("oltp")
    return generate("oltp", 3, folder, 1.5).index_file


def _plan(index: Path, spread_over: int | None) -> list:
    return list(plan_segments(read_index(index), None, 4, 10**6, None, BOUND, None, spread_over))


def _sizes(segments: list) -> list[int]:
    return [sum(e.end_pos - e.pos for e in segment_events(s)) for s in segments]


@pytest.mark.parametrize("processes", [2, 3])
def test_segments_shrink_towards_the_end_and_still_hold_the_whole_stream(log, processes) -> None:
    plain, tapered = _plan(log, None), _plan(log, processes)
    assert len(tapered) > len(plain)
    sizes = _sizes(tapered)
    # full-size segments first, then shrinking ones
    assert max(sizes) <= max(_sizes(plain))
    assert sizes[-2] < BOUND / 2 and sizes[-3] < BOUND
    for before, after in zip(tapered, tapered[1:], strict=False):
        assert before.stop == after.start
    assert tapered[-1].stop is None
    whole = [(e.log_name, e.pos) for e in stream_events(read_index(log))]
    assert [(e.log_name, e.pos) for s in tapered for e in segment_events(s)] == whole


def test_one_process_gets_the_segments_it_always_got(log) -> None:
    assert [s.start for s in _plan(log, 1)] == [s.start for s in _plan(log, None)]


def test_a_segment_is_read_from_its_start_with_the_state_the_planner_walked_to_it(tmp_path) -> None:
    # The planner walks each file's headers once; a segment's reader goes on from the segment's
    # start and walks none of the headers before it again. Shown by damaging, after planning,
    # the bytes between a file's FORMAT_DESCRIPTION and the start of the last segment that ends
    # in it: those segments still read exactly the events of the whole stream, as it was.
    from .conftest import MULTISOURCE

    folder = tmp_path / "relay"
    folder.mkdir()
    for path in (MULTISOURCE / "relay").glob("relay-bin-m1.*"):
        (folder / path.name).write_bytes(path.read_bytes())
    index = folder / "relay-bin-m1.index"
    whole = [(e.log_name, e.pos, e.source_log_file, e.header) for e in stream_events(read_index(index))]
    segments = list(plan_segments(read_index(index), None, 4, 40))
    inside = [s for s in segments if s.start_pos > 4]
    assert len(inside) > 20
    for segment in inside:
        assert (segment.state.read_file, segment.state.read_pos) == (str(segment.files[0]), segment.start_pos)
    last_in_file = {s.files[0]: s for s in inside if s.stop is not None and s.stop[0] == s.files[0].name}
    assert len(last_in_file) >= 5
    for path, segment in last_in_file.items():
        data = bytearray(path.read_bytes())
        format_end = 4 + int.from_bytes(data[4 + 9 : 4 + 13], "little")
        data[format_end : segment.start_pos] = b"\xff" * (segment.start_pos - format_end)
        path.write_bytes(bytes(data))
    for segment in last_in_file.values():
        events = [(e.log_name, e.pos, e.source_log_file, e.header) for e in segment_events(segment)]
        first = whole.index(events[0])
        assert len(events) > 10 and events == whole[first : first + len(events)]
