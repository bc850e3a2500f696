"""The replication repository: MySQL's column lists, channel rules, atomic checkpoints, concurrent readers."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils

from engine.errors import RelaydeckError
from engine.repository import (
    MAX_CHANNELS,
    ZERO_TIMESTAMP,
    InvalidChannelName,
    Repository,
    RepositoryError,
    TooManyChannels,
    UnknownChannel,
    UnknownField,
    mysql_timestamp,
)

ROOT = Path(__file__).resolve().parent.parent
UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

# MySQL 8.0's mysql.slave_master_info, slave_relay_log_info and slave_worker_info, in order
MYSQL_MASTER_INFO = [
    "Number_of_lines", "Master_log_name", "Master_log_pos", "Host", "User_name", "User_password",
    "Port", "Connect_retry", "Enabled_ssl", "Ssl_ca", "Ssl_capath", "Ssl_cert", "Ssl_cipher",
    "Ssl_key", "Ssl_verify_server_cert", "Heartbeat", "Bind", "Ignored_server_ids", "Uuid",
    "Retry_count", "Ssl_crl", "Ssl_crlpath", "Enabled_auto_position", "Channel_name", "Tls_version",
    "Public_key_path", "Get_public_key", "Network_namespace", "Master_compression_algorithm",
    "Master_zstd_compression_level", "Tls_ciphersuites", "Source_connection_auto_failover", "Gtid_only",
]  # fmt: skip
MYSQL_RELAY_LOG_INFO = [
    "Number_of_lines", "Relay_log_name", "Relay_log_pos", "Master_log_name", "Master_log_pos",
    "Sql_delay", "Number_of_workers", "Id", "Channel_name", "Privilege_checks_username",
    "Privilege_checks_hostname", "Require_row_format", "Require_table_primary_key_check",
    "Assign_gtids_to_anonymous_transactions_type", "Assign_gtids_to_anonymous_transactions_value",
]  # fmt: skip
MYSQL_WORKER_INFO = [
    "Id", "Relay_log_name", "Relay_log_pos", "Master_log_name", "Master_log_pos",
    "Checkpoint_relay_log_name", "Checkpoint_relay_log_pos", "Checkpoint_master_log_name",
    "Checkpoint_master_log_pos", "Checkpoint_seqno", "Checkpoint_group_size",
    "Checkpoint_group_bitmap", "Channel_name",
]  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path):
    with Repository(tmp_path / "repo.db") as r:
        yield r


def columns(path: Path, table: str) -> list[str]:
    return [c.name for c in sqlite_utils.Database(path)[table].columns]


def worker(worker_id: int, gtid: str, commit: float, end: float) -> dict:
    return {
        "WORKER_ID": worker_id,
        "SERVICE_STATE": "ON",
        "LAST_APPLIED_TRANSACTION": gtid,
        "LAST_APPLIED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": commit,
        "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP": end,
    }


def test_creation_is_idempotent_and_keeps_mysql_columns(tmp_path: Path) -> None:
    path = tmp_path / "repo.db"
    with Repository(path) as first:
        first.update_relay_log_info("m1", Relay_log_pos=1234)
    schema = sqlite_utils.Database(path).schema
    with Repository(path) as second:
        assert sqlite_utils.Database(path).schema == schema
        assert second.channels() == ["", "m1"]
        assert second.relay_log_info("m1")["Relay_log_pos"] == 1234
        assert second.master_info("")["Number_of_lines"] == len(MYSQL_MASTER_INFO)
        assert second.relay_log_info("")["Number_of_lines"] == len(MYSQL_RELAY_LOG_INFO)
    assert columns(path, "master_info")[: len(MYSQL_MASTER_INFO)] == MYSQL_MASTER_INFO
    assert columns(path, "master_info")[len(MYSQL_MASTER_INFO) :] == ["Using_gtid"]  # MariaDB's
    assert columns(path, "relay_log_info")[: len(MYSQL_RELAY_LOG_INFO)] == MYSQL_RELAY_LOG_INFO
    assert columns(path, "relay_log_info")[len(MYSQL_RELAY_LOG_INFO) :] == [
        "Relay_log_index",
        "Executed_gtid_set",
        "Applier_state",
    ]
    assert columns(path, "worker_info") == MYSQL_WORKER_INFO
    for table in (
        "replication_applier_status_by_coordinator",
        "replication_applier_status_by_worker",
        "replication_connection_status",
    ):
        assert columns(path, table)[0] == "CHANNEL_NAME"
    assert "NOCASE" in sqlite_utils.Database(path)["worker_info"].schema


def test_channel_names_compare_case_insensitively(repo: Repository) -> None:
    repo.ensure_channel("m1")
    repo.ensure_channel("M1")
    assert repo.channels() == ["", "m1"]
    assert repo.master_info("M1")["Channel_name"] == "m1"
    repo.update_relay_log_info("M1", Relay_log_name="relay-bin-m1.000002", Relay_log_pos=99)
    assert repo.relay_log_info("m1")["Relay_log_pos"] == 99
    repo.publish_status({"CHANNEL_NAME": "M1", "SERVICE_STATE": "ON"}, [])
    (status,) = repo.status("M1")
    assert status.channel_name == "m1" and status.service_state == "ON"
    # the collation is on the columns: plain SQL finds the row under either spelling
    found = repo._conn.execute(
        "SELECT count(*) FROM replication_applier_status_by_coordinator WHERE CHANNEL_NAME = 'M1'"
    )
    assert found.fetchone()[0] == 1
    assert repo.master_info("m2") is None and repo.status("m2") == []


def test_channel_limit_and_name_length(repo: Repository) -> None:
    for i in range(MAX_CHANNELS - 1):  # the default channel is the 256th
        repo.ensure_channel(f"ch{i}")
    assert len(repo.channels()) == MAX_CHANNELS
    with pytest.raises(TooManyChannels) as excinfo:
        repo.ensure_channel("one_too_many")
    assert isinstance(excinfo.value, RelaydeckError)
    with pytest.raises(TooManyChannels):
        repo.update_master_info("one_too_many", Host="example")
    repo.ensure_channel("CH0")  # an existing channel in other letters is no new channel
    repo.delete_channel("ch0")
    repo.ensure_channel("one_more")
    assert len(repo.channels()) == MAX_CHANNELS

    repo.delete_channel("one_more")
    repo.ensure_channel("x" * 64)
    with pytest.raises(InvalidChannelName):
        repo.ensure_channel("x" * 65)
    with pytest.raises(UnknownChannel):
        repo.delete_channel("never_was")


def test_default_channel_always_exists(repo: Repository) -> None:
    repo.update_relay_log_info("", Relay_log_pos=500)
    repo.delete_channel("")
    assert repo.channels() == [""]
    assert repo.relay_log_info("")["Relay_log_pos"] == 4


def test_checkpoint_is_one_transaction(repo: Repository, tmp_path: Path, monkeypatch) -> None:
    repo.set_number_of_workers("m1", 2)
    start = [
        {"Id": 1, "Relay_log_pos": 100, "Checkpoint_seqno": 3, "Checkpoint_group_bitmap": b"\x07"},
        {"Id": 2, "Relay_log_pos": 150, "Checkpoint_seqno": 4, "Checkpoint_group_bitmap": b"\x0f"},
    ]
    repo.write_checkpoint("m1", {"Relay_log_name": "relay-bin-m1.000001", "Relay_log_pos": 150}, start)
    before = (repo.relay_log_info("m1"), repo.worker_infos("m1"))
    assert [w["Checkpoint_group_bitmap"] for w in before[1]] == [b"\x07", b"\x0f"]

    # A value SQLite cannot store, met after relay_log_info and worker 1 were written
    bad = [{"Id": 1, "Relay_log_pos": 900}, {"Id": 2, "Relay_log_pos": object()}]
    with pytest.raises(RepositoryError):
        repo.write_checkpoint("m1", {"Relay_log_pos": 900}, bad)
    assert (repo.relay_log_info("m1"), repo.worker_infos("m1")) == before

    # Any exception in the middle, not only SQLite's, rolls the whole checkpoint back
    upsert = Repository._upsert

    def failing_upsert(self, table, channel, row):
        if table.name == "worker_info" and row.get("Id") == 2:
            raise RuntimeError("killed mid-checkpoint")
        return upsert(self, table, channel, row)

    monkeypatch.setattr(Repository, "_upsert", failing_upsert)
    with pytest.raises(RuntimeError):
        repo.write_checkpoint("m1", {"Relay_log_pos": 900}, [{"Id": 1, "Relay_log_pos": 900}, {"Id": 2}])
    monkeypatch.undo()
    assert (repo.relay_log_info("m1"), repo.worker_infos("m1")) == before
    with Repository(tmp_path / "repo.db") as other:  # and another connection agrees
        assert (other.relay_log_info("m1"), other.worker_infos("m1")) == before

    with pytest.raises(UnknownField):
        repo.write_checkpoint("m1", {"Relay_log_possition": 1}, [])


def test_worker_rows_belong_to_their_channel(repo: Repository) -> None:
    repo.write_checkpoint("a", {}, [{"Id": i, "Relay_log_pos": 10 * i} for i in range(1, 4)])
    repo.write_checkpoint("b", {}, [{"Id": 1, "Relay_log_pos": 7}, {"Id": 2, "Relay_log_pos": 8}])
    assert [w["Id"] for w in repo.worker_infos("A")] == [1, 2, 3]
    assert [(w["Channel_name"], w["Relay_log_pos"]) for w in repo.worker_infos("b")] == [("b", 7), ("b", 8)]
    repo.write_checkpoint("a", {}, [{"Id": 1, "Relay_log_pos": 11}])  # a shrunk set drops the rest
    assert [(w["Id"], w["Relay_log_pos"]) for w in repo.worker_infos("a")] == [(1, 11)]
    assert len(repo.worker_infos("b")) == 2

    now = time.time()
    repo.publish_status({"CHANNEL_NAME": "a"}, [worker(1, f"{UUID}:1", now, now)])
    repo.publish_status({"CHANNEL_NAME": "b"}, [worker(i, f"{UUID}:{i}", now, now) for i in (1, 2)])
    assert [s.workers_running for s in repo.status()] == [0, 1, 2]
    with pytest.raises(RepositoryError):
        repo.publish_status({"CHANNEL_NAME": "a"}, [{"CHANNEL_NAME": "b", "WORKER_ID": 1}])
    repo.delete_channel("b")
    assert repo.worker_infos("b") == [] and repo.channels() == ["", "a"]
    assert repo._conn.execute("SELECT count(*) FROM replication_applier_status_by_worker").fetchone()[0] == 1


def test_status_json(repo: Repository) -> None:
    now = time.time()
    repo.update_master_info("m1", Master_log_name="binlog.000042", Master_log_pos=9000, Uuid=UUID)
    repo.update_relay_log_info(
        "m1",
        Relay_log_name="relay-bin-m1.000003",
        Relay_log_pos=777,
        Master_log_name="binlog.000042",
        Master_log_pos=8000,
        Executed_gtid_set=f"{UUID}:1-41",
        Relay_log_index="/data/relay-bin-m1.index",
        Sql_delay=5,
    )
    repo.set_number_of_workers("m1", 2)
    repo.publish_status(
        {"channel_name": "m1", "service_state": "ON", "LAST_PROCESSED_TRANSACTION": f"{UUID}:42"},
        [worker(1, f"{UUID}:40", now - 12, now - 1), worker(2, f"{UUID}:41", now - 10, now)],
        {"SOURCE_UUID": UUID, "RECEIVED_TRANSACTION_SET": f"{UUID}:1-50",
         "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": now - 4},
        {"transactions_applied": 41, "rows_applied": 1000, "bytes_applied": 65536,
         "relay_log_file_read": "relay-bin-m1.000004", "relay_log_pos_read": 120, "trx_per_s": 812.5,
         "started_at": now - 60},
    )  # fmt: skip
    status = {s.channel_name: s for s in repo.status()}["m1"]
    data = json.loads(json.dumps(status.to_json()))
    required = {
        "channel_name", "service_state", "transactions_applied", "last_applied_transaction",
        "relay_log_file", "relay_log_pos", "exec_source_log_pos", "last_error_number", "last_error_message",
    }  # fmt: skip
    assert required <= data.keys()
    assert all(key == key.lower() for key in data)
    assert data["channel_name"] == "m1" and data["service_state"] == "ON"
    assert data["replica_sql_running"] == "Yes"
    assert data["transactions_applied"] == 41 and data["trx_per_s"] == 812.5
    assert data["last_applied_transaction"] == f"{UUID}:41"  # the worker that finished last
    assert (data["relay_log_file"], data["relay_log_pos"]) == ("relay-bin-m1.000003", 777)
    assert (data["relay_source_log_file"], data["exec_source_log_pos"]) == ("binlog.000042", 8000)
    assert (data["source_log_file"], data["read_source_log_pos"]) == ("binlog.000042", 9000)
    assert data["executed_gtid_set"] == f"{UUID}:1-41" and data["retrieved_gtid_set"] == f"{UUID}:1-50"
    assert data["sql_delay"] == 5 and data["number_of_workers"] == 2 and data["workers_running"] == 2
    assert data["seconds_behind_source"] == pytest.approx(6.0, abs=0.01)
    assert data["last_error_number"] == 0 and data["last_error_message"] == ""
    shown = status.show_replica_status()
    assert shown["Channel_Name"] == "m1" and shown["Seconds_Behind_Source"] == 6

    repo.record_error("M1", 1062, "Duplicate entry '7' for key 't.PRIMARY'", when=now)
    (failed,) = repo.status("m1")
    assert (failed.last_error_number, failed.applier_state) == (1062, "ERROR")
    assert failed.last_error_timestamp != ZERO_TIMESTAMP
    assert failed.show_replica_status()["Last_SQL_Error"].startswith("Duplicate entry")
    repo.clear_error("m1")
    (cleared,) = repo.status("m1")
    assert (cleared.last_error_number, cleared.last_error_message, cleared.applier_state) == (0, "", "OFF")


def test_wal_mode_and_waiting_for_a_writer(repo: Repository) -> None:
    other = sqlite3.connect(repo.path, isolation_level=None, check_same_thread=False)
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # Another writer holds the lock for a moment: the repository waits instead of failing
        other.execute("BEGIN IMMEDIATE")
        release.start()
        started = time.monotonic()
        repo.ensure_channel("waited")
        assert time.monotonic() - started >= 0.2
        assert "waited" in repo.channels()
    finally:
        release.join()
        other.close()


READER = """
import sys, time
from engine.repository import Repository

