"""The receiver when things go wrong, against a real MariaDB source: the source restarting or gone,
a connection that stalls, wrong passwords, unknown hosts, purged binlogs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pymysql
import pytest

from engine.replica.server import ReplicaServer
from tests.test_receiver import (
    assert_same_tables,
    gtid_binlog_pos,
    relay_events,
    replay,
    slave_rows,
    source_binlog_end,
    source_rows,
    write_load,
)


@pytest.fixture(scope="module")
def restartable_source(tmp_path_factory):
    """A MariaDB server of this module's own, which its tests stop and start again."""
    from tests.mariadb_server import server_for_tests

    yield from server_for_tests(tmp_path_factory.mktemp("restartable"))


def wait_for(
    condition: Callable[[], object], seconds: float, what: str, explain: Callable[[], object] | None = None
) -> None:
    """Until `condition` holds; on timeout the assertion carries what `explain` says (a channel's status)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out waiting for {what}" + (f": {explain()}" if explain else ""))
        time.sleep(0.05)


def applied_everything(replica: ReplicaServer, channel: str, server) -> bool:  # type: ignore[no-untyped-def]
    """Everything the source logged was received and applied."""
    status = io_status(replica, channel)
    return status["Executed_Gtid_Set"] == status["Retrieved_Gtid_Set"] == gtid_binlog_pos(server)


def io_status(replica: ReplicaServer, channel: str) -> dict:
    result = replica.execute(f"SHOW REPLICA STATUS FOR CHANNEL '{channel}'")
    return dict(zip(result.columns, result.rows[0], strict=True))


def change_source(replica: ReplicaServer, channel: str, host: str, port: int, password: str, relay: Path,
                  **options: object) -> None:  # fmt: skip
    extra = "".join(f", {name} = {value}" for name, value in options.items())
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{host}', SOURCE_PORT = {port}, SOURCE_USER = 'repl', "
        f"SOURCE_PASSWORD = '{password}', RELAY_LOG = '{relay}/relay-bin'{extra} FOR CHANNEL '{channel}'"
    )


def caught_up(replica: ReplicaServer, channel: str, server) -> bool:
    status = io_status(replica, channel)
    return (status["Source_Log_File"], status["Read_Source_Log_Pos"]) == source_binlog_end(server)


def writes_until_refused(server, database: str, seed: int) -> threading.Thread:
    """Transactions one after another until the source refuses them (it was shut down)."""

    def run() -> None:
        for batch in range(1000):
            try:
                write_load(server, database, 3, seed=seed + batch)
            except pymysql.err.MySQLError:
                return

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_source_restart_mid_stream_is_reconnected_and_replays_exactly(restartable_source, tmp_path):
    """The source shuts down while written to and received from: the receiver shows that it is
    reconnecting (Connecting, 2003), connects again once the source is back, goes on after the last
    whole transaction it had; the relay logs replay into exactly the source's tables."""
    server = restartable_source
    file, pos = source_binlog_end(server)  # before the tables are created
    write_load(server, "restart1", 5, seed=31)
    relay = tmp_path / "relay"
    (tmp_path / "rx").mkdir()
    replica = ReplicaServer(tmp_path / "rx" / "slave.duckdb", tmp_path / "rx" / "repo.sqlite", follow=True)
    try:
        change_source(replica, "r", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_CONNECT_RETRY=1,
                      SOURCE_RETRY_COUNT=120)  # fmt: skip
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'r'")
        writer = writes_until_refused(server, "restart1", seed=1000)
        wait_for(lambda: io_status(replica, "r")["Retrieved_Gtid_Set"] != "", 30, "the first transactions")
        time.sleep(0.5)
        server.stop()  # mid-stream: the writer is still writing
        writer.join()
        wait_for(lambda: io_status(replica, "r")["Replica_IO_Running"] == "Connecting", 30, "reconnecting")
        wait_for(lambda: io_status(replica, "r")["Last_IO_Errno"] == 2003, 30, "a failed reconnection")
        status = io_status(replica, "r")
        assert status["Replica_IO_State"] in (
            "Waiting to reconnect after a failed source event read",
            "Reconnecting after a failed source event read",
        )
        assert "error reconnecting to source 'repl@127.0.0.1:" in status["Last_IO_Error"]
        assert server.repl_password not in str(status)

        server.start_again()
        write_load(server, "restart1", 20, seed=2000)
        wait_for(lambda: caught_up(replica, "r", server), 60, "the receiver to catch up after the restart")
        status = io_status(replica, "r")
        assert status["Replica_IO_Running"] == "Yes" and status["Last_IO_Errno"] == 0
        assert status["Retrieved_Gtid_Set"] == gtid_binlog_pos(server)
        replica.execute("STOP REPLICA IO_THREAD FOR CHANNEL 'r'")
    finally:
        replica.close()
        if server.process.poll() is not None:
            server.start_again()
    index = relay / "relay-bin-r.index"
    assert len(index.read_text().splitlines()) >= 2  # the reconnection opened a relay file of its own
    done = replay(tmp_path, "r", index)
    assert done.returncode == 0, done.stderr
    assert_same_tables(server, tmp_path / "slave.duckdb", "restart1")


