"""`relaydeck events`: the events of relay logs listed as SHOW RELAYLOG EVENTS lists them, read
serially or formatted in parallel by the preparing stage's local processes (engine/pool).

Formatting events (above all --rows) is Python work, so the parallel listing cuts the stream into
segments at GTID events and formats each in a worker process (task.py); the lines come back and
are written in stream order, and they are the serial listing's, byte for byte. Where a segment
cannot be formatted on its own, it is read here in its turn, as the serial listing reads it:

- bad input or a gap in it (or a worker that failed): read here with the check of the whole
  stream before it, so the error is reported where and as the serial listing reports it, after
  the same lines;
- a gap at its start (Continuity.follows disagrees): likewise;
- a rows event whose table map comes from an earlier segment: the serial listing takes over from
  that segment's start, after reading the stream before it again for its table maps.

`--limit` lists serially: the listing stops after N events, and so must the reading (an error
past the limit is not reported).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator

from ..binlog.events import RowsEvent, TableMap
from ..binlog.reader import LoggedEvent, ReaderState
from ..errors import RelayLogGap
from ..pool import make_executor
from ..pool.ahead import in_order
from ..relaylog.continuity import Continuity, checked
from ..relaylog.index import RelayLogSet
from ..relaylog.segments import Segment, plan_segments
from ..relaylog.stream import stream_events
from .lines import TEXT_HEADER, EarlierTableMapNeeded, ListingOptions, format_events
from .task import ListedSegment, ListingTask, list_segment, stream_check

__all__ = ["ListingOptions", "list_events"]

# Segments small enough that two processes finish together (the last one is the tail nobody
# shares) and the first lines come soon, large enough that a segment's start-up is negligible.
SEGMENT_TRANSACTIONS = 1000
SEGMENT_BYTES = 2 << 20


def list_events(
    inputs: list[RelayLogSet],
    from_pos: int,
    options: ListingOptions,
    write: Callable[[str], None],
    limit: int | None = None,
    jobs: int = 1,
) -> None:
    """The listing of each input in turn (from `from_pos` of the first), given to write() a few
    thousand lines at a time; an error (a typed RelaydeckError naming file and position) is
    raised after everything before it is written. jobs > 1: formatted by that many processes."""
    pending: list[str] = [] if options.as_json else [TEXT_HEADER]

    def flush() -> None:
        write("".join(pending))
        pending.clear()

    try:
        resume = None
        if jobs > 1 and limit is None:
            resume = _in_parallel(inputs, from_pos, options, pending, flush, jobs)
            if resume is None:
                return
        _serially(inputs, from_pos, options, pending, flush, limit, resume)
    finally:
        flush()


_Resume = tuple[int, str, int]  # (input number, relay file name, position)
# _in_parallel's answer for a stream too short to share: the serial listing lists all of it
_FROM_THE_START: _Resume = (0, "", -1)


def _input_start(inputs: list[RelayLogSet], number: int, from_pos: int) -> tuple[str | None, int]:
    if number == 0 and from_pos > 4:
        return inputs[0].files[0].name, from_pos
    return None, from_pos if number == 0 else 4


def _input_events(inputs: list[RelayLogSet], number: int, from_pos: int) -> Iterator[LoggedEvent]:
    """One input's events, checked for continuity as the applier checks them."""
    logs = inputs[number]
    start_file, start_pos = _input_start(inputs, number, from_pos)
    continuity = Continuity()
    continuity.starting_in(logs.files[0], start_pos)
    return checked(
        stream_events(logs, start_file=start_file, start_pos=start_pos, state=ReaderState()), continuity
    )


def _serially(
    inputs: list[RelayLogSet],
    from_pos: int,
    options: ListingOptions,
    pending: list[str],
    flush: Callable[[], None],
    limit: int | None,
    resume: _Resume | None,
) -> None:
    """The serial listing; from `resume` on when given (the events before it are read, not listed)."""
    table_maps: dict[int, TableMap] = {}
    events: Iterator[LoggedEvent]
    if resume is None or resume is _FROM_THE_START:
        events = itertools.chain.from_iterable(
            _input_events(inputs, number, from_pos) for number in range(len(inputs))
        )
    else:
        events = _resumed(inputs, from_pos, resume, table_maps)
    format_events(events, options, table_maps, pending, flush, limit)


