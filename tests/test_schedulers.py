"""The multi-threaded applier's scheduling modules: GAQ/LWM, LOGICAL_CLOCK, DATABASE partitions and
the coordinator's writesets.

Expected values come from the specification (WL#5569's worked example in
/work/shared/seeds/000_d3e5d01de9e460a9.txt, the MySQL last_committed/sequence_number rules, the
MariaDB commit_id rules, the assigned-partition hash) or from decoding the relay log ourselves;
none is copied from running the code.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.applier.executor import is_structural
from engine.binlog.columns import RowImages
from engine.binlog.events import RowsEvent
from engine.scheduling.clock import LogicalClock
from engine.scheduling.column_hashes import int_key_hashes
from engine.scheduling.gaq import GroupAssignmentQueue
from engine.scheduling.partition import MAX_DBS_IN_QUERY_MTS, Claim, DatabasePartitions
from engine.scheduling.rowkeys import _loose, transaction_writeset
from engine.scheduling.writeset import (
    WritesetHistory,
    int_key_hash,
    int_key_seed,
    one_column_hashes,
    writeset_hash,
)
from engine.slave.schema import Catalog, MysqlForeignKey
from engine.transactions import Position, Transaction

# --------------------------------------------------------------------------------------------
# GAQ and the low-water mark


def _bits(bitmap: bytes) -> set[int]:
    """Indexes of the set bits, LSB first within each byte."""
    return {i for i in range(len(bitmap) * 8) if bitmap[i // 8] >> (i % 8) & 1}


def test_gaq_wl5569_worked_example() -> None:
    # The seed numbers the groups 0..4 (sequence numbers in the master binlog). The queue hands out
    # lwm+1, lwm+2, ...: constructed with lwm=-1 its ordinals are exactly the seed's 0..4.
    gaq: GroupAssignmentQueue[str] = GroupAssignmentQueue(lwm=-1)
    assignment = [2, 1, 1, 2, 3]  # W#2, W#1, W#1, W#2, W#3
    ordinals = [gaq.enqueue(w, f"group {i}") for i, w in enumerate(assignment)]
    assert ordinals == [0, 1, 2, 3, 4]
    assert gaq.lwm == -1 and len(gaq) == 5 and gaq.next_ordinal == 5
    assert [(e.ordinal, e.worker, e.item) for e in gaq.pending()] == [
        (i, w, f"group {i}") for i, w in enumerate(assignment)
    ]
    assert gaq.uncommitted() == 5

    # "the first of W #1 and the task of W #3 got committed": the head (group 0) is still running,
    # so the NLWM does not move.
    assert gaq.commit([1]) == []
    assert gaq.commit([4]) == []
    assert gaq.lwm == -1 and len(gaq) == 5
    assert [e.committed for e in gaq.pending()] == [False, True, False, False, True]
    assert gaq.uncommitted() == 3
    # The workers' checkpoints are relative to the LWM: bit i <=> ordinal lwm + 1 + i.
    w1 = gaq.checkpoint(1)
    assert (w1.worker, w1.seqno, _bits(w1.bitmap)) == (1, 2, {1})
    w3 = gaq.checkpoint(3)
    assert (w3.worker, w3.seqno, _bits(w3.bitmap)) == (3, 5, {4})
    w2 = gaq.checkpoint(2)
    assert (w2.seqno, _bits(w2.bitmap)) == (0, set())

    # W#2 commits group 0: the head discards it and the committed group 1; NLWM points at group 2.
    assert gaq.commit([0]) == ["group 0", "group 1"]
    assert gaq.lwm == 1 and len(gaq) == 3
    assert [(e.ordinal, e.worker, e.committed) for e in gaq.pending()] == [
        (2, 1, False),
        (3, 2, False),
        (4, 3, True),
    ]
    # Group 4 is now offset 3 after the LWM (bit 2); W#1 has nothing committed past the LWM.
    w3 = gaq.checkpoint(3)
    assert (w3.seqno, _bits(w3.bitmap)) == (3, {2})
    w1 = gaq.checkpoint(1)
    assert (w1.seqno, _bits(w1.bitmap)) == (0, set())

    # W#1 commits group 2: the queue becomes | 3 W#2 | 4 W#3 committed |.
    assert gaq.commit([2]) == ["group 2"]
    assert gaq.lwm == 2 and len(gaq) == 2
    assert [(e.ordinal, e.worker, e.committed) for e in gaq.pending()] == [(3, 2, False), (4, 3, True)]

    # "at last when W #2 commits it becomes empty".
    assert gaq.commit([3]) == ["group 3", "group 4"]
    assert gaq.lwm == 4 and len(gaq) == 0 and gaq.pending() == []
    assert gaq.uncommitted() == 0
    assert gaq.next_ordinal == 5
    assert gaq.checkpoint(3).seqno == 0 and _bits(gaq.checkpoint(3).bitmap) == set()


def test_gaq_default_starts_after_lwm() -> None:
    gaq: GroupAssignmentQueue[str] = GroupAssignmentQueue(lwm=41)
    assert gaq.next_ordinal == 42
    assert gaq.enqueue(0, "a") == 42
    assert gaq.enqueue(1, "b") == 43
    assert gaq.commit([42, 43]) == ["a", "b"]
    assert gaq.lwm == 43


def _example_state() -> GroupAssignmentQueue[None]:
    """The seed's example after W#1's first group and W#3's group committed (lwm=-1, 0..4)."""
    gaq: GroupAssignmentQueue[None] = GroupAssignmentQueue(lwm=-1)
    for worker in (2, 1, 1, 2, 3):
        gaq.enqueue(worker, None)
    gaq.commit([1, 4])
    return gaq


