"""The receiver against a real MariaDB source: relay logs a replica would write, that relaydeck
replays into exactly the source's tables and that mariadb-binlog reads."""

from __future__ import annotations

import io
import json
import random
import subprocess
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from console.cli import main
from engine.relaylog.index import read_index
from tests.conftest import replay_argv

TABLES = {
    "items": "id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), qty BIGINT, "
    "note TEXT NULL, seen DATETIME NULL",
    "moves": "id BIGINT PRIMARY KEY AUTO_INCREMENT, item INT NOT NULL, delta INT NOT NULL",
}


def write_load(server, database: str, transactions: int, seed: int, *, rotate_at: int | None = None) -> None:
    """Inserts, updates and deletes in multi-statement transactions, a source binlog switch at rotate_at."""
    rnd = random.Random(seed)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {database}")
        for table, columns in TABLES.items():
            cur.execute(f"CREATE TABLE IF NOT EXISTS {database}.{table} ({columns})")
        cur.execute(f"SELECT COALESCE(MAX(id), 0) FROM {database}.items")
        first = cur.fetchone()[0] + 1
        for n in range(transactions):
            if n == rotate_at:
                cur.execute("FLUSH BINARY LOGS")
            key = first + n
            cur.execute("BEGIN")
            cur.execute(
                f"INSERT INTO {database}.items VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    key,
                    f"item {key} é",
                    Decimal(rnd.randint(-99999, 99999)) / 100,
                    rnd.randint(-(2**40), 2**40),
                    None if rnd.random() < 0.3 else "x" * rnd.randint(0, 400),
                    None
                    if rnd.random() < 0.5
                    else f"2024-0{rnd.randint(1, 9)}-1{rnd.randint(0, 9)} 12:34:56",
                ),
            )
            cur.execute(
                f"INSERT INTO {database}.moves (item, delta) VALUES (%s, %s)", (key, rnd.randint(1, 9))
            )
            if n % 3 == 0:
                cur.execute(f"UPDATE {database}.items SET qty = qty + 1, note = 'changed' WHERE id = %s",
                            (rnd.randint(first, key),))  # fmt: skip
            if n % 5 == 0:
                cur.execute(f"DELETE FROM {database}.items WHERE id = %s", (rnd.randint(first, key),))
            cur.execute("COMMIT")


def source_rows(server, database: str, table: str) -> list[tuple]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {database}.{table} ORDER BY id")
        return list(cur.fetchall())


def slave_rows(slave: Path, database: str, table: str) -> list[tuple]:
    with duckdb.connect(str(slave), read_only=True) as conn:
        return [tuple(row) for row in conn.sql(f"SELECT * FROM {database}.{table} ORDER BY id").fetchall()]


def receive(server, relay_dir: Path, channel: str, *options: str) -> str:
    out = io.StringIO()
    argv = ["receive", "--host", server.host, "--port", str(server.port), "--user", "repl",
            "--password", server.repl_password, "--channel", channel, "--relay-dir", str(relay_dir), *options]  # fmt: skip
    assert main(argv, out=out) == 0
    return out.getvalue()