def _resumed(
    inputs: list[RelayLogSet], from_pos: int, resume: _Resume, table_maps: dict[int, TableMap]
) -> Iterator[LoggedEvent]:
    """The stream from `resume` on, after reading what comes before it for its table maps."""
    at_input, name, pos = resume
    for number in range(len(inputs)):
        events = _input_events(inputs, number, from_pos)
        if number == at_input:
            for logged in events:
                if logged.pos == pos and logged.log_name == name:
                    yield logged
                    break
                _keep_table_map(logged, table_maps)
        elif number < at_input:
            for logged in events:
                _keep_table_map(logged, table_maps)
            continue
        yield from events


def _keep_table_map(logged: LoggedEvent, table_maps: dict[int, TableMap]) -> None:
    event = logged.event
    if not isinstance(event, RowsEvent) and isinstance(event, TableMap):
        table_maps[event.table_id] = event


def _in_parallel(
    inputs: list[RelayLogSet],
    from_pos: int,
    options: ListingOptions,
    pending: list[str],
    flush: Callable[[], None],
    jobs: int,
) -> _Resume | None:
    """The listing formatted by `jobs` processes; where the serial listing must go on instead
    (see the module's docstring), None when it is done."""
    planned: deque[tuple[int, Segment]] = deque()  # (input number, segment), as submitted

    def plan() -> Iterator[Segment]:
        for number, logs in enumerate(inputs):
            start_file, start_pos = _input_start(inputs, number, from_pos)
            for segment in plan_segments(
                logs, start_file, start_pos, SEGMENT_TRANSACTIONS, None, SEGMENT_BYTES
            ):
                planned.append((number, segment))
                yield segment

    segments = plan()
    first = list(itertools.islice(segments, 2))
    if len(first) < 2:
        return _FROM_THE_START  # one segment: starting processes would cost more than they share
    executor = make_executor("processes", jobs)
    results = in_order(executor, ListingTask(options), itertools.chain(first, segments))
    mapped: set[int] = set()  # tables mapped in the stream before the segment at hand
    continuity: Continuity | None = None  # the check of the stream before it
    try:
        for result in results:
            number, segment = planned.popleft()
            if segment.number == 0:
                continuity = None  # a new input: checked from its start
            if isinstance(result, ListedSegment) and not result.stopped:
                if mapped.intersection(result.unmapped):
                    return (number, *segment.start)
                check = result.continuity
                assert check is not None
                try:
                    joined = check if continuity is None else continuity.follows(check.entry, check)  # type: ignore[arg-type]
                except RelayLogGap:
                    pass  # read here: the gap is reported after the lines before it
                else:
                    continuity = joined
                    pending.append(result.text)
                    flush()
                    mapped.update(result.table_ids)
                    continue
            try:
                continuity = _list_here(segment, options, continuity, mapped, pending)
            except EarlierTableMapNeeded:
                return (number, *segment.start)
            flush()
    finally:
        results.close()
        executor.close()
    return None


def _list_here(
    segment: Segment,
    options: ListingOptions,
    continuity: Continuity | None,
    mapped: set[int],
    pending: list[str],
) -> Continuity:
    """The segment read in this process with the check of the stream before it; its lines go to
    `pending` (up to an error, which is raised). The check after it."""
    check = stream_check(segment, continuity)
    table_maps: dict[int, TableMap] = {}
    lines: list[str] = []
    try:
        list_segment(segment, options, check, table_maps, lines, mapped_before=mapped)
    except EarlierTableMapNeeded:
        raise  # listed serially from this segment's start instead: its lines so far are dropped
    except BaseException:
        pending.extend(lines)
        raise
    pending.extend(lines)
    mapped.update(table_maps)
    return check
