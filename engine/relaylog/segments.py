"""A relay-log stream cut into segments of whole transactions that separate processes can read.

Cuts fall on GTID events: every transaction of a MySQL 5.7+/MariaDB 10+ log starts with one, so a
reader starting at a cut assembles exactly the transactions the whole stream has from there. Each
segment carries the reader state (format, source file name) walked to its start, so its reader
reads from there and walks no headers before it: the planner walks each file's headers once, and
a reader walking them again for every segment cost each segment's process ~1.3 ms and ~100 page
faults (10% of reading the full-size MariaDB capture in segments). A log without GTID events
gets no cuts: it is one segment.
"""

from __future__ import annotations

import copy
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..binlog.compiled import load
from ..binlog.constants import COMMON_HEADER_LEN, EventType
from ..binlog.reader import BinlogFile, LoggedEvent, ReaderState
from ..errors import BinlogError
from .index import RelayLogSet

_framing = load("_framing", package="engine.binlog")
GTID_EVENTS = (
    int(EventType.GTID),
    int(EventType.ANONYMOUS_GTID),
    int(EventType.GTID_TAGGED),
    int(EventType.MARIADB_GTID),
)
_SIZE = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class Segment:
    """Transactions from (files[0], start_pos) up to the event at `stop` (or the end of the stream)."""

    files: tuple[Path, ...]  # from the segment's first file to the end of the stream
    start_pos: int
    # walked to start_pos of files[0] (its read_file and read_pos say so: events(resume=True) reads
    # on from there); as it stood at the start of files[0] where that walk met bad input, which
    # the segment's reader then meets and reports itself
    state: ReaderState
    stop: tuple[str, int] | None  # (file name, position) of the next segment's first event
    number: int

    @property
    def start(self) -> tuple[str, int]:
        return (self.files[0].name, self.start_pos)


def transaction_starts(data: bytes, start: int, end: int) -> list[int]:
    """Where GTID events begin in [start, end), from the event headers alone."""
    if _framing is not None:
        return _framing.transaction_starts(data, start, end, GTID_EVENTS)
    out, pos = [], start
    while pos + COMMON_HEADER_LEN <= end:
        size = _SIZE.unpack_from(data, pos + 9)[0]
        if size < COMMON_HEADER_LEN or pos + size > end:
            break
        if data[pos + 4] in GTID_EVENTS:
            out.append(pos)
        pos += size
    return out


def plan_segments(
    logs: RelayLogSet,
    start_file: str | None,
    start_pos: int,
    transactions_per_segment: int,
    first_segment: int | None = None,
    bytes_per_segment: int | None = None,
    first_segment_bytes: int | None = None,
    spread_over: int | None = None,
) -> Iterator[Segment]:
    """Segments of about `transactions_per_segment` transactions from (start_file, start_pos), in
    stream order, yielded as soon as the next cut is known; the first one of `first_segment`
    transactions when given (whoever waits for the first segment waits less). With a byte bound
    a segment also ends at the first cut past that many bytes: bulk loads log few transactions
    of many rows, and a segment's cost follows its bytes as much as its transactions. Errors in
    the files (a bad header, a missing file) are left to the segments' readers, which report
    them where they are.

    spread_over: the number of processes preparing the segments. Near the end of the stream the
    byte bound shrinks to a share of what is left (see _tapered), so that the processes finish
    together and the last segment, which nobody shares, is a small one: a log of two segments
    would otherwise be prepared by one process while the other idles."""
    limit = first_segment or transactions_per_segment
    byte_limit = first_segment_bytes or bytes_per_segment
    before_file = 0  # bytes of the current segment in the files before the current one
    state = ReaderState()
    started = start_file is None
    current: tuple[int, int, ReaderState] | None = None  # (file index, position, state at file start)
    number = 0
    counted = 0
    files = logs.files
    left_after = _bytes_after_each(files) if spread_over and spread_over > 1 and bytes_per_segment else None

    def bound_from(bound: int | None, index: int, pos: int) -> int | None:
        """The byte bound of a segment starting at (files[index], pos)."""
        if left_after is None or bound is None:
            return bound
        return _tapered(bound, left_after[index] - pos, spread_over or 1)

    for index, path in enumerate(files):
        name = Path(path).name
        if not started and name != Path(start_file or "").name:
            _walk(path, state)
            continue
        first_in_stream = not started
        started = True
        pos = start_pos if first_in_stream else 4
        try:
            binlog = BinlogFile(path)
        except BinlogError:
            if current is None:
                current = (index, pos, copy.deepcopy(state))
            break  # the segment's reader meets the same error and reports it
        with binlog:
            walk = _Walk(binlog, state)
            if current is None:
                current = (index, pos, walk.state_at(pos))
                byte_limit = bound_from(byte_limit, index, pos)
            for cut in transaction_starts(binlog._data, pos, binlog.size):
                counted += 1
                first, first_pos, first_state = current
                in_segment = before_file + cut - (first_pos if first == index else 4)
                if counted <= limit and (byte_limit is None or in_segment < byte_limit):
                    continue
                counted = 1
                limit, before_file = transactions_per_segment, 0
                byte_limit = bound_from(bytes_per_segment, index, cut)
                if (first, first_pos) != (index, cut):
                    yield Segment(tuple(files[first:]), first_pos, first_state, (name, cut), number)
                    number += 1
                current = (index, cut, walk.state_at(cut))
            first, first_pos, _ = current
            before_file += binlog.size - (first_pos if first == index else 4)
            if not walk.to_end():
                break
    if current is not None:
        first, first_pos, first_state = current
        yield Segment(tuple(files[first:]), first_pos, first_state, None, number)


