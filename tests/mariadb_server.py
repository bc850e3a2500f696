"""A private MariaDB server for the tests that need a live source: its own datadir, socket and a
free port on 127.0.0.1, ROW binary logs, started with no option files and stopped at the end."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ServerUnavailable(Exception):
    """mariadbd is not installed here, or would not start."""


@dataclass
class MariaDBServer:
    host: str
    port: int
    user: str
    password: str
    datadir: Path
    process: subprocess.Popen
    repl_password: str = ""
    command: tuple[str, ...] = ()
    log: Path | None = None
    tls: Any = None  # the TlsFiles it was started with (tests/tls_certificates.py), None without TLS

    def connect(self, **options):
        import pymysql

        return pymysql.connect(
            host=self.host, port=self.port, user=self.user, password=self.password, autocommit=True, **options
        )

    def start_again(self) -> None:
        """The same server (datadir, port) started again after stop()."""
        with open(self.log or os.devnull, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        _wait_for_port(self.process, self.port, self.log)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(base: Path | None = None, password: str = "secret", *, tls=None,  # type: ignore[no-untyped-def]
                 extra_options: tuple[str, ...] = ()) -> MariaDBServer:  # fmt: skip
    """The server, its root without a password (for the tests' own writes) and a replication user
    'repl' with `password`. tls: a CA, certificate and key (tests/tls_certificates.py's TlsFiles)
    for a server that offers TLS; extra_options: more mariadbd options."""
    mariadbd = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
    install_db = shutil.which("mariadb-install-db")
    if mariadbd is None or install_db is None:
        raise ServerUnavailable("mariadbd is not installed (apt-get install mariadb-server)")
    base = Path(tempfile.mkdtemp(prefix="relaydeck-mariadb-")) if base is None else base
    datadir = base / "data"
    install = subprocess.run(
        [install_db, "--no-defaults", "--auth-root-authentication-method=normal", f"--datadir={datadir}",
         "--user=root", "--skip-test-db"],
        capture_output=True, text=True,
    )  # fmt: skip
    if install.returncode != 0:
        raise ServerUnavailable(f"mariadb-install-db failed: {install.stderr.strip()[-500:]}")
    port = _free_port()
    command = (
        mariadbd, "--no-defaults", "--user=root", f"--datadir={datadir}", "--bind-address=127.0.0.1",
        f"--port={port}", f"--socket={base / 'mariadbd.sock'}", f"--pid-file={base / 'mariadbd.pid'}",
        "--log-bin=source-bin", "--binlog-format=ROW", "--server-id=1", "--skip-name-resolve",
        "--innodb-buffer-pool-size=32M", "--character-set-server=utf8mb4",
    )  # fmt: skip
    if tls is not None:
        command += (f"--ssl-ca={tls.ca}", f"--ssl-cert={tls.cert}", f"--ssl-key={tls.key}")
    command += tuple(extra_options)
    with open(base / "mariadbd.err", "wb") as log:  # the server's stderr for its lifetime
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    _wait_for_port(process, port, base / "mariadbd.err")
    server = MariaDBServer(
        "127.0.0.1", port, "root", "", datadir, process, command=command, log=base / "mariadbd.err"
    )
    server.repl_password = password
    server.tls = tls
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER 'repl'@'%%' IDENTIFIED BY %s", (password,))
        cur.execute("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'repl'@'%'")
    return server


def replicate_from(
    replica: MariaDBServer, source: MariaDBServer, *, heartbeat_period: float | None = None
) -> None:
    """Make `replica` a MariaDB replica of `source` from the source's GTID position now (the
    accounts start_server made there, the replica made itself), and START SLAVE."""
    with source.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        at = cur.fetchone()[0]
    heartbeat = "" if heartbeat_period is None else f", MASTER_HEARTBEAT_PERIOD = {heartbeat_period:g}"
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("SET GLOBAL gtid_slave_pos = %s", (at,))
        cur.execute(
            "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = 'repl', "
            f"MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos{heartbeat}",
            (source.host, source.port, source.repl_password),
        )
        cur.execute("START SLAVE")


def _wait_for_port(process: subprocess.Popen, port: int, log: Path | None) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            said = log.read_text()[-800:] if log is not None else ""
            raise ServerUnavailable(f"mariadbd exited: {said}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise ServerUnavailable("mariadbd did not accept connections within 60 s") from None
            time.sleep(0.2)


def server_for_tests(folder, **options):  # type: ignore[no-untyped-def]
    """A started server for a pytest fixture to yield, stopped when the generator closes; the test
    is skipped where no server can run here. options: start_server's."""
    import pytest

    try:
        server = start_server(folder, **options)
    except ServerUnavailable as exc:
        pytest.skip(f"no MariaDB server to replicate from: {exc}")
    try:
        yield server
    finally:
        server.stop()
