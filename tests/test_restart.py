"""Restarting after a crash: the first commit comes early, and SIGKILL then restart gives the exact
tables with every applier (the single applier's and LOGICAL_CLOCK's kill tests are in
test_replay_resume.py and test_parallel_recovery.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from engine.applier.executor import is_structural
from engine.applier.vocabulary import FIRST_BATCH_TRANSACTIONS, ParallelOptions, Until
from engine.replay import Replay
from engine.transactions import Transaction

from .conftest import replay_argv
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
    row_batches = [b for b in batches if not any(_structural(t) for t in b)]
    before_ddl = next(i for i, b in enumerate(batches) if any(_structural(t) for t in b))
    # the stretch before the first DDL would have been one commit without the small first batch
    assert sum(len(b) for b in batches[:before_ddl]) > FIRST_BATCH_TRANSACTIONS
    assert len(row_batches[0]) <= FIRST_BATCH_TRANSACTIONS
    assert max(len(b) for b in row_batches) > FIRST_BATCH_TRANSACTIONS  # and then they grow
    assert_tables_equal(slave, expected_tables(schemas=M1_SCHEMAS), schemas=M1_SCHEMAS)


def _kill_when_committed(command: list[str], wal: str, wal_bytes: int) -> None:
    """Run the command and SIGKILL it once the slave's write-ahead log holds `wal_bytes` (each
    commit appends to it): the kill lands mid-run whatever the machine's speed."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if os.path.exists(wal) and os.stat(wal).st_size >= wal_bytes:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the replay ended before the kill: " + (
        proc.stderr.read().decode() if proc.stderr else ""
    )


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
    # the capture's whole replay leaves about 1.8 MB of write-ahead log: killed twice on the way
    for wal_bytes in (600_000, 1_200_000):
        _kill_when_committed(command, f"{slave}.wal", wal_bytes)
        records, ordinals, positions = commit_record_counts(slave)
        assert records == ordinals == positions < CAPTURE_TRANSACTIONS
    final = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert commit_record_counts(slave) == (CAPTURE_TRANSACTIONS,) * 3
    assert_tables_equal(slave, expected_tables())
