"""The console's view of the engine: snapshots, event rows, and the same API behind the socket."""

from __future__ import annotations

import socket
import time

import pytest

from engine.relaylog.index import read_index
from engine.replica.control import ControlSocket, connect
from engine.replica.errors import CommandError
from engine.replica.monitor import event_rows, read_snapshot
from engine.replica.server import ReplicaServer
from engine.replica.views import ReceiverView

from .conftest import MULTISOURCE
from .paused_pool import paused_pool

M1 = MULTISOURCE / "relay" / "relay-bin-m1.index"
M2 = MULTISOURCE / "relay" / "relay-bin-m2.index"


@pytest.fixture
def applied(tmp_path):
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}', SOURCE_HOST = 'm2', SOURCE_PORT = 3408, "
        "REPLICA_PARALLEL_WORKERS = 2 FOR CHANNEL 'm2'"
    )
    replica.execute("START REPLICA FOR CHANNEL 'm2'")
    assert replica.wait(180)
    yield replica
    replica.close()


def test_a_snapshot_shows_channels_and_their_workers(applied):
    snapshot = applied.snapshot()
    views = {c.name: c for c in snapshot.channels}
    m2 = views["m2"]
    progress = applied.slave.progress("m2")
    assert m2.state == "stopped" and m2.last_error == ""
    assert m2.source == "m2:3408"
    assert m2.transactions == progress.transactions > 0
    assert m2.relay_applied == f"{progress.relay_log_file}:{progress.relay_log_pos}"
    assert m2.executed_gtids == progress.executed_gtids
    assert m2.workers_total == 2
    workers = snapshot.workers["m2"]
    assert [w.worker for w in workers] == [1, 2]
    assert sum(w.transactions for w in workers) == applied.run_of("m2").outcome.stats.transactions
    assert all(w.state == "stopped" for w in workers)
    assert views[""].state == "stopped" and views[""].transactions == 0


def test_the_read_position_is_never_behind_the_applied_one(applied):
    # The live status (the read position) is published every interval, the checkpoint as workers
    # commit: a status published before the last checkpoint must not show the reader behind it.
    progress = applied.slave.progress("m2")
    coordinator = {"CHANNEL_NAME": "m2", "SERVICE_STATE": "ON"}
    earlier = {"channel": "m2", "relay_log_file_read": progress.relay_log_file, "relay_log_pos_read": 4}
    applied.repository.publish_status(coordinator, [], stats=earlier)
    m2 = next(c for c in read_snapshot(applied.repository).channels if c.name == "m2")
    assert m2.relay_read == m2.relay_applied == f"{progress.relay_log_file}:{progress.relay_log_pos}"

    ahead = {"channel": "m2", "relay_log_file_read": progress.relay_log_file + "9", "relay_log_pos_read": 4}
    applied.repository.publish_status(coordinator, [], stats=ahead)
    m2 = next(c for c in read_snapshot(applied.repository).channels if c.name == "m2")
    assert m2.relay_read == f"{progress.relay_log_file}9:4"


def test_a_snapshot_carries_the_pool_s_activity_while_a_replay_runs(tmp_path):
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False, pool="processes")
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}', REPLICA_PARALLEL_WORKERS = 2 FOR CHANNEL 'm1'"
        )
        relay_files = {p.name for p in read_index(M1).files}
        with paused_pool(2) as stopped:
            replica.execute("START REPLICA FOR CHANNEL 'm1'")
            assert stopped.wait(60), "the pool's processes were not started"
            deadline = time.monotonic() + 30
            while (pool := applied_pool(replica)) is None or not any(
                s.state == "preparing" for s in pool.slots
            ):
                assert time.monotonic() < deadline, f"the pool never showed as preparing: {pool}"
                time.sleep(0.05)
            assert (pool.kind, pool.workers) == ("processes", 2)
            assert [s.slot for s in pool.slots[:2]] == ["process 1", "process 2"]
            preparing = [s for s in pool.slots if s.state == "preparing"]
            for slot in preparing:
                name, _, pos = slot.segment.rpartition(":")
                assert name in relay_files and int(pos) >= 4
            # each process holds a segment of its own
            assert len({s.segment for s in preparing}) == len(preparing)
        assert replica.wait(180)
        outcome = replica.run_of("m1").outcome
        assert outcome.error is None
        pool = replica.snapshot().pools["m1"]
        assert pool.segments_done >= 2  # the paused segments were finished, and counted
        assert pool.prepared_runs == outcome.stats.prepared_runs > 0
        assert pool.runs_read_again == outcome.stats.runs_read_again
        assert [s.state for s in pool.slots] == ["stopped", "stopped"]
    finally:
        replica.close()


