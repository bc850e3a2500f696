"""Shared paths to the real relay logs the tests read."""

from __future__ import annotations

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
