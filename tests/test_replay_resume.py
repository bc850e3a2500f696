"""Crash safety of the single applier: SIGKILL at random moments, resume, and end exactly right."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest

from engine.generate import generate

from .conftest import replay_argv
from .test_replay_oracle import assert_tables_equal

KILLS = 20


def replay_command(relay: Path, slave: Path, repo: Path, group_size: int) -> list[str]:
    return replay_argv(
        slave, repo, f"={relay / 'relay-bin.index'}", "--workers", "0", "--group-size", str(group_size)
    )


def commit_records(slave: Path) -> tuple[int, int, int]:
    """(transactions the progress row claims, commit records, distinct GTIDs among them)."""
    con = duckdb.connect(str(slave), read_only=True)
    try:
        if not con.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '__relaydeck'"
        ).fetchone()[0]:
            return 0, 0, 0  # killed after DuckDB created the file, before its first commit
        progress = con.execute("SELECT coalesce(max(transactions), 0) FROM __relaydeck.progress").fetchone()[
            0
        ]
        records, distinct = con.execute(
            "SELECT count(*), count(DISTINCT gtid) FROM __relaydeck.commits"
        ).fetchone()
    finally:
        con.close()
    return progress, records, distinct


def test_sigkill_at_random_moments_then_resume_gives_the_exact_tables(tmp_path):
    # every workload shape (DDL, statements, temporary tables, large transactions), big enough that
    # a full replay takes several seconds, committed a few transactions at a time
    summary = generate("mixed", 11, tmp_path / "relay", size_mb=12)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    command = replay_command(tmp_path / "relay", slave, repo, group_size=3)
    rng = random.Random(20261121)
    expected = {(p.parent.name, p.stem): p for p in (tmp_path / "relay" / "expected").glob("*/*.csv")}
    killed_mid_run = laps = 0
    while killed_mid_run < KILLS:
        assert laps < 4 * KILLS, "the replay finished too fast for the kills to land mid-run"
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.5, 1.3))
        if proc.poll() is not None:
            # Finished before this kill (what was left was short, or the machine is fast): the run
            # must be exact; the next lap starts from an empty slave, so that the number of kills
            # does not depend on the speed of the replay.
            assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
            assert commit_records(slave) == (summary.transactions,) * 3
            assert_tables_equal(slave, expected)
            for path in [*tmp_path.glob("slave.duckdb*"), *tmp_path.glob("repo.sqlite*")]:
                path.unlink()
            laps += 1
            continue
        os.kill(proc.pid, signal.SIGKILL)
        killed_mid_run += 1
        proc.wait(timeout=120)
        if slave.exists():
            progress, records, distinct = commit_records(slave)
            # the position and the commit records were committed together, never one without the other
            assert progress == records == distinct
    final = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    progress, records, distinct = commit_records(slave)
    assert progress == records == distinct == summary.transactions  # each applied once, none skipped
    assert_tables_equal(slave, expected)


@pytest.mark.parametrize("group_size", [1, 7])
def test_stopping_at_an_until_position_and_resuming_loses_nothing(tmp_path, group_size):
    summary = generate("oltp", 5, tmp_path / "relay")
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    index = tmp_path / "relay" / "relay-bin.index"
    first_file = (tmp_path / "relay" / index.read_text().split()[1]).name
    command = replay_command(tmp_path / "relay", slave, repo, group_size)
    half = subprocess.run([*command, "--until-pos", f"{first_file}:{20000}"], capture_output=True, text=True)
    assert half.returncode == 0, half.stderr
    progress, _, _ = commit_records(slave)
    assert 0 < progress < summary.transactions
    rest = subprocess.run(command, capture_output=True, text=True)
    assert rest.returncode == 0, rest.stderr
    assert commit_records(slave)[0] == summary.transactions
    expected = {(p.parent.name, p.stem): p for p in (tmp_path / "relay" / "expected").glob("*/*.csv")}
    assert_tables_equal(slave, expected)
