"""`relaydeck sql`: one replication statement, through the running server's control socket, else
in this process."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError, json_visible

from .common import shown


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "sql",
        help="run a replication statement (CHANGE REPLICATION SOURCE, START/STOP/RESET REPLICA, SHOW …, SET GLOBAL)",
    )
    parser.add_argument("statement", metavar="STATEMENT")
    parser.add_argument("--repository", required=True, metavar="REPO.sqlite")
    parser.add_argument(
        "--slave", default=None, metavar="SLAVE.duckdb", help="when no server runs: default, the one recorded"
    )
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    parser.set_defaults(func=cmd_sql)
    return parser


def cmd_sql(args: argparse.Namespace, out: TextIO) -> int:
    """One statement: through the running server's socket, else in this process."""
    from engine.api import CommandError, ReplicaServer, Repository, check_channels, connect, parse_statement

    remote = connect(args.repository) if Path(args.repository).exists() else None
    try:
        if remote is not None:
            result = remote.execute(args.statement)
        else:
            command = parse_statement(args.statement)
            slave = args.slave
            if slave is None:
                with Repository(args.repository) as repo:
                    slave = repo.slave_path()
                    if slave is None:
                        # the statement's own error (an unknown channel: 3074) comes first
                        check_channels(repo, command)
            if slave is None:
                raise RelaydeckError(
                    f"{args.repository}: no slave is recorded for this repository yet; give --slave SLAVE.duckdb"
                )
            # Without a server, START applies what the relay logs hold and returns when done.
            replica = ReplicaServer(slave, args.repository, follow=False)
            try:
                result = replica.execute(command)
                replica.wait()
            finally:
                replica.close()
    except CommandError as exc:
        sys.stderr.write(f"{exc.one_line()}\n")
        return 1
    finally:
        if remote is not None:
            remote.close()
    if args.json:
        out.write(json_visible(json.dumps(result.to_json(), ensure_ascii=False, default=str)) + "\n")
    elif result.columns:
        vertical = len(result.columns) > 8  # SHOW REPLICA STATUS reads best as \\G
        if vertical:
            for i, row in enumerate(result.rows, start=1):
                out.write(f"*************************** {i}. row ***************************\n")
                for key, value in zip(result.columns, row, strict=True):
                    out.write(f"{key:>30}: {shown(value)}\n")
        else:
            out.write("\t".join(result.columns) + "\n")
            for row in result.rows:
                out.write("\t".join(shown(x) for x in row) + "\n")
    for warning in result.warnings:
        sys.stderr.write(f"{warning}\n")
    return 0
