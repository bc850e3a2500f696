"""A worker's error stops its channel (coordinator and workers) and names the worker, the
transaction and the position; other channels keep running. STOP drains what was assigned."""

from __future__ import annotations

import duckdb
import pytest

from engine.applier.parallel import ParallelApplier
from engine.applier.recovery import inspect_recovery
from engine.applier.vocabulary import BatchLimits, ParallelOptions
from engine.generate import generate
from engine.replay import ChannelSpec, Replay
from engine.repository import Repository

from .conftest import replay_argv
from .relay_logs import write_relay_log
from .test_parallel_oracle import commit_record_counts
from .test_replay_oracle import assert_tables_equal

FAILING = 13  # the duplicate key is the 13th transaction


def _statements() -> list[tuple[str, bool]]:
    statements = [("CREATE DATABASE shop", True), ("CREATE TABLE shop.t (id INT PRIMARY KEY, v INT)", True)]
    for i in range(1, 30):
        key = 5 if i == FAILING - 2 else 100 + i  # the 11th insert repeats id 5
        statements.append((f"INSERT INTO shop.t VALUES ({key}, {i})", False))
    statements.insert(6, ("INSERT INTO shop.t VALUES (5, 0)", False))
    return statements


@pytest.mark.parametrize("order", ["on", "off"])
def test_a_worker_error_stops_only_its_channel_and_names_worker_transaction_position(tmp_path, order):
    import subprocess

    index = write_relay_log(tmp_path / "bad", _statements())
    good = generate("oltp", 41, tmp_path / "good", size_mb=1)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    command = replay_argv(slave, repo, f"c1={index}", "--channel", f"c2={good.index_file}")
    command += ["--workers", "3", "--parallel-type", "logical_clock", "--preserve-commit-order", order]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    error = result.stderr.strip().splitlines()[-1]
    assert "channel 'c1': Error 1062" in error
    assert "worker " in error and "failed" in error
    failing_gtid = f"00000000-0000-0000-0000-000000000007:{FAILING + 1}"  # +1: the CREATE DATABASE
    assert failing_gtid in error, error
    assert "(relay log " in error and "gaps" in error
    assert "Traceback" not in result.stderr
    # the other channel finished everything
    con = duckdb.connect(str(slave), read_only=True)
    try:
        (c2,) = con.execute("SELECT transactions FROM __relaydeck.progress WHERE channel = 'c2'").fetchone()
        ids = {r[0] for r in con.execute("SELECT id FROM shop.t").fetchall()}
        (failed,) = con.execute(
            "SELECT count(*) FROM __relaydeck.commits WHERE channel = 'c1' AND gtid = ?", [failing_gtid]
        ).fetchone()
    finally:
        con.close()
    assert c2 == good.transactions
    assert failed == 0  # the failing transaction was not applied
    if order == "on":
        # commit order preserved: exactly the transactions before the failing one
        assert ids == {5} | {100 + i for i in range(1, FAILING - 2)}
    with Repository(repo) as r:
        (status,) = r.status("c1")
        shown = status.show_replica_status()
    assert shown["Last_SQL_Errno"] == 1062
    assert failing_gtid in shown["Last_SQL_Error"]


def test_stop_waits_for_assigned_transactions_and_leaves_no_gaps(tmp_path):
    summary = generate("oltp", 42, tmp_path / "relay", size_mb=3)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    spec = [ChannelSpec("", summary.index_file)]
    # small queues: the coordinator cannot read far ahead of the workers before the STOP
    options = ParallelOptions(
        workers=4, parallel_type="logical_clock", preserve_commit_order=False, pending_jobs_size_max=64 * 1024
    )
    committed = []

    def stop_when_busy(transactions):  # type: ignore[no-untyped-def]
        # from a worker's commit, not the status tick: a fast replay may end between two ticks
        committed.extend(transactions)
        if len(committed) >= 60:
            replay.stop.set()

    replay = Replay(
        slave, repo, spec, parallel=options, limits=BatchLimits(transactions=20), on_commit=stop_when_busy
    )
    (outcome,) = replay.run()
    assert outcome.stats.stopped_by == "STOP"
    assert 0 < outcome.stats.transactions < summary.transactions
    (picture,) = inspect_recovery(slave, repo, "")
    assert picture.committed_after_lwm == 0 and picture.gaps == []
    assert picture.lwm == outcome.stats.transactions
    (rest,) = Replay(slave, repo, spec, parallel=options).run()
    assert rest.error is None and rest.gaps_filled == 0
    n = summary.transactions
    assert commit_record_counts(slave) == (n, n, n)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(slave, expected)


