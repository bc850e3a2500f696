"""The console's view of the engine: snapshots, event rows, and the same API behind the socket."""

from __future__ import annotations

import pytest

from engine.replica.control import ControlSocket, connect
from engine.replica.errors import CommandError
from engine.replica.monitor import event_rows, read_snapshot
from engine.replica.server import ReplicaServer

from .conftest import MULTISOURCE

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