def replay(tmp_path: Path, channel: str, index: Path) -> subprocess.CompletedProcess:
    argv = replay_argv(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", f"{channel}={index}")
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def relay_events(index: Path) -> list[dict]:
    out = io.StringIO()
    assert main(["events", "--json", str(index)], out=out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def assert_each_transaction_received_once(index: Path) -> None:
    gtids = [e["info"].split()[-1] for e in relay_events(index) if e["event_type"] == "Gtid"]
    assert len(gtids) == len(set(gtids)), "a transaction was received twice"


def assert_same_tables(server, slave: Path, database: str) -> None:
    for table in TABLES:
        expected = source_rows(server, database, table)
        assert expected, f"{database}.{table} is empty at the source"
        assert slave_rows(slave, database, table) == expected, f"{database}.{table} differs"


def test_received_relay_logs_replay_into_the_source_tables(mariadb_source, tmp_path):
    write_load(mariadb_source, "shop1", 120, seed=1, rotate_at=60)
    relay_dir = tmp_path / "relay"
    said = receive(mariadb_source, relay_dir, "live", "--max-relay-log-size", "16384")
    assert "(caught up)" in said
    index = relay_dir / "relay-bin-live.index"
    files = index.read_text().splitlines()
    assert files[0] == "./relay-bin-live.000001" and len(files) >= 4  # rotated by size and by the source
    for name in files[:-1]:
        size = (relay_dir / name).stat().st_size
        assert size < 16384 + 8192, f"{name} is {size} bytes: not rotated at max_relay_log_size"

    done = replay(tmp_path, "live", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop1")


def test_relay_files_are_a_replicas(mariadb_source, tmp_path):
    """Each file: the replica's own Format_description (its server id, the relay-log flag), the
    source's events with their checksums; mariadb-binlog reads every file."""
    write_load(mariadb_source, "shop2", 30, seed=2, rotate_at=10)
    relay_dir = tmp_path / "relay"
    receive(mariadb_source, relay_dir, "c2", "--max-relay-log-size", "8192", "--server-id", "77")
    files = sorted(relay_dir.glob("relay-bin-c2.0*"))
    events = relay_events(relay_dir / "relay-bin-c2.index")
    for path in files:
        own = [e for e in events if e["log_name"] == path.name]
        assert own[0]["pos"] == 4 and own[0]["event_type"] == "Format_desc" and own[0]["server_id"] == 77
        assert path.read_bytes()[4 + 17] & 0x40  # LOG_EVENT_RELAY_LOG_F
    own_rotates = [e for e in events if e["event_type"] == "Rotate" and e["server_id"] == 77]
    assert [e["info"].split(";")[0] for e in own_rotates] == [p.name for p in files[1:]]
    source_rotates = [e for e in events if e["event_type"] == "Rotate" and e["server_id"] == 1]
    assert any(e["end_log_pos"] == 0 for e in source_rotates)  # the dump's artificial Rotate
    assert any(e["end_log_pos"] > 0 for e in source_rotates)  # the source's own, at FLUSH BINARY LOGS
    assert any(e["info"].startswith("BEGIN GTID") for e in events)
    listing = subprocess.run(
        ["mariadb-binlog", *map(str, files)], capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0, listing.stderr
    assert "Table_map: `shop2`.`items`" in listing.stdout and "GTID 0-1-" in listing.stdout


def test_receiving_again_goes_on_without_duplicates(mariadb_source, tmp_path):
    relay_dir = tmp_path / "relay"
    write_load(mariadb_source, "shop3", 40, seed=3)
    receive(mariadb_source, relay_dir, "again", "--max-relay-log-size", "16384")
    first_files = set(relay_dir.glob("relay-bin-again.0*"))
    write_load(mariadb_source, "shop3", 40, seed=4, rotate_at=20)
    receive(mariadb_source, relay_dir, "again", "--max-relay-log-size", "16384")
    assert set(relay_dir.glob("relay-bin-again.0*")) > first_files  # a new relay file per connection
    index = relay_dir / "relay-bin-again.index"
    assert_each_transaction_received_once(index)

    done = replay(tmp_path, "again", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop3")


def test_wrong_password_is_error_1045(mariadb_source, tmp_path, capsys):
    argv = ["receive", "--host", mariadb_source.host, "--port", str(mariadb_source.port), "--user", "repl",
            "--password", "not-the-password", "--retry-count", "1", "--channel", "x", "--relay-dir", str(tmp_path)]  # fmt: skip
    assert main(argv, out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert "ERROR 1045" in err and "not-the-password" not in err


def test_a_purged_or_unknown_binlog_is_error_1236(mariadb_source, tmp_path, capsys):
    argv = ["receive", "--host", mariadb_source.host, "--port", str(mariadb_source.port), "--user", "repl",
            "--password", mariadb_source.repl_password, "--channel", "x", "--relay-dir", str(tmp_path),
            "--from-file", "source-bin.999999"]  # fmt: skip
    assert main(argv, out=io.StringIO()) == 1
    assert "ERROR 1236" in capsys.readouterr().err


def gtid_binlog_pos(server) -> str:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        return cur.fetchone()[0]


def test_gtid_positioning_starts_right_after_the_gtids_given(mariadb_source, tmp_path):
    write_load(mariadb_source, "shop5", 10, seed=5)
    after = gtid_binlog_pos(mariadb_source)
    write_load(mariadb_source, "shop5", 10, seed=6, rotate_at=4)
    last = gtid_binlog_pos(mariadb_source)
    relay_dir = tmp_path / "relay"
    receive(mariadb_source, relay_dir, "g", "--from-gtid", after)
    events = relay_events(relay_dir / "relay-bin-g.index")  # read through the continuity check
    received = [e["info"].split()[-1] for e in events if e["event_type"] == "Gtid"]
    domain, server_id, seq = map(int, after.split("-"))
    last_seq = int(last.split("-")[2])
    assert received == [f"{domain}-{server_id}-{n}" for n in range(seq + 1, last_seq + 1)]


def test_a_blocking_dump_receives_while_the_source_writes(mariadb_source, tmp_path):
    """--stop-after-seconds: the dump waits for new events (heartbeats keep it alive), stops between
    transactions at the deadline; a second run catches up; the tables are exact."""
    import threading
    import time

    relay_dir = tmp_path / "relay"
    write_load(mariadb_source, "shop6", 5, seed=7)
    writer = threading.Thread(
        target=lambda: (time.sleep(0.5), write_load(mariadb_source, "shop6", 60, seed=8))
    )
    writer.start()
    began = time.monotonic()
    said = receive(mariadb_source, relay_dir, "b", "--stop-after-seconds", "2.5")
    took = time.monotonic() - began
    writer.join()
    assert "(caught up)" not in said and 2.5 <= took < 20
    receive(mariadb_source, relay_dir, "b")
    done = replay(tmp_path, "b", relay_dir / "relay-bin-b.index")
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop6")


def test_a_relay_folder_that_cannot_be_written_is_error_1595(tmp_path, capsys):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    argv = [
        "receive",
        "--port",
        "1",
        "--user",
        "repl",
        "--channel",
        "x",
        "--relay-dir",
        str(blocked / "relay"),
    ]
    assert main(argv, out=io.StringIO()) == 1
    assert "ERROR 1595: Relay log write failure" in capsys.readouterr().err


def test_a_tail_cut_inside_a_transaction_is_fetched_again(mariadb_source, tmp_path):
    """The last relay file ends inside an event of a transaction (a receiver killed while writing):
    the next run cuts the partial event off and fetches the transaction again from its start."""
    relay_dir = tmp_path / "relay"
    write_load(mariadb_source, "shop7", 20, seed=9)
    receive(mariadb_source, relay_dir, "cut")
    index = relay_dir / "relay-bin-cut.index"
    rows = [e for e in relay_events(index) if e["event_type"].startswith("Write_rows")]
    last = relay_dir / rows[-1]["log_name"]
    with last.open("r+b") as fh:
        fh.truncate(rows[-1]["pos"] + 30)  # inside the last transaction's last rows event
    write_load(mariadb_source, "shop7", 10, seed=10)
    receive(mariadb_source, relay_dir, "cut")
    done = replay(tmp_path, "cut", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop7")


def source_binlog_end(server) -> tuple[str, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
        return row[0], int(row[1])


def replica_status(repo: Path, channel: str) -> dict[str, str]:
    out = io.StringIO()
    assert main(["status", "--repository", str(repo), "--channel", channel], out=out) == 0
    fields = {}
    for line in out.getvalue().splitlines()[1:]:
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def test_a_receiver_killed_mid_stream_resumes_from_master_info(mariadb_source, tmp_path):
    """SIGKILL while the source is written to: the restart cuts the relay logs back to the position
    recorded in master_info and fetches the rest; no transaction twice, exact tables."""
    import signal
    import sys
    import threading
    import time

    from engine.repository import Repository

    relay_dir, repo = tmp_path / "relay", tmp_path / "repo.sqlite"
    write_load(mariadb_source, "shop8", 5, seed=11)

    def steady_writes() -> None:
        for batch in range(40):
            write_load(mariadb_source, "shop8", 10, seed=100 + batch)
            time.sleep(0.05)

    writer = threading.Thread(target=steady_writes)
    argv = [sys.executable, "-m", "console.cli", "receive", "--host", mariadb_source.host,
            "--port", str(mariadb_source.port), "--user", "repl", "--channel", "k",
            "--relay-dir", str(relay_dir), "--repository", str(repo), "--max-relay-log-size", "65536",
            "--stop-after-seconds", "120"]  # fmt: skip
    env = {**__import__("os").environ, "RELAYDECK_SOURCE_PASSWORD": mariadb_source.repl_password}
    receiver = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        writer.start()
        recorded = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if repo.exists():
                with Repository(repo) as r:
                    recorded = r.received("k")
                if recorded and len(recorded["retrieved_gtid_set"]) and writer.is_alive():
                    break
            time.sleep(0.05)
        assert recorded, receiver.stderr.read() if receiver.poll() is not None else "nothing recorded"
        running = replica_status(repo, "k")
        assert running["Replica_IO_Running"] == "Yes"
        assert mariadb_source.repl_password not in str(running)
        receiver.send_signal(signal.SIGKILL)
        receiver.wait(timeout=30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
        writer.join()
    with Repository(repo) as r:
        at_kill = r.received("k")
    assert at_kill["relay_log_pos"] > 0
    assert replica_status(repo, "k")["Replica_IO_Running"] == "No"  # its process is gone

    env_password = ["--password", mariadb_source.repl_password, "--repository", str(repo)]
    said = receive(mariadb_source, relay_dir, "k", "--max-relay-log-size", "65536", *env_password)
    assert "(caught up)" in said
    index = relay_dir / "relay-bin-k.index"
    assert_each_transaction_received_once(index)

    status = replica_status(repo, "k")
    file, pos = source_binlog_end(mariadb_source)
    assert (status["Source_Log_File"], int(status["Read_Source_Log_Pos"])) == (file, pos)
    assert status["Retrieved_Gtid_Set"] == gtid_binlog_pos(mariadb_source)
    assert status["Replica_IO_Running"] == "No" and status["Last_IO_Errno"] == "0"

    done = replay(tmp_path, "k", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop8")


def test_status_shows_the_receivers_io_error_and_never_the_password(mariadb_source, tmp_path):
    repo = tmp_path / "repo.sqlite"
    argv = ["receive", "--host", mariadb_source.host, "--port", str(mariadb_source.port), "--user", "repl",
            "--password", "not-the-password", "--retry-count", "1", "--channel", "w", "--relay-dir", str(tmp_path / "relay"),
            "--repository", str(repo)]  # fmt: skip
    assert main(argv, out=io.StringIO()) == 1
    status = replica_status(repo, "w")
    assert status["Last_IO_Errno"] == "1045" and "Access denied" in status["Last_IO_Error"]
    assert status["Last_IO_Error_Timestamp"] and status["Replica_IO_Running"] == "No"
    assert status["Source_Host"] == mariadb_source.host and status["Source_Port"] == str(mariadb_source.port)
    assert "not-the-password" not in repo.read_bytes().decode("latin-1")
    out = io.StringIO()
    assert main(["status", "--json", "--repository", str(repo)], out=out) == 0
    assert "not-the-password" not in out.getvalue()

    # the same channel received with the right password: the error is cleared, the positions filled
    write_load(mariadb_source, "shop9", 5, seed=13)
    receive(mariadb_source, tmp_path / "relay", "w", "--repository", str(repo))
    status = replica_status(repo, "w")
    assert status["Last_IO_Errno"] == "0" and status["Last_IO_Error"] == ""
    file, pos = source_binlog_end(mariadb_source)
    assert (status["Source_Log_File"], int(status["Read_Source_Log_Pos"])) == (file, pos)
    assert status["Retrieved_Gtid_Set"] == gtid_binlog_pos(mariadb_source)


def test_start_replica_io_thread_receives_what_change_replication_source_names(mariadb_source, tmp_path):
    """CHANGE REPLICATION SOURCE TO SOURCE_HOST … RELAY_LOG …, START REPLICA IO_THREAD: the receiver
    runs until caught up from SOURCE_LOG_FILE/POS, then START REPLICA SQL_THREAD applies it all."""
    from engine.replica.errors import CommandError
    from engine.replica.server import ReplicaServer

    write_load(mariadb_source, "shop10a", 5, seed=14)  # before SOURCE_LOG_POS: never received
    file, pos = source_binlog_end(mariadb_source)
    domain, server_id, seq = map(int, gtid_binlog_pos(mariadb_source).split("-"))
    write_load(mariadb_source, "shop10", 30, seed=15, rotate_at=10)
    relay_dir = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        with pytest.raises(CommandError) as caught:
            replica.execute(
                f"CHANGE REPLICATION SOURCE TO RELAY_LOG = '{relay_dir}/relay-bin' FOR CHANNEL 'io'"
            )
            replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'io'")
        assert caught.value.errno == 1200  # no SOURCE_HOST yet
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{mariadb_source.host}', "
            f"SOURCE_PORT = {mariadb_source.port}, SOURCE_USER = 'repl', "
            f"SOURCE_PASSWORD = '{mariadb_source.repl_password}', SOURCE_LOG_FILE = '{file}', "
            f"SOURCE_LOG_POS = {pos} FOR CHANNEL 'io'"
        )
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'io'")
        assert replica.wait(120)
        result = replica.execute("SHOW REPLICA STATUS FOR CHANNEL 'io'")
        status = dict(zip(result.columns, result.rows[0], strict=True))
        assert status["Last_IO_Errno"] == 0, status["Last_IO_Error"]
        assert (status["Source_Log_File"], status["Read_Source_Log_Pos"]) == source_binlog_end(mariadb_source)
        assert mariadb_source.repl_password not in str(status)
        index = relay_dir / "relay-bin-io.index"
        gtids = [e["info"].split()[-1] for e in relay_events(index) if e["event_type"] == "Gtid"]
        assert gtids[0] == f"{domain}-{server_id}-{seq + 1}" and len(gtids) == len(set(gtids))
        assert gtids[-1] == gtid_binlog_pos(mariadb_source)

        replica.execute("START REPLICA SQL_THREAD FOR CHANNEL 'io'")
        assert replica.wait(120)
    finally:
        replica.close()
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop10")
    with duckdb.connect(str(tmp_path / "slave.duckdb"), read_only=True) as conn:
        assert not conn.sql("SELECT * FROM duckdb_schemas() WHERE schema_name = 'shop10a'").fetchall()


def test_a_following_receiver_runs_until_stop_replica_io_thread(mariadb_source, tmp_path):
    """Under a following server the receiver keeps receiving; CHANGE of its source waits for STOP
    REPLICA IO_THREAD, which ends it between transactions with everything received recorded."""
    import time

    from engine.replica.errors import CommandError
    from engine.replica.server import ReplicaServer

    write_load(mariadb_source, "shop12", 5, seed=18)
    file, pos = source_binlog_end(mariadb_source)
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{mariadb_source.host}', "
            f"SOURCE_PORT = {mariadb_source.port}, SOURCE_USER = 'repl', "
            f"SOURCE_PASSWORD = '{mariadb_source.repl_password}', SOURCE_LOG_FILE = '{file}', "
            f"SOURCE_LOG_POS = {pos}, RELAY_LOG = '{tmp_path}/relay/relay-bin' FOR CHANNEL 'f'"
        )
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'f'")
        write_load(mariadb_source, "shop12", 10, seed=19)
        deadline = time.monotonic() + 30
        while replica.status("f")[0].read_source_log_pos != source_binlog_end(mariadb_source)[1]:
            assert time.monotonic() < deadline, "the receiver did not catch up"
            time.sleep(0.1)
        assert replica.receiving("f") and replica.status("f")[0].replica_io_running == "Yes"
        with pytest.raises(CommandError) as caught:
            replica.execute("CHANGE REPLICATION SOURCE TO SOURCE_PORT = 1 FOR CHANNEL 'f'")
        assert caught.value.errno in (1198, 3081)
        began = time.monotonic()
        replica.execute("STOP REPLICA IO_THREAD FOR CHANNEL 'f'")
        assert time.monotonic() - began < 10 and not replica.receiving("f")
        assert replica.status("f")[0].replica_io_running == "No"
        assert replica.status("f")[0].retrieved_gtid_set == gtid_binlog_pos(mariadb_source)
    finally:
        replica.close()


def test_a_restart_goes_on_after_what_the_relay_logs_hold_past_the_recording(mariadb_source, tmp_path):
    """A receiver killed after it wrote and flushed transactions but before it recorded them: the
    applier may have applied them already, so the next run keeps them (no relay file shrinks),
    records them as retrieved and fetches only what follows."""
    from engine.repository import Repository

    relay_dir, repo = tmp_path / "relay", tmp_path / "repo.sqlite"
    index = relay_dir / "relay-bin-kept.index"
    write_load(mariadb_source, "shop11", 12, seed=21)
    receive(mariadb_source, relay_dir, "kept", "--repository", str(repo))
    sizes = {path.name: path.stat().st_size for path in read_index(index).files}
    last = read_index(index).files[-1].name
    events = [e for e in relay_events(index) if e["log_name"] == last]
    # the kill: the recording stands after the first transaction of the last relay file
    xid = next(i for i, e in enumerate(events) if e["event_type"] == "Xid")
    gtid = next(e for e in reversed(events[:xid]) if e["event_type"] == "Gtid")["info"].split()[-1]
    with Repository(repo) as repository:
        held = repository.received("kept")
        repository.record_received(
            "kept", held["Master_log_name"], events[xid]["end_log_pos"], gtid, last, events[xid + 1]["pos"]
        )
    assert held["retrieved_gtid_set"] != gtid
    write_load(mariadb_source, "shop11", 5, seed=23)
    receive(mariadb_source, relay_dir, "kept", "--repository", str(repo))
    for name, size in sizes.items():
        assert (relay_dir / name).stat().st_size == size, f"{name} was cut back"
    assert_each_transaction_received_once(index)
    done = replay(tmp_path, "kept", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(mariadb_source, tmp_path / "slave.duckdb", "shop11")