def test_a_source_gone_for_good_stops_the_receiver_after_its_retries(restartable_source, tmp_path):
    """SOURCE_RETRY_COUNT attempts SOURCE_CONNECT_RETRY seconds apart, then the IO thread stops with
    the last attempt's error; what it received before stays recorded."""
    server = restartable_source
    write_load(server, "gone1", 5, seed=41)
    file, pos = source_binlog_end(server)
    relay = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        change_source(replica, "g", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_CONNECT_RETRY=1,
                      SOURCE_RETRY_COUNT=3)  # fmt: skip
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'g'")
        write_load(server, "gone1", 10, seed=42)
        wait_for(lambda: caught_up(replica, "g", server), 30, "the receiver to catch up")
        received = gtid_binlog_pos(server)
        gone_at = time.monotonic()  # the connection is lost after this, during the shutdown
        server.stop()
        wait_for(lambda: not replica.receiving("g"), 30, "the receiver to give up")
        took = time.monotonic() - gone_at
        status = io_status(replica, "g")
    finally:
        replica.close()
        server.start_again()
    assert 2 <= took < 20, f"3 attempts 1 s apart took {took:.1f} s"
    assert status["Replica_IO_Running"] == "No" and status["Replica_IO_State"] == ""
    assert status["Last_IO_Errno"] == 2003  # the last attempt, seconds after the shutdown: refused
    assert (
        "error reconnecting to source" in status["Last_IO_Error"] and "retries: 3" in status["Last_IO_Error"]
    )
    assert status["Retrieved_Gtid_Set"] == received
    gtids = [
        e["info"].split()[-1] for e in relay_events(relay / "relay-bin-g.index") if e["event_type"] == "Gtid"
    ]
    assert gtids[-1] == received


def test_a_stalled_connection_is_noticed_by_the_heartbeat_and_replaced(mariadb_source, tmp_path):
    """Through a proxy that stops forwarding without closing anything: the source's heartbeats keep
    an idle connection alive, silence for twice SOURCE_HEARTBEAT_PERIOD counts as a dead connection,
    the receiver connects again and goes on; the tables are exact."""
    from tests.stalling_proxy import StallingProxy

    server = mariadb_source
    file, pos = source_binlog_end(server)
    proxy = StallingProxy(server.host, server.port)
    relay = tmp_path / "relay"
    (tmp_path / "rx").mkdir()
    replica = ReplicaServer(tmp_path / "rx" / "slave.duckdb", tmp_path / "rx" / "repo.sqlite", follow=True)
    try:
        change_source(replica, "hb", "127.0.0.1", proxy.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_HEARTBEAT_PERIOD=1,
                      SOURCE_CONNECT_RETRY=1)  # fmt: skip
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'hb'")
        write_load(server, "stall1", 10, seed=51)
        wait_for(lambda: caught_up(replica, "hb", server), 30, "the receiver to catch up")
        time.sleep(3.5)  # idle for more than two periods: the heartbeats keep the connection
        assert proxy.connections == 1

        proxy.stall()
        stalled_at = time.monotonic()
        write_load(server, "stall1", 10, seed=52)  # sent into the stalled connection, never delivered
        wait_for(lambda: proxy.connections == 2, 30, "a new connection")
        noticed = time.monotonic() - stalled_at
        wait_for(lambda: caught_up(replica, "hb", server), 30, "the receiver to catch up again")
        assert io_status(replica, "hb")["Replica_IO_Running"] == "Yes"
        replica.execute("STOP REPLICA IO_THREAD FOR CHANNEL 'hb'")
    finally:
        replica.close()
        proxy.close()
    # two periods of silence since the last packet, which came up to a period before the stall
    assert 0.9 <= noticed < 8, f"the stall was noticed after {noticed:.1f} s (heartbeat period 1 s)"
    assert proxy.connections == 2
    done = replay(tmp_path, "hb", relay / "relay-bin-hb.index")
    assert done.returncode == 0, done.stderr
    assert_same_tables(server, tmp_path / "slave.duckdb", "stall1")


