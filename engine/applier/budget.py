"""The single applier's memory bound: relay-log bytes read and not yet committed.

The applier holds what it has read until DuckDB commits it: the chunk the reader hands over, the
batch being grouped, the batch the committer thread is applying, and the decoded rows of each.
Counting their relay-log bytes, and cutting every one of them at a share of one budget, bounds
all of that together, whatever the log's size, as the process pool's segments bound its workers.

The shares: a chunk and a part of a large transaction an eighth each, a batch a quarter. A chunk
is counted when the reader hands it over (less than its share and one item), once the one before
it is all in a batch: the applier then holds a batch smaller than its share and at most one
batch in flight (less than its share and one item); an item is a part
or a transaction smaller than a part's share plus the rows event that crossed it. That totals
less than seven eighths of the budget and two events: within it while no event is larger than a
sixteenth. An event is never cut, so a larger one (or a transaction that is not row-only, which
is never cut either) is held whole.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# What MySQL gives its workers' queues by default (replica_pending_jobs_size_max).
DEFAULT_BUDGET = 128 << 20


@dataclass(slots=True)
class ByteBudget:
    """Bytes taken (handed to the applier) and released (committed, skipped or rolled back), and
    the peak held. The applier's thread takes; it and the committer thread release."""

    limit: int = DEFAULT_BUDGET
    taken: int = 0
    released: int = 0
    peak: int = 0
    _releasing: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def chunk_bytes(self) -> int:
        return max(1, self.limit // 8)

    @property
    def part_bytes(self) -> int:
        """A row-only transaction larger than this is handed on in parts of about this size."""
        return max(1, self.limit // 8)

    @property
    def decoded_bytes(self) -> int:
        """Rows events decoded and not yet handed to DuckDB within a batch: their Python values
        take several times the bytes the log gives them. An eighth: measured on generated 100 MB
        logs, a sixteenth lowered the peak on bulk transactions only from 475 to 446 MB, and cost
        OLTP a few percent of CPU (every flush's statements scan the tables again)."""
        return max(1, self.limit // 8)

    @property
    def batch_bytes(self) -> int:
        return max(1, self.limit // 4)

    @property
    def held(self) -> int:
        return self.taken - self.released

    def take(self, size: int) -> None:
        self.taken += size
        held = self.taken - self.released
        if held > self.peak:
            self.peak = held

    def release(self, size: int) -> None:
        with self._releasing:
            self.released += size
