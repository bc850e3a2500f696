"""Crash safety of the multi-threaded applier: SIGKILL with commit order off leaves gaps after the
low-water mark; the next start, whatever its scheduler, commit order and executor, fills exactly
those and the end state is exact."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from engine.applier.recovery import inspect_recovery, recovery_picture
from engine.applier.vocabulary import PARALLEL_TYPES, ParallelOptions
from engine.generate import generate
from engine.gtids import ExecutedGtids
from engine.relaylog.index import read_index
from engine.replay import ChannelSpec, Replay
from engine.slave.database import Slave

from .conftest import replay_argv
from .test_parallel_oracle import commit_record_counts
from .test_replay_oracle import assert_tables_equal

KILLS = 50


def _expected(relay):  # type: ignore[no-untyped-def]
    return {(p.parent.name, p.stem): p for p in sorted((relay / "expected").glob("*/*.csv"))}


# Each lap runs the next of these, on the slave the previous lap left (a DBA changing settings
# between restarts): a gap left with commit order off is filled by a lap under another scheduler,
# with commit order on, or with the other executor. Spark's laps are benchmarks/kill_storm.py's
# (its start alone takes longer than a lap here).
LAP_CONFIGURATIONS = [
    (kind, order, pool)
    for kind in PARALLEL_TYPES
    for order in ("off", "on")
    for pool in ("processes", "threads")
]


def _lap_command(slave, repo, summary, lap: int, *extra: str) -> list[str]:  # type: ignore[no-untyped-def]
    kind, order, pool = LAP_CONFIGURATIONS[lap % len(LAP_CONFIGURATIONS)]
    return replay_argv(
        slave,
        repo,
        f"={summary.index_file}",
        "--workers",
        "4",
        "--parallel-type",
        kind,
        "--preserve-commit-order",
        order,
        "--pool",
        pool,
        *extra,
    )


def test_sigkill_during_parallel_replay_under_every_scheduler_recovers_the_gaps(tmp_path):
    # independent rows, so workers commit out of order; long enough for every kill to land mid-run
    summary = generate("oltp", 21, tmp_path / "relay", size_mb=24)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    # small DuckDB transactions and frequent checkpoints, so that workers overlap
    small_batches = ("--group-size", "20", "--checkpoint-period", "50")
    rng = random.Random(20261122)
    kills = 0
    restarts_with_gaps = 0
    gaps_seen = 0
    laps = 0
    lap = 0
    killed_under = set()
    while kills < KILLS:
        command = _lap_command(slave, repo, summary, lap, *small_batches)
        lap += 1
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.6, 3.0))
        if proc.poll() is not None:
            # Finished before this kill (a fast machine): the run must be exact, then the next
            # lap starts from an empty slave, so the number of kills does not depend on speed.
            assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
            _assert_complete(slave, repo, summary, tmp_path)
            laps += 1
            for path in [*tmp_path.glob("slave.duckdb*"), *tmp_path.glob("repo.sqlite*")]:
                path.unlink()
            continue
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        kills += 1
        killed_under.add(LAP_CONFIGURATIONS[(lap - 1) % len(LAP_CONFIGURATIONS)])
        if not slave.exists():
            continue
        records, ordinals, positions = commit_record_counts(slave)
        assert records == ordinals == positions, "a transaction was committed twice"
        (picture,) = inspect_recovery(slave, repo, "")
        assert picture.problem is None, picture.problem
        if picture.gaps:
            restarts_with_gaps += 1
            gaps_seen += len(picture.gaps)
            # the gaps are exactly the ordinals after the LWM that have no commit record
            committed = {g.ordinal for g in picture.groups if not g.is_gap}
            assert len(committed) == picture.committed_after_lwm
            assert [g.ordinal for g in picture.groups] == list(
                range(picture.lwm + 1, picture.groups[-1].ordinal + 1)
            )
    assert restarts_with_gaps > 0, "no kill left a gap: recovery was never exercised"
    assert killed_under == set(LAP_CONFIGURATIONS)
    # the rest in large batches (the small ones were there to make workers overlap)
    final = subprocess.run(
        _lap_command(slave, repo, summary, lap), capture_output=True, text=True, timeout=900
    )
    assert final.returncode == 0, final.stderr
    _assert_complete(slave, repo, summary, tmp_path)
    print(f"{kills} kills in {laps + 1} laps, {restarts_with_gaps} left gaps ({gaps_seen} gap transactions)")


def _assert_complete(slave, repo, summary, tmp_path):  # type: ignore[no-untyped-def]
    """Every transaction committed exactly once, no gaps, the source's tables."""
    n = summary.transactions
    assert commit_record_counts(slave) == (n, n, n)
    (picture,) = inspect_recovery(slave, repo, "")
    assert picture.lwm == n and not picture.gaps
    assert_tables_equal(slave, _expected(tmp_path / "relay"))


