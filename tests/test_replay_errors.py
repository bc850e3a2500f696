"""Apply errors stop the channel at the last whole transaction, named by GTID and position, and the
repository says so (Last_SQL_Errno / Last_SQL_Error)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import duckdb

from .binlog_frames import raw_events, with_crc
from .conftest import replay_argv
from .relay_logs import RelayLogBuilder, table_of, write_relay_log


def replay(index: Path, slave: Path, repo: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`relaydeck replay` of channel c1 in a subprocess, as a DBA runs it."""
    return subprocess.run(
        replay_argv(slave, repo, f"c1={index}", *options), capture_output=True, text=True, timeout=120
    )


SETUP = [
    ("CREATE DATABASE shop", True),
    ("CREATE TABLE shop.t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", True),
    ("INSERT INTO t VALUES (1, 'a')", False),
    ("INSERT INTO t VALUES (2, 'b')", False),
]
GTID = f"{uuid.UUID(int=7)}"


def table_rows(slave: Path) -> list[tuple]:
    con = duckdb.connect(str(slave), read_only=True)
    try:
        return con.execute("SELECT * FROM shop.t ORDER BY id").fetchall()
    finally:
        con.close()


def test_an_untranslatable_statement_stops_the_channel_at_the_last_whole_transaction(tmp_path):
    index = write_relay_log(
        tmp_path / "relay",
        [*SETUP, ("INSERT IGNORE INTO t VALUES (3, 'c')", False), ("INSERT INTO t VALUES (4, 'd')", False)],
    )
    run = replay(index, tmp_path / "s.duckdb", tmp_path / "r.sqlite", "--group-size", "100")
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and f"GTID {GTID}:5" in run.stderr and "INSERT IGNORE" in run.stderr
    assert table_rows(tmp_path / "s.duckdb") == [(1, "a"), (2, "b")]
    row = status_of(tmp_path / "r.sqlite")
    assert row["last_error_number"] == 1105 and f"{GTID}:5" in row["last_error_message"]
    assert row["transactions_applied"] == 4


def test_a_duplicate_key_stops_the_channel_with_error_1062_and_nothing_half_applied(tmp_path):
    index = write_relay_log(
        tmp_path / "relay",
        [*SETUP, ("INSERT INTO t VALUES (5, 'e')", False), ("INSERT INTO t VALUES (6, 'f')", False)],
    )
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    # a slave that already holds key 6 (as if someone wrote to it): the source's insert of 6 must fail
    first = replay_until_table_exists(index, slave, repo)
    con = duckdb.connect(str(slave))
    con.execute("INSERT INTO shop.t VALUES (6, 'local')")
    con.close()
    run = replay(index, slave, repo)
    assert first.returncode == 0
    assert run.returncode == 1 and "Error 1062" not in run.stdout
    assert f"GTID {GTID}:6" in run.stderr
    assert table_rows(slave) == [(1, "a"), (2, "b"), (5, "e"), (6, "local")]
    assert status_of(repo)["last_error_number"] == 1062


def test_an_update_that_moves_a_key_onto_another_stops_with_error_1062(tmp_path):
    index = write_relay_log(
        tmp_path / "relay",
        [*SETUP, ("UPDATE t SET ID = 1 WHERE id = 2", False), ("INSERT INTO t VALUES (7, 'g')", False)],
    )
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    run = replay(index, slave, repo)
    assert run.returncode == 1 and f"GTID {GTID}:5" in run.stderr
    assert table_rows(slave) == [(1, "a"), (2, "b")]
    assert status_of(repo)["last_error_number"] == 1062


def test_statements_that_assign_no_key_column_are_not_checked_for_duplicate_keys(tmp_path):
    """MySQL refuses a statement that duplicates a key; an UPDATE of other columns, or a DELETE,
    cannot, so the slave's table is not scanned for duplicates after them: a duplicate someone
    wrote into the slave is left to the statement that meets it."""
    index = write_relay_log(
        tmp_path / "relay",
        [
            *SETUP,
            ("UPDATE t SET v = 'z' WHERE id = 2", False),
            ("DELETE FROM t WHERE id = 2", False),
            ("INSERT INTO t VALUES (3, 'c')", False),
        ],
    )
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    first = replay(index, slave, repo, "--until-gtid", f"{GTID}:1-4")
    con = duckdb.connect(str(slave))
    con.execute("INSERT INTO shop.t VALUES (1, 'local')")  # a duplicate of the source's key 1
    con.close()
    run = replay(index, slave, repo, "--until-gtid", f"{GTID}:1-6")
    assert first.returncode == 0 and run.returncode == 0, run.stderr
    assert sorted(table_rows(slave)) == [(1, "a"), (1, "local")]
    # an INSERT is checked: the duplicate stops the channel there
    run = replay(index, slave, repo)
    assert run.returncode == 1 and f"GTID {GTID}:7" in run.stderr
    assert status_of(repo)["last_error_number"] == 1062