def test_gaq_all_committed_through() -> None:
    gaq = _example_state()
    # Everything up to the LWM has committed.
    assert gaq.all_committed_through(-1)
    assert gaq.all_committed_through(-5)
    # Group 0 is running: nothing from 0 on is fully committed...
    assert not gaq.all_committed_through(0)
    assert not gaq.all_committed_through(1)
    # ...unless group 0 is counted as committed by the caller (`also`).
    assert gaq.all_committed_through(0, also={0})
    assert gaq.all_committed_through(1, also={0})  # 1 is committed itself
    assert not gaq.all_committed_through(2, also={0})  # 2 is still running
    assert gaq.all_committed_through(3, also={0, 2, 3})
    assert gaq.all_committed_through(4, also=frozenset({0, 2, 3}))  # 4 committed
    assert not gaq.all_committed_through(4, also={0, 2})  # 3 is not
    # Group 5 has not even been scheduled: it cannot have committed, whatever `also` says.
    assert not gaq.all_committed_through(5, also={0, 2, 3})
    assert not gaq.all_committed_through(5, also={0, 2, 3, 5})
    # `also` is not remembered.
    assert not gaq.all_committed_through(0)


def test_gaq_is_committed() -> None:
    gaq = _example_state()
    assert gaq.is_committed(-1)  # at the LWM
    assert gaq.is_committed(-10)
    assert not gaq.is_committed(0)
    assert gaq.is_committed(1)
    assert not gaq.is_committed(2)
    assert not gaq.is_committed(3)
    assert gaq.is_committed(4)
    assert not gaq.is_committed(5)  # never scheduled
    assert not gaq.is_committed(1000)
    gaq.commit([0])  # the head passes 0 and 1
    assert gaq.is_committed(0) and gaq.is_committed(1)
    assert not gaq.is_committed(2)


def test_gaq_commit_unknown_ordinal_raises() -> None:
    gaq = _example_state()
    with pytest.raises(KeyError):
        gaq.commit([5])  # never scheduled
    with pytest.raises(KeyError):
        gaq.commit([99])
    with pytest.raises(KeyError):
        gaq.entry(5)
    # The queue itself is as it was.
    assert gaq.lwm == -1 and len(gaq) == 5
    assert [e.committed for e in gaq.pending()] == [False, True, False, False, True]


def test_gaq_checkpoint_bitmap_spans_bytes() -> None:
    gaq: GroupAssignmentQueue[None] = GroupAssignmentQueue()  # lwm 0: ordinals 1, 2, ...
    workers = [3] + [7] * 11  # ordinal 1 on W3 (never committed here), 2..12 on W7
    for worker in workers:
        gaq.enqueue(worker, None)
    committed = [2, 10, 11]
    gaq.commit(committed)
    assert gaq.lwm == 0  # ordinal 1 holds the head
    cp = gaq.checkpoint(7)
    # bit i <=> ordinal lwm + 1 + i: ordinals 2, 10, 11 are bits 1, 9, 10 (byte 0 bit 1, byte 1
    # bits 1 and 2); seqno is the 1-based offset of the newest, ordinal 11.
    assert _bits(cp.bitmap) == {o - gaq.lwm - 1 for o in committed} == {1, 9, 10}
    assert cp.bitmap[0] == 0b0000_0010
    assert cp.bitmap[1] == 0b0000_0110
    assert cp.seqno == 11
    assert len(cp.bitmap) >= (cp.seqno + 7) // 8
    other = gaq.checkpoint(3)
    assert other.seqno == 0 and _bits(other.bitmap) == set()


# --------------------------------------------------------------------------------------------
# LOGICAL_CLOCK


def _txn(
    source_file: str | None,
    sequence_number: int | None = None,
    last_committed: int | None = None,
    commit_id: int | None = None,
) -> Transaction:
    return Transaction(
        events=(),
        gtid=None,
        last_committed=last_committed,
        sequence_number=sequence_number,
        commit_id=commit_id,
        databases=frozenset({"db"}),
        is_ddl=False,
        start=Position("relay-bin.000001", 4),
        end=Position("relay-bin.000001", 100),
        source_log_file=source_file,
        source_end_pos=100,
        original_commit_timestamp=None,
        timestamp=0,
        row_events=0,
        size=96,
    )


def _dependencies(clock: LogicalClock, first_ordinal: int, rows: list[tuple[str, int, int]]) -> list[int]:
    """rows: (source file, sequence_number, last_committed) at consecutive ordinals."""
    return [clock.dependency(_txn(f, seq, lc), first_ordinal + i) for i, (f, seq, lc) in enumerate(rows)]


