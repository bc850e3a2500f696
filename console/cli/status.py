"""`relaydeck status`: SHOW REPLICA STATUS read from the repository (readable while a replay runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError, json_visible

from .common import shown


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser("status", help="SHOW REPLICA STATUS from the repository")
    parser.add_argument("--repository", required=True, metavar="REPO.sqlite")
    parser.add_argument("--channel", default=None, metavar="NAME")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=cmd_status)
    return parser


def cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    """SHOW REPLICA STATUS from the repository (readable while a replay runs)."""
    from engine.api import Repository

    if not Path(args.repository).exists():
        raise RelaydeckError(f"{args.repository}: repository does not exist")
    with Repository(args.repository) as repo:
        rows = repo.status(args.channel)
    if args.channel is not None and not rows:
        from engine.api import channel_does_not_exist

        raise channel_does_not_exist(args.channel)
    if args.json:
        out.write(
            json_visible(json.dumps([r.to_json() for r in rows], ensure_ascii=False, default=str)) + "\n"
        )
        return 0
    for i, row in enumerate(rows, start=1):
        out.write(f"*************************** {i}. row ***************************\n")
        for key, value in row.show_replica_status().items():
            out.write(f"{key:>30}: {shown(value)}\n")
    return 0
