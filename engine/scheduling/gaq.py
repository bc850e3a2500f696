"""The group assignment queue (GAQ) and the low-water mark (LWM) of WL#5569.

Every transaction the coordinator schedules gets the next ordinal of its channel and an entry
here, naming the worker it went to. Workers mark their entries committed, in any order; the head
of the queue moves past every committed entry at its front. The LWM is the ordinal just before the
head: every transaction up to it has committed, and none after it is known to have. Entries after
the LWM that are committed are what a crash can leave as gaps, and what each worker's checkpoint
bitmap (worker_info.Checkpoint_group_bitmap) records.

The entries are kept column-wise (each one's worker, item and committed flag in a list of its
own): the applier adds and commits thousands at a time, and a flag per entry in a bytearray lets
the head find the next uncommitted entry, and a batch of consecutive ordinals be marked, in C
rather than one Python object at a time.

The queue is plain data, not thread-safe: the parallel applier guards it with its channel lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GroupEntry(Generic[T]):
    """One entry as the queue holds it at the moment it was asked."""

    ordinal: int
    worker: int
    item: T
    committed: bool = False


@dataclass(slots=True, unsafe_hash=True)
class WorkerCheckpoint:
    """A worker's view relative to the LWM: what mysql.slave_worker_info calls its checkpoint."""

    worker: int
    seqno: int  # offset of the worker's newest committed group after the LWM (0: none)
    bitmap: bytes  # bit i set: group LWM + 1 + i was committed by this worker (LSB first)


class GroupAssignmentQueue(Generic[T]):
    """Ordinals lwm+1, lwm+2, … in assignment order, each with its worker and committed flag."""

    # Entries the head has moved past are dropped in bulk, once they are this many and half the
    # lists: dropping them one by one would move the rest of the lists each time.
    COMPACT_AFTER = 4096

    def __init__(self, lwm: int = 0) -> None:
        self._lwm = lwm
        self._workers: list[int] = []
        self._items: list[T] = []
        self._committed = bytearray()  # 1: committed
        self._head = 0  # entries before it are past the LWM

    @property
    def lwm(self) -> int:
        """Every ordinal up to this one has committed."""
        return self._lwm

    @property
    def next_ordinal(self) -> int:
        return self._lwm + len(self) + 1

    def __len__(self) -> int:
        return len(self._items) - self._head

    def enqueue(self, worker: int, item: T) -> int:
        """A newly scheduled group: returns its ordinal."""
        ordinal = self.next_ordinal
        self._workers.append(worker)
        self._items.append(item)
        self._committed.append(0)
        return ordinal

    def enqueue_all(self, workers: Sequence[int], items: Sequence[T]) -> None:
        """enqueue(worker, item) for each pair of workers[i], items[i], in order."""
        if len(workers) != len(items):
            raise ValueError("a worker for each item")
        self._workers.extend(workers)
        self._items.extend(items)
        self._committed.extend(bytes(len(items)))

    def _index(self, ordinal: int) -> int:
        index = ordinal - self._lwm - 1
        if not 0 <= index < len(self._items) - self._head:
            raise KeyError(f"ordinal {ordinal} is not in the queue (LWM {self._lwm})")
        return self._head + index

    def entry(self, ordinal: int) -> GroupEntry[T]:
        index = self._index(ordinal)
        return GroupEntry(ordinal, self._workers[index], self._items[index], bool(self._committed[index]))

    def worker_of(self, ordinal: int) -> int:
        return self._workers[self._index(ordinal)]

    def move_to(self, ordinal: int, worker: int) -> None:
        """The group is now the worker's (a worker took it along from another's queue)."""
        self._workers[self._index(ordinal)] = worker

    def is_committed(self, ordinal: int) -> bool:
        if ordinal <= self._lwm:
            return True
        index = self._head + ordinal - self._lwm - 1
        return index < len(self._committed) and self._committed[index] == 1

    def commit(self, ordinals: Iterable[int]) -> list[T]:
        """Mark groups committed; returns the items of the entries the head moved past (oldest
        first)."""
        ordinals = list(ordinals)
        committed = self._committed
        if ordinals and ordinals == list(range(ordinals[0], ordinals[0] + len(ordinals))):
            # consecutive (a batch with commit order kept): known if both ends are
            first, last = self._index(ordinals[0]), self._index(ordinals[-1])
            committed[first : last + 1] = b"\x01" * len(ordinals)
        else:
            for index in [self._index(ordinal) for ordinal in ordinals]:  # all known, or none marked
                committed[index] = 1
        head = self._head
        end = committed.find(0, head)
        if end < 0:
            end = len(committed)
        passed = self._items[head:end]
        self._lwm += end - head
        if end >= self.COMPACT_AFTER and 2 * end >= len(committed):
            del self._workers[:end], self._items[:end], committed[:end]
            end = 0
        self._head = end
        return passed

    def all_committed_through(self, ordinal: int, also: frozenset[int] | set[int] = frozenset()) -> bool:
        """True when every group up to `ordinal` has committed or is in `also`."""
        if ordinal <= self._lwm:
            return True
        if ordinal - self._lwm > len(self):
            return False
        head, committed = self._head, self._committed
        first = self._lwm + 1
        for index in range(head, head + ordinal - self._lwm):
            if not committed[index] and first + index - head not in also:
                return False
        return True

    def pending(self) -> list[GroupEntry[T]]:
        """The entries after the LWM, committed or not, in ordinal order."""
        head, first = self._head, self._lwm + 1
        return [
            GroupEntry(first + i, self._workers[index], self._items[index], bool(self._committed[index]))
            for i, index in enumerate(range(head, len(self._items)))
        ]

    def uncommitted(self) -> int:
        return len(self) - self._committed.count(1, self._head)

    def checkpoint(self, worker: int) -> WorkerCheckpoint:
        bits = bytearray((len(self) + 7) // 8)
        seqno = 0
        head, workers, committed = self._head, self._workers, self._committed
        for offset in range(len(self)):
            index = head + offset
            if committed[index] and workers[index] == worker:
                bits[offset // 8] |= 1 << (offset % 8)
                seqno = offset + 1
        return WorkerCheckpoint(worker, seqno, bytes(bits[: (seqno + 7) // 8]))