path, uuid, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
with Repository(path) as repo:
    print("ready", flush=True)
    seen, reads, last = set(), 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for status in repo.status():
            if status.channel_name != "live":
                continue
            n = status.transactions_applied
            # coordinator, worker and stats rows come from one commit, so they always agree
            assert status.last_applied_transaction == (f"{uuid}:{n}" if n else ""), status
            # checkpoints trail the status by at most one checkpoint interval
            applied_to = status.relay_log_pos - 4
            assert applied_to % 5 == 0 and n - 5 <= applied_to <= n, status
            assert n >= last, (n, last)
            last = n
            seen.add(n)
        reads += 1
    print(reads, len(seen), last, flush=True)
"""


def test_another_process_reads_while_one_writes(repo: Repository) -> None:
    repo.ensure_channel("live")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(repo.path), UUID, "1.6"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "ready"
        writes, n = 0, 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            n += 1
            now = time.time()
            repo.publish_status(
                {"CHANNEL_NAME": "live", "SERVICE_STATE": "ON", "LAST_PROCESSED_TRANSACTION": f"{UUID}:{n}"},
                [worker(1, f"{UUID}:{n}", now, now)],
                None,
                {"transactions_applied": n},
            )
            if n % 5 == 0:
                repo.write_checkpoint("live", {"Relay_log_pos": 4 + n}, [{"Id": 1, "Relay_log_pos": 4 + n}])
            writes += 1
        out, err = reader.communicate(timeout=15)
    finally:
        if reader.poll() is None:
            reader.kill()
    assert "database is locked" not in err
    assert reader.returncode == 0, err
    reads, distinct, last = map(int, out.split())
    assert writes > 20 and reads > 20
    assert distinct > 1 and 0 < last <= n


def test_timestamps_are_stored_as_mysql_shows_them() -> None:
    assert mysql_timestamp(None) == mysql_timestamp(0) == ZERO_TIMESTAMP
    assert mysql_timestamp(1_700_000_000.25) == "2023-11-14 22:13:20.250000"
    assert mysql_timestamp("2023-11-14T23:13:20.25+01:00") == "2023-11-14 22:13:20.250000"
    with pytest.raises(RepositoryError):
        mysql_timestamp("yesterday")


def test_a_complete_repository_opens_without_sqlite_utils(tmp_path: Path) -> None:
    """Only creating tables needs sqlite-utils: a status poll opens a repository without it."""
    path = tmp_path / "repo.db"
    code = (
        "import sys; from engine.repository import Repository; "
        f"r = Repository({str(path)!r}); r.ensure_channel('m1'); r.close(); "
        "print('sqlite_utils' in sys.modules)"
    )
    run = [sys.executable, "-c", code]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.split() == ["True"]
    assert subprocess.run(run, capture_output=True, text=True, check=True).stdout.split() == ["False"]


def test_opening_a_repository_leaves_pandas_unloaded_and_importable():
    """sqlite_utils would import pandas, a sixth of a second at every command's start."""
    code = (
        "import sys, engine.repository; loaded = 'pandas' in sys.modules; "
        "import pandas; print(loaded, pandas.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "pandas"]