def _kill_worker_mid_run(tmp_path, order: str):  # type: ignore[no-untyped-def]
    """Run in-process, KILL the channel once some batches committed: workers drop what they hold."""
    summary = generate("oltp", 31, tmp_path / "relay", size_mb=3)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    spec = [ChannelSpec("", summary.index_file)]
    from engine.applier.vocabulary import BatchLimits

    # small queues: the coordinator cannot read far ahead of the workers before the KILL
    options = ParallelOptions(
        workers=4,
        parallel_type="writeset",
        preserve_commit_order=order == "on",
        pending_jobs_size_max=64 * 1024,
    )
    committed = []

    def kill_when_busy(transactions):  # type: ignore[no-untyped-def]
        # from a worker's commit, not the status tick: a fast replay may end between two ticks
        committed.extend(transactions)
        if len(committed) >= 50:
            replay.kill.set()

    replay = Replay(
        slave, repo, spec, parallel=options, limits=BatchLimits(transactions=10), on_commit=kill_when_busy
    )
    replay.run()
    return summary, slave, repo, spec, options


@pytest.mark.parametrize("order", ["on", "off"])
def test_kill_then_restart_applies_exactly_the_missing_transactions(tmp_path, order):
    summary, slave, repo, spec, options = _kill_worker_mid_run(tmp_path, order)
    records, _, _ = commit_record_counts(slave)
    assert 0 < records < summary.transactions, "KILL did not stop the replay midway"
    (picture,) = inspect_recovery(slave, repo, "")
    if order == "on":
        # commit order preserved: whatever committed is a prefix, never a gap
        assert picture.gaps == [] and picture.committed_after_lwm == 0
    outcome = Replay(slave, repo, spec, parallel=options).run()[0]
    assert outcome.error is None
    assert outcome.gaps_filled == len(picture.gaps)
    n = summary.transactions
    assert commit_record_counts(slave) == (n, n, n)
    assert_tables_equal(slave, _expected(tmp_path / "relay"))


def _forged_crash(tmp_path):  # type: ignore[no-untyped-def]
    summary = generate("oltp", 32, tmp_path / "relay", size_mb=1)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    spec = [ChannelSpec("", summary.index_file)]
    Replay(slave, repo, spec, parallel=ParallelOptions(workers=2, preserve_commit_order=False)).run()
    # Forge a crash picture: move the LWM back 5 transactions and remove two commit records after
    # it, as if the workers holding them died before committing.
    s = Slave(slave)
    progress = s.progress("")
    records = s.commits_after("", progress.transactions - 6)
    lwm_record = records[0]
    executed = ExecutedGtids.parse("")
    for (gtid,) in s.con.execute(
        "SELECT gtid FROM __relaydeck.commits WHERE seqno <= ?", [lwm_record.seqno]
    ).fetchall():
        executed.add(gtid)
    s.con.execute(
        "UPDATE __relaydeck.progress SET transactions = ?, relay_log_file = ?, relay_log_pos = ?, executed_gtids = ?",
        [lwm_record.seqno, lwm_record.relay_log_file, lwm_record.relay_log_pos, str(executed)],
    )
    missing = [records[2].seqno, records[4].seqno]
    s.con.execute("DELETE FROM __relaydeck.commits WHERE seqno IN (?, ?)", missing)
    s.close()
    return slave, repo, summary, lwm_record, missing


def test_recovery_command_prints_the_picture_without_changing_anything(tmp_path):
    slave, repo, summary, lwm_record, missing = _forged_crash(tmp_path)
    before = slave.read_bytes()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "console.cli",
            "recovery",
            "--slave",
            str(slave),
            "--repository",
            str(repo),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert slave.read_bytes() == before
    (picture,) = [p for p in json.loads(out.stdout) if p["channel"] == ""]
    assert picture["lwm"] == lwm_record.seqno
    assert picture["gaps"] == missing
    assert picture["committed_after_lwm"] == 3
    assert len(picture["workers"]) == 2
    assert any("apply gap" in step for step in picture["plan"])
    text = subprocess.run(
        [sys.executable, "-m", "console.cli", "recovery", "--slave", str(slave), "--repository", str(repo)],
        capture_output=True,
        text=True,
    )
    assert text.returncode == 0 and text.stdout.count(": GAP") == 2


def test_the_recovery_picture_is_read_at_one_moment_while_the_applier_moves_on(tmp_path):
    # A running applier may move the LWM between the picture's reads; what it shows must be one
    # moment: the LWM, the commits after it and the walk over them.
    slave_path, repo, summary, lwm_record, missing = _forged_crash(tmp_path)
    reader = Slave(slave_path)
    applier = reader.session()
    read_commits = reader.commits_after

    def commits_after_then_the_applier_moves(channel, seqno):  # type: ignore[no-untyped-def]
        records = read_commits(channel, seqno)
        # the gaps are filled and the LWM moves to the end, committed by another session
        applier.con.execute("UPDATE __relaydeck.progress SET transactions = ?", [summary.transactions])
        return records

    reader.commits_after = commits_after_then_the_applier_moves  # type: ignore[method-assign]
    try:
        picture = recovery_picture(reader, "", read_index(summary.index_file))
    finally:
        reader.close()
    assert picture.problem is None
    assert picture.lwm == lwm_record.seqno
    assert [g.ordinal for g in picture.gaps] == missing
    assert any("apply gap" in step for step in picture.plan)
