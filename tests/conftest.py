"""Shared paths to the real relay logs the tests read, and helpers several test modules use."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MULTISOURCE = FIXTURES / "mariadb-10.11-multisource"
PUBLIC = FIXTURES / "public-binlogs"


@pytest.fixture(scope="session")
def multisource() -> Path:
    return MULTISOURCE


def replay_argv(slave: Path, repo: Path, channel: str, *options: str) -> list[str]:
    """`relaydeck replay` as a DBA types it, for subprocess tests (channel: 'NAME=INDEX_FILE')."""
    import sys

    command = [
        sys.executable,
        "-m",
        "console.cli",
        "replay",
        "--slave",
        str(slave),
        "--repository",
        str(repo),
    ]
    return [*command, "--channel", channel, *options]


@pytest.fixture(scope="session")
def mariadb_source(tmp_path_factory):
    """A live MariaDB server with ROW binary logs, for the session (stopped at its end)."""
    from tests.mariadb_server import server_for_tests

    yield from server_for_tests(tmp_path_factory.mktemp("mariadb"))


def kill_once_wal_grew(command: list[str], wal: str, grown: int) -> None:
    """Run the command and SIGKILL it once the slave's write-ahead log is `grown` bytes larger
    than the smallest it was seen at in this run (a restart replays the log a kill left, and
    DuckDB may checkpoint it away before writing more)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    smallest = None
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        size = os.stat(wal).st_size if os.path.exists(wal) else 0
        smallest = size if smallest is None else min(smallest, size)
        if size >= smallest + grown:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the replay ended before the kill: " + (
        proc.stderr.read().decode() if proc.stderr else ""
    )