def test_clock_mysql_within_one_file() -> None:
    clock = LogicalClock()
    rows = [("binlog.000001", seq, lc) for seq, lc in zip(range(1, 6), (0, 0, 2, 2, 4), strict=True)]
    # seq s is at ordinal 10 + s; last_committed c means "every seq <= c committed": ordinal 10 + c
    # (c = 0: nothing of this file, i.e. everything before its first transaction, ordinal 10).
    assert _dependencies(clock, 11, rows) == [10, 10, 12, 12, 14]


def test_clock_mysql_new_source_file_is_a_barrier() -> None:
    clock = LogicalClock()
    first = [("binlog.000001", 1, 0), ("binlog.000001", 2, 0), ("binlog.000001", 3, 1)]
    assert _dependencies(clock, 1, first) == [0, 0, 1]
    # binlog.000002 restarts at 1 with last_committed 0: it must wait for all of binlog.000001
    # (ordinals 1..3), not run beside it, and its numbers must not resolve to the old file's.
    second = [
        ("binlog.000002", 1, 0),
        ("binlog.000002", 2, 0),
        ("binlog.000002", 3, 2),
        ("binlog.000002", 4, 1),
    ]
    assert _dependencies(clock, 4, second) == [3, 3, 5, 4]


def test_clock_mysql_sequence_going_backwards_is_a_new_file() -> None:
    clock = LogicalClock()
    before = [("binlog.000001", 1, 0), ("binlog.000001", 2, 1), ("binlog.000001", 3, 1)]
    assert _dependencies(clock, 1, before) == [0, 1, 1]
    # Same file name, numbers start again (the source was restarted / reset): a barrier on 1..3.
    after = [("binlog.000001", 1, 0), ("binlog.000001", 2, 0), ("binlog.000001", 3, 2)]
    assert _dependencies(clock, 4, after) == [3, 3, 5]


def test_clock_mysql_relay_log_starts_mid_file() -> None:
    clock = LogicalClock()
    rows = [
        ("binlog.000007", 100, 98),  # 98 was committed before this relay log: the file base
        ("binlog.000007", 101, 100),
        ("binlog.000007", 102, 99),  # before the first one read: the base again
        ("binlog.000007", 103, 101),
    ]
    assert _dependencies(clock, 1, rows) == [0, 1, 0, 2]
    clock = LogicalClock()
    assert _dependencies(clock, 51, rows) == [50, 51, 50, 52]


def test_clock_mysql_gap_and_malformed_clock() -> None:
    clock = LogicalClock()
    rows = [
        ("binlog.000001", 1, 0),
        ("binlog.000001", 2, 1),
        ("binlog.000001", 5, 2),  # 3 and 4 were never read (filtered at the source)
        ("binlog.000001", 6, 4),  # 4 unknown: everything up to seq 4 is at most ordinal 2
        ("binlog.000001", 7, 7),  # last_committed >= sequence_number: run in order
        ("binlog.000001", 8, 9),
    ]
    assert _dependencies(clock, 1, rows) == [0, 1, 2, 2, 4, 5]


def test_clock_mariadb_commit_id_groups() -> None:
    clock = LogicalClock()
    f = "mariadb-bin.000001"
    cases = [
        (_txn(f, commit_id=7), 1, 0),  # group 7 at ordinals 1..3: all depend on ordinal 0
        (_txn(f, commit_id=7), 2, 0),
        (_txn(f, commit_id=7), 3, 0),
        (_txn(f, commit_id=9), 4, 3),  # group 9 waits for all of group 7
        (_txn(f, commit_id=9), 5, 3),
        (_txn(f), 6, 5),  # no commit id, no sequence number: in order
        (_txn(f, commit_id=9), 7, 6),  # after an ungrouped transaction: a new group
        (_txn(f, commit_id=9), 8, 6),
        (_txn(None), 9, 8),
        (_txn(None), 10, 9),
        (_txn("mariadb-bin.000002", commit_id=9), 11, 10),  # same id in a new file: a new group
        (_txn("mariadb-bin.000002", commit_id=9), 12, 10),
    ]
    assert [clock.dependency(t, o) for t, o, _ in cases] == [d for _, _, d in cases]


def test_clock_groups_do_not_leak_across_clocks() -> None:
    clock = LogicalClock()
    maria = "mariadb-bin.000001"
    assert clock.dependency(_txn(maria, commit_id=3), 1) == 0
    assert clock.dependency(_txn(maria, commit_id=3), 2) == 0
    # A MySQL-clocked transaction from another source file: a barrier on ordinals 1..2.
    assert clock.dependency(_txn("binlog.000001", 1, 0), 3) == 2
    # commit_id 3 again after it: not the old group (which would say 0), a new one after ordinal 3.
    assert clock.dependency(_txn(maria, commit_id=3), 4) == 3
    assert clock.dependency(_txn(maria, commit_id=3), 5) == 3


def test_clock_skipped_keeps_sequence_numbers_resolvable() -> None:
    clock = LogicalClock()
    f = "binlog.000003"
    assert clock.dependency(_txn(f, 1, 0), 1) == 0
    assert clock.dependency(_txn(f, 2, 0), 2) == 0
    # seq 3 and 4 were already applied (skipped by GTID): no ordinal of their own; the newest
    # ordinal handed out so far is 2.
    clock.skipped(_txn(f, 3, 1), 2)
    clock.skipped(_txn(f, 4, 2), 2)
    assert clock.dependency(_txn(f, 5, 4), 3) == 2  # seq 4 done: as done as ordinal 2
    assert clock.dependency(_txn(f, 6, 3), 4) == 2
    assert clock.dependency(_txn(f, 7, 5), 5) == 3
    # The skipped numbers count as seen: a later seq 6 in the same file name goes backwards
    # against 7, so it is a restarted source: a barrier on everything before it.
    assert clock.dependency(_txn(f, 6, 0), 6) == 5


