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
