"""relaydeck's commands as a DBA runs them, each a process of its own: the command lines
benchmarks start and time."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path


def relaydeck_command(*arguments: str) -> list[str]:
    """`relaydeck ARGUMENTS…` with this interpreter (run it from the checkout's root)."""
    return [sys.executable, "-m", "console.cli", *arguments]


def replay_command(
    slave: Path, repository: Path, channels: Iterable[str], options: Iterable[str]
) -> list[str]:
    """`relaydeck replay` of the channels (each 'NAME=INDEX_FILE') into slave and repository."""
    return relaydeck_command(
        "replay",
        "--slave",
        str(slave),
        "--repository",
        str(repository),
        *(argument for channel in channels for argument in ("--channel", channel)),
        *options,
    )
