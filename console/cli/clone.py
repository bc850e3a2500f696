"""`relaydeck clone`: copy a live source's tables into the slave in one consistent snapshot and
position the channel there, for a source whose binary logs no longer reach back to its beginning.

    relaydeck clone CONFIG.toml [--channel NAME]                  # the channel `serve` runs
    relaydeck clone --slave S --repository R --channel NAME       # a channel configured by CHANGE
                    [--source-host H --source-port P --source-user U]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError, visible

PASSWORD_ENVIRONMENT = "RELAYDECK_SOURCE_PASSWORD"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "clone",
        help="copy a live source's tables into the slave (one consistent snapshot) and start the channel there",
        description="Reads every table of the source in one consistent snapshot (START TRANSACTION WITH "
        "CONSISTENT SNAPSHOT) together with the binary-log position and GTIDs of that snapshot, creates "
        "the tables in the slave as replay creates them, copies the rows column-wise, and records the "
        "position as the channel's: the next `relaydeck serve` or START REPLICA replicates from exactly "
        "there. The source account needs SELECT (and SHOW VIEW) on every database; on MySQL also RELOAD.",
    )
    parser.add_argument(
        "config", nargs="?", metavar="CONFIG.toml", help="the configuration `relaydeck serve` reads"
    )
    parser.add_argument(
        "--channel", default=None, metavar="NAME", help="the channel (with one channel: optional)"
    )
    parser.add_argument("--slave", default=None, metavar="SLAVE.duckdb", help="without CONFIG")
    parser.add_argument("--repository", default=None, metavar="REPO.sqlite", help="without CONFIG")
    parser.add_argument("--source-host", default=None, metavar="H", help="default: the channel's SOURCE_HOST")
    parser.add_argument("--source-port", type=int, default=None, metavar="P", help="default: SOURCE_PORT")
    parser.add_argument(
        "--source-user", default=None, metavar="U", help="default: SOURCE_USER (an account with SELECT)"
    )
    parser.add_argument(
        "--source-password",
        default=None,
        metavar="PW",
        help=f"default: the environment variable {PASSWORD_ENVIRONMENT}, else SOURCE_PASSWORD",
    )
    parser.set_defaults(func=cmd_clone)
    return parser


def cmd_clone(args: argparse.Namespace, out: TextIO) -> int:
    # imported here: the other commands need neither PyMySQL nor the DDL translator
    from engine.api import ReplicaServer, SourceAccount, apply_config, clone_channel, load_config

    if args.config and (args.slave or args.repository):
        raise RelaydeckError("give CONFIG.toml, or --slave and --repository, not both")
    config = None
    if args.config:
        config = load_config(args.config)
        slave, repository = config.slave, config.repository
        channel = _configured_channel(args.channel, [c.channel or "" for c in config.channels], args.config)
        slave.parent.mkdir(parents=True, exist_ok=True)
        repository.parent.mkdir(parents=True, exist_ok=True)
    else:
        if not args.slave or not args.repository or args.channel is None:
            raise RelaydeckError("give CONFIG.toml, or --slave, --repository and --channel")
        slave, repository, channel = Path(args.slave), Path(args.repository), args.channel
    replica = ReplicaServer(slave, repository, follow=False)
    try:
        if config is not None:
            for warning in apply_config(replica, config, start=False):
                sys.stderr.write(f"{warning}\n")
        found = replica.repository.find_channel(channel)
        mi = (replica.repository.master_info(found) or {}) if found is not None else {}
        channel = found if found is not None else channel
        account = SourceAccount(
            args.source_host or mi.get("Host") or "",
            args.source_port or mi.get("Port") or 3306,
            args.source_user or mi.get("User_name") or "",
            _password(args, mi),
        )
        if not account.host or not account.user:
            raise RelaydeckError(
                f"channel '{visible(channel)}' names no source: give --source-host and --source-user, or "
                "CHANGE REPLICATION SOURCE TO SOURCE_HOST = …, SOURCE_USER = … first"
            )

        def copied(database: str, table: str, rows: int) -> None:
            out.write(f"  `{visible(database)}`.`{visible(table)}`: {rows} rows\n")
            out.flush()

        out.write(
            f"relaydeck clone: channel '{visible(channel)}' from {visible(account.where)} into {slave}\n"
        )
        out.flush()
        result = clone_channel(replica.slave, replica.repository, channel, account, on_table=copied)
    finally:
        replica.close()
    for warning in result.warnings:
        sys.stderr.write(f"relaydeck clone: {visible(warning)}\n")
    gtids = f", GTID position {result.position.gtids}" if result.position.gtids else ""
    out.write(
        f"channel '{visible(channel)}': {result.tables} tables, {result.rows} rows copied in "
        f"{result.seconds:.1f} s; it replicates from {result.position.file}:{result.position.pos}{gtids} "
        "(relaydeck serve, or START REPLICA)\n"
    )
    return 0


def _configured_channel(given: str | None, channels: list[str], config: str) -> str:
    if given is not None:
        if given.lower() not in [c.lower() for c in channels]:
            raise RelaydeckError(f"{config}: there is no [channels.{given}]")
        return given
    if len(channels) != 1:
        raise RelaydeckError(f"{config} has {len(channels)} channels: give --channel NAME")
    return channels[0]


def _password(args: argparse.Namespace, master_info: dict) -> str:
    if args.source_password is not None:
        return args.source_password
    if PASSWORD_ENVIRONMENT in os.environ:
        return os.environ[PASSWORD_ENVIRONMENT]
    if args.source_user and args.source_user != master_info.get("User_name"):
        return ""  # the channel's password is its SOURCE_USER's
    return master_info.get("User_password") or ""
