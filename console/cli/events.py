"""`relaydeck events`: the events of relay logs listed as SHOW RELAYLOG EVENTS lists them.

Imports engine/listing and the index reader when it runs, not when the command line is built.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TextIO

BUNDLED_RELAY_LOG = (
    Path(__file__).resolve().parent.parent.parent / "fixtures" / "mariadb-10.11-multisource" / "relay"
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser("events", help="list relay-log events (SHOW RELAYLOG EVENTS)")
    parser.add_argument(
        "inputs", nargs="*", metavar="FILE_OR_INDEX", help="relay/binlog files or .index files"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--rows", action="store_true", help="decode row images (like mysqlbinlog -v)")
    parser.add_argument(
        "--from-pos", type=int, default=4, metavar="N", help="start at this position of the first file"
    )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="show at most N events")
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=os.cpu_count() or 1,
        metavar="N",
        help="decode with N processes (default: the core count; 1: in this process)",
    )
    parser.set_defaults(func=cmd_events)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("1 or more")
    return value


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    """SHOW RELAYLOG EVENTS over files or index files (none given: the bundled capture's channel m2)."""
    from engine.api import ListingOptions, list_events, resolve_inputs

    inputs = args.inputs or [str(BUNDLED_RELAY_LOG / "relay-bin-m2.index")]
    list_events(
        resolve_inputs(inputs),
        args.from_pos,
        ListingOptions(as_json=args.json, rows=args.rows),
        out.write,
        limit=args.limit,
        jobs=args.jobs,
    )
    return 0