def test_clock_skipped_sequence_numbers_count_for_restarts() -> None:
    clock = LogicalClock()
    f = "binlog.000001"
    assert _dependencies(clock, 1, [(f, 1, 0), (f, 2, 0), (f, 3, 0)]) == [0, 0, 0]
    clock.skipped(_txn(f, 4, 0), 3)
    clock.skipped(_txn(f, 5, 0), 3)
    # seq 4 after the skipped seq 5 goes backwards: the source restarted, so this transaction
    # must wait for ordinals 1..3 even though its last_committed is 0.
    assert clock.dependency(_txn(f, 4, 0), 4) == 3


def test_clock_skipped_first_transactions_of_a_new_file() -> None:
    clock = LogicalClock()
    assert _dependencies(clock, 1, [("binlog.000001", 1, 0), ("binlog.000001", 2, 1)]) == [0, 1]
    clock.skipped(_txn("binlog.000002", 1, 0), 2)
    clock.skipped(_txn("binlog.000002", 2, 1), 2)
    assert clock.dependency(_txn("binlog.000002", 3, 2), 3) == 2
    assert clock.dependency(_txn("binlog.000002", 4, 0), 4) == 2  # the new file's base
    assert clock.dependency(_txn("binlog.000002", 5, 3), 5) == 3


# --------------------------------------------------------------------------------------------
# DATABASE partitions (assigned-partition hash)


def test_partition_new_database_goes_to_least_loaded_worker() -> None:
    parts = DatabasePartitions(3)
    assert parts.holder("a") is None
    assert parts.claim(frozenset({"a"}), [5, 0, 2]) == Claim("assign", 1)
    assert parts.holder("a") == (1, 1)
    assert parts.claim(frozenset({"b"}), [5, 4, 2]) == Claim("assign", 2)
    assert parts.holder("b") == (2, 1)
    assert parts.claim(frozenset({"c"}), [0, 4, 2]) == Claim("assign", 0)
    assert parts.busy() == 3


def test_partition_busy_database_stays_with_its_worker() -> None:
    parts = DatabasePartitions(3)
    parts.claim(frozenset({"a"}), [9, 0, 9])
    # Worker 1 is now the busiest, but "a" is busy there: the transaction must follow it.
    assert parts.claim(frozenset({"a"}), [0, 50, 0]) == Claim("assign", 1)
    assert parts.holder("a") == (1, 2)
    # A transaction on "a" and a new database "z": z goes with a.
    assert parts.claim(frozenset({"a", "z"}), [0, 50, 0]) == Claim("assign", 1)
    assert parts.holder("a") == (1, 3)
    assert parts.holder("z") == (1, 1)


def test_partition_usage_counts_and_free_database_moves() -> None:
    parts = DatabasePartitions(2)
    parts.claim(frozenset({"a"}), [0, 1])
    parts.claim(frozenset({"a"}), [0, 1])
    assert parts.holder("a") == (0, 2)
    parts.release(frozenset({"a"}))
    assert parts.holder("a") == (0, 1)
    parts.release(frozenset({"a"}))
    assert parts.holder("a") == (0, 0)
    assert parts.busy() == 0
    parts.release(frozenset({"a"}))  # never below zero
    assert parts.holder("a") == (0, 0)
    # A free database is not tied to its last worker: it goes with the least-loaded one.
    assert parts.claim(frozenset({"a"}), [7, 0]) == Claim("assign", 1)
    assert parts.holder("a") == (1, 1)


def test_partition_conflict_waits_until_released() -> None:
    parts = DatabasePartitions(2)
    a_worker, b_worker = 0, 1
    assert parts.claim(frozenset({"a"}), [0, 5]) == Claim("assign", a_worker)
    assert parts.claim(frozenset({"b"}), [10, 0]) == Claim("assign", b_worker)
    assert parts.claim(frozenset({"b"}), [0, 0]) == Claim("assign", b_worker)
    assert parts.holder("a") == (a_worker, 1) and parts.holder("b") == (b_worker, 2)

    both = frozenset({"a", "b"})
    claim = parts.claim(both, [0, 0])
    assert claim.kind == "wait"
    assert claim.blocking in both
    blocker = claim.blocking
    assert blocker is not None
    other = next(iter(both - {blocker}))
    # The claim names the worker that holds the blocking database, and a wait takes nothing.
    assert claim.worker == parts.holder(blocker)[0]  # type: ignore[index]
    assert parts.holder("a") == (a_worker, 1) and parts.holder("b") == (b_worker, 2)

    # Still waiting while the blocking partition is in use.
    usage = parts.holder(blocker)[1]  # type: ignore[index]
    for left in range(usage - 1, 0, -1):
        parts.release(frozenset({blocker}))
        assert parts.holder(blocker)[1] == left  # type: ignore[index]
        assert parts.claim(both, [0, 0]).kind == "wait"
    parts.release(frozenset({blocker}))
    assert parts.holder(blocker)[1] == 0  # type: ignore[index]

    # Free now: the transaction goes where the other database is busy, and the blocker moves there.
    other_worker = parts.holder(other)[0]  # type: ignore[index]
    other_usage = parts.holder(other)[1]  # type: ignore[index]
    assert parts.claim(both, [0, 0]) == Claim("assign", other_worker)
    assert parts.holder(blocker) == (other_worker, 1)
    assert parts.holder(other) == (other_worker, other_usage + 1)