def receive_argv(server, relay_dir: Path, channel: str, *options: str) -> list[str]:
    return ["receive", "--host", server.host, "--port", str(server.port), "--user", "repl", "--channel", channel,
            "--relay-dir", str(relay_dir), *options]  # fmt: skip


def test_an_unknown_host_is_error_2005(mariadb_source, tmp_path, capsys):
    import io

    from console.cli import main

    # a space makes the name one the resolver refuses itself, so no DNS query leaves the machine
    argv = receive_argv(mariadb_source, tmp_path / "relay", "h", "--host", "unknown source.invalid",
                        "--connect-retry", "0.1", "--retry-count", "2", "--repository", str(tmp_path / "repo.sqlite"))  # fmt: skip
    assert main(argv, out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert err.count("ERROR 2005") == 2  # the retried attempt, then the last one
    assert "Unknown MySQL server host 'unknown source.invalid'" in err
    status = replica_status_of(tmp_path / "repo.sqlite", "h")
    assert status["Last_IO_Errno"] == "2005" and "retries: 2" in status["Last_IO_Error"]


def replica_status_of(repo: Path, channel: str) -> dict[str, str]:
    from tests.test_receiver import replica_status

    return replica_status(repo, channel)


def test_a_wrong_password_is_1045_retried_and_never_shown(mariadb_source, tmp_path):
    """1045 is retried per SOURCE_CONNECT_RETRY / SOURCE_RETRY_COUNT (Replica_IO_Running: Connecting
    meanwhile); the password is in no error, status or log line; the right one then connects."""
    import io
    import json
    import subprocess
    import sys

    from console.cli import main

    wrong = "Wr0ng-pa55word-4417"
    relay = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        change_source(replica, "pw", mariadb_source.host, mariadb_source.port, wrong, relay,
                      SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=3)  # fmt: skip
        began = time.monotonic()
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'pw'")
        wait_for(lambda: io_status(replica, "pw")["Last_IO_Errno"] == 1045, 20, "the first refusal")
        retrying = io_status(replica, "pw")
        wait_for(lambda: not replica.receiving("pw"), 30, "the receiver to give up")
        took = time.monotonic() - began
        stopped = io_status(replica, "pw")
        shown = [retrying, stopped]

        change_source(
            replica, "pw", mariadb_source.host, mariadb_source.port, mariadb_source.repl_password, relay
        )
        write_load(mariadb_source, "pw1", 3, seed=61)
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'pw'")
        wait_for(lambda: caught_up(replica, "pw", mariadb_source), 30, "the receiver with the right password")
        connected = io_status(replica, "pw")
    finally:
        replica.close()
    assert (
        retrying["Replica_IO_Running"] == "Connecting"
        and retrying["Replica_IO_State"] == "Connecting to source"
    )
    assert "Access denied for user 'repl'" in retrying["Last_IO_Error"]
    assert stopped["Replica_IO_Running"] == "No" and stopped["Last_IO_Errno"] == 1045
    assert "retries: 3" in stopped["Last_IO_Error"] and 2 <= took < 20
    assert connected["Last_IO_Errno"] == 0 and connected["Replica_IO_Running"] == "Yes"

    # the command line: each retried attempt is a log line on stderr, then the error
    cli = subprocess.run(
        [sys.executable, "-m", "console.cli", *receive_argv(mariadb_source, tmp_path / "relay2", "pw2",
         "--connect-retry", "0.2", "--retry-count", "2", "--repository", str(tmp_path / "repo2.sqlite"))],
        env={**__import__("os").environ, "RELAYDECK_SOURCE_PASSWORD": wrong},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1
    assert "ERROR 1045" in cli.stderr and "trying again in 0.2 s" in cli.stderr
    out = io.StringIO()
    assert main(["status", "--json", "--repository", str(tmp_path / "repo.sqlite")], out=out) == 0
    texts = [
        str(shown),
        cli.stdout,
        cli.stderr,
        out.getvalue(),
        json.dumps(replica_status_of(tmp_path / "repo2.sqlite", "pw2")),
    ]
    assert not [text for text in texts if wrong in text]
    assert wrong not in (tmp_path / "repo2.sqlite").read_bytes().decode("latin-1")  # receive never stores it


def test_purged_binlogs_are_1236_at_once(restartable_source, tmp_path, capsys):
    """A position or a GTID whose binlogs the source purged: error 1236, fatal (no retries)."""
    import io

    from console.cli import main

    server = restartable_source
    write_load(server, "purged1", 3, seed=71)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        first = cur.fetchall()[0][0]
        cur.execute("FLUSH BINARY LOGS")
        deadline = time.monotonic() + 30
        while True:  # a binlog is kept until the engines' checkpoint has passed it
            cur.execute("SHOW MASTER STATUS")
            cur.execute(f"PURGE BINARY LOGS TO '{cur.fetchone()[0]}'")
            cur.execute("SHOW BINARY LOGS")
            if first not in [row[0] for row in cur.fetchall()]:
                break
            assert time.monotonic() < deadline, f"{first} could not be purged"
            time.sleep(0.2)
    relay = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        change_source(replica, "p", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{first}'", SOURCE_LOG_POS=4, SOURCE_CONNECT_RETRY=1,
                      SOURCE_RETRY_COUNT=100)  # fmt: skip
        began = time.monotonic()
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'p'")
        wait_for(lambda: not replica.receiving("p"), 20, "the receiver to stop")
        took = time.monotonic() - began
        status = io_status(replica, "p")
    finally:
        replica.close()
    assert took < 5  # not retried
    assert status["Last_IO_Errno"] == 1236 and status["Replica_IO_Running"] == "No"
    assert status["Last_IO_Error"].startswith(
        "Got fatal error 1236 from source when reading data from binary log: 'Could not find first log file"
    )

    argv = [*receive_argv(server, tmp_path / "relay-g", "pg", "--from-gtid", "0-1-1"), "--password",
            server.repl_password, "--connect-retry", "1"]  # fmt: skip
    assert main(argv, out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert "ERROR 1236: Got fatal error 1236 from source" in err and "purged" in err


def test_start_replica_runs_both_threads_of_a_channel_with_a_source(mariadb_source, tmp_path):
    """START REPLICA starts the receiver and the applier of a channel with SOURCE_HOST and
    SOURCE_USER (a SOURCE_HOST alone is a label: no receiver); Replica_IO_State says what the
    receiver does; STOP REPLICA stops both."""
    server = mariadb_source
    file, pos = source_binlog_end(server)
    relay = tmp_path / "relay"
    (tmp_path / "rx").mkdir()
    replica = ReplicaServer(tmp_path / "rx" / "slave.duckdb", tmp_path / "rx" / "repo.sqlite", follow=True)
    try:
        change_source(replica, "both", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos)  # fmt: skip
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'replica-host-label', RELAY_LOG = '{tmp_path}/other/relay-bin' "
            "FOR CHANNEL 'label'"
        )
        assert io_status(replica, "both")["Replica_IO_State"] == ""
        replica.execute("START REPLICA")
        assert replica.receiving("both") and replica.running("both")
        assert not replica.receiving("label") and replica.running("label")
        write_load(server, "both1", 20, seed=81)
        wait_for(
            lambda: io_status(replica, "both")["Executed_Gtid_Set"] == gtid_binlog_pos(server), 60, "applied"
        )
        wait_for(lambda: caught_up(replica, "both", server), 30, "the position received recorded")
        status = io_status(replica, "both")
        assert status["Replica_IO_Running"] == "Yes" and status["Replica_SQL_Running"] == "Yes"
        assert status["Replica_IO_State"] == "Waiting for source to send event"
        assert status["Retrieved_Gtid_Set"] == gtid_binlog_pos(server)

        replica.execute("STOP REPLICA")
        assert not replica.receiving("both") and not replica.running("both") and not replica.running("label")
        status = io_status(replica, "both")
        assert status["Replica_IO_Running"] == "No" and status["Replica_SQL_Running"] == "No"
        assert status["Replica_IO_State"] == ""
    finally:
        replica.close()
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "rx" / "slave.duckdb", "both1", table) == source_rows(
            server, "both1", table
        )


def test_change_takes_the_retry_heartbeat_and_gtid_options(tmp_path):
    from engine.replica.config import parse_config
    from engine.replica.errors import CommandError

    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        replica.execute(
            "CHANGE MASTER TO MASTER_HOST = 'db1', MASTER_USER = 'repl', MASTER_USE_GTID = current_pos, "
            "MASTER_CONNECT_RETRY = 5, MASTER_RETRY_COUNT = 7, MASTER_HEARTBEAT_PERIOD = 0.25, "
            f"RELAY_LOG = '{tmp_path}/relay-bin' FOR CHANNEL 'o'"
        )
        mi = replica.repository.master_info("o")
        assert (mi["Using_gtid"], mi["Connect_retry"], mi["Retry_count"], mi["Heartbeat"]) == (
            "Current_Pos",
            5,
            7,
            0.25,
        )
        assert io_status(replica, "o")["Using_Gtid"] == "Current_Pos"
        for bad, errno in (
            ("SOURCE_USE_GTID = 'sometimes'", 1210),
            ("SOURCE_HEARTBEAT_PERIOD = -1", 1703),
            ("SOURCE_HEARTBEAT_PERIOD = 4294968", 1703),
            ("SOURCE_USE_GTID = slave_pos, SOURCE_LOG_FILE = 'b.000001', SOURCE_LOG_POS = 4", 1210),
        ):
            with pytest.raises(CommandError) as caught:
                replica.execute(f"CHANGE REPLICATION SOURCE TO {bad} FOR CHANNEL 'o'")
            assert caught.value.errno == errno, bad
        replica.execute(
            "CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE = 'b.000001', SOURCE_LOG_POS = 4 FOR CHANNEL 'o'"
        )
        assert replica.repository.master_info("o")["Using_gtid"] == "No"  # positioned by file and position

        config = parse_config(
            {"slave": "s.duckdb", "repository": "r.sqlite", "channels": {"live": {
                "source_host": "127.0.0.1", "source_port": 3306, "source_user": "repl", "source_password": "secret",
                "relay_log": "relay/relay-bin", "source_use_gtid": "slave_pos", "source_connect_retry": 2,
                "source_retry_count": 3, "source_heartbeat_period": 0.5}}},
            tmp_path, tmp_path / "serve.toml",
        )  # fmt: skip
        (change,) = config.channels
        replica.execute(change)
        mi = replica.repository.master_info("live")
        assert (mi["Using_gtid"], mi["Connect_retry"], mi["Retry_count"], mi["Heartbeat"]) == (
            "Slave_Pos",
            2,
            3,
            0.5,
        )
    finally:
        replica.close()


def test_source_use_gtid_receives_after_the_executed_gtids(mariadb_source, tmp_path):
    """SOURCE_USE_GTID = slave_pos: with no relay logs, the receiver asks the source for what
    follows the GTIDs the channel applied (MariaDB's GTID dump); restarted, it goes on after what
    its relay logs hold; nothing is received twice, the tables are exact."""
    import shutil

    server = mariadb_source
    file, pos = source_binlog_end(server)
    relay = tmp_path / "relay"
    (tmp_path / "rx").mkdir()
    replica = ReplicaServer(tmp_path / "rx" / "slave.duckdb", tmp_path / "rx" / "repo.sqlite", follow=True)

    def applied_all() -> bool:
        return applied_everything(replica, "gt", server)

    try:
        change_source(replica, "gt", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos)  # fmt: skip
        replica.execute("SET GLOBAL relay_log_purge = OFF")  # the relay logs are looked at below
        replica.execute("START REPLICA FOR CHANNEL 'gt'")
        write_load(server, "gtid1", 10, seed=91)
        wait_for(applied_all, 60, "the first part applied")
        replica.execute("STOP REPLICA FOR CHANNEL 'gt'")
        executed = io_status(replica, "gt")["Executed_Gtid_Set"]

        # the relay logs and the receiver's position gone, the executed GTIDs kept
        replica.execute("RESET REPLICA FOR CHANNEL 'gt'")
        shutil.rmtree(relay)
        replica.execute(
            "CHANGE REPLICATION SOURCE TO SOURCE_USE_GTID = slave_pos, SOURCE_HEARTBEAT_PERIOD = 0.5 FOR CHANNEL 'gt'"
        )
        write_load(server, "gtid1", 10, seed=92)
        replica.execute("START REPLICA FOR CHANNEL 'gt'")
        wait_for(applied_all, 60, "the second part applied")
        assert io_status(replica, "gt")["Using_Gtid"] == "Slave_Pos"
        replica.execute("STOP REPLICA FOR CHANNEL 'gt'")
        write_load(server, "gtid1", 5, seed=93)
        replica.execute("START REPLICA FOR CHANNEL 'gt'")
        wait_for(applied_all, 60, "the third part applied")
        replica.execute("STOP REPLICA FOR CHANNEL 'gt'")
    finally:
        replica.close()
    gtids = [
        e["info"].split()[-1] for e in relay_events(relay / "relay-bin-gt.index") if e["event_type"] == "Gtid"
    ]
    domain, server_id, seq = executed.split("-")
    assert gtids[0] == f"{domain}-{server_id}-{int(seq) + 1}"  # right after the executed GTIDs
    assert len(gtids) == len(set(gtids)) and gtids[-1] == gtid_binlog_pos(server)
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "rx" / "slave.duckdb", "gtid1", table) == source_rows(
            server, "gtid1", table
        )


