"""The receiver over TLS, against a real MariaDB source started with a CA, certificate and key the
test makes: SOURCE_SSL and its options as MySQL's replica uses them, checked on the source's side
(the dump thread's Ssl_version), and TLS failures as MySQL's 2026."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.receiver.connection import ConnectionLost, SourceAccount, SourceTls, connect
from engine.replica.config import parse_config
from engine.replica.errors import CommandError
from engine.replica.server import ReplicaServer
from tests.test_receiver import assert_same_tables, gtid_binlog_pos, source_binlog_end, write_load

TLS_USER, TLS_PASSWORD = "repl_tls", "tls-secret"


@pytest.fixture(scope="module")
def tls_source(tmp_path_factory):
    """A MariaDB server that offers TLS with a certificate for the name 'localhost' only, signed by
    a CA of the test's own; a replication user that it admits only over TLS (REQUIRE SSL); the
    performance schema on, to read each session's Ssl_version."""
    from tests.mariadb_server import server_for_tests
    from tests.tls_certificates import make_tls_files

    folder = tmp_path_factory.mktemp("tls-source")
    files = make_tls_files(folder / "tls", "relaydeck test CA", dns_names=("localhost",))
    for server in server_for_tests(folder, tls=files, extra_options=("--performance-schema=ON",)):
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE USER %s@'%%' IDENTIFIED BY %s REQUIRE SSL", (TLS_USER, TLS_PASSWORD))
            cur.execute(f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{TLS_USER}'@'%'")
        yield server


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> Path:
    """A CA that signed nothing the source holds."""
    from tests.tls_certificates import make_tls_files

    return make_tls_files(tmp_path_factory.mktemp("other-ca"), "another CA").ca


def io_status(replica: ReplicaServer, channel: str) -> dict:
    result = replica.execute(f"SHOW REPLICA STATUS FOR CHANNEL '{channel}'")
    return dict(zip(result.columns, result.rows[0], strict=True))


def wait_for(condition, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def change_tls_source(replica: ReplicaServer, channel: str, server, relay: Path, *, host: str = "localhost",  # type: ignore[no-untyped-def]
                      password: str = TLS_PASSWORD, **options: object) -> None:  # fmt: skip
    extra = "".join(f", {name} = {value}" for name, value in options.items())
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{host}', SOURCE_PORT = {server.port}, "
        f"SOURCE_USER = '{TLS_USER}', SOURCE_PASSWORD = '{password}', RELAY_LOG = '{relay}/relay-bin'"
        f"{extra} FOR CHANNEL '{channel}'"
    )


def dump_sessions_tls(server) -> list[str]:  # type: ignore[no-untyped-def]
    """The Ssl_version of each binlog dump session of the TLS user, as the source sees it ('' for
    a session in the clear)."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT COALESCE(s.VARIABLE_VALUE, '') FROM performance_schema.threads t "
            "LEFT JOIN performance_schema.status_by_thread s "
            "ON s.THREAD_ID = t.THREAD_ID AND s.VARIABLE_NAME = 'Ssl_version' "
            "WHERE t.PROCESSLIST_USER = %s AND t.PROCESSLIST_COMMAND = 'Binlog Dump'",
            (TLS_USER,),
        )
        return [row[0] for row in cur.fetchall()]


def test_replication_over_tls_with_a_user_that_requires_it(tls_source, tmp_path):
    """SOURCE_SSL = 1 with the source's CA and SOURCE_SSL_VERIFY_SERVER_CERT = 1: the receiver's
    dump session is encrypted on the source's side, the channel applies exactly the source's
    tables, SHOW REPLICA STATUS shows the TLS options."""
    server = tls_source
    relay = tmp_path / "relay"
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    file, pos = source_binlog_end(server)
    try:
        change_tls_source(replica, "tls", server, relay, SOURCE_SSL=1, SOURCE_SSL_CA=f"'{server.tls.ca}'",
                          SOURCE_SSL_VERIFY_SERVER_CERT=1, SOURCE_CONNECT_RETRY=1, SOURCE_LOG_FILE=f"'{file}'",
                          SOURCE_LOG_POS=pos)  # fmt: skip
        replica.execute("START REPLICA FOR CHANNEL 'tls'")
        write_load(server, "tls1", 30, seed=71, rotate_at=10)
        wait_for(
            lambda: io_status(replica, "tls")["Executed_Gtid_Set"] == gtid_binlog_pos(server),
            60,
            "the channel to apply everything",
        )
        sessions = dump_sessions_tls(server)
        status = io_status(replica, "tls")
        replica.execute("STOP REPLICA FOR CHANNEL 'tls'")
    finally:
        replica.close()
    assert len(sessions) == 1 and sessions[0].startswith("TLSv1."), sessions
    assert status["Replica_IO_Running"] == "Yes" and status["Last_IO_Errno"] == 0, status["Last_IO_Error"]
    assert status["Source_SSL_Allowed"] == "Yes" and status["Source_SSL_Verify_Server_Cert"] == "Yes"
    assert status["Source_SSL_CA_File"] == str(server.tls.ca)
    assert status["Source_SSL_CA_Path"] == status["Source_SSL_Cert"] == status["Source_SSL_Key"] == ""
    assert TLS_PASSWORD not in str(status)
    assert_same_tables(server, tmp_path / "slave.duckdb", "tls1")


def test_source_ssl_0_is_refused_by_a_user_that_requires_tls(tls_source, tmp_path):
    """SOURCE_SSL = 0 never encrypts, even where the source offers TLS: the REQUIRE SSL user is
    refused (1045), the password not in the error."""
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        change_tls_source(
            replica, "clear", tls_source, tmp_path / "relay", SOURCE_SSL=0, SOURCE_RETRY_COUNT=1
        )
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'clear'")
        assert replica.wait(60)
        status = io_status(replica, "clear")
    finally:
        replica.close()
    assert status["Last_IO_Errno"] == 1045 and "Access denied" in status["Last_IO_Error"]
    assert status["Source_SSL_Allowed"] == "No" and TLS_PASSWORD not in str(status)


def test_a_certificate_from_another_ca_is_2026_and_retried(tls_source, other_ca, tmp_path):
    """SOURCE_SSL_VERIFY_SERVER_CERT = 1 with a CA that did not sign the source's certificate:
    MySQL's 2026, retried per SOURCE_CONNECT_RETRY / SOURCE_RETRY_COUNT like any connection error."""
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        change_tls_source(replica, "wrongca", tls_source, tmp_path / "relay", SOURCE_SSL=1,
                          SOURCE_SSL_CA=f"'{other_ca}'", SOURCE_SSL_VERIFY_SERVER_CERT=1,
                          SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=2)  # fmt: skip
        began = time.monotonic()
        replica.execute("START REPLICA IO_THREAD FOR CHANNEL 'wrongca'")
        assert replica.wait(60)
        took = time.monotonic() - began
        status = io_status(replica, "wrongca")
    finally:
        replica.close()
    assert status["Last_IO_Errno"] == 2026
    message = status["Last_IO_Error"]
    assert "retries: 2 message: SSL connection error: certificate verify failed" in message, message
    assert 1 <= took < 30 and TLS_PASSWORD not in message
    assert status["Replica_IO_Running"] == "No"


@pytest.mark.parametrize(
    ("host", "ca", "verify", "errno"),
    [
        ("localhost", "source", True, None),  # VERIFY_IDENTITY: the CA and the name match
        ("127.0.0.1", "source", True, 2026),  # the certificate does not name 127.0.0.1
        ("127.0.0.1", "source", False, None),  # a CA alone checks the chain, not the name (VERIFY_CA)
        ("127.0.0.1", "other", False, 2026),  # … and refuses another CA's certificate
        ("127.0.0.1", None, False, None),  # no CA, no verification: encrypted only (REQUIRED)
        ("localhost", None, True, 2026),  # verify without a CA: the system's CAs, which do not know it
    ],
)
def test_the_certificate_is_checked_as_far_as_asked(tls_source, other_ca, host, ca, verify, errno):
    cafile = {"source": str(tls_source.tls.ca), "other": str(other_ca), None: ""}[ca]
    account = SourceAccount(host, tls_source.port, TLS_USER, TLS_PASSWORD,
                            SourceTls(True, ca=cafile, verify_server_cert=verify))  # fmt: skip
    if errno is None:
        conn = connect(account, read_timeout=10)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW STATUS LIKE 'Ssl_version'")
                assert cur.fetchone()[1].startswith("TLSv1.")
        finally:
            conn.close()
    else:
        with pytest.raises(ConnectionLost) as caught:
            connect(account, read_timeout=10)
        assert caught.value.errno == errno
        assert caught.value.message.startswith("SSL connection error: certificate verify failed: ")
        assert TLS_PASSWORD not in caught.value.message


@pytest.mark.parametrize(
    ("tls", "encrypted"),
    [(SourceTls(False), False), (None, True)],  # SOURCE_SSL = 0; `relaydeck receive`: PyMySQL's default
)
def test_source_ssl_0_stays_in_the_clear_where_tls_is_offered(tls_source, tls, encrypted):
    account = SourceAccount("127.0.0.1", tls_source.port, "repl", tls_source.repl_password, tls)
    conn = connect(account, read_timeout=10)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW STATUS LIKE 'Ssl_version'")
            assert cur.fetchone()[1].startswith("TLSv1.") == encrypted
    finally:
        conn.close()


def test_source_ssl_1_with_a_source_without_tls_is_2026(mariadb_source):
    account = SourceAccount(mariadb_source.host, mariadb_source.port, "repl", mariadb_source.repl_password,
                            SourceTls(True))  # fmt: skip
    with pytest.raises(ConnectionLost) as caught:
        connect(account, read_timeout=10)
    assert caught.value.errno == 2026
    assert caught.value.message == "SSL connection error: SSL is required but the server doesn't support it"


@pytest.mark.parametrize(
    ("tls", "says"),
    [
        (SourceTls(True, ca="/nonexistent/ca.pem"), "No such file or directory (SOURCE_SSL_CA = '/nonexistent/ca.pem')"),
        (SourceTls(True, cipher="NO-SUCH-CIPHER"), "No cipher can be selected. (SOURCE_SSL_CIPHER = 'NO-SUCH-CIPHER')"),
        (SourceTls(True, key="/tmp/key.pem"), "SOURCE_SSL_KEY is given without SOURCE_SSL_CERT"),
    ],
)  # fmt: skip
def test_tls_options_that_cannot_be_used_are_2026_before_connecting(tls, says):
    """Nothing is sent to the source (the host does not exist): the options fail first, clearly."""
    with pytest.raises(ConnectionLost) as caught:
        connect(SourceAccount("unknown source.invalid", 3306, "repl", "pw", tls), read_timeout=1)
    assert caught.value.errno == 2026 and caught.value.message == f"SSL connection error: {says}"


def test_tls_options_are_stored_per_channel_and_shown(tmp_path, monkeypatch):
    """CHANGE REPLICATION SOURCE TO records MySQL's TLS options (MASTER_ names too) in master_info,
    paths made absolute; SHOW REPLICA STATUS shows them under MySQL's labels."""
    monkeypatch.chdir(tmp_path)
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        replica.execute(
            "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db1', SOURCE_SSL = 1, SOURCE_SSL_CA = 'tls/ca.pem', "
            "SOURCE_SSL_CAPATH = '/etc/ssl/certs', SOURCE_SSL_CERT = '/tls/client.pem', "
            "SOURCE_SSL_KEY = '/tls/client.key', SOURCE_SSL_CIPHER = 'ECDHE-RSA-AES128-GCM-SHA256', "
            "SOURCE_SSL_VERIFY_SERVER_CERT = 1, RELAY_LOG = 'relay/relay-bin' FOR CHANNEL 'a'"
        )
        replica.execute(
            "CHANGE MASTER TO MASTER_HOST = 'db2', MASTER_SSL = 1, RELAY_LOG = 'r/relay-bin' FOR CHANNEL 'b'"
        )
        a, b = io_status(replica, "a"), io_status(replica, "b")
        for bad, errno in [("SOURCE_SSL = 2", 1210), ("SOURCE_SSL = 'yes'", 1210),
                           ("SOURCE_SSL_VERIFY_SERVER_CERT = -1", 1210)]:  # fmt: skip
            with pytest.raises(CommandError) as caught:
                replica.execute(f"CHANGE REPLICATION SOURCE TO {bad} FOR CHANNEL 'b'")
            assert caught.value.errno == errno, bad
        replica.execute("CHANGE REPLICATION SOURCE TO SOURCE_SSL = 0 FOR CHANNEL 'a'")
        a_off = io_status(replica, "a")
    finally:
        replica.close()
    assert a["Source_SSL_Allowed"] == "Yes" and a["Source_SSL_Verify_Server_Cert"] == "Yes"
    assert a["Source_SSL_CA_File"] == str(tmp_path / "tls" / "ca.pem")
    assert (a["Source_SSL_CA_Path"], a["Source_SSL_Cert"], a["Source_SSL_Key"]) == (
        "/etc/ssl/certs", "/tls/client.pem", "/tls/client.key"
    )  # fmt: skip
    assert a["Source_SSL_Cipher"] == "ECDHE-RSA-AES128-GCM-SHA256"
    assert b["Source_SSL_Allowed"] == "Yes" and b["Source_SSL_Verify_Server_Cert"] == "No"
    assert b["Source_SSL_CA_File"] == ""
    # SOURCE_SSL = 0 turns TLS off and leaves the other options as they were, as MySQL does
    assert a_off["Source_SSL_Allowed"] == "No" and a_off["Source_SSL_CA_File"] == a["Source_SSL_CA_File"]


def test_tls_keys_in_the_configuration_file(tmp_path):
    """The same names in lower case; true/false for the flags; paths relative to the file."""
    data = {
        "slave": "slave.duckdb",
        "repository": "repo.sqlite",
        "channels": {
            "live": {
                "relay_log": "relay/relay-bin",
                "source_host": "127.0.0.1",
                "source_user": "repl",
                "source_ssl": True,
                "source_ssl_ca": "tls/ca.pem",
                "source_ssl_cert": "/abs/client.pem",
                "source_ssl_key": "tls/client.key",
                "source_ssl_cipher": "ECDHE-ECDSA-AES128-GCM-SHA256",
                "source_ssl_verify_server_cert": False,
            }
        },
    }
    config = parse_config(data, tmp_path, tmp_path / "relaydeck.toml")
    replica = ReplicaServer(config.slave, config.repository, follow=False)
    try:
        for change in config.channels:
            replica.execute(change)
        status = io_status(replica, "live")
    finally:
        replica.close()
    assert status["Source_SSL_Allowed"] == "Yes" and status["Source_SSL_Verify_Server_Cert"] == "No"
    assert status["Source_SSL_CA_File"] == str(tmp_path / "tls" / "ca.pem")
    assert status["Source_SSL_Cert"] == "/abs/client.pem"
    assert status["Source_SSL_Key"] == str(tmp_path / "tls" / "client.key")
    assert status["Source_SSL_Cipher"] == "ECDHE-ECDSA-AES128-GCM-SHA256"


def test_relaydeck_receive_takes_the_tls_options(tls_source, tmp_path, capsys):
    """`relaydeck receive --source-ssl 1 --source-ssl-ca … --source-ssl-verify-server-cert 1` as the
    user that requires TLS receives; --source-ssl 0 is refused with 1045 (its error on stderr, the
    password in no output); a --source-ssl-… option without --source-ssl is a usage error."""
    import io

    from console.cli import main

    server = tls_source
    file, pos = source_binlog_end(server)
    write_load(server, "tlscli", 12, seed=73)

    def receive(*options: str) -> tuple[int, str]:
        out = io.StringIO()
        argv = ["receive", "--host", "localhost", "--port", str(server.port), "--user", TLS_USER,
                "--password", TLS_PASSWORD, "--channel", "cli", "--relay-dir", str(tmp_path / "relay"),
                "--from-file", file, "--from-pos", str(pos), "--retry-count", "1", "--connect-retry", "0.1",
                *options]  # fmt: skip
        return main(argv, out=out), out.getvalue()

    code, said = receive("--source-ssl", "1", "--source-ssl-ca", str(server.tls.ca),
                         "--source-ssl-verify-server-cert", "1")  # fmt: skip
    assert code == 0 and "(caught up)" in said, said
    assert "Write_rows" in "".join(str(e) for e in _relay_event_types(tmp_path / "relay"))
    code, said = receive("--source-ssl", "0")
    err = capsys.readouterr().err
    assert code != 0 and "1045" in err and TLS_PASSWORD not in err + said
    code, _ = receive("--source-ssl-ca", str(server.tls.ca))
    assert code != 0 and "--source-ssl 1" in capsys.readouterr().err


def _relay_event_types(relay: Path) -> list[str]:
    import io
    import json

    from console.cli import main

    (index,) = relay.glob("*.index")
    out = io.StringIO()
    assert main(["events", "--json", str(index)], out=out) == 0
    return [json.loads(line)["event_type"] for line in out.getvalue().splitlines()]
