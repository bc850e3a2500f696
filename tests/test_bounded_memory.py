"""The single applier holds at most its byte budget of the relay log, whatever a transaction's size.

A generated `large` log's transactions are each several times the small budget used here: they
are applied in parts inside one DuckDB transaction, committed only at their end, and the tables
still match the generator's oracle. A log cut inside such a transaction leaves nothing of it
applied, and the repaired log finishes it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.applier.single import ChannelApplier
from engine.applier.vocabulary import BatchLimits
from engine.generate import generate
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.slave.database import Slave
from engine.transactions import Transaction, assemble

from .test_replay_oracle import assert_tables_equal, expected_tables

BUDGET = 64 << 10  # parts and chunks of 8 KB, batches of 16 KB; the rows events are about 8 KB


def _transactions(log: Path) -> list[Transaction]:
    events = stream_events(read_index(log / "relay-bin.index"))
    return [t for t in assemble(events) if isinstance(t, Transaction)]


def _replay(log: Path, slave_path: Path, budget: int, monkeypatch=None) -> tuple[ChannelApplier, list[int]]:
    """Replay the log's channel with the budget; also the size of every part applied."""
    parts: list[int] = []
    if monkeypatch is not None:
        apply_part = ChannelApplier._apply_part

        def counting(self, part):  # type: ignore[no-untyped-def]
            parts.append(part.size)
            apply_part(self, part)

        monkeypatch.setattr(ChannelApplier, "_apply_part", counting)
    slave = Slave(slave_path)
    try:
        applier = ChannelApplier(slave, "", read_index(log / "relay-bin.index"), BatchLimits(bytes=budget))
        applier.run()
    finally:
        slave.close()
    return applier, parts


@pytest.fixture(scope="module")
def large_log(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("large")
    generate("large", seed=5, out=out, size_mb=1)
    return out


def test_held_bytes_stay_under_the_budget_with_transactions_larger_than_it(large_log, tmp_path, monkeypatch):
    largest = max(t.size for t in _transactions(large_log))
    assert largest > 2 * BUDGET  # what the test is about: a transaction cannot be held whole

    applier, parts = _replay(large_log, tmp_path / "slave.duckdb", BUDGET, monkeypatch)

    assert 0 < applier.budget.peak <= BUDGET
    assert applier.budget.held == 0  # everything read was committed and released
    # a part is its share, overshot by less than its last rows event (about 8 KB in this log)
    assert parts and max(parts) < BUDGET // 8 + 9000
    assert applier.stats.transactions == len(_transactions(large_log))
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(large_log / "expected"))


def test_the_default_budget_gives_the_same_tables_without_parts(large_log, tmp_path, monkeypatch):
    applier, parts = _replay(large_log, tmp_path / "slave.duckdb", BatchLimits().bytes, monkeypatch)
    assert parts == []
    assert applier.budget.peak <= BatchLimits().bytes
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(large_log / "expected"))


def test_a_mixed_log_replays_exactly_under_a_small_budget(tmp_path, monkeypatch):
    """DDL, statements, temporary tables and bulk rows together, with parts and small batches.
    An event is never cut, so the budget is eight times this log's largest (a 120 KB rows event)."""
    log = tmp_path / "mixed"
    generate("mixed", seed=5, out=log, size_mb=2)
    budget = 1 << 20
    applier, parts = _replay(log, tmp_path / "slave.duckdb", budget, monkeypatch)
    assert parts
    assert applier.budget.peak <= budget
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(log / "expected"))


@dataclass
class CutLog:
    """A relay log ended halfway through its last transaction, as if the rest had not arrived."""

    transaction: Transaction
    relay_file: Path  # the file cut, the last one the index lists
    whole: bytes  # what it held
    at: int  # where it now ends
    index: Path
    listed: str  # what the index listed

    def restore(self) -> None:
        self.index.write_text(self.listed)
        self.relay_file.write_bytes(self.whole)