def test_serve_receives_and_applies_the_channels_of_its_configuration(mariadb_source, tmp_path):
    """`relaydeck serve CONFIG.toml` with a channel naming its source: the receiver and the applier
    run until SIGTERM, from the source's first binary log; status shows the source's GTIDs."""
    import json
    import os
    import signal
    import subprocess
    import sys

    server = mariadb_source
    (tmp_path / "serve.toml").write_text(
        'slave = "slave.duckdb"\nrepository = "repository.sqlite"\n[channels.live]\n'
        f'source_host = "{server.host}"\nsource_port = {server.port}\nsource_user = "repl"\n'
        f'source_password = "{server.repl_password}"\nrelay_log = "relay/relay-bin"\n'
        "source_connect_retry = 1\nsource_heartbeat_period = 0.5\n"
    )
    serve = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "serve", str(tmp_path / "serve.toml")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    try:
        write_load(server, "serve1", 20, seed=101)
        repository = tmp_path / "repository.sqlite"

        def executed() -> str:
            if not repository.exists():
                return ""
            said = subprocess.run(
                [sys.executable, "-m", "console.cli", "status", "--repository", str(repository), "--channel",
                 "live", "--json"], capture_output=True, text=True,
            )  # fmt: skip
            return json.loads(said.stdout)[0]["executed_gtid_set"] if said.returncode == 0 else ""

        wait_for(
            lambda: serve.poll() is not None or executed() == gtid_binlog_pos(server), 180, "serve to apply"
        )
        assert serve.poll() is None, serve.stderr.read() if serve.stderr else ""
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(60) == 0, serve.stderr.read() if serve.stderr else ""
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    # written as a replica names them (relay_log_purge may have removed the first ones already)
    listed = (tmp_path / "relay" / "relay-bin-live.index").read_text().split()
    assert listed and all(Path(name).name.startswith("relay-bin-live.") for name in listed)
    assert all((tmp_path / "relay" / Path(name).name).exists() for name in listed)
    assert server.repl_password not in serve.stdout.read() + serve.stderr.read()  # type: ignore[union-attr]
    assert oct(os.stat(repository).st_mode & 0o777) == "0o600"
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "slave.duckdb", "serve1", table) == source_rows(server, "serve1", table)


