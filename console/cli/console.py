"""`relaydeck console`: the operator console (Textual, console/app.py) over a running serve, a
CONFIG run in this process, or the bundled example. Textual is imported only when it starts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "console",
        help="the operator console: channels, workers, statements, recovery, relay logs (attaches to a running serve)",
    )
    parser.add_argument(
        "config",
        nargs="?",
        metavar="CONFIG.toml",
        help="run this configuration (default: the bundled example)",
    )
    parser.add_argument(
        "--repository", metavar="REPO.sqlite", help="attach to the serve running on this repository"
    )
    parser.add_argument(
        "--slave",
        metavar="SLAVE.duckdb",
        help="with --repository and no serve running: default, the one recorded",
    )
    parser.add_argument(
        "--work",
        default="relaydeck-example",
        metavar="DIR",
        help="where the bundled example writes (no CONFIG)",
    )
    parser.add_argument(
        "--lag-warn", type=float, default=5.0, metavar="SECONDS", help="lag shown yellow from here"
    )
    parser.add_argument(
        "--lag-crit", type=float, default=30.0, metavar="SECONDS", help="lag shown red from here"
    )
    parser.add_argument("--light", action="store_true", help="start in the light theme (d switches)")
    parser.set_defaults(func=cmd_console)
    return parser


def cmd_console(args: argparse.Namespace, out: TextIO) -> int:
    """The operator console (Textual) over a running serve, a CONFIG run here, or the bundled example."""
    from console.app import ConsoleApp
    from console.session import open_config, open_example, open_repository
    from console.thresholds import LagThresholds

    try:
        thresholds = LagThresholds(args.lag_warn, args.lag_crit)
    except ValueError as exc:
        raise RelaydeckError(f"--lag-warn/--lag-crit: {exc}") from None
    if args.repository and args.config:
        raise RelaydeckError("give CONFIG or --repository, not both")
    if args.repository:
        session = open_repository(Path(args.repository), Path(args.slave) if args.slave else None)
    elif args.config:
        session = open_config(Path(args.config))
    else:
        session = open_example(Path(args.work))
    try:
        app = ConsoleApp(
            session.replica, source=session.description, thresholds=thresholds, notes=session.notes
        )
        if args.light:
            app.theme = "textual-light"
        app.run()
    finally:
        session.close()
    return 0