def test_worker_info_rows_follow_the_checkpoint(tmp_path):
    summary = generate("oltp", 43, tmp_path / "relay", size_mb=1)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    options = ParallelOptions(workers=3, parallel_type="writeset", checkpoint_group=10)
    Replay(slave, repo, [ChannelSpec("", summary.index_file)], parallel=options).run()
    with Repository(repo) as r:
        rows = r.worker_infos("")
        rli = r.relay_log_info("")
    assert [row["Id"] for row in rows] == [1, 2, 3]
    assert rli["Number_of_workers"] == 3
    con = duckdb.connect(str(slave), read_only=True)
    try:
        progress = con.execute("SELECT relay_log_file, relay_log_pos FROM __relaydeck.progress").fetchone()
        last_by_worker = dict(
            con.execute(
                "SELECT worker, arg_max(relay_log_pos, seqno) FROM __relaydeck.commits GROUP BY worker"
            ).fetchall()
        )
    finally:
        con.close()
    for row in rows:
        # drained: every checkpoint points at the LWM, which is the end; nothing after it
        assert (row["Checkpoint_relay_log_name"], row["Checkpoint_relay_log_pos"]) == progress
        assert row["Checkpoint_group_size"] == 10
        assert row["Checkpoint_seqno"] == 0
        if row["Id"] in last_by_worker:
            assert row["Relay_log_pos"] == last_by_worker[row["Id"]]
    assert (rli["Relay_log_name"], rli["Relay_log_pos"]) == progress


def test_queues_bounded_by_pending_jobs_size_max_still_replay_exactly(tmp_path):
    summary = generate("oltp", 44, tmp_path / "relay", size_mb=1)
    slave = tmp_path / "slave.duckdb"
    # room for a couple of transactions at a time; bigger ones wait for empty queues, run alone
    options = ParallelOptions(workers=3, parallel_type="writeset", pending_jobs_size_max=3000)
    replay = Replay(slave, None, [ChannelSpec("", summary.index_file)], parallel=options)
    (outcome,) = replay.run()
    assert outcome.error is None and outcome.stats.transactions == summary.transactions
    assert replay.appliers[""].waits.total_size > 0
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert_tables_equal(slave, expected)


def test_a_write_conflict_between_workers_is_recognised_as_retryable(tmp_path):
    from engine.applier.parallel_workers import is_write_conflict as _is_conflict

    con = duckdb.connect(str(tmp_path / "c.duckdb"))
    con.execute("CREATE TABLE t (id INT, v INT)")
    con.execute("INSERT INTO t VALUES (1, 0)")
    a, b = con.cursor(), con.cursor()
    a.execute("BEGIN")
    b.execute("BEGIN")
    a.execute("UPDATE t SET v = 1 WHERE id = 1")
    with pytest.raises(duckdb.Error) as caught:
        b.execute("UPDATE t SET v = 2 WHERE id = 1")
    assert _is_conflict(caught.value)
    assert not _is_conflict(duckdb.CatalogException("Table with name x does not exist"))


def test_an_unexpected_worker_exception_stops_the_channel_instead_of_hanging(tmp_path, monkeypatch):
    from engine.applier import executor as executor_module

    summary = generate("oltp", 45, tmp_path / "relay", size_mb=1)
    real_apply = executor_module.TransactionExecutor.apply
    calls = {"n": 0, "failing": None}

    def flaky_apply(self, txn, decoded=None):  # type: ignore[no-untyped-def]
        # the 60th transaction applied fails, and again whenever it is applied
        calls["n"] += 1
        if calls["n"] == 60:
            calls["failing"] = txn.start
        if txn.start == calls["failing"]:
            raise TypeError("simulated defect")
        return real_apply(self, txn, decoded)

    def broken_prepared_apply(session, executor, parts):  # type: ignore[no-untyped-def]
        raise TypeError("simulated defect in applying prepared transactions")

    monkeypatch.setattr(executor_module.TransactionExecutor, "apply", flaky_apply)
    # a defect applying what was prepared: each transaction is read again and goes the ordinary way
    monkeypatch.setattr(ParallelApplier, "_apply_prepared", staticmethod(broken_prepared_apply))
    options = ParallelOptions(workers=2, parallel_type="logical_clock")
    (outcome,) = Replay(
        tmp_path / "slave.duckdb", None, [ChannelSpec("", summary.index_file)], parallel=options
    ).run()
    assert outcome.error is not None
    line = outcome.error.one_line()
    assert "internal error" not in line and "TypeError: simulated defect" in line
    assert f"(relay log {calls['failing']})" in line
    assert "worker " in outcome.error.one_line()