@pytest.mark.parametrize(
    "databases",
    [None, frozenset(), frozenset(f"db{i}" for i in range(MAX_DBS_IN_QUERY_MTS + 1))],
    ids=["unknown", "none", "over-max"],
)
def test_partition_runs_alone(databases: frozenset[str] | None) -> None:
    assert MAX_DBS_IN_QUERY_MTS == 16
    parts = DatabasePartitions(4)
    claim = parts.claim(databases, [0, 0, 0, 0])
    assert claim.kind == "alone"
    # Nothing is taken, and releasing the same set later changes nothing either.
    assert parts.busy() == 0
    for db in databases or ():
        assert parts.holder(db) is None
    parts.release(databases)
    assert parts.busy() == 0


def test_partition_sixteen_databases_are_still_partitioned() -> None:
    parts = DatabasePartitions(4)
    dbs = frozenset(f"db{i}" for i in range(MAX_DBS_IN_QUERY_MTS))
    assert parts.claim(dbs, [3, 2, 0, 1]) == Claim("assign", 2)
    assert all(parts.holder(db) == (2, 1) for db in dbs)
    assert parts.busy() == 16
    parts.release(dbs)
    assert parts.busy() == 0
    # An over-max release does not touch the partitions.
    parts.claim(frozenset({"db0"}), [0, 0, 0, 0])
    parts.release(frozenset(f"db{i}" for i in range(MAX_DBS_IN_QUERY_MTS + 1)))
    assert parts.holder("db0")[1] == 1  # type: ignore[index]


_DATABASE_SETS = st.one_of(
    st.none(),
    st.frozensets(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=3),
    st.just(frozenset(f"db{i}" for i in range(MAX_DBS_IN_QUERY_MTS + 1))),
)


@given(
    workers=st.integers(1, 4),
    steps=st.lists(
        st.tuples(
            st.booleans(),  # claim a piece, or release
            st.lists(st.tuples(_DATABASE_SETS, st.integers(0, 50)), max_size=8),
        ),
        max_size=12,
    ),
    ordered=st.booleans(),
)
def test_partition_claims_and_releases_in_bulk_as_one_by_one(workers, steps, ordered) -> None:
    """claim_each and release_each, the coordinator's and the workers' bulk forms, leave the
    partitions and the loads as claim and release one transaction at a time do, and claim_each
    stops at the first transaction that would wait or run alone."""
    bulk, single = DatabasePartitions(workers), DatabasePartitions(workers)
    bulk_loads, single_loads = [0] * workers, [0] * workers
    claimed: list[frozenset[str] | None] = []
    names = ["a", "b", "c", "d", "e", *(f"db{i}" for i in range(MAX_DBS_IN_QUERY_MTS + 1))]
    for claim, piece in steps:
        sets = [databases for databases, _ in piece]
        if claim:
            got = bulk.claim_each(sets, [size for _, size in piece], bulk_loads, ordered)
            expected = []
            for databases, size in piece:
                one = single.claim(databases, single_loads, ordered)
                if one.kind != "assign":
                    break
                expected.append(one.worker)
                single_loads[one.worker] += size
            assert got == expected
            claimed.extend(sets[: len(got)])
        else:
            # mostly what earlier claims took; now and then a set never claimed (never below 0)
            chosen = [
                claimed.pop(size % len(claimed)) if claimed and size % 3 else databases
                for databases, size in piece
            ]
            bulk.release_each(chosen)
            for databases in chosen:
                single.release(databases)
        assert bulk_loads == single_loads
        assert [bulk.holder(n) for n in names] == [single.holder(n) for n in names]


def test_partition_released_in_bulk_more_often_than_claimed_stays_at_zero() -> None:
    parts = DatabasePartitions(2)
    assert parts.claim_each([frozenset({"a"}), frozenset({"a", "b"})], [1, 1], [0, 0]) == [0, 0]
    parts.release_each([frozenset({"a"})] * 3 + [frozenset({"b"}), None, frozenset()])
    assert parts.holder("a") == (0, 0) and parts.holder("b") == (0, 0)
    assert parts.claim_each([frozenset({"a"})], [1], [5, 0]) == [1]  # free: it moves


def test_partition_needs_a_worker() -> None:
    with pytest.raises(ValueError):
        DatabasePartitions(0)


# --------------------------------------------------------------------------------------------
# Writesets from row images


@dataclasses.dataclass
class _Workload:
    transactions: list[Transaction]
    catalog: Catalog