def relay_files_listed(index: Path) -> list[str]:
    return [line.removeprefix("./") for line in index.read_text().splitlines()]


def test_relay_log_purge_deletes_the_relay_files_the_applier_is_done_with(mariadb_source, tmp_path):
    """relay_log_purge (ON by default): the relay files before the applier's one leave the index and
    the disk; OFF keeps them; replication goes on exactly across a restart after a purge."""
    server = mariadb_source
    file, pos = source_binlog_end(server)
    relay = tmp_path / "relay"
    index = relay / "relay-bin-pg.index"
    (tmp_path / "rx").mkdir()
    replica = ReplicaServer(tmp_path / "rx" / "slave.duckdb", tmp_path / "rx" / "repo.sqlite", follow=True)

    def applied_all() -> bool:
        return applied_everything(replica, "pg", server)

    def where() -> str:
        status = io_status(replica, "pg")
        shown = {name: value for name, value in status.items() if value not in (None, "", 0, "0")}
        listed = relay_files_listed(index) if index.exists() else []
        return f"source at {gtid_binlog_pos(server)!r}; index {listed}; status {shown}"

    try:
        change_source(replica, "pg", server.host, server.port, server.repl_password, relay,
                      SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_HEARTBEAT_PERIOD=0.5)  # fmt: skip
        replica.execute("SET GLOBAL relay_log_purge = OFF")
        replica.execute("START REPLICA FOR CHANNEL 'pg'")
        for part in range(3):  # each switches the source's binlog: a relay file each
            write_load(server, "purge1", 6, seed=110 + part, rotate_at=3)
        wait_for(applied_all, 60, "everything applied", where)
        time.sleep(2.5)  # more than the receiver's look at what was applied
        kept = relay_files_listed(index)
        assert kept[0] == "relay-bin-pg.000001" and len(kept) >= 4
        assert all((relay / name).exists() for name in kept)
        replica.execute("STOP REPLICA FOR CHANNEL 'pg'")

        replica.execute("SET GLOBAL relay_log_purge = ON")
        replica.execute("START REPLICA FOR CHANNEL 'pg'")
        for part in range(3):
            write_load(server, "purge1", 6, seed=120 + part, rotate_at=3)
        wait_for(applied_all, 60, "everything applied", where)
        applier_file = replica.repository.relay_log_info("pg")["Relay_log_name"]
        wait_for(lambda: relay_files_listed(index)[0] == applier_file, 10, "the applied relay files purged")
        listed = relay_files_listed(index)
        assert all((relay / name).exists() for name in listed)
        purged = [name for name in kept if name not in listed]
        assert purged and not any((relay / name).exists() for name in purged)
        replica.execute("STOP REPLICA FOR CHANNEL 'pg'")

        write_load(
            server, "purge1", 6, seed=130, rotate_at=3
        )  # received after the purge, from where it stood
        replica.execute("START REPLICA FOR CHANNEL 'pg'")
        wait_for(applied_all, 60, "everything applied after the restart", where)
        assert io_status(replica, "pg")["Last_SQL_Errno"] == 0
        replica.execute("STOP REPLICA FOR CHANNEL 'pg'")
    finally:
        replica.close()
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "rx" / "slave.duckdb", "purge1", table) == source_rows(
            server, "purge1", table
        )


