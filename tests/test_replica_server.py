"""The MySQL replication statements on a ReplicaServer: WL#1697's channel rules and errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.replay import ChannelRun
from engine.replica.errors import CommandError
from engine.replica.server import ReplicaServer
from engine.slave.database import Slave

from .conftest import MULTISOURCE
from .test_replay_oracle import assert_tables_equal, expected_tables

RELAY = MULTISOURCE / "relay"
M1 = RELAY / "relay-bin-m1.index"
M2 = RELAY / "relay-bin-m2.index"
M1_DBS = {"sbtest1", "sbtest2", "sbtest3"}


@pytest.fixture
def server(tmp_path):
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    yield replica
    replica.close()


def error_of(replica: ReplicaServer, statement: str) -> CommandError:
    with pytest.raises(CommandError) as caught:
        replica.execute(statement)
    return caught.value


def channel_names(replica: ReplicaServer) -> list[str]:
    return replica.repository.channels()


# -- which channel a statement acts on ----------------------------------------------------------


def test_the_default_channel_always_exists_and_takes_statements_without_for_channel(server):
    assert channel_names(server) == [""]
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db1', SOURCE_PORT = 3307")
    status = server.execute("SHOW REPLICA STATUS")
    assert len(status.rows) == 1
    row = dict(zip(status.columns, status.rows[0], strict=True))
    assert row["Channel_Name"] == ""
    assert server.repository.master_info("")["Host"] == "db1"
    assert server.repository.master_info("")["Port"] == 3307


def test_change_for_channel_creates_it_and_then_one_channel_statements_need_for_channel(server):
    server.execute(f"CHANGE MASTER TO RELAY_LOG_INDEX = '{M1}' FOR CHANNEL 'm1'")
    assert channel_names(server) == ["", "m1"]
    for statement in (
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'x'",
        "SHOW RELAYLOG EVENTS",
        "START REPLICA UNTIL SQL_AFTER_MTS_GAPS",
    ):
        err = error_of(server, statement)
        assert err.errno == 3079, statement
        assert "Use FOR CHANNEL clause" in err.message
    # but the same statements with FOR CHANNEL work
    events = server.execute("SHOW RELAYLOG EVENTS FOR CHANNEL 'm1'")  # the index's first file
    assert events.columns == ("Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info")
    assert {r[0] for r in events.rows} == {"relay-bin-m1.000001"}
    assert events.rows[0][1:3] == (4, "Format_desc")


def test_channel_names_are_case_insensitive_and_keep_their_first_spelling(server):
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}' FOR CHANNEL 'Shop'")
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_PORT = 3408 FOR CHANNEL 'SHOP'")
    assert channel_names(server) == ["", "Shop"]
    assert server.repository.master_info("shop")["Port"] == 3408
    server.execute("START REPLICA FOR CHANNEL 'sHoP'")
    assert server.wait(120)
    (status,) = server.status("Shop")
    assert status.last_error_number == 0
    assert status.executed_gtid_set


@pytest.mark.parametrize(
    "statement",
    [
        "START REPLICA FOR CHANNEL 'nope'",
        "STOP REPLICA FOR CHANNEL 'nope'",
        "RESET REPLICA FOR CHANNEL 'nope'",
        "RESET REPLICA ALL FOR CHANNEL 'nope'",
        "SHOW REPLICA STATUS FOR CHANNEL 'nope'",
        "SHOW RELAYLOG EVENTS FOR CHANNEL 'nope'",
    ],
)
def test_a_channel_that_does_not_exist_is_an_error(server, statement):
    err = error_of(server, statement)
    assert (err.errno, err.message) == (3074, "Slave channel 'nope' does not exist")


def test_two_channels_cannot_share_a_source_host_and_port(server):
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 1 FOR CHANNEL 'a'")
    err = error_of(server, "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 1 FOR CHANNEL 'b'")
    assert err.errno == 3075
    assert "Multiple slave channels for the same host and port combination" in err.message
    assert channel_names(server) == ["", "a"]  # the failed CHANGE created nothing
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 2 FOR CHANNEL 'b'")
    server.execute(
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 1 FOR CHANNEL 'a'"
    )  # itself
    err = error_of(server, "CHANGE REPLICATION SOURCE TO SOURCE_PORT = 1 FOR CHANNEL 'b'")
    assert err.errno == 3075


def test_at_most_256_channels_counting_the_default(server):
    for i in range(255):
        server.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_PORT = {i + 1} FOR CHANNEL 'c{i}'")
    assert len(channel_names(server)) == 256
    err = error_of(server, "CHANGE REPLICATION SOURCE TO SOURCE_PORT = 9999 FOR CHANNEL 'one_more'")
    assert err.errno == 3080
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_PORT = 9999 FOR CHANNEL 'C0'")  # existing: fine


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "a\\b", "a\0b", "x" * 65, "tab\there"])
def test_a_channel_name_that_could_leave_the_relay_log_folder_is_refused(server, tmp_path, name):
    base = tmp_path / "relay" / "relay-bin"
    statement_name = name.replace("\\", "\\\\").replace("\0", "\\0").replace("\t", "\\t")
    err = error_of(
        server, f"CHANGE REPLICATION SOURCE TO RELAY_LOG = '{base}' FOR CHANNEL '{statement_name}'"
    )
    assert err.errno == 3076
    assert channel_names(server) == [""]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=64))
def test_any_accepted_channel_name_keeps_its_index_beside_the_relay_log_base(tmp_path_factory, name):
    from engine.replica.server import _channel_index

    folder = tmp_path_factory.getbasetemp() / "relay"
    try:
        index = _channel_index(str(folder / "relay-bin"), name)
    except ValueError:
        return  # refused names are checked above
    assert index.parent == folder.resolve()
    assert index.name == f"relay-bin-{name.lower()}.index"


def test_relay_log_base_follows_wl1697_naming(server, tmp_path):
    base = tmp_path / "relay-bin"
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG = '{base}' FOR CHANNEL 'ShannonNoisyChannel'")
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG = '{base}' FOR CHANNEL ''")
    assert server.repository.relay_log_info("ShannonNoisyChannel")["Relay_log_index"] == str(
        tmp_path.resolve() / "relay-bin-shannonnoisychannel.index"
    )
    assert server.repository.relay_log_info("")["Relay_log_index"] == str(
        tmp_path.resolve() / "relay-bin.index"
    )


# -- START / STOP / RESET -----------------------------------------------------------------------


def test_start_without_for_channel_starts_the_configured_channels_only(server):
    err = error_of(server, "START REPLICA")
    assert err.errno == 1200  # nothing configured at all
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}' FOR CHANNEL 'm2'")
    err = error_of(server, "START REPLICA FOR CHANNEL ''")
    assert err.errno == 1200
    assert server.execute("START REPLICA").warnings == []
    assert server.wait(120)
    statuses = {s.channel_name: s for s in server.status()}
    assert statuses["m2"].executed_gtid_set and not statuses[""].executed_gtid_set


def test_already_running_and_already_stopped_are_notes(tmp_path):
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=True)
    try:
        live = tmp_path / "live"
        live.mkdir()
        shutil.copy(RELAY / "relay-bin-m2.000001", live)
        (live / "relay-bin-m2.index").write_text("./relay-bin-m2.000001\n")
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{live / 'relay-bin-m2.index'}'")
        assert replica.execute("START REPLICA").warnings == []
        (note,) = replica.execute("START REPLICA").warnings
        assert (note.code, note.message) == (1254, "Slave is already running")
        err = error_of(replica, "RESET REPLICA")
        assert err.errno == 1198
        assert "Run STOP SLAVE first" in err.message
        err = error_of(replica, "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 5")
        assert err.errno == 1198
        replica.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'still-fine'")  # display only
        assert replica.execute("STOP REPLICA").warnings == []
        (note,) = replica.execute("STOP REPLICA").warnings
        assert (note.code, note.message) == (1255, "Slave is already stopped")
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}' FOR CHANNEL 'm1'")
        replica.execute("START REPLICA FOR CHANNEL 'm1'")
        (note,) = replica.execute("START REPLICA FOR CHANNEL 'M1'").warnings
        assert (note.code, note.message) == (3083, "Slave is already running FOR CHANNEL 'm1'")
        err = error_of(replica, "RESET REPLICA FOR CHANNEL 'm1'")
        assert (err.errno, err.message) == (
            3081,
            "This operation cannot be performed. Run STOP SLAVE FOR CHANNEL 'm1' first",
        )
        replica.execute("STOP REPLICA FOR CHANNEL 'm1'")
        notes = replica.execute("STOP REPLICA").warnings
        assert {(n.code, n.message) for n in notes} == {
            (1255, "Slave is already stopped"),
            (3084, "Slave is already stopped FOR CHANNEL 'm1'"),
        }
    finally:
        replica.close()


def test_reset_forgets_the_position_but_keeps_the_configuration_and_reset_all_removes_the_channel(server):
    server.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}', SOURCE_HOST = 'm2host' FOR CHANNEL 'm2'"
    )
    server.execute("START REPLICA FOR CHANNEL 'm2'")
    server.wait(120)
    before = server.slave.progress("m2")
    assert before.relay_log_file is not None
    server.execute("RESET REPLICA FOR CHANNEL 'm2'")
    after = server.slave.progress("m2")
    assert (after.relay_log_file, after.relay_log_pos) == (None, 4)
    assert after.executed_gtids == before.executed_gtids  # like gtid_executed
    assert server.repository.relay_log_info("m2")["Relay_log_index"] == str(M2.resolve())
    assert server.repository.master_info("m2")["Host"] == "m2host"
    # from the start again: every GTID transaction is known, so nothing is applied twice
    server.execute("START REPLICA FOR CHANNEL 'm2'")
    server.wait(120)
    run = server.run_of("m2")
    assert run.outcome.error is None
    assert run.outcome.stats.transactions == 0 and run.outcome.stats.skipped > 0
    server.execute("RESET REPLICA ALL FOR CHANNEL 'm2'")
    assert channel_names(server) == [""]
    assert error_of(server, "SHOW REPLICA STATUS FOR CHANNEL 'm2'").errno == 3074


def test_reset_all_without_for_channel_leaves_only_an_empty_default_channel(server):
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'a', SOURCE_PORT = 1 FOR CHANNEL 'a'")
    server.execute("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'b', SOURCE_PORT = 1 FOR CHANNEL ''")
    server.execute("RESET REPLICA ALL")
    assert channel_names(server) == [""]
    assert server.repository.master_info("")["Host"] is None


def test_set_global_checks_name_scope_and_value_and_applies_at_the_next_start(server):
    assert error_of(server, "SET GLOBAL no_such_thing = 1").errno == 1193
    assert error_of(server, "SET replica_parallel_workers = 2").errno == 1229
    assert error_of(server, "SET GLOBAL replica_parallel_workers = 5000").errno == 1231
    assert error_of(server, "SET GLOBAL replica_parallel_type = 'SIDEWAYS'").errno == 1231
    assert error_of(server, "SET GLOBAL replica_parallel_workers = 'two'").errno == 1232
    assert error_of(server, "SET GLOBAL server_id = 0").errno == 1231  # a replica needs an id
    assert error_of(server, "SET GLOBAL server_id = 4294967296").errno == 1231
    # all or nothing: the good assignment before a bad one is not kept
    assert error_of(server, "SET GLOBAL replica_parallel_workers = 3, GLOBAL nope = 1").errno == 1193
    assert "replica_parallel_workers" not in server.repository.global_variables()
    server.execute("SET GLOBAL slave_parallel_workers = 2, GLOBAL replica_parallel_type = LOGICAL_CLOCK")
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}' FOR CHANNEL 'm2'")
    server.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}', REPLICA_PARALLEL_WORKERS = 0 FOR CHANNEL 'm1'"
    )
    server.execute("START REPLICA")
    server.wait(180)
    m2 = server.run_of("m2").settings.parallel
    assert (m2.workers, m2.parallel_type) == (2, "logical_clock")
    assert server.run_of("m1").settings.parallel is None  # its own option wins over the global
    assert len(server.repository.worker_infos("m2")) == 2


def test_change_relay_log_file_and_pos_sets_where_the_next_start_reads(server):
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}'")
    err = error_of(
        server, "CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE = 'relay-bin-m2.999999', RELAY_LOG_POS = 4"
    )
    assert err.errno == 1380
    err = error_of(
        server,
        "CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE = 'relay-bin-m2.000001', RELAY_LOG_POS = 99999999",
    )
    assert err.errno == 1380
    server.execute("START REPLICA")
    server.wait(120)
    everything = server.run_of("").outcome.stats.transactions
    events = server.execute("SHOW RELAYLOG EVENTS IN 'relay-bin-m2.000002'")
    after_xid = [events.rows[i + 1][1] for i, r in enumerate(events.rows[:-1]) if r[2] == "Xid"]
    middle = after_xid[len(after_xid) // 2]  # a relay position (End_log_pos is the source's)
    err = error_of(
        server,
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE = 'relay-bin-m2.000002', RELAY_LOG_POS = {middle + 1}",
    )
    assert err.errno == 1380 and "no event starts at" in err.message
    server.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE = 'relay-bin-m2.000002', RELAY_LOG_POS = {middle}"
    )
    progress = server.slave.progress("")
    assert (progress.relay_log_file, progress.relay_log_pos) == ("relay-bin-m2.000002", middle)
    assert server.repository.relay_log_info("")["Relay_log_pos"] == middle
    server.execute("START REPLICA")
    server.wait(120)
    stats = server.run_of("").outcome.stats
    # read from the middle of file 2 on: fewer transactions than the whole log, each one already
    # applied (GTIDs), so none twice
    assert stats.transactions == 0
    assert 0 < stats.skipped < everything


def test_change_relay_position_is_refused_while_a_crash_left_gaps(server):
    from engine.slave.database import CommitRecord

    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}'")
    session = server.slave.session()
    session.begin()
    session.record_commits([CommitRecord("", 5, None, "relay-bin-m2.000002", 900, None, 0, 1)])
    session.commit()
    session.close()
    err = error_of(
        server, "CHANGE REPLICATION SOURCE TO RELAY_LOG_FILE = 'relay-bin-m2.000002', RELAY_LOG_POS = 4"
    )
    assert err.errno == 1802


def test_show_relaylog_events_in_from_limit(server):
    server.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}' FOR CHANNEL 'm1'")
    first = server.execute("SHOW RELAYLOG EVENTS IN 'relay-bin-m1.000002' LIMIT 10 FOR CHANNEL 'm1'")
    assert len(first.rows) == 10 and {r[0] for r in first.rows} == {"relay-bin-m1.000002"}
    page = server.execute(
        f"SHOW RELAYLOG EVENTS IN 'relay-bin-m1.000002' FROM {first.rows[3][1]} LIMIT 2, 3 FOR CHANNEL 'm1'"
    )
    assert page.rows == first.rows[5:8]
    assert (
        error_of(server, "SHOW RELAYLOG EVENTS IN 'relay-bin-m1.000002' FROM 5 FOR CHANNEL 'm1'").errno
        == 1220
    )
    assert error_of(server, "SHOW RELAYLOG EVENTS IN 'nope.000001' FOR CHANNEL 'm1'").errno == 1373


def test_until_sql_before_and_after_gtids(tmp_path):
    from engine.generate import generate

    summary = generate("oltp", 3, tmp_path / "gen", size_mb=0.3)
    uuid = summary_uuid(summary)
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    try:
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{summary.index_file}'")
        replica.execute(f"START REPLICA UNTIL SQL_BEFORE_GTIDS = '{uuid}:30-40'")
        replica.wait(120)
        assert replica.slave.progress("").executed_gtids == f"{uuid}:1-29"
        replica.execute(f"START REPLICA UNTIL SQL_AFTER_GTIDS = '{uuid}:50'")
        replica.wait(120)
        assert replica.slave.progress("").executed_gtids == f"{uuid}:1-50"
        transactions = transactions_of(summary.index_file)
        sixtieth, seventieth = transactions[59], transactions[69]
        replica.execute(
            f"START REPLICA UNTIL RELAY_LOG_FILE = '{sixtieth.end.log_name}', RELAY_LOG_POS = {sixtieth.end.pos}"
        )
        replica.wait(120)
        assert replica.slave.progress("").executed_gtids == f"{uuid}:1-60"
        replica.execute(
            f"START SLAVE UNTIL MASTER_LOG_FILE = '{seventieth.source_log_file}', "
            f"MASTER_LOG_POS = {seventieth.source_end_pos}"
        )
        replica.wait(120)
        assert replica.slave.progress("").executed_gtids == f"{uuid}:1-70"
        err = error_of(replica, "START REPLICA UNTIL SQL_AFTER_GTIDS = 'not a set'")
        assert err.errno == 1772
        replica.execute("START REPLICA UNTIL SQL_AFTER_MTS_GAPS")  # no gaps: stops at once
        replica.wait(60)
        assert replica.slave.progress("").executed_gtids == f"{uuid}:1-70"
    finally:
        replica.close()


def transactions_of(index: Path) -> list:  # type: ignore[type-arg]
    from engine.relaylog.index import read_index
    from engine.relaylog.stream import stream_events
    from engine.transactions import Transaction, TransactionAssembler

    assembler = TransactionAssembler()
    found = []
    for logged in stream_events(read_index(index)):
        found.extend(t for t in assembler.feed(logged) if isinstance(t, Transaction))
    return found


def summary_uuid(summary) -> str:  # type: ignore[no-untyped-def]
    import json

    manifest = json.loads((summary.index_file.parent / "expected" / "manifest.json").read_text())
    return manifest["generator"]["source_uuid"]


# -- fan-in -------------------------------------------------------------------------------------


def test_fan_in_one_channel_failing_leaves_the_other_exact(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(RELAY, broken)
    victim = broken / "relay-bin-m2.000002"
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte: that event fails its CRC32
    victim.write_bytes(bytes(data))
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{broken / 'relay-bin-m1.index'}' FOR CHANNEL 'm1'"
        )
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{victim.parent / 'relay-bin-m2.index'}' FOR CHANNEL 'm2'"
        )
        replica.execute("SET GLOBAL replica_parallel_workers = 2")
        replica.execute("START REPLICA")
        assert replica.wait(300)
        statuses = {s.channel_name: s for s in replica.status()}
        assert statuses["m1"].last_error_number == 0
        assert statuses["m2"].last_error_number != 0
        assert "relay-bin-m2.000002" in statuses["m2"].last_error_message
        assert "CRC32" in statuses["m2"].last_error_message
    finally:
        replica.close()
    expected = {k: p for k, p in expected_tables().items() if k[0] in M1_DBS}
    slave = Slave(tmp_path / "s.duckdb")
    try:
        shop = [t for t in slave.user_tables() if t[0] == "shop"]
    finally:
        slave.close()
    # m2 stopped at the last whole transaction before the corruption: its tables exist, m1's are exact
    assert shop
    assert_tables_equal(tmp_path / "s.duckdb", expected, schemas=M1_DBS)


def test_a_publisher_tick_between_registering_and_starting_a_run_does_not_freeze_its_status(
    tmp_path, monkeypatch
):
    """START registers the channel's run, then starts its thread: a tick of the status publisher in
    between sees a run that is not alive, which must not count as one that ended (its last state
    published), or SHOW REPLICA STATUS would stay as it was before the START."""
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repository.sqlite", follow=False)
    replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}' FOR CHANNEL 'm2'")
    start = ChannelRun.start

    def start_after_a_tick(run: ChannelRun) -> None:
        replica._publish_once()  # the publisher's tick lands here
        start(run)

    monkeypatch.setattr(ChannelRun, "start", start_after_a_tick)
    try:
        replica.execute("START REPLICA FOR CHANNEL 'm2'")
        assert replica.wait(120)
        status = replica.execute("SHOW REPLICA STATUS FOR CHANNEL 'm2'")
        shown = dict(zip(status.columns, status.rows[0], strict=True))
        progress = replica.slave.progress("m2")
        assert progress.transactions > 0
        assert shown["Executed_Gtid_Set"] == progress.executed_gtids
        assert (shown["Relay_Log_File"], shown["Relay_Log_Pos"]) == (
            progress.relay_log_file,
            progress.relay_log_pos,
        )
    finally:
        replica.close()
