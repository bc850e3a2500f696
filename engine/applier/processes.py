"""The relay log as prepared segments: runs of row-only transactions prepared by the pool's
executor (engine/pool), everything else as the ordinary reader reads it, in stream order."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import RelayLogGap
from ..pool import Executor
from ..pool.ahead import SEGMENTS_AHEAD_PER_WORKER, SegmentPipeline, TaskFailed
from ..relaylog.continuity import Continuity
from ..relaylog.index import RelayLogSet
from ..relaylog.segments import plan_segments
from .prepare import PrepareTask
from .prepared import PreparedSegment

# Transactions per segment: enough that a segment's DuckDB statements and commit are a small
# share of applying it, few enough that every process gets several segments of a relay log.
SEGMENT_TRANSACTIONS = 4000
# ... or this many bytes, whichever comes first: a bulk load's few large transactions cost as
# much to prepare per byte as small ones (measured: 4,000 OLTP transactions, 6.7 MB, 0.21 s; 500
# bulk inserts, 12 MB, 0.33 s)
SEGMENT_BYTES = 6 << 20
FIRST_SEGMENT_FRACTION = 8

ReadOn = Callable[[str, int], Iterator[list[object]]]


def prepared_chunks(
    logs: RelayLogSet,
    start_file: str | None,
    start_pos: int,
    executor: Executor,
    read_on: ReadOn,
    continuity: Continuity | None = None,
    task: PrepareTask | Callable[[], PrepareTask] | None = None,
    segment_transactions: int | None = None,
    segment_bytes: int | None = None,
    ahead: Callable[[], int | None] | None = None,
) -> Iterator[list[object]]:
    """The relay log from (start_file, start_pos) as the ordinary reader gives it, except that
    runs of row-only transactions come as PreparedRun. Segments already prepared when the caller
    asks come in one chunk, so that the caller can apply their runs together.

    read_on(file, pos): the ordinary reader from a position; a segment that met bad input hands
    over to it there, so the error is reported exactly as the ordinary reader reports it. So does
    a segment whose task failed otherwise: what it held is read the ordinary way.

    task: what each segment is prepared with, or a function giving the one to use for the next
    segment submitted (the keys of the writesets change with the slave's definitions).

    ahead: how many segments to keep in flight from now on, asked before each refill (None: the
    executor's default).

    continuity: the check of the stream before start_pos. Each task checks its segment; here
    each segment's start is checked against the end of the one before, so the whole stream is
    checked as one reader checks it, and a discontinuity stops it after what precedes it.
    """
    segment_transactions = segment_transactions or SEGMENT_TRANSACTIONS
    segment_bytes = segment_bytes or SEGMENT_BYTES
    current_task = task if callable(task) else None
    first_task = current_task() if current_task is not None else task or PrepareTask(segment_transactions)
    # a short first segment: the applier has nothing to do until one is prepared
    segments = plan_segments(
        logs,
        start_file,
        start_pos,
        segment_transactions,
        max(1, segment_transactions // FIRST_SEGMENT_FRACTION),
        segment_bytes,
        segment_bytes // FIRST_SEGMENT_FRACTION if segment_bytes else None,
        spread_over=executor.workers,
    )
    pipeline: SegmentPipeline[PreparedSegment] = SegmentPipeline(
        executor, first_task, segments, ahead() if ahead is not None else None
    )
    default_ahead = executor.workers * SEGMENTS_AHEAD_PER_WORKER + 1
    try:
        while pipeline:
            ready = [pipeline.take()]
            while pipeline.ready() and isinstance(ready[-1], PreparedSegment):
                ready.append(pipeline.take())
            # before the applier takes this chunk, not after: the executor keeps busy meanwhile
            if current_task is not None:
                pipeline.task = current_task()
            if ahead is not None:
                pipeline.ahead = ahead() or default_ahead
            pipeline.refill()
            items: list[object] = []
            for prepared in ready:
                if isinstance(prepared, TaskFailed):
                    # the ordinary reader reads the segment itself
                    yield items
                    name, pos = prepared.segment.start
                    yield from read_on(name, pos)
                    return
                checked = prepared.continuity
                if continuity is not None and checked is not None and checked.entry is not None:
                    try:
                        continuity = continuity.follows(checked.entry, checked)
                    except RelayLogGap:
                        yield items
                        raise
                items.extend(prepared.items)
                if prepared.gap is not None:
                    yield items
                    raise RelayLogGap(*prepared.gap)
                if prepared.resume_at is not None:
                    # bad input in this segment: the ordinary reader goes on from where it stopped
                    yield items
                    yield from read_on(prepared.resume_at.log_name, prepared.resume_at.pos)
                    return
            yield items
    finally:
        pipeline.close()
