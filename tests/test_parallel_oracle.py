"""The multi-threaded applier gives exactly the source's tables, for every scheduler, worker count
and commit-order setting, on the real MariaDB capture and on every generated workload."""

from __future__ import annotations

import duckdb
import pytest

from engine.applier.vocabulary import PARALLEL_TYPES, ParallelOptions
from engine.generate import WORKLOADS, generate
from engine.replay import ChannelSpec, Replay

from .test_replay_oracle import CHANNELS, assert_tables_equal, expected_tables

WORKER_COUNTS = (1, 2, 4, 8)


def commit_record_counts(slave) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    """(commit records, distinct (channel, ordinal), distinct (channel, relay position))."""
    con = duckdb.connect(str(slave), read_only=True)
    try:
        return con.execute(
            "SELECT count(*), count(DISTINCT (channel, seqno)), "
            "count(DISTINCT (channel, relay_log_file, relay_log_pos)) FROM __relaydeck.commits"
        ).fetchone()
    finally:
        con.close()


@pytest.mark.parametrize("order", ["on", "off"])
@pytest.mark.parametrize("workers", WORKER_COUNTS)
@pytest.mark.parametrize("kind", PARALLEL_TYPES)
def test_the_mariadb_capture_replays_exactly_in_parallel(kind, workers, order, tmp_path):
    options = ParallelOptions(workers=workers, parallel_type=kind, preserve_commit_order=order == "on")
    replay = Replay(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", CHANNELS, parallel=options)
    outcomes = replay.run()
    assert [o.error for o in outcomes] == [None, None]
    applied = sum(o.stats.transactions for o in outcomes)
    assert commit_record_counts(tmp_path / "slave.duckdb") == (applied, applied, applied)
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables())


@pytest.mark.parametrize("order", ["on", "off"])
@pytest.mark.parametrize("kind", PARALLEL_TYPES)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_generated_workload_replays_exactly_in_parallel(workload, kind, order, tmp_path):
    summary = generate(workload, 3, tmp_path / "relay")
    # one worker count per combination keeps the suite short; every count is covered by the
    # capture above and by the mixed workload below
    workers = WORKER_COUNTS[(WORKLOADS.index(workload) + PARALLEL_TYPES.index(kind)) % len(WORKER_COUNTS)]
    _replay_generated(summary, tmp_path, workers, kind, order)


@pytest.mark.parametrize("workers", WORKER_COUNTS)
@pytest.mark.parametrize("kind", PARALLEL_TYPES)
def test_the_mixed_workload_replays_exactly_with_every_worker_count(kind, workers, tmp_path):
    summary = generate("mixed", 4, tmp_path / "relay")
    _replay_generated(summary, tmp_path, workers, kind, "off" if workers % 4 else "on")


def _replay_generated(summary, tmp_path, workers: int, kind: str, order: str) -> None:  # type: ignore[no-untyped-def]
    options = ParallelOptions(workers=workers, parallel_type=kind, preserve_commit_order=order == "on")
    outcomes = Replay(
        tmp_path / "slave.duckdb", None, [ChannelSpec("", summary.index_file)], parallel=options
    ).run()
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].stats.transactions == summary.transactions
    n = summary.transactions
    assert commit_record_counts(tmp_path / "slave.duckdb") == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert expected
    assert_tables_equal(tmp_path / "slave.duckdb", expected)


def test_parallel_replay_after_a_single_applier_run_continues_where_it_stopped(tmp_path):
    from engine.applier.vocabulary import Until

    summary = generate("oltp", 9, tmp_path / "relay")
    slave = tmp_path / "slave.duckdb"
    spec = [ChannelSpec("", summary.index_file)]
    first = Replay(slave, None, spec, until=Until(after_gtids=_gtid_of(summary, 40))).run()
    assert first[0].stats.transactions == 40
    second = Replay(slave, None, spec, parallel=ParallelOptions(workers=3)).run()
    assert second[0].error is None
    assert second[0].stats.transactions == summary.transactions - 40
    n = summary.transactions
    assert commit_record_counts(slave) == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(slave, expected)


def _gtid_of(summary, number: int) -> str:  # type: ignore[no-untyped-def]
    from engine.relaylog.index import read_index
    from engine.relaylog.stream import stream_events
    from engine.transactions import Transaction, TransactionAssembler

    assembler = TransactionAssembler()
    seen = 0
    for logged in stream_events(read_index(summary.index_file)):
        for item in assembler.feed(logged):
            if isinstance(item, Transaction):
                seen += 1
                if seen == number:
                    return item.gtid
    raise AssertionError("the workload is too short")


def test_without_commit_order_a_worker_with_a_short_share_waits_for_its_turn(tmp_path):
    """DATABASE, commit order off: the oltp workload's databases interleave, so each worker's share
    of a short log is a transaction here and there. A worker whose head is not next to commit does
    not commit its share alone; the worker whose turn it is takes the next ordinals along from the
    other queues, so the commits come in the relay log's order and hold several databases."""
    summary = generate("oltp", 1, tmp_path / "relay")
    assert summary.transactions < 1000  # nobody holds a run long enough to begin before its turn
    commits: list[list] = []  # type: ignore[type-arg]
    options = ParallelOptions(workers=4, parallel_type="database", preserve_commit_order=False)
    outcomes = Replay(
        tmp_path / "slave.duckdb",
        None,
        [ChannelSpec("", summary.index_file)],
        parallel=options,
        on_commit=commits.append,
    ).run()
    assert outcomes[0].error is None, outcomes[0].error
    committed = [txn for batch in commits for txn in batch]
    assert len(committed) == summary.transactions
    ends = [(txn.end.log_name, txn.end.pos) for txn in committed]
    assert ends == sorted(ends)
    every_database = set().union(*(txn.databases for txn in committed))
    assert len(every_database) > 1
    databases_per_commit = [len(set().union(*(txn.databases for txn in batch))) for batch in commits]
    assert max(databases_per_commit) == len(every_database)
    assert len(commits) < summary.transactions / 10
