"""DATABASE scheduling (WL#5569 / WL#5754): the assigned-partition hash (APH).

Each database a scheduled transaction touches is a partition, held by one worker with a usage
count (its transactions on it not yet committed). A transaction goes to the worker that holds its
busy partitions; free ones move to that worker. When its partitions are busy on two different
workers it must wait (the seeds' CGAP wait) until all but one are released. A database seen for
the first time, or a free one, goes with the least-loaded worker. More than
MAX_DBS_IN_QUERY_MTS databases, or none logged (OVER_MAX_DBS), runs alone: sequential mode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

MAX_DBS_IN_QUERY_MTS = 16


@dataclass(slots=True)
class _Partition:
    worker: int
    usage: int = 0


@dataclass(slots=True, unsafe_hash=True)
class Claim:
    """What the coordinator does with a transaction: run it on `worker`, wait, or run it alone."""

    kind: str  # "assign" | "wait" | "alone"
    worker: int = -1
    blocking: str | None = None  # the database held by another worker (kind == "wait")


class DatabasePartitions:
    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("database scheduling needs at least one worker")
        self.workers = workers
        self._held: dict[str, _Partition] = {}

    def claim(self, databases: frozenset[str] | None, loads: Sequence[int], ordered: bool = False) -> Claim:
        """Try to assign; on "assign" the partitions are taken (usage counted) for `worker`.

        ordered: the caller orders the transaction after the earlier ones on its databases by
        itself (an explicit dependency), so partitions busy on two workers need no wait: the
        transaction goes to the first one's worker and the others keep their owners.
        """
        if not databases or len(databases) > MAX_DBS_IN_QUERY_MTS:
            return Claim("alone")
        keys = sorted(databases)
        owner = -1
        for key in keys:
            part = self._held.get(key)
            if part is not None and part.usage > 0:
                if owner < 0:
                    owner = part.worker
                elif part.worker != owner and not ordered:
                    return Claim("wait", part.worker, key)
        if owner < 0:
            owner = self._least_loaded(loads)
        for key in keys:
            part = self._held.get(key)
            if part is None or part.usage == 0:
                self._held[key] = part = _Partition(owner)
            part.usage += 1
        return Claim("assign", owner)

    def claim_each(
        self,
        sets: Sequence[frozenset[str] | None],
        sizes: Sequence[int],
        loads: list[int],
        ordered: bool = False,
    ) -> list[int]:
        """claim() for each set of databases in turn while each is assigned: the workers of those
        that were, the leading ones (`loads` grows by each one's size on its worker). A prepared
        run's transactions are claimed so, thousands at a time, and the usual one touches a
        single database: its partition is looked up once, without claim()'s sorting and Claim."""
        held = self._held
        workers: list[int] = []
        for databases, size in zip(sets, sizes, strict=True):
            if databases is not None and len(databases) == 1:
                (key,) = databases
                part = held.get(key)
                if part is not None and part.usage > 0:
                    part.usage += 1
                    owner = part.worker
                else:
                    owner = self._least_loaded(loads)
                    held[key] = _Partition(owner, 1)
            else:
                claim = self.claim(databases, loads, ordered)
                if claim.kind != "assign":
                    break
                owner = claim.worker
            workers.append(owner)
            loads[owner] += size
        return workers

    def _least_loaded(self, loads: Sequence[int]) -> int:
        """Where a free partition goes: the least-loaded worker, the first of equals."""
        return min(range(self.workers), key=lambda w: (loads[w], w))

    def release(self, databases: frozenset[str] | None) -> None:
        """One transaction on these databases committed (or was abandoned)."""
        self.release_each((databases,))

    def release_each(self, sets: Sequence[frozenset[str] | None]) -> None:
        """release() for each set: a batch's transactions, thousands at a time, most of them on
        a single database, counted per set before the partitions are released (never below 0)."""
        for databases, count in Counter(sets).items():
            if not databases or len(databases) > MAX_DBS_IN_QUERY_MTS:
                continue
            for db in databases:
                part = self._held.get(db)
                if part is not None and part.usage > 0:
                    part.usage = max(0, part.usage - count)

    def holder(self, database: str) -> tuple[int, int] | None:
        """(worker, usage) of a database's partition, for status and tests."""
        part = self._held.get(database)
        return (part.worker, part.usage) if part else None

    def busy(self) -> int:
        return sum(1 for p in self._held.values() if p.usage > 0)