# The byte bound near the end of the stream: the bytes left over this many times the processes,
# and never below the full bound over this (a segment's own start-up stays negligible)
TAPER_SHARES_PER_PROCESS = 1
TAPER_FLOOR_FRACTION = 4


def _tapered(bound: int, left: int, processes: int) -> int:
    return min(bound, max(bound // TAPER_FLOOR_FRACTION, left // (TAPER_SHARES_PER_PROCESS * processes)))


def _bytes_after_each(files: tuple[Path, ...] | list[Path]) -> list[int]:
    """For each file, its size plus the sizes of the files after it, as they are now (a file
    that cannot be read counts as empty: its segment's reader reports it)."""
    sizes = []
    for path in files:
        try:
            sizes.append(os.path.getsize(path))
        except OSError:
            sizes.append(0)
    left, total = [], 0
    for size in reversed(sizes):
        total += size
        left.append(total)
    return left[::-1]


class _Walk:
    """Walks `state` over one file's headers, forward only: each segment's state is a copy of it
    at the segment's start."""

    def __init__(self, binlog: BinlogFile, state: ReaderState) -> None:
        self._binlog = binlog
        self.state = state
        self._at_file_start = copy.deepcopy(state)
        self._failed = False

    def state_at(self, pos: int) -> ReaderState:
        """A copy of the state walked to `pos` (an event boundary); at the file's start where the
        walk met bad input (the segment's reader walks again and reports it)."""
        if pos > 4 and not self._failed:
            try:
                for _ in self._binlog.events(self.state, start=pos, stop=pos, resume=True):
                    pass
            except BinlogError:
                self._failed = True
            else:
                self.state.read_pos = pos  # every event before pos is in the state
                return copy.deepcopy(self.state)
        return copy.deepcopy(self._at_file_start)

    def to_end(self) -> bool:
        """The state walked to the end of the file, as the next file starts with it; False when
        the file cannot be read (its segment's reader reports why)."""
        if self._failed:
            return False
        try:
            for _ in self._binlog.events(self.state, start=self._binlog.size, resume=True):
                pass
        except BinlogError:
            return False
        return True


def _walk(path: Path, state: ReaderState) -> None:
    """Read the headers of a file before the stream's start for the format and source file name
    it leaves behind (one that cannot be read leaves what it could)."""
    try:
        with BinlogFile(path) as binlog:
            _Walk(binlog, state).to_end()
    except BinlogError:
        pass


def segment_events(segment: Segment) -> Iterator[LoggedEvent]:
    """The segment's events as the whole stream's reader reads them, from its start to its stop."""
    state = copy.deepcopy(segment.state)  # the segment may be read again (by whoever planned it)
    stop_name, stop_pos = segment.stop if segment.stop is not None else (None, None)
    for index, path in enumerate(segment.files):
        with BinlogFile(path) as binlog:
            stop = stop_pos if binlog.name == stop_name else None
            # resume: the first file's state is walked to the segment's start (see Segment)
            yield from binlog.events(
                state, start=segment.start_pos if index == 0 else 4, stop=stop, resume=True
            )
            if stop is not None:
                return
