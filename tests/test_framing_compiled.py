"""The compiled event loop of the reader against its pure-Python twin: same events, same errors.

Every bundled relay log, read whole and from later positions, then damaged copies of one (bytes
flipped, files cut short), read with and without partial_tail_ok.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.binlog import reader
from engine.binlog.reader import BinlogFile, ReaderState
from engine.errors import BinlogError

from .conftest import MULTISOURCE

ROOT = Path(__file__).resolve().parent.parent
compiled_only = pytest.mark.skipif(reader._framing is None, reason="the compiled reader loop is not built")


def test_the_compiled_reader_loop_is_built_and_current() -> None:
    assert reader._framing is not None


def read(path: Path, compiled: bool, start: int = 4, partial_tail_ok: bool = False) -> object:
    """Every event read, the error that ended the reading (if any), and the state left behind."""
    saved = reader._framing
    if not compiled:
        reader._framing = None
    events: list[object] = []
    error = None
    state = ReaderState()
    try:
        with BinlogFile(path) as binlog:
            for logged in binlog.events(state, start=start, partial_tail_ok=partial_tail_ok):
                events.append(logged)
    except BinlogError as exc:
        error = (type(exc).__name__, str(exc))
    finally:
        reader._framing = saved
    return events, error, (state.source_log_file, state.ignored_events, state.read_pos, state.read_file)


def bundled_logs() -> list[Path]:
    return [
        path
        for path in sorted((ROOT / "fixtures").rglob("*"))
        if path.is_file() and path.suffix[1:].isdigit() and path.read_bytes()[:4] == b"\xfebin"
    ]


@compiled_only
@pytest.mark.parametrize("path", bundled_logs(), ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_every_bundled_log_reads_the_same_in_both_forms(path: Path) -> None:
    whole = read(path, True)
    assert whole == read(path, False)
    events = whole[0]
    assert isinstance(events, list)
    if len(events) > 2:  # from an event boundary in the middle: the walk to it is the same too
        middle = events[len(events) // 2].pos
        assert read(path, True, start=middle) == read(path, False, start=middle)


SAMPLE = MULTISOURCE / "relay" / "relay-bin-m2.000002"
SAMPLE_STARTS = [logged.pos for logged in read(SAMPLE, False)[0]]  # type: ignore[union-attr]


@compiled_only
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flips=st.lists(st.tuples(st.integers(4, 10**9), st.integers(1, 255)), max_size=3),
    cut=st.none() | st.integers(4, 10**9),
    partial_tail_ok=st.booleans(),
)
def test_damaged_logs_fail_the_same_way_in_both_forms(
    tmp_path_factory: pytest.TempPathFactory,
    flips: list[tuple[int, int]],
    cut: int | None,
    partial_tail_ok: bool,
) -> None:
    data = bytearray(SAMPLE.read_bytes())
    for offset, mask in flips:
        data[offset % len(data)] ^= mask
    if cut is not None:
        data = data[: 4 + cut % (len(data) - 4)]
    path = tmp_path_factory.mktemp("damaged") / SAMPLE.name
    path.write_bytes(bytes(data))
    compiled = read(path, True, partial_tail_ok=partial_tail_ok)
    assert compiled == read(path, False, partial_tail_ok=partial_tail_ok)
    # from a later event, or from the file's end (a walk for the format only): the headers
    # walked over before it, damaged or not, stop or pass both forms alike
    for start in (SAMPLE_STARTS[len(SAMPLE_STARTS) // 3], SAMPLE_STARTS[-1], len(data)):
        compiled = read(path, True, start=start, partial_tail_ok=partial_tail_ok)
        assert compiled == read(path, False, start=start, partial_tail_ok=partial_tail_ok)


def read_in_two(path: Path, compiled: bool) -> object:
    """A read cut short mid-file, then resumed from where it stopped with the same state."""
    saved = reader._framing
    if not compiled:
        reader._framing = None
    try:
        with BinlogFile(path) as binlog:
            state = ReaderState()
            first = list(binlog.events(state, stop=binlog.size // 2, partial_tail_ok=True))
            stopped_at = state.read_pos
            second = list(binlog.events(state, start=stopped_at, resume=True))
            return first, stopped_at, second, state.read_pos, state.source_log_file
    finally:
        reader._framing = saved


@compiled_only
def test_a_resumed_read_is_the_same_in_both_forms() -> None:
    split = 0
    for path in sorted((MULTISOURCE / "relay").glob("relay-bin-m*.0000[0-9][0-9]")):
        compiled = read_in_two(path, True)
        assert compiled == read_in_two(path, False)
        first, stopped_at, second, _, _ = compiled
        if first and second:
            assert stopped_at == first[-1].end_pos == second[0].pos
            split += 1
    assert split >= 3  # files with events on both sides of the cut


@compiled_only
@pytest.mark.parametrize("size", [0, 1, 18, 2**32 - 1])
@pytest.mark.parametrize("nth", [1, 5])
def test_a_header_that_does_not_frame_stops_the_walk_to_a_later_start_alike(
    tmp_path: Path, size: int, nth: int
) -> None:
    data = bytearray(SAMPLE.read_bytes())
    at = SAMPLE_STARTS[nth]
    data[at + 9 : at + 13] = size.to_bytes(4, "little")  # the event length of a header walked over
    path = tmp_path / SAMPLE.name
    path.write_bytes(bytes(data))
    for start in (SAMPLE_STARTS[-1], len(data)):
        compiled = read(path, True, start=start)
        assert compiled == read(path, False, start=start)
        assert compiled[1] is not None  # the walk stopped at the damaged header with an error
