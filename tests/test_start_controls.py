"""START REPLICA's skip counter and SQL_Delay, for the single and the multi-threaded applier."""

from __future__ import annotations

import threading

import duckdb
import pytest

from engine.applier.controls import StartControls
from engine.applier.vocabulary import ParallelOptions
from engine.replay import ChannelSpec, Replay

from .relay_logs import write_relay_log
from .test_replay_errors import replay

STATEMENTS = [
    ("CREATE DATABASE shop", True),
    ("CREATE TABLE shop.t (id INT PRIMARY KEY)", True),
    ("INSERT INTO shop.t VALUES (1)", False),
    ("INSERT INTO shop.t VALUES (1)", False),  # duplicate key: the channel stops here
    ("INSERT INTO shop.t VALUES (2)", False),
]


def _ids(slave) -> list[int]:  # type: ignore[no-untyped-def]
    con = duckdb.connect(str(slave), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT id FROM shop.t ORDER BY id").fetchall()]
    finally:
        con.close()


@pytest.mark.parametrize("workers", ["0", "3"])
def test_the_skip_counter_gets_a_stopped_channel_past_its_failing_transaction(tmp_path, workers):
    index = write_relay_log(tmp_path / "relay", STATEMENTS)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    first = replay(index, slave, repo, "--workers", workers)
    assert first.returncode == 1 and "Error 1062" in first.stderr
    assert _ids(slave) == [1]
    skipped = replay(index, slave, repo, "--workers", workers, "--skip-counter", "1")
    assert skipped.returncode == 0, skipped.stderr
    # the skipped transaction is committed as done, without its effect
    assert "2 transactions applied" in skipped.stdout and "1 skipped by the skip counter" in skipped.stdout
    assert _ids(slave) == [1, 2]
    # the skipped transaction counts as done: a restart applies nothing and skips nothing more
    again = replay(index, slave, repo, "--workers", workers)
    assert again.returncode == 0 and "0 transactions applied" in again.stdout


@pytest.mark.parametrize("parallel", [None, ParallelOptions(workers=2)])
def test_sql_delay_holds_transactions_back_until_stop(tmp_path, parallel):
    index = write_relay_log(tmp_path / "relay", STATEMENTS[:3])
    slave = tmp_path / "slave.duckdb"
    spec = [ChannelSpec("c1", index)]
    # the log was written "in 2023": a delay of 68 years is still ahead
    run = Replay(slave, None, spec, parallel=parallel, controls=StartControls(sql_delay=2**31 - 1))
    threading.Timer(1.0, run.stop.set).start()
    (outcome,) = run.run()
    assert outcome.error is None
    assert outcome.stats.stopped_by == "STOP" and outcome.stats.transactions == 0
    # a delay already over applies everything
    (outcome,) = Replay(slave, None, spec, parallel=parallel, controls=StartControls(sql_delay=60)).run()
    assert outcome.error is None and outcome.stats.transactions == 3
    assert _ids(slave) == [1]


def test_start_controls_reject_impossible_values():
    with pytest.raises(ValueError):
        StartControls(skip_counter=-1)
    with pytest.raises(ValueError):
        StartControls(sql_delay=2**31)