def registered_server_ids(server) -> set[int]:  # type: ignore[no-untyped-def]
    """The server ids of the replicas registered with the source (SHOW SLAVE HOSTS)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW SLAVE HOSTS")
        return {int(row[0]) for row in cur.fetchall()}


def test_replicas_of_one_source_under_their_own_server_ids_keep_their_own_connections(
    mariadb_source, tmp_path
):
    """SET GLOBAL server_id: the source holds one dump per registered id, so two replicas under
    ids of their own stay connected side by side (under one shared id each START would end the
    other's dump), and both apply everything."""
    server = mariadb_source
    file, pos = source_binlog_end(server)
    replicas: dict[int, ReplicaServer] = {}
    try:
        for server_id in (7, 8):
            folder = tmp_path / f"replica{server_id}"
            folder.mkdir()
            replica = ReplicaServer(folder / "slave.duckdb", folder / "repo.sqlite", follow=True)
            replicas[server_id] = replica
            replica.execute(f"SET GLOBAL server_id = {server_id}")
            change_source(replica, "ids", server.host, server.port, server.repl_password, folder / "relay",
                          SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_HEARTBEAT_PERIOD=0.5)  # fmt: skip
            replica.execute("START REPLICA FOR CHANNEL 'ids'")
        wait_for(lambda: {7, 8} <= registered_server_ids(server), 30, "both replicas registered",
                 lambda: registered_server_ids(server))  # fmt: skip
        write_load(server, "ids1", 8, seed=140, rotate_at=4)
        for replica in replicas.values():
            wait_for(lambda r=replica: applied_everything(r, "ids", server), 60, "everything applied",
                     lambda r=replica: io_status(r, "ids"))  # fmt: skip
        assert {7, 8} <= registered_server_ids(server)  # neither START ended the other's dump
        for replica in replicas.values():
            status = io_status(replica, "ids")
            assert (status["Last_IO_Errno"], status["Replica_IO_Running"]) == (0, "Yes")
            replica.execute("STOP REPLICA FOR CHANNEL 'ids'")
    finally:
        for replica in replicas.values():
            replica.close()
    for server_id in (7, 8):
        for table in ("items", "moves"):
            assert slave_rows(
                tmp_path / f"replica{server_id}" / "slave.duckdb", "ids1", table
            ) == source_rows(server, "ids1", table)