@pytest.fixture(scope="module")
def oltp(tmp_path_factory: pytest.TempPathFactory) -> _Workload:
    from engine.generate import generate
    from engine.relaylog.index import read_index
    from engine.relaylog.stream import stream_events
    from engine.replay import ChannelSpec, Replay
    from engine.slave.database import Slave
    from engine.transactions import TransactionAssembler

    base: Path = tmp_path_factory.mktemp("oltp")
    summary = generate("oltp", 1, base / "relay")
    outcome = Replay(base / "s.duckdb", None, [ChannelSpec("", summary.index_file)]).run()
    assert outcome[0].error is None
    slave = Slave(base / "s.duckdb")
    try:
        catalog = slave.catalog
    finally:
        slave.close()
    assembler = TransactionAssembler()
    transactions = [
        item
        for logged in stream_events(read_index(summary.index_file))
        for item in assembler.feed(logged)
        if isinstance(item, Transaction)
    ]
    assert len(transactions) == summary.transactions
    return _Workload(transactions, catalog)


def _row_keys(images: RowImages, table_key: tuple[str, str], pk: tuple[str, ...]) -> set[tuple]:  # type: ignore[type-arg]
    """(db, table, pk values) of every before and after image, decoded row-wise."""
    keys = set()
    for before, after in images.rows():
        for image in (before, after):
            if image is not None:
                keys.add((*table_key, tuple(image[c] for c in pk)))
    return keys


def _pk_keys_of(txn: Transaction, decoded: dict[int, RowImages], catalog: Catalog) -> set[tuple]:  # type: ignore[type-arg]
    keys = set()
    for images in decoded.values():
        key = (images.table_map.schema, images.table_map.table)
        keys |= _row_keys(images, key, catalog[key].primary_key)
    return keys


def test_writeset_structural_transactions_have_none(oltp: _Workload) -> None:
    structural = [t for t in oltp.transactions if is_structural(t)]
    assert len(structural) >= 9  # 3 CREATE DATABASE + 6 CREATE TABLE
    for txn in structural:
        hashes, _ = transaction_writeset(txn, oltp.catalog)
        assert hashes is None


def test_writeset_row_transactions(oltp: _Workload) -> None:
    rows = [t for t in oltp.transactions if not is_structural(t) and t.row_events]
    assert len(rows) > 100
    for txn in rows:
        hashes, decoded = transaction_writeset(txn, oltp.catalog)
        assert hashes is not None and len(hashes) > 0
        assert all(type(h) is int and 0 <= h < 1 << 64 for h in hashes)
        # Decoded images are keyed by the index of their rows event within txn.events.
        rows_indexes = [i for i, e in enumerate(txn.events) if isinstance(e.event, RowsEvent)]
        assert sorted(decoded) == rows_indexes
        assert all(isinstance(images, RowImages) for images in decoded.values())
        assert sum(images.count for images in decoded.values()) > 0
        # sbtest tables have a primary key and only a non-unique index (k_1) and no foreign key:
        # the writeset is exactly the primary-key hashes of every before and after image.
        expected = {
            writeset_hash(db, table, "PRIMARY", tuple(_loose(v) for v in values))
            for db, table, values in _pk_keys_of(txn, decoded, oltp.catalog)
        }
        assert set(hashes) == expected


def test_writeset_same_row_shares_a_hash(oltp: _Workload) -> None:
    seen: dict[tuple, int] = {}  # type: ignore[type-arg]
    pairs = 0
    for number, txn in enumerate(oltp.transactions):
        if is_structural(txn) or not txn.row_events:
            continue
        hashes, decoded = transaction_writeset(txn, oltp.catalog)
        assert hashes is not None
        for key in _pk_keys_of(txn, decoded, oltp.catalog):
            if key in seen and seen[key] != number:
                earlier, _ = transaction_writeset(oltp.transactions[seen[key]], oltp.catalog)
                assert earlier is not None
                common = set(earlier) & set(hashes)
                assert common, f"transactions {seen[key]} and {number} both change {key}"
                db, table, values = key
                assert writeset_hash(db, table, "PRIMARY", values) in common
                pairs += 1
            seen[key] = number
    assert pairs > 10


def test_writeset_unknown_table_gives_none(oltp: _Workload) -> None:
    rows = [t for t in oltp.transactions if not is_structural(t) and t.row_events]
    hashes, decoded = transaction_writeset(rows[-1], Catalog())
    assert hashes is None
    assert decoded  # the images are decoded all the same: the worker reuses them
    # A catalog that lacks only one table: transactions touching it have no writeset, the others do.
    missing = ("sbtest1", "sbtest1")
    partial = Catalog(tables=[t for k, t in oltp.catalog.items() if k != missing])
    touched = 0
    for txn in rows:
        hashes, decoded = transaction_writeset(txn, partial)
        tables = {(i.table_map.schema, i.table_map.table) for i in decoded.values()}
        if missing in tables:
            touched += 1
            assert hashes is None
        else:
            assert hashes
    assert touched > 0


