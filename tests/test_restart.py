"""Restarting after a crash: the first commit comes early, and SIGKILL then restart gives the exact
tables with every applier (the single applier's and LOGICAL_CLOCK's kill tests are in
test_replay_resume.py and test_parallel_recovery.py)."""

from __future__ import annotations

import subprocess

import pytest

from engine.applier.executor import is_structural
from engine.applier.vocabulary import FIRST_BATCH_TRANSACTIONS, ParallelOptions, Until
from engine.replay import Replay
from engine.transactions import Transaction

from .conftest import kill_once_wal_grew, replay_argv
from .test_parallel_oracle import commit_record_counts
from .test_replay_oracle import CHANNELS, M1_SCHEMAS, assert_tables_equal, expected_tables

M1 = CHANNELS[0]
CAPTURE_TRANSACTIONS = 2145 + 303


def _structural(txn: object) -> bool:
    """Prepared transactions (TransactionRecord) are row-only; the others say so themselves."""
    return isinstance(txn, Transaction) and is_structural(txn)


@pytest.mark.parametrize(
    "parallel",
    [None, ParallelOptions(4, "writeset", preserve_commit_order=False)],
    ids=["single", "parallel-writeset"],
)
def test_a_restart_commits_a_small_batch_first_then_larger_ones(parallel, tmp_path):
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    # stopped inside the first sysbench phase: hundreds of row transactions follow before any DDL
    first = Replay(slave, repo, [M1], until=Until(after_gtids="1-1-400")).run()
    assert first[0].error is None and first[0].stats.transactions == 400
    batches: list[list] = []
    outcomes = Replay(slave, repo, [M1], parallel=parallel, on_commit=batches.append).run()
    assert outcomes[0].error is None, outcomes[0].error
    assert sum(len(b) for b in batches) == 2145 - 400
    applied = [t for b in batches for t in b]
    before_ddl = next(i for i, t in enumerate(applied) if _structural(t))
    # the stretch before the first DDL would have been one commit without the small first batch
    assert before_ddl > FIRST_BATCH_TRANSACTIONS
    assert len(batches[0]) <= FIRST_BATCH_TRANSACTIONS
    assert max(len(b) for b in batches) > FIRST_BATCH_TRANSACTIONS  # and then they grow
    assert_tables_equal(slave, expected_tables(schemas=M1_SCHEMAS), schemas=M1_SCHEMAS)


@pytest.mark.parametrize(
    "options",
    [
        ("--workers", "4", "--parallel-type", "writeset", "--preserve-commit-order", "off"),
        ("--workers", "2", "--pool", "processes"),
    ],
    ids=["threads-writeset-order-off", "process-pool"],
)
def test_sigkill_then_restart_gives_the_exact_tables(options, tmp_path):
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    channels = [f"{c.name}={c.index_file}" for c in CHANNELS]
    command = replay_argv(slave, repo, channels[0], "--channel", channels[1], *options)
    # the capture's whole replay writes about 1.8 MB of write-ahead log: killed twice on the way
    for _ in range(2):
        kill_once_wal_grew(command, f"{slave}.wal", 100_000)
        records, ordinals, positions = commit_record_counts(slave)
        assert records == ordinals == positions < CAPTURE_TRANSACTIONS
    final = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert commit_record_counts(slave) == (CAPTURE_TRANSACTIONS,) * 3
    assert_tables_equal(slave, expected_tables())
