"""`--channel NAME=INDEX_FILE`, as `replay` and `analyze` take it."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_channel_option(parser: argparse.ArgumentParser, repeat: str) -> None:
    """The option, repeatable (`repeat` says what for)."""
    parser.add_argument(
        "--channel",
        action="append",
        required=True,
        metavar="NAME=INDEX_FILE",
        help=f"a channel and its relay-log index ({repeat}); a bare INDEX_FILE is the default channel",
    )


def channel_and_index(text: str) -> tuple[str, Path]:
    """(channel name, index file) of one --channel value."""
    name, sep, index = text.partition("=")
    if not sep:
        name, index = "", text  # a bare index file is the default channel ''
    return name, Path(index)
