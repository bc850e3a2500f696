"""Segments of a relay log prepared ahead by an executor, handed back in stream order."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Generic, TypeVar

from ..relaylog.segments import Segment
from .executors import Executor, SegmentTask

R = TypeVar("R")

SEGMENTS_AHEAD_PER_WORKER = 2  # measured: 1 leaves the applier waiting more often


class TaskFailed(Exception):
    """A task failed for a reason other than the segment's content (a defect, a lost process or
    executor): whoever reads the pipeline reads that segment its own way."""

    def __init__(self, segment: Segment, cause: BaseException) -> None:
        super().__init__(f"preparing the segment at {segment.start[0]}:{segment.start[1]} failed: {cause}")
        self.segment = segment
        self.cause = cause


class SegmentPipeline(Generic[R]):
    """Keeps up to `ahead` segments in flight on the executor; take() returns the oldest one's
    result (a TaskFailed in its place when the task failed), ready() tells whether it is done.
    `task` may be replaced at any time: segments submitted from then on go with the new one."""

    def __init__(
        self,
        executor: Executor,
        task: SegmentTask[R],
        segments: Iterator[Segment],
        ahead: int | None = None,
    ) -> None:
        self.executor = executor
        self.task = task
        self._segments = segments
        self._planned = True
        self.ahead = ahead or executor.workers * SEGMENTS_AHEAD_PER_WORKER + 1
        self._in_flight: deque[tuple[Segment, Future[R]]] = deque()
        self.refill()

    def refill(self) -> None:
        """Submit segments until `ahead` are in flight (call it before applying what was taken:
        the executor keeps busy meanwhile)."""
        while self._planned and len(self._in_flight) < self.ahead:
            segment = next(self._segments, None)
            if segment is None:
                self._planned = False
            else:
                self._in_flight.append((segment, self.executor.submit(self.task, segment)))

    def __bool__(self) -> bool:
        return bool(self._in_flight)

    def ready(self) -> bool:
        return bool(self._in_flight) and self._in_flight[0][1].done()

    def take(self) -> R | TaskFailed:
        segment, future = self._in_flight.popleft()
        try:
            return future.result()
        except Exception as exc:  # bad input comes inside the result; this is anything else
            return TaskFailed(segment, exc)

    def close(self) -> None:
        for _, future in self._in_flight:
            future.cancel()
        self._in_flight.clear()
        close = getattr(self._segments, "close", None)
        if close is not None:
            close()


def in_order(
    executor: Executor, task: SegmentTask[R], segments: Iterator[Segment], ahead: int | None = None
) -> Iterator[R | TaskFailed]:
    """Every segment's result in stream order (the simple way to read a pipeline)."""
    pipeline = SegmentPipeline(executor, task, segments, ahead)
    try:
        while pipeline:
            result = pipeline.take()
            pipeline.refill()
            yield result
    finally:
        pipeline.close()