def _cut_inside_the_last_transaction(log: Path) -> CutLog:
    last = _transactions(log)[-1]
    cut = last.events[len(last.events) // 2]  # well past its first parts
    index = log / "relay-bin.index"
    listed = index.read_text()
    lines = listed.splitlines(keepends=True)
    index.write_text("".join(lines[: next(i for i, line in enumerate(lines) if cut.log_name in line) + 1]))
    relay_file = log / cut.log_name
    whole = relay_file.read_bytes()
    relay_file.write_bytes(whole[: cut.pos])
    return CutLog(last, relay_file, whole, cut.pos, index, listed)


def _table_rows(slave_path: Path) -> dict[tuple[str, str], list[tuple]]:
    slave = Slave(slave_path)
    try:
        return {
            key: sorted(slave.con.execute(f'SELECT * FROM "{key[0]}"."{key[1]}"').fetchall())
            for key in slave.user_tables()
        }
    finally:
        slave.close()


def test_a_log_cut_inside_a_large_transaction_applies_none_of_it(large_log, tmp_path, monkeypatch):
    log = tmp_path / "cut"
    shutil.copytree(large_log, log)
    cut = _cut_inside_the_last_transaction(log)
    last = cut.transaction
    assert last.start.log_name == cut.relay_file.name

    applier, parts = _replay(log, tmp_path / "slave.duckdb", BUDGET, monkeypatch)
    assert len(parts) >= 2
    assert applier.stats.stopped_by == "end of relay log"
    assert applier.budget.peak <= BUDGET
    # the slave stands right before the cut transaction, holding what a replay without parts holds
    assert (applier.progress.relay_log_file, applier.progress.relay_log_pos) == (
        last.start.log_name,
        last.start.pos,
    )
    _replay(log, tmp_path / "whole.duckdb", BatchLimits().bytes)
    wanted = _table_rows(tmp_path / "whole.duckdb")
    got = _table_rows(tmp_path / "slave.duckdb")
    cut_slave = Slave(tmp_path / "slave.duckdb")
    try:
        commits = cut_slave.con.execute("SELECT count(*) FROM __relaydeck.commits").fetchone()[0]
    finally:
        cut_slave.close()
    assert got == wanted
    assert commits == len(_transactions(large_log)) - 1

    cut.restore()  # the rest arrives: the next start applies the whole transaction
    again, _ = _replay(log, tmp_path / "slave.duckdb", BUDGET)
    assert again.stats.transactions == 1
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(log / "expected"))


def test_the_command_line_sets_the_budget_with_pending_jobs_size_max():
    import argparse

    from console.cli.replay import batch_limits as _limits
    from engine.errors import RelaydeckError

    limits = _limits(argparse.Namespace(group_size=None, pending_jobs_size_max=BUDGET))
    assert (limits.bytes, limits.transactions) == (BUDGET, BatchLimits().transactions)
    with pytest.raises(RelaydeckError, match="at least 1024"):
        _limits(argparse.Namespace(group_size=None, pending_jobs_size_max=1000))


def test_set_global_replica_pending_jobs_size_max_bounds_the_single_applier(large_log, tmp_path):
    from engine.replica.server import ReplicaServer

    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        replica.execute(f"SET GLOBAL replica_pending_jobs_size_max = {BUDGET}")
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{large_log / 'relay-bin.index'}'")
        replica.execute("START REPLICA")
        assert replica.wait(120)
        run = replica.run_of("")
        assert run is not None and isinstance(run.applier, ChannelApplier)
        assert run.applier.budget.limit == BUDGET
        assert 0 < run.applier.budget.peak <= BUDGET
        assert run.outcome.error is None
    finally:
        replica.close()
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(large_log / "expected"))


def test_following_a_large_transaction_as_it_arrives_commits_it_once_whole(large_log, tmp_path, monkeypatch):
    """--follow: the parts that have arrived are applied and wait, uncommitted, for the rest."""
    import threading
    import time

    log = tmp_path / "live"
    shutil.copytree(large_log, log)
    transactions = _transactions(log)
    cut = _cut_inside_the_last_transaction(log)
    last = cut.transaction

    parts = []  # of the cut transaction
    apply_part = ChannelApplier._apply_part

    def counting(self, part):  # type: ignore[no-untyped-def]
        apply_part(self, part)
        if part.start == last.start:
            parts.append(part.size)

    monkeypatch.setattr(ChannelApplier, "_apply_part", counting)
    slave = Slave(tmp_path / "slave.duckdb")
    stop = threading.Event()
    applier = ChannelApplier(
        slave, "", read_index(cut.index), BatchLimits(bytes=BUDGET), stop=stop, follow=True
    )
    thread = threading.Thread(target=applier.run)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(parts) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(parts) >= 2
        time.sleep(0.5)
        assert applier.progress.transactions == len(transactions) - 1  # the open one not committed
        with cut.relay_file.open("ab") as tail:
            tail.write(cut.whole[cut.at :])
        while applier.progress.transactions < len(transactions) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
        slave.close()
    assert applier.progress.transactions == len(transactions)
    assert applier.budget.peak <= BUDGET
    assert_tables_equal(tmp_path / "slave.duckdb", expected_tables(large_log / "expected"))