def replay_until_table_exists(index: Path, slave: Path, repo: Path) -> subprocess.CompletedProcess[str]:
    return replay(index, slave, repo, "--until-gtid", f"{GTID}:1-2")


def test_a_missing_table_stops_the_channel_with_error_1146(tmp_path):
    index = write_relay_log(tmp_path / "relay", SETUP)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    assert replay_until_table_exists(index, slave, repo).returncode == 0
    con = duckdb.connect(str(slave))
    con.execute("DROP TABLE shop.t")
    con.close()
    run = replay(index, slave, repo)
    assert run.returncode == 1 and f"GTID {GTID}:3" in run.stderr
    row = status_of(repo)
    assert row["last_error_number"] in (1146, 1105)
    assert row["transactions_applied"] == 2


def test_a_row_event_for_a_row_the_slave_lacks_stops_with_error_1032(tmp_path):
    from engine.generate import generate

    summary = generate("oltp", 3, tmp_path / "relay")
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    from engine.relaylog.index import read_index
    from engine.relaylog.stream import stream_events
    from engine.transactions import Transaction, assemble

    gtids = [
        t.gtid for t in assemble(stream_events(read_index(summary.index_file))) if isinstance(t, Transaction)
    ]
    sid = gtids[0].rsplit(":", 1)[0]
    assert replay(summary.index_file, slave, repo, "--until-gtid", f"{sid}:1-30").returncode == 0
    con = duckdb.connect(str(slave))
    tables = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema LIKE 'sbtest%'"
    ).fetchall()
    for schema, name in tables:
        con.execute(f'DELETE FROM "{schema}"."{name}"')
    applied_before = con.execute("SELECT transactions FROM __relaydeck.progress").fetchone()[0]
    con.close()
    run = replay(summary.index_file, slave, repo)
    assert run.returncode == 1 and "Error 1032" in run.stderr and "GTID " in run.stderr
    row = status_of(repo)
    assert row["last_error_number"] == 1032
    assert applied_before == 30
    assert row["transactions_applied"] >= applied_before