def test_the_in_process_pool_shows_as_one_slot_and_the_single_applier_has_none(tmp_path):
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False, pool="threads")
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}', REPLICA_PARALLEL_WORKERS = 2 FOR CHANNEL 'm2'"
        )
        replica.execute("START REPLICA FOR CHANNEL 'm2'")
        assert replica.wait(180)
        pool = replica.snapshot().pools["m2"]
        assert (pool.kind, pool.segments_done) == ("threads", 1)  # the coordinator prepared it itself
        assert pool.prepared_runs == replica.run_of("m2").outcome.stats.prepared_runs
        assert [(s.slot, s.state) for s in pool.slots] == [("in-process", "stopped")]
        replica.execute("CHANGE REPLICATION SOURCE TO REPLICA_PARALLEL_WORKERS = 0 FOR CHANNEL 'm2'")
        replica.execute("START REPLICA FOR CHANNEL 'm2'")  # nothing left to apply: starts and stops
        assert replica.wait(180)
        assert replica.run_of("m2").outcome.error is None
        assert "m2" not in replica.snapshot().pools  # the single applier has none
    finally:
        replica.close()


def test_a_channel_that_connects_to_its_source_shows_its_io_thread(tmp_path):
    """The receiver's view for a channel with SOURCE_HOST and SOURCE_USER; none for captured relay
    logs, nor for a SOURCE_HOST that only labels them; a receiver that could not connect stopped in
    error with its Last_IO_Errno, apart from the applier's."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    try:
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}' FOR CHANNEL 'm2'")
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}', SOURCE_HOST = 'm1' FOR CHANNEL 'm1'"
        )
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = {closed_port}, "
            "SOURCE_USER = 'repl', SOURCE_PASSWORD = 'pw', SOURCE_LOG_FILE = 'source-bin.000003', "
            f"SOURCE_LOG_POS = 1234, SOURCE_RETRY_COUNT = 1, RELAY_LOG = '{tmp_path}/relay/relay-bin' "
            "FOR CHANNEL 'live'"
        )
        views = {c.name: c for c in replica.snapshot().channels}
        assert views["m2"].receiver is None and views["m1"].receiver is None
        assert views["live"].receiver == ReceiverView("stopped", "", "source-bin.000003:1234", "", "", "")

        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'live'")
        assert replica.wait(60)
        live = next(c for c in replica.snapshot().channels if c.name == "live")
        status = replica.status("live")[0]
        assert live.receiver is not None and live.receiver.state == "error"
        assert live.receiver.last_error == f"Error 2003: {status.last_io_error_message}"
        assert live.receiver.last_error_at == status.last_io_error_timestamp
        assert live.state == "stopped" and live.last_error == ""  # the applier is not in error
    finally:
        replica.close()


def applied_pool(replica: ReplicaServer):  # type: ignore[no-untyped-def]
    return replica.snapshot().pools.get("m1")


def test_event_rows_decodes_the_selected_rows_event(applied):
    events = applied.execute("SHOW RELAYLOG EVENTS IN 'relay-bin-m2.000002' LIMIT 400 FOR CHANNEL 'm2'")
    write = next(r for r in events.rows if r[2].startswith("Write_rows"))
    rows = event_rows(M2, write[0], write[1])
    assert rows is not None and rows.table.startswith("shop.")
    assert rows.rows and all(before is None and after for before, after in rows.rows)
    query = next(r for r in events.rows if r[2] == "Query")
    assert event_rows(M2, query[0], query[1]) is None


def test_the_socket_offers_the_same_api(applied):
    control = ControlSocket(applied)
    try:
        remote = connect(applied.repository.path)
        assert remote is not None
        try:
            assert remote.snapshot().channels == read_snapshot(applied.repository).channels
            assert remote.recovery("m2") == applied.recovery("m2")
            assert remote.relay_log_index("m2") == str(M2.resolve())
            with pytest.raises(CommandError) as caught:
                remote.execute("STOP REPLICA FOR CHANNEL 'gone'")
            assert caught.value.errno == 3074
            remote.kill("m2")  # not running: nothing to kill, no error
            result = remote.execute("SHOW REPLICA STATUS FOR CHANNEL 'm2'")
            assert dict(zip(result.columns, result.rows[0], strict=True))["Source_Port"] == 3408
        finally:
            remote.close()
        with pytest.raises(Exception, match="another relaydeck serve"):
            ControlSocket(applied)
    finally:
        control.close()
    assert connect(applied.repository.path) is None
