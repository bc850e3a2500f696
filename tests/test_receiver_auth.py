"""The receiver authenticating with MariaDB's ed25519 (the auth_ed25519 plugin Debian's
mariadb-server ships; PyMySQL signs the scramble with PyNaCl), against a real MariaDB source."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.receiver.connection import ConnectionLost, SourceAccount, connect
from engine.replica.server import ReplicaServer
from tests.test_receiver import assert_same_tables, gtid_binlog_pos, source_binlog_end, write_load

ED_USER, ED_PASSWORD = "repl_ed", "ed25519-secret"


@pytest.fixture(scope="module")
def ed25519_source(mariadb_source):
    """The session's source with the ed25519 plugin loaded and a replication user that signs in
    with it; skipped where the server has no such plugin."""
    with mariadb_source.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'")
        if cur.fetchone() is None:
            cur.execute("SELECT @@plugin_dir")
            plugin_dir = Path(cur.fetchone()[0])
            if not (plugin_dir / "auth_ed25519.so").exists():
                pytest.skip(f"this mariadbd has no auth_ed25519 plugin in {plugin_dir}")
            cur.execute("INSTALL SONAME 'auth_ed25519'")
        cur.execute(f"DROP USER IF EXISTS '{ED_USER}'@'%'")
        cur.execute(f"CREATE USER '{ED_USER}'@'%%' IDENTIFIED VIA ed25519 USING PASSWORD(%s)", (ED_PASSWORD,))
        cur.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{ED_USER}'@'%'")
        cur.execute(f"SELECT JSON_VALUE(Priv, '$.plugin') FROM mysql.global_priv WHERE User = '{ED_USER}'")
        assert cur.fetchone()[0] == "ed25519"  # the account signs in with ed25519 and nothing else
    return mariadb_source


def io_status(replica: ReplicaServer, channel: str) -> dict:
    result = replica.execute(f"SHOW REPLICA STATUS FOR CHANNEL '{channel}'")
    return dict(zip(result.columns, result.rows[0], strict=True))


def change_ed25519_source(replica: ReplicaServer, channel: str, server, relay: Path, password: str,  # type: ignore[no-untyped-def]
                          **options: object) -> None:  # fmt: skip
    extra = "".join(f", {name} = {value}" for name, value in options.items())
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{server.host}', SOURCE_PORT = {server.port}, "
        f"SOURCE_USER = '{ED_USER}', SOURCE_PASSWORD = '{password}', RELAY_LOG = '{relay}/relay-bin'"
        f"{extra} FOR CHANNEL '{channel}'"
    )


def test_replication_as_an_ed25519_user(ed25519_source, tmp_path):
    server = ed25519_source
    file, pos = source_binlog_end(server)
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        change_ed25519_source(replica, "ed", server, tmp_path / "relay", ED_PASSWORD,
                              SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, SOURCE_CONNECT_RETRY=1)  # fmt: skip
        replica.execute("START REPLICA FOR CHANNEL 'ed'")
        write_load(server, "ed1", 20, seed=81)
        deadline = time.monotonic() + 60
        while io_status(replica, "ed")["Executed_Gtid_Set"] != gtid_binlog_pos(server):
            status = io_status(replica, "ed")
            assert status["Last_IO_Errno"] == 0, status["Last_IO_Error"]
            assert time.monotonic() < deadline, "the channel did not apply everything"
            time.sleep(0.05)
        status = io_status(replica, "ed")
        replica.execute("STOP REPLICA FOR CHANNEL 'ed'")
    finally:
        replica.close()
    assert status["Replica_IO_Running"] == "Yes" and status["Last_IO_Errno"] == 0
    assert ED_PASSWORD not in str(status)
    assert_same_tables(server, tmp_path / "slave.duckdb", "ed1")


def test_a_wrong_ed25519_password_is_1045(ed25519_source, tmp_path):
    server = ed25519_source
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        change_ed25519_source(replica, "edpw", server, tmp_path / "relay", "not-the-ed-password",
                              SOURCE_RETRY_COUNT=1)  # fmt: skip
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'edpw'")
        assert replica.wait(60)
        status = io_status(replica, "edpw")
    finally:
        replica.close()
    assert status["Last_IO_Errno"] == 1045, status["Last_IO_Error"]
    assert f"Access denied for user '{ED_USER}'" in status["Last_IO_Error"]
    assert "not-the-ed-password" not in str(status)


def test_the_ed25519_signature_is_pynacls(ed25519_source):
    """The connection itself, both ways: the right password signs in, a wrong one is refused."""
    account = SourceAccount(ed25519_source.host, ed25519_source.port, ED_USER, ED_PASSWORD)
    connect(account, read_timeout=10).close()
    with pytest.raises(ConnectionLost) as caught:
        connect(SourceAccount(account.host, account.port, ED_USER, ED_PASSWORD + "x"), read_timeout=10)
    assert caught.value.errno == 1045