def test_writeset_unique_and_foreign_keys(oltp: _Workload) -> None:
    """Unique keys and the parent key of a foreign key are hashed too (derived catalog variants)."""
    child_key, parent_key = ("sbtest1", "sbtest2"), ("sbtest2", "sbtest1")
    child = oltp.catalog[child_key]
    # k made UNIQUE, and a foreign key (k) REFERENCES sbtest2.sbtest1 (id).
    variant = dataclasses.replace(
        child,
        unique_keys=(("k",),),
        unique_key_names=("k_1",),
        foreign_keys=(MysqlForeignKey("fk_parent", ("k",), "sbtest2", "sbtest1", ("id",)),),
    )
    catalog = Catalog(tables=[variant if k == child_key else t for k, t in oltp.catalog.items()])
    checked = 0
    for txn in oltp.transactions:
        if is_structural(txn) or not txn.row_events:
            continue
        hashes, decoded = transaction_writeset(txn, catalog)
        assert hashes is not None
        for images in decoded.values():
            if (images.table_map.schema, images.table_map.table) != child_key:
                continue
            for before, after in images.rows():
                for image in (before, after):
                    if image is None:
                        continue
                    checked += 1
                    assert writeset_hash(*child_key, "PRIMARY", (image["id"],)) in hashes
                    assert writeset_hash(*child_key, "k_1", (image["k"],)) in hashes
                    # the child row meets the parent row it refers to
                    assert writeset_hash(*parent_key, "PRIMARY", (image["k"],)) in hashes
    assert checked > 0


def test_loose_key_values() -> None:
    assert _loose("AbC") == _loose("abc") == _loose("ABC  ")
    assert _loose("Straße") == _loose("STRASSE")  # case folding, not just lower()
    assert _loose("abc") != _loose(" abc")  # leading spaces matter
    assert _loose("a b") != _loose("ab")
    assert _loose("abc\t") != _loose("abc")  # only spaces are padding
    assert _loose(7) == 7
    assert _loose(None) is None
    assert _loose(b"AB ") == b"AB "  # binary strings compare byte for byte
    # Loose values make writeset hashes collide where the source's collation does.
    assert writeset_hash("d", "t", "PRIMARY", (_loose("Key "),)) == writeset_hash(
        "d", "t", "PRIMARY", (_loose("kEY"),)
    )
    assert writeset_hash("d", "t", "PRIMARY", (_loose("key"),)) != writeset_hash(
        "d", "t", "PRIMARY", (_loose("kez"),)
    )


def test_writeset_dependencies_are_safe(oltp: _Workload) -> None:
    """Dependencies from our hashes never let a transaction run before an earlier one on its rows.

    The relay log's own last_committed came from the source's WRITESET tracking over the same
    primary keys (engine/generate/relay_writer.py): ours must never be earlier than that either.
    """
    history = WritesetHistory()
    current_file = None
    last_touch: dict[int, int] = {}  # hash -> sequence number of the last transaction on it
    below_predecessor = 0
    for txn in oltp.transactions:
        seq = txn.sequence_number
        assert seq is not None and txn.last_committed is not None
        if txn.source_log_file != current_file:
            # sequence numbers restart in every source binlog: so does the history
            current_file = txn.source_log_file
            history = WritesetHistory()
            last_touch = {}
        hashes, _ = transaction_writeset(txn, oltp.catalog)
        dependency = history.dependency(seq, hashes, commit_parent=seq - 1)
        assert 0 <= dependency <= seq - 1
        assert dependency >= txn.last_committed, (txn.source_log_file, seq)
        for h in hashes or ():
            if h in last_touch:
                assert dependency >= last_touch[h], (txn.source_log_file, seq, last_touch[h])
        for h in hashes or ():
            last_touch[h] = seq
        if hashes is None:
            assert dependency == seq - 1
        elif dependency < seq - 1:
            below_predecessor += 1
    # The check means something only if the writesets do allow parallelism somewhere.
    assert below_predecessor > 10


_KEY_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
    st.binary(max_size=12),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.floats(allow_nan=False),
    st.dates(),
)


@given(
    values=st.one_of(
        st.lists(_KEY_VALUES, max_size=30),
        # a column of integers only: hashed in one pass when long enough, one by one otherwise
        st.lists(st.integers(min_value=-(2**63), max_value=2**64 - 1), max_size=30),
        st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=30),
    ),
    key_name=st.sampled_from(["PRIMARY", "uk_name"]),
)
def test_the_inlined_one_column_hashes_are_writeset_hash_of_each_value(values, key_name):
    """The preparing stage's fast path for keys of one column hashes exactly what writeset_hash
    hashes (the coordinator's ordinary path uses it): a key hashed both ways must collide."""
    out: list[int] = []
    one_column_hashes("db", "t", key_name, values, range(len(values)), out, _loose)
    part: list[int] = []
    one_column_hashes("db", "t", key_name, [None, *values, None], range(1, len(values) + 1), part, _loose)
    assert part == out  # a part of a column hashes as the same values alone
    expected = [
        writeset_hash("db", "t", key_name, (_loose(v),))
        for v in values
        if key_name == "PRIMARY" or _loose(v) is not None
    ]
    assert out == expected


@pytest.mark.parametrize(
    "values",
    [list(range(-5000, 5000)), [2**64 - 1 - i for i in range(0, 10_000, 3)], [7] * 20],
    ids=["signed", "unsigned BIGINT", "repeated"],
)
def test_a_column_of_integers_is_hashed_in_one_pass_as_one_by_one(values):
    """The preparing stage's one-pass hashing is taken for integer columns (signed or unsigned
    BIGINT) and gives each value the hash writeset_hash gives it alone; distinct values of a key
    get distinct hashes."""
    hashed = int_key_hashes("db", "t", "PRIMARY", values)
    assert hashed is not None
    rows, hashes = hashed
    assert rows is None
    assert hashes.tolist() == [writeset_hash("db", "t", "PRIMARY", (v,)) for v in values]
    assert hashes.tolist() == [int_key_hash(int_key_seed("db", "t", "PRIMARY"), v) for v in values]
    assert len(set(hashes.tolist())) == len(set(values))


