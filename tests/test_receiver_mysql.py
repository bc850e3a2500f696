"""The receiver against a MySQL 8.4 source: a scripted one (tests/mysql_scripted_server.py, written
from the protocol documentation; MySQL 8's server cannot be installed here) that serves two real
MySQL 8.0 binary logs with GTIDs from fixtures/public-binlogs: caching_sha2_password, the session
a MySQL replica sets up, COM_BINLOG_DUMP_GTID with the replica's GTID set, and the relay logs that
come of it replayed into the same tables as the binary logs themselves."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from console.cli import main
from engine.binlog.constants import EventType
from engine.binlog.reader import BinlogFile
from engine.gtids import GtidSet
from engine.receiver.receiver import ReceiverError, ReceiverSettings, SourceAccount, receive
from engine.repository import Repository
from tests.conftest import PUBLIC, replay_argv
from tests.mysql_scripted_server import ScriptedMySQL, read_binlog
from tests.relay_logs import RelayLogBuilder

ENUMS = "93e95066-a2f4-11ec-9b69-9657f0ae95e2"  # rmc/mysql-enum-string-set.000001 (8.0.28): :1-5
BITS = "fbda2ad0-7c46-11ec-ae30-4ef7efc81a2a"  # rmc/mysql_type_bit.000001 (8.0.26): :1-3
TAGGED_SOURCE = "55778904-0299-11f1-b1b8-4ef0c4956feb"  # rmc/binlog_transaction_with_GTID_TAG.000001 (9.6)
ALL_GTIDS = [f"{ENUMS}:{n}" for n in range(1, 6)] + [f"{BITS}:{n}" for n in range(1, 4)]
# What MySQL 8.4's IO thread asks of its source (sql/rpl_replica.cc: get_source_version_and_clock,
# get_source_uuid, io_thread_init_commands), after PyMySQL's own SET NAMES
MYSQL_REPLICA_QUERIES = [
    "SET NAMES utf8mb4",
    "SELECT UNIX_TIMESTAMP()",
    "SELECT @@GLOBAL.SERVER_ID",
    "SET @master_heartbeat_period = 1000000000, @source_heartbeat_period = 1000000000",
    "SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum",
    "SELECT @source_binlog_checksum",
    "SELECT @@GLOBAL.GTID_MODE",
    "SELECT @@GLOBAL.SERVER_UUID",
]


def source_binlogs():
    return [
        read_binlog(PUBLIC / "rmc" / "mysql-enum-string-set.000001", "binlog.000001"),
        read_binlog(PUBLIC / "rmc" / "mysql_type_bit.000001", "binlog.000002"),
    ]


@pytest.fixture
def mysql_source():
    server = ScriptedMySQL(source_binlogs())
    yield server
    server.stop()
    assert not server.errors, server.errors


def account(server: ScriptedMySQL, password: str | None = None) -> SourceAccount:
    return SourceAccount(
        server.host, server.port, server.user, server.password if password is None else password
    )


def receive_gtids(server, relay_dir: Path, repository=None, *, executed: str = "", **settings):
    password = settings.pop("password", None)
    return receive(
        account(server, password),
        ReceiverSettings("live", relay_dir, **{"retry_count": 1, "connect_retry": 0.1, **settings}),
        auto_position=executed,
        repository=repository,
    )


def replay(tmp_path: Path, name: str, index: Path) -> dict[str, list[tuple]]:
    """The index replayed into a new slave (after a channel that creates the `mysql` database the
    binlogs' tables live in: the source had it from its start); every table's rows."""
    slave, repo = tmp_path / f"{name}.duckdb", tmp_path / f"{name}.sqlite"
    boot = RelayLogBuilder(tmp_path / f"{name}-boot")
    boot.ddl("CREATE DATABASE mysql")
    for channel, path in (("boot", boot.close()), ("live", index)):
        done = subprocess.run(replay_argv(slave, repo, f"{channel}={path}"), capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
    with duckdb.connect(str(slave), read_only=True) as conn:
        tables = conn.sql(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name NOT LIKE '\\_\\_%' ESCAPE '\\'"
        ).fetchall()
        return {
            f"{schema}.{table}": sorted(conn.sql(f'SELECT * FROM "{schema}"."{table}"').fetchall(), key=repr)
            for schema, table in tables
        }


def binlogs_replayed(tmp_path: Path) -> dict[str, list[tuple]]:
    """The source's binary logs replayed straight from their files."""
    folder = tmp_path / "binlogs"
    folder.mkdir()
    for name, source in (
        ("binlog.000001", "mysql-enum-string-set.000001"),
        ("binlog.000002", "mysql_type_bit.000001"),
    ):
        (folder / name).write_bytes((PUBLIC / "rmc" / source).read_bytes())
    (folder / "binlog.index").write_text("./binlog.000001\n./binlog.000002\n")
    return replay(tmp_path, "direct", folder / "binlog.index")


def relay_gtids(index: Path) -> list[str]:
    out = io.StringIO()
    assert main(["events", "--json", str(index)], out=out) == 0
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    return [e["info"].split("'")[1] for e in events if e["event_type"] == "Gtid"]


def test_replication_from_a_mysql_source_gives_the_tables_of_its_binlogs(mysql_source, tmp_path):
    repository = Repository(tmp_path / "repo.sqlite")
    result = receive_gtids(mysql_source, tmp_path / "relay", repository)

    assert result.caught_up
    assert mysql_source.auth_paths == ["full"]  # caching_sha2_password, its cache cold: RSA
    assert mysql_source.queries[: len(MYSQL_REPLICA_QUERIES)] == MYSQL_REPLICA_QUERIES
    assert mysql_source.queries[-1].startswith("SET @slave_uuid = '")
    assert mysql_source.registered == [2]
    (request,) = mysql_source.dump_sets
    assert request.flags & 4 and request.file == "" and request.pos == 4  # BINLOG_THROUGH_GTID
    assert request.gtids.is_empty()
    assert mysql_source.sent_gtids == ALL_GTIDS
    received = repository.received("live")
    assert received["retrieved_gtid_set"] == f"{ENUMS}:1-5,{BITS}:1-3"
    assert (received["Master_log_name"], received["Master_log_pos"]) == ("binlog.000002", 1001)

    received_tables = replay(tmp_path, "received", result.index_file)
    assert received_tables == binlogs_replayed(tmp_path)
    assert len(received_tables["mysql.foo"]) == 1 and "mysql.t" in received_tables


def test_the_relay_logs_hold_the_mysql_events_and_both_readers_read_them(mysql_source, tmp_path):
    result = receive_gtids(mysql_source, tmp_path / "relay")
    assert relay_gtids(result.index_file) == ALL_GTIDS

    listing = subprocess.run(["mariadb-binlog", *map(str, result.relay_files)], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    # MariaDB's reader knows MySQL's GTID events as ignorable ones, and reads on past them
    assert listing.stdout.count("Ignorable event type 33 (MySQL Gtid)") == len(ALL_GTIDS)
    assert "server v 8.0.28" in listing.stdout and "server v 8.0.26" in listing.stdout
    assert "Rotate to binlog.000002" in listing.stdout and "Rotate to relay-bin-live.000002" in listing.stdout
    assert listing.stdout.count("table id ") >= 4 and "COMMIT" in listing.stdout


def test_a_restart_asks_with_the_gtids_it_has_and_gets_only_the_rest(mysql_source, tmp_path):
    """The source first holds three transactions; after a restart the receiver asks with what it
    received (united with what the replica executed) and the source sends the rest, once."""
    complete = mysql_source.binlogs
    mysql_source.binlogs = [complete[0].cut(3)]
    repository = Repository(tmp_path / "repo.sqlite")
    executed_elsewhere = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7"
    first = receive_gtids(mysql_source, tmp_path / "relay", repository, executed=executed_elsewhere)
    assert first.caught_up and mysql_source.sent_gtids == ALL_GTIDS[:3]
    assert repository.received("live")["retrieved_gtid_set"] == f"{ENUMS}:1-3"

    mysql_source.binlogs = complete  # the source wrote on meanwhile
    second = receive_gtids(mysql_source, tmp_path / "relay", Repository(tmp_path / "repo.sqlite"),
                           executed=executed_elsewhere)  # fmt: skip
    assert second.caught_up
    assert mysql_source.auth_paths == ["full", "fast"]  # the second login found the account cached
    assert mysql_source.dump_sets[1].gtids == GtidSet.parse(f"{ENUMS}:1-3,{executed_elsewhere}")
    assert mysql_source.sent_gtids == ALL_GTIDS  # the first three once, then only the rest
    assert relay_gtids(second.index_file) == ALL_GTIDS  # no gap, nothing twice
    assert Repository(tmp_path / "repo.sqlite").received("live")["retrieved_gtid_set"] == (
        f"{ENUMS}:1-5,{BITS}:1-3"
    )
    assert replay(tmp_path, "received", second.index_file) == binlogs_replayed(tmp_path)


def test_without_a_repository_the_relay_logs_tell_which_gtids_were_received(mysql_source, tmp_path):
    complete = mysql_source.binlogs
    mysql_source.binlogs = [complete[0].cut(2)]
    receive_gtids(mysql_source, tmp_path / "relay")
    mysql_source.binlogs = complete
    result = receive_gtids(mysql_source, tmp_path / "relay")
    assert [str(r.gtids) for r in mysql_source.dump_sets] == ["", f"{ENUMS}:1-2"]
    assert relay_gtids(result.index_file) == ALL_GTIDS


def test_a_blocking_dump_follows_on_heartbeats_until_stopped(mysql_source, tmp_path):
    """Without NON_BLOCK the source keeps the dump open and sends heartbeats when it has nothing:
    the receiver keeps the connection and stops when asked, everything received."""
    repository = Repository(tmp_path / "repo.sqlite")
    result = receive(
        account(mysql_source),
        ReceiverSettings("live", tmp_path / "relay", heartbeat_period=0.2, retry_count=1),
        auto_position="",
        until_caught_up=False,
        stop_after=1.5,
        repository=repository,
    )
    assert not result.caught_up and result.reconnects == 0
    (request,) = mysql_source.dump_sets
    assert not request.flags & 1  # blocking
    assert "@source_heartbeat_period = 200000000" in " ".join(mysql_source.queries)
    assert repository.received("live")["retrieved_gtid_set"] == f"{ENUMS}:1-5,{BITS}:1-3"
    (status,) = repository.status("live")
    assert status.last_io_error_number == 0


def test_a_connection_lost_inside_a_transaction_resumes_with_the_whole_ones(mysql_source, tmp_path):
    """The source goes away after four transactions and the GTID event of the fifth: the receiver
    connects again and asks with the four; the fifth comes whole, nothing twice."""
    mysql_source.drop_dump_after = 4
    result = receive_gtids(mysql_source, tmp_path / "relay", Repository(tmp_path / "repo.sqlite"))
    assert result.caught_up and result.reconnects == 1
    assert mysql_source.auth_paths == ["full", "fast"]
    assert [str(r.gtids) for r in mysql_source.dump_sets] == ["", f"{ENUMS}:1-4"]
    assert mysql_source.sent_gtids == ALL_GTIDS
    assert replay(tmp_path, "received", result.index_file) == binlogs_replayed(tmp_path)


@pytest.mark.parametrize("cached", [False, True], ids=["full-auth", "fast-auth"])
def test_a_wrong_password_over_caching_sha2_is_error_1045(mysql_source, tmp_path, cached):
    if cached:
        receive_gtids(mysql_source, tmp_path / "first")  # the account is in the source's cache now
    repository = Repository(tmp_path / "repo.sqlite")
    with pytest.raises(ReceiverError) as caught:
        receive_gtids(mysql_source, tmp_path / "relay", repository, password="not-the-password")
    assert caught.value.errno == 1045
    assert mysql_source.auth_paths[-1] == ("refused (fast)" if cached else "refused (full)")
    (status,) = repository.status("live")
    assert status.last_io_error_number == 1045
    assert "Access denied for user 'repl'" in status.last_io_error_message
    assert "not-the-password" not in status.last_io_error_message


def test_auto_position_against_a_source_without_gtid_mode_on_is_refused(tmp_path):
    server = ScriptedMySQL(source_binlogs(), gtid_mode="OFF")
    try:
        with pytest.raises(ReceiverError) as caught:
            receive_gtids(server, tmp_path / "relay", Repository(tmp_path / "repo.sqlite"))
    finally:
        server.stop()
    assert caught.value.errno == 1593  # ER_REPLICA_FATAL_ERROR, as MySQL's IO thread reports it
    assert caught.value.message == (
        "The replication receiver thread cannot start in AUTO_POSITION mode: the source has "
        "GTID_MODE = OFF instead of ON."
    )
    assert server.dump_sets == [] and server.registered == []


def test_auto_position_against_a_mariadb_source_is_refused_as_mysql_refuses_it(mariadb_source, tmp_path):
    """MariaDB has no @@GLOBAL.GTID_MODE, which a MySQL replica takes for OFF; its GTID
    positioning is SOURCE_USE_GTID."""
    settings = ReceiverSettings("live", tmp_path / "relay", retry_count=1)
    source = SourceAccount(mariadb_source.host, mariadb_source.port, "repl", mariadb_source.repl_password)
    with pytest.raises(ReceiverError) as caught:
        receive(source, settings, auto_position="")
    assert caught.value.errno == 1593
    assert "AUTO_POSITION mode: the source has GTID_MODE = OFF instead of ON" in caught.value.message


def test_change_replication_source_auto_position_and_show_replica_status(mysql_source, tmp_path):
    from engine.replica.errors import CommandError
    from engine.replica.server import ReplicaServer

    complete = mysql_source.binlogs
    mysql_source.binlogs = [complete[0].cut(3)]
    relay_dir = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{mysql_source.host}', SOURCE_PORT = {mysql_source.port}, "
            f"SOURCE_USER = 'repl', SOURCE_PASSWORD = '{mysql_source.password}', SOURCE_AUTO_POSITION = 1, "
            f"SOURCE_RETRY_COUNT = 1, RELAY_LOG = '{relay_dir}/relay-bin' FOR CHANNEL 'm'"
        )
        with pytest.raises(CommandError) as caught:
            replica.execute("CHANGE REPLICATION SOURCE TO SOURCE_LOG_FILE = 'binlog.000001' FOR CHANNEL 'm'")
        assert caught.value.errno == 1776
        with pytest.raises(CommandError) as caught:
            replica.execute("CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1, SOURCE_USE_GTID = slave_pos "
                            "FOR CHANNEL 'm'")  # fmt: skip
        assert caught.value.errno == 1210  # MySQL's GTIDs or MariaDB's, not both
        for expected in (f"{ENUMS}:1-3", f"{ENUMS}:1-5,{BITS}:1-3"):
            replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'm'")
            assert replica.wait(60)
            result = replica.execute("SHOW REPLICA STATUS FOR CHANNEL 'm'")
            status = dict(zip(result.columns, result.rows[0], strict=True))
            assert status["Last_IO_Errno"] == 0, status["Last_IO_Error"]
            assert status["Retrieved_Gtid_Set"] == expected
            assert status["Auto_Position"] == 1
            assert mysql_source.password not in str(status)
            mysql_source.binlogs = complete
        assert [str(r.gtids) for r in mysql_source.dump_sets] == ["", f"{ENUMS}:1-3"]
        assert mysql_source.sent_gtids == ALL_GTIDS

        mysql_source.gtid_mode = "OFF_PERMISSIVE"
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'm'")
        assert replica.wait(60)
        result = replica.execute("SHOW REPLICA STATUS FOR CHANNEL 'm'")
        status = dict(zip(result.columns, result.rows[0], strict=True))
        assert status["Last_IO_Errno"] == 1593
        assert "the source has GTID_MODE = OFF_PERMISSIVE instead of ON" in status["Last_IO_Error"]
    finally:
        replica.close()


def test_a_tagged_gtid_received_is_asked_with_after_a_restart_and_not_sent_again(tmp_path):
    """A MySQL 9.6 source's tagged transaction: counted into the Retrieved_Gtid_Set with its tag,
    and after a restart the set goes to the source in the tagged form, which skips it."""
    tagged_log = PUBLIC / "rmc" / "binlog_transaction_with_GTID_TAG.000001"
    server = ScriptedMySQL([read_binlog(PUBLIC / "rmc" / "mysql-enum-string-set.000001", "binlog.000001"),
                            read_binlog(tagged_log, "binlog.000002")])  # fmt: skip
    try:
        tagged = f"{TAGGED_SOURCE}:mytag:3"
        first = receive_gtids(server, tmp_path / "relay", Repository(tmp_path / "repo.sqlite"))
        assert first.caught_up and server.sent_gtids == [*ALL_GTIDS[:5], tagged]
        retrieved = Repository(tmp_path / "repo.sqlite").received("live")["retrieved_gtid_set"]
        assert GtidSet.parse(retrieved) == GtidSet.parse(f"{ENUMS}:1-5,{tagged}")

        second = receive_gtids(server, tmp_path / "relay", Repository(tmp_path / "repo.sqlite"))
        assert second.caught_up
        assert server.dump_sets[1].gtids == GtidSet.parse(retrieved)
        assert server.sent_gtids == [*ALL_GTIDS[:5], tagged]  # nothing twice
    finally:
        server.stop()
    assert not server.errors, server.errors


def test_a_gtid_set_in_mysqls_binary_form_round_trips_and_bad_bytes_are_refused():
    gtids = GtidSet.parse(f"{ENUMS}:1-5:7:9-12,{BITS}:3")
    encoded = gtids.encode()
    # 2 sids; the first: uuid, 3 intervals [1,6) [7,8) [9,13); the second: uuid, 1 interval [3,4)
    assert len(encoded) == 8 + (16 + 8 + 3 * 16) + (16 + 8 + 16)
    assert encoded[8:24].hex() == ENUMS.replace("-", "")
    assert GtidSet.decode(encoded) == gtids
    assert GtidSet.decode(GtidSet().encode()).is_empty()
    for bad in (encoded[:-1], encoded + b"\0", b"\1\0\0"):
        with pytest.raises(ValueError):
            GtidSet.decode(bad)


def test_a_set_with_tagged_gtids_is_sent_in_the_tagged_form_mysql_writes():
    # A MySQL 8.4 binlog's Previous_gtids holds Gtid_set::encode's bytes: a set with a tag must
    # come out of encode() as exactly those, untagged sid and tagged one alike
    path = PUBLIC / "rmc" / "binlog_transaction_with_GTID_TAG.000001"
    data = path.read_bytes()
    with BinlogFile(path) as binlog:
        (previous,) = [e for e in binlog.events() if e.type_code == EventType.PREVIOUS_GTIDS]
    written = data[previous.pos + 19 : previous.end_pos - 4]  # the body, less header and checksum
    assert any(sid.tag for sid in previous.event.gtid_set.intervals())
    assert previous.event.gtid_set.encode() == written
    assert GtidSet.decode(written) == previous.event.gtid_set
    tagged = GtidSet.parse(f"{ENUMS}:1-3,{ENUMS}:fleet:1-2:9")
    assert GtidSet.decode(tagged.encode()) == tagged
    # a set without tags keeps the untagged form, which sources before 8.3 read
    assert GtidSet.parse(f"{ENUMS}:1-3").encode()[:8] == (1).to_bytes(8, "little")
    for bad in (tagged.encode()[:30], tagged.encode()[:-1], tagged.encode() + b"\0"):
        with pytest.raises(ValueError):
            GtidSet.decode(bad)


def test_relaydeck_receive_auto_position_sends_the_set_given(mysql_source, tmp_path):
    """`relaydeck receive --auto-position SET`: COM_BINLOG_DUMP_GTID with that set; only the rest comes."""
    out = io.StringIO()
    argv = ["receive", "--host", mysql_source.host, "--port", str(mysql_source.port), "--user", mysql_source.user,
            "--password", mysql_source.password, "--channel", "live", "--relay-dir", str(tmp_path / "relay"),
            "--auto-position", f"{ENUMS}:1-3", "--retry-count", "1"]  # fmt: skip
    assert main(argv, out=out) == 0, out.getvalue()
    (index,) = (tmp_path / "relay").glob("*.index")
    assert relay_gtids(index) == ALL_GTIDS[3:]
    bad = io.StringIO()
    assert main([*argv[:-4], "--auto-position", f"{ENUMS}:1-x", "--retry-count", "1"], out=bad) != 0


def test_auto_position_with_tagged_gtids_asks_with_them(mysql_source, tmp_path):
    """GTIDs tagged on the source (MySQL 8.3+) go into COM_BINLOG_DUMP_GTID in the tagged form:
    the source reads them back, tag and all, and sends what is outside the set."""
    given = f"{ENUMS}:1-2,{ENUMS}:fleet:1-40,{BITS}:audit_2:7"
    out = io.StringIO()
    argv = ["receive", "--host", mysql_source.host, "--port", str(mysql_source.port), "--user", mysql_source.user,
            "--password", mysql_source.password, "--channel", "live", "--relay-dir", str(tmp_path / "relay"),
            "--auto-position", given, "--retry-count", "1"]  # fmt: skip
    assert main(argv, out=out) == 0, out.getvalue()
    assert [r.gtids for r in mysql_source.dump_sets] == [GtidSet.parse(given)]
    (index,) = (tmp_path / "relay").glob("*.index")
    assert relay_gtids(index) == ALL_GTIDS[2:]
