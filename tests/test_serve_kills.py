"""`relaydeck serve` replicating a live MariaDB under sysbench, SIGKILLed at random moments: every
restart goes on by itself (no statement typed), and the tables end exactly as the source's.

The receiver records its position a few times a second, and the applier follows the relay bytes
as soon as they are flushed, so a kill usually lands with whole transactions applied past the
receiver's recording. A restart that cut the relay log back to that recording stopped the applier
(1594, "file shrank …") or read a hole of zeros; this test kills often enough to land there.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .test_live import relaydeck, start_serve
from .test_receiver import slave_rows, source_rows

TABLES = 2
ROWS = 500
KILLS = 5


def sysbench(server, *args: str) -> list[str]:
    return [
        "sysbench", "--db-driver=mysql", f"--mysql-host={server.host}", f"--mysql-port={server.port}",
        f"--mysql-user={server.user}", "--mysql-db=killed", f"--tables={TABLES}", f"--table-size={ROWS}", *args,
    ]  # fmt: skip


def live_status(repo: Path, channel: str = "live") -> dict:
    rows = json.loads(relaydeck("status", "--repository", str(repo), "--json").stdout or "[]")
    return next((r for r in rows if r["channel_name"] == channel), {})


def source_gtid(server) -> str:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        return cur.fetchone()[0]


@pytest.mark.parametrize("workers", [0, 4])
def test_serve_killed_under_sysbench_resumes_by_itself_to_the_exact_tables(tmp_path, workers):
    from tests.mariadb_server import server_for_tests

    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (apt-get install sysbench; ./dev.sh test installs it)")
    servers = server_for_tests(tmp_path / "source")
    server = next(servers)
    try:
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE killed")
        subprocess.run(sysbench(server, "oltp_write_only", "prepare"), check=True, capture_output=True)
        config = tmp_path / "serve.toml"
        config.write_text(
            f"""
slave = "data/slave.duckdb"
repository = "data/repository.sqlite"

[variables]
replica_parallel_workers = {workers}

[channels.live]
relay_log = "relay/relay-bin"
source_host = "{server.host}"
source_port = {server.port}
source_user = "repl"
source_password = "{server.repl_password}"
source_use_gtid = "slave_pos"
source_connect_retry = 1
"""
        )
        repo = tmp_path / "data" / "repository.sqlite"
        load = subprocess.Popen(
            sysbench(server, "--threads=4", "--rate=400", "--time=600", "oltp_write_only", "run"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rng = random.Random(os.getpid())
        try:
            for kill in range(KILLS):
                serve = start_serve(config)
                try:
                    before = live_status(repo).get("transactions_applied", 0)
                    deadline = time.monotonic() + 120
                    # each run applies something of its own before it dies, at a random moment
                    while (status := live_status(repo)).get("transactions_applied", 0) <= before:
                        assert status.get("last_error_number", 0) == 0, (kill, status["last_error_message"])
                        assert time.monotonic() < deadline, status
                        assert serve.poll() is None, serve.stderr.read()  # type: ignore[union-attr]
                        time.sleep(0.1)
                    time.sleep(rng.uniform(0.0, 1.5))
                finally:
                    os.kill(serve.pid, signal.SIGKILL)
                    serve.wait(30)
                status = live_status(repo)
                assert status["last_error_number"] == 0, (kill, status["last_error_message"])
                assert status["last_io_error_number"] == 0, (kill, status["last_io_error_message"])
        finally:
            load.terminate()
            load.wait(60)
        target = source_gtid(server)
        serve = start_serve(config)
        try:
            deadline = time.monotonic() + 180
            while (status := live_status(repo)).get("executed_gtid_set") != target:
                assert status.get("last_error_number", 0) == 0, status["last_error_message"]
                assert time.monotonic() < deadline, (target, status)
                time.sleep(0.2)
            assert status["retrieved_gtid_set"] == target
        finally:
            serve.send_signal(signal.SIGTERM)
            assert serve.wait(120) == 0, serve.stderr.read()  # type: ignore[union-attr]
        for n in range(1, TABLES + 1):
            rows = source_rows(server, "killed", f"sbtest{n}")
            assert rows, "the load wrote nothing"
            assert slave_rows(tmp_path / "data" / "slave.duckdb", "killed", f"sbtest{n}") == rows
    finally:
        servers.close()


def test_serve_says_on_stderr_when_a_channel_stops_on_an_error(tmp_path):
    """An IO or SQL error is seen where serve runs (once), not only by whoever asks status."""
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "serve.toml"
    config.write_text(
        f"""
slave = "data/slave.duckdb"
repository = "data/repository.sqlite"

[channels.gone]
relay_log = "relay/relay-bin"
source_host = "127.0.0.1"
source_port = {port}
source_user = "repl"
source_password = "x"
source_connect_retry = 1
source_retry_count = 1
"""
    )
    serve = start_serve(config)
    try:
        deadline = time.monotonic() + 60
        while (
            live_status(tmp_path / "data" / "repository.sqlite", "gone").get("last_io_error_number", 0) == 0
        ):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.5)  # the loop that reports it looks twice a second
    finally:
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate(timeout=120)
    lines = [line for line in err.splitlines() if "IO thread error 2003" in line]
    assert len(lines) == 1, err
    assert "channel 'gone'" in lines[0] and "password" not in lines[0].lower()