def test_a_unique_key_s_nulls_are_left_out_of_the_one_pass_and_anything_else_goes_one_by_one():
    values = [5, None, 6, None, 7]
    rows, hashes = int_key_hashes("db", "t", "uk", values)  # type: ignore[misc]
    assert rows.tolist() == [0, 2, 4]
    out: list[int] = []
    one_column_hashes("db", "t", "uk", values, range(len(values)), out, _loose)
    assert hashes.tolist() == out
    assert int_key_hashes("db", "t", "PRIMARY", values) is None  # hashed one by one, NULL too
    assert int_key_hashes("db", "t", "uk", [True, False] * 8) is None  # bools hash as bools
    assert int_key_hashes("db", "t", "uk", [1, "1"]) is None
    assert int_key_hashes("db", "t", "uk", [1.5, 2.0]) is None
    assert int_key_hashes("db", "t", "uk", [-1, 2**64 - 1]) is None  # fits neither int64 nor uint64


@given(
    lwm=st.integers(-1, 50),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("enqueue"), st.lists(st.integers(1, 4), min_size=1, max_size=6)),
            st.tuples(st.just("commit"), st.lists(st.integers(0, 40), max_size=6)),
            st.tuples(st.just("move"), st.lists(st.integers(0, 40), max_size=3)),
        ),
        max_size=40,
    ),
)
def test_the_gaq_answers_as_a_plain_model_of_its_entries_does_while_dropping_passed_ones(lwm, steps):
    """Every question the applier asks of the queue, against a model that keeps every entry: the
    queue drops the entries the head has passed in bulk (COMPACT_AFTER, made small here so that
    it happens), which must change no answer."""
    gaq: GroupAssignmentQueue[int] = GroupAssignmentQueue(lwm=lwm)
    gaq.COMPACT_AFTER = 3  # type: ignore[misc]
    workers: dict[int, int] = {}  # ordinal -> worker, every entry ever enqueued
    committed: set[int] = set()
    model_lwm = lwm
    for kind, values in steps:
        if kind == "enqueue":
            first = gaq.next_ordinal
            if len(values) % 2:
                gaq.enqueue_all(values, [first + i for i in range(len(values))])
            else:
                assert [gaq.enqueue(w, first + i) for i, w in enumerate(values)] == list(
                    range(first, first + len(values))
                )
            workers.update({first + i: w for i, w in enumerate(values)})
        elif kind == "move":  # a worker takes pending groups along from other workers' queues
            pending = [o for o in sorted(workers) if o > model_lwm]
            for v in values if pending else ():
                ordinal = pending[v % len(pending)]
                workers[ordinal] = v % 4 + 1
                gaq.move_to(ordinal, workers[ordinal])
        else:
            pending = [o for o in sorted(workers) if o > model_lwm]
            if not pending:
                continue
            # in the order drawn: a worker's batch may hold its ordinals out of order
            chosen = list(dict.fromkeys(pending[v % len(pending)] for v in values))
            before = model_lwm
            committed.update(chosen)
            while model_lwm + 1 in committed:
                model_lwm += 1
            # each item is its ordinal: the items of the entries the head passed, oldest first
            assert gaq.commit(chosen) == list(range(before + 1, model_lwm + 1))
        assert gaq.lwm == model_lwm
        after = [o for o in sorted(workers) if o > model_lwm]
        assert len(gaq) == len(after)
        assert gaq.next_ordinal == (max(workers) if workers else lwm) + 1
        assert [e.ordinal for e in gaq.pending()] == after
        assert gaq.uncommitted() == sum(1 for o in after if o not in committed)
        for ordinal in range(lwm - 1, gaq.next_ordinal + 2):
            assert gaq.is_committed(ordinal) == (ordinal <= model_lwm or ordinal in committed)
            if ordinal in after:
                entry = gaq.entry(ordinal)
                assert (entry.ordinal, entry.worker, entry.committed) == (
                    ordinal,
                    workers[ordinal],
                    ordinal in committed,
                )
                assert gaq.worker_of(ordinal) == workers[ordinal]
            else:
                with pytest.raises(KeyError):
                    gaq.entry(ordinal)
                with pytest.raises(KeyError):
                    gaq.worker_of(ordinal)
            through = ordinal <= model_lwm or (
                ordinal < gaq.next_ordinal and all(o in committed for o in range(model_lwm + 1, ordinal + 1))
            )
            assert gaq.all_committed_through(ordinal) == through
        for worker in range(1, 5):
            mine = [i for i, o in enumerate(after) if workers[o] == worker and o in committed]
            checkpoint = gaq.checkpoint(worker)
            assert checkpoint.seqno == (mine[-1] + 1 if mine else 0)
            assert all(checkpoint.bitmap[i // 8] >> (i % 8) & 1 for i in mine)
            assert sum(bin(b).count("1") for b in checkpoint.bitmap) == len(mine)