def status_of(repo: Path, channel: str = "c1") -> dict:
    """SHOW REPLICA STATUS of one channel, as `relaydeck status --json` gives it."""
    out = subprocess.run(
        [sys.executable, "-m", "console.cli", "status", "--repository", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return next(r for r in json.loads(out.stdout) if r["channel_name"] == channel)


def test_an_error_in_a_batch_committed_behind_the_reader_names_that_transaction(tmp_path):
    # Small batches: the failing one is applied by the committer thread while the applier reads
    # on; the channel still stops right before it, and no later batch is applied.
    inserts = [(f"INSERT INTO t VALUES ({10 + i}, 'x')", False) for i in range(40)]
    inserts[21] = ("INSERT IGNORE INTO t VALUES (99, 'bad')", False)
    index = write_relay_log(tmp_path / "relay", [*SETUP, *inserts])
    run = replay(index, tmp_path / "s.duckdb", tmp_path / "r.sqlite", "--group-size", "5")
    failing = len(SETUP) + 22  # GTID numbers count from 1
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and f"GTID {GTID}:{failing}" in run.stderr
    assert table_rows(tmp_path / "s.duckdb") == [(1, "a"), (2, "b")] + [(10 + i, "x") for i in range(21)]
    assert status_of(tmp_path / "r.sqlite")["transactions_applied"] == failing - 1


def test_an_unexpected_failure_stops_the_channel_at_its_transaction_with_one_located_line(
    tmp_path, monkeypatch
):
    # A defect (here: the executor failing on one transaction, whenever it is applied) must not
    # escape the channel's thread as a traceback nor as an "internal error" naming nothing: the
    # batch holding it is narrowed down like an apply error, the channel stops right before that
    # transaction and the error names it and its relay-log position.
    from engine.applier.executor import TransactionExecutor
    from engine.replay import ChannelSpec, Replay

    index = write_relay_log(
        tmp_path / "relay", [*SETUP, *[(f"INSERT INTO t VALUES ({10 + i}, 'x')", False) for i in range(5)]]
    )
    apply = TransactionExecutor.apply

    def failing(self, txn, decoded=None):
        if txn.gtid == f"{GTID}:6":
            raise RuntimeError("worn-out bearing")
        return apply(self, txn, decoded)

    monkeypatch.setattr(TransactionExecutor, "apply", failing)
    outcomes = Replay(tmp_path / "s.duckdb", tmp_path / "r.sqlite", [ChannelSpec("c1", index)]).run()
    error = outcomes[0].error
    assert error is not None and error.errno == 1105
    line = error.one_line()
    assert "internal error" not in line and "RuntimeError: worn-out bearing" in line
    assert f"in transaction GTID {GTID}:6 (relay log relay-bin.0000" in line
    # every transaction before the failing one is applied, nothing of it or after it
    assert table_rows(tmp_path / "s.duckdb") == [(1, "a"), (2, "b"), (10, "x")]
    row = status_of(tmp_path / "r.sqlite")
    assert row["last_error_number"] == 1105 and row["transactions_applied"] == 5


def test_a_statement_holding_bytes_invalid_in_utf8_stops_with_error_1300_at_its_transaction(tmp_path):
    # MySQL's statement would store the bytes; DuckDB takes only valid UTF-8 (README, differences).
    index = write_relay_log(
        tmp_path / "relay",
        [*SETUP, ("INSERT INTO t VALUES (3, 'XX')", False), ("INSERT INTO t VALUES (4, 'd')", False)],
    )
    relay_file = next(p for p in sorted(index.parent.glob("relay-bin.0*")) if b"'XX'" in p.read_bytes())
    data = bytearray(relay_file.read_bytes())
    at = data.index(b"'XX'") + 1
    data[at : at + 2] = b"\xc0\xc0"
    # the Query event holding it gets its CRC32 again: only the statement's bytes are wrong
    event = next(ev for ev in raw_events(bytes(data))[0] if ev.pos <= at < ev.end)
    relay_file.write_bytes(bytes(with_crc(data, event)))
    run = replay(index, tmp_path / "s.duckdb", tmp_path / "r.sqlite")
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "Error 1300" in run.stderr and "Invalid utf8mb4 character string: '\\xC0\\xC0" in run.stderr
    assert f"GTID {GTID}:5 (relay log {relay_file.name}:" in run.stderr
    assert "internal error" not in run.stderr and "surrogate" not in run.stderr
    assert table_rows(tmp_path / "s.duckdb") == [(1, "a"), (2, "b")]


def test_an_unexpected_failure_outside_any_transaction_names_where_the_channel_stood(tmp_path, monkeypatch):
    # Not while applying a transaction (here: the recovery step at START), so none to name: the
    # error still says what happened and the relay-log position the channel had reached.
    from engine import replay as replay_module
    from engine.replay import ChannelSpec, Replay
    from engine.slave.database import Slave

    index = write_relay_log(tmp_path / "relay", SETUP)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    assert replay_until_table_exists(index, slave, repo).returncode == 0
    check = Slave(slave)
    progress = check.progress("c1")
    check.close()

    def flooded(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("flooded cellar")

    monkeypatch.setattr(replay_module, "fill_gaps", flooded)
    (outcome,) = Replay(slave, repo, [ChannelSpec("c1", index)]).run()
    line = outcome.error.one_line()
    assert "internal error" not in line and "RuntimeError: flooded cellar" in line
    assert f"(relay log {progress.relay_log_file}:{progress.relay_log_pos})" in line
    assert status_of(repo)["last_error_number"] == 1105


def test_a_row_image_that_does_not_decode_stops_with_error_1594_naming_the_rows_event(tmp_path):
    # The reader frames the event (its CRC32 holds); its row image, cut 3 bytes short, fails only
    # when applied: the error names the rows event, in the binlog's terms.
    from .conftest import MULTISOURCE
    from .test_bad_input import PYTHON_PHRASING, WRITE_ROWS_V1, first_of, shortened_at_the_source

    relay = tmp_path / "relay"
    shutil.copytree(MULTISOURCE / "relay", relay)
    path = relay / "relay-bin-m2.000002"
    data = path.read_bytes()
    victim = first_of(raw_events(data)[0], WRITE_ROWS_V1)
    path.write_bytes(shortened_at_the_source(data, victim, 3))
    run = subprocess.run(
        replay_argv(tmp_path / "s.duckdb", tmp_path / "r.sqlite", f"m2={relay / 'relay-bin-m2.index'}"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "Error 1594" in run.stderr and f"rows event at relay-bin-m2.000002:{victim.pos}: " in run.stderr
    assert not PYTHON_PHRASING.search(run.stderr.split("Error 1594", 1)[1]), run.stderr


def test_duckdb_refusing_a_row_event_names_the_table_and_the_transaction(tmp_path):
    # The slave's table changed by hand (v now INTEGER): DuckDB refuses the row event's 'a'.
    from engine.binlog.constants import EventType

    log = RelayLogBuilder(tmp_path / "relay")
    log.ddl("CREATE DATABASE shop")
    log.ddl("CREATE TABLE shop.t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    log.rows(table_of("shop"), EventType.WRITE_ROWS, [(1, "a")])
    index = log.close()
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    gtid = str(log.source_uuid)
    assert replay(index, slave, repo, "--until-gtid", f"{gtid}:1-2").returncode == 0
    con = duckdb.connect(str(slave))
    con.execute("ALTER TABLE shop.t ALTER v TYPE INTEGER")
    con.close()
    run = replay(index, slave, repo)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert f"Error 1105 in transaction GTID {gtid}:3 (relay log " in run.stderr
    assert "Could not execute row event on table shop.t; DuckDB: Conversion Error" in run.stderr
