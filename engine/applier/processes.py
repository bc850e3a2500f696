"""The process pool: worker processes prepare segments of a channel's relay log side by side, the
channel's applier applies what they prepared in source order.

Why processes: reading, assembling and decoding a relay log is Python work, and Python threads
take turns on one interpreter lock, so a pool of threads only overlaps DuckDB's share of the work
(measured: every thread-pool configuration was slower on the MariaDB capture than the single
applier). Processes run that work on every core. Applying stays in the applier's thread, on the
one DuckDB writer, in source order: each prepared run's net change per table is a few set-based
statements, which DuckDB runs on all cores itself. Committing in source order means commit order
is always preserved and no gaps can arise, whatever the parallel type asks for: the dependencies
every scheduler computes are satisfied by the source order.

The pool forks its processes from the applier's thread when its first segment is submitted.
Not spawned: a spawned process imports the program's main module again, which a script using
the engine need not be written for. A forked process holds copies of whatever other threads had
locked at that moment, so it touches nothing but what it was given: it never uses DuckDB, and it
builds its Arrow arrays with the C library's allocator, which forking leaves usable (pyarrow's
default allocator does not promise that). It leaves with os._exit, running no finalizers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future

from ..errors import RelayLogGap
from ..relaylog.continuity import Continuity
from ..relaylog.index import RelayLogSet
from ..relaylog.segments import Segment, plan_segments
from ..transactions import Position
from .prepare import PreparedSegment, prepare_segment

# Transactions per segment: enough that a segment's DuckDB statements and commit are a small
# share of applying it, few enough that every process gets several segments of a relay log.
SEGMENT_TRANSACTIONS = 4000
# ... or this many bytes, whichever comes first: a bulk load's few large transactions cost as
# much to prepare per byte as small ones (measured: 4,000 OLTP transactions, 6.7 MB, 0.21 s; 500
# bulk inserts, 12 MB, 0.33 s)
SEGMENT_BYTES = 6 << 20
FIRST_SEGMENT_FRACTION = 8
SEGMENTS_AHEAD_PER_WORKER = 2  # measured: 1 leaves the applier waiting more often


def _start_worker() -> None:
    import pyarrow as pa

    from ..gc_tuning import relax_garbage_collector

    pa.set_memory_pool(pa.system_memory_pool())
    relax_garbage_collector()  # measured: the collector otherwise doubles a segment's preparation


class SegmentPool:
    """Worker processes preparing segments; `workers` of them, started on first use."""

    def __init__(
        self, workers: int, segment_transactions: int | None = None, segment_bytes: int | None = None
    ) -> None:
        # loaded here, by the pool only: multiprocessing is not needed by every applier's start
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("fork")
        self.workers = workers
        self.segment_transactions = segment_transactions or SEGMENT_TRANSACTIONS
        self.segment_bytes: int | None = segment_bytes or SEGMENT_BYTES
        self.ahead = workers * SEGMENTS_AHEAD_PER_WORKER + 1  # segments in flight at most
        self._executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker)

    def submit(self, segment: Segment) -> Future[PreparedSegment]:
        return self._executor.submit(prepare_segment, segment, self.segment_transactions)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


ReadOn = Callable[[str, int], Iterator[list[object]]]


def prepared_chunks(
    logs: RelayLogSet,
    start_file: str | None,
    start_pos: int,
    pool: SegmentPool,
    read_on: ReadOn,
    continuity: Continuity | None = None,
) -> Iterator[list[object]]:
    """The relay log from (start_file, start_pos) as the single applier's reader gives it, except
    that runs of row-only transactions come as PreparedRun. Up to pool.ahead segments are in
    flight; those already prepared when the applier asks come in one chunk, so that the applier
    can apply their runs together.

    read_on(file, pos): the ordinary reader from a position; a segment that met bad input hands
    over to it there, so the error is reported exactly as the ordinary reader reports it. So does
    a segment whose process failed otherwise: what it held is read and applied the ordinary way.

    continuity: the check of the stream before start_pos. Each worker checks its segment; here
    each segment's start is checked against the end of the one before, so the whole stream is
    checked as one reader checks it, and a discontinuity stops it after what precedes it.
    """
    in_flight: deque[tuple[Segment, Future[PreparedSegment]]] = deque()
    # a short first segment: the applier has nothing to do until one is prepared
    first = max(1, pool.segment_transactions // FIRST_SEGMENT_FRACTION)
    segment_bytes = pool.segment_bytes
    segments = plan_segments(
        logs,
        start_file,
        start_pos,
        pool.segment_transactions,
        first,
        segment_bytes,
        segment_bytes // FIRST_SEGMENT_FRACTION if segment_bytes else None,
    )
    planned = True

    def refill() -> None:
        nonlocal planned
        while planned and len(in_flight) < pool.ahead:
            segment = next(segments, None)
            if segment is None:
                planned = False
            else:
                in_flight.append((segment, pool.submit(segment)))

    def taken() -> PreparedSegment | Position:
        """The oldest segment prepared, or where it starts if its process failed."""
        segment, future = in_flight.popleft()
        try:
            return future.result()
        except Exception:  # a defect or a lost process, not bad input (that comes as resume_at)
            return Position(segment.files[0].name, segment.start_pos)

    try:
        refill()
        while in_flight:
            ready = [taken()]
            while in_flight and in_flight[0][1].done() and isinstance(ready[-1], PreparedSegment):
                ready.append(taken())
            # before the applier takes this chunk, not after: the workers keep busy meanwhile
            refill()
            items: list[object] = []
            for prepared in ready:
                if isinstance(prepared, Position):
                    # its process failed: the ordinary reader reads and applies the segment itself
                    yield items
                    yield from read_on(prepared.log_name, prepared.pos)
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
        for _, future in in_flight:
            future.cancel()
        segments.close()
