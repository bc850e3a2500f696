"""`relaydeck serve`: configure the channels of a configuration file, start them, and serve the
control socket until SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TextIO

from .common import stop_on_sigterm


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "serve",
        help="run the channels of a configuration file, following their relay logs, until SIGTERM",
    )
    parser.add_argument("config", nargs="?", metavar="CONFIG.toml", help="default: the bundled example")
    parser.add_argument(
        "--work",
        default="relaydeck-example",
        metavar="DIR",
        help="where the bundled example writes (no CONFIG)",
    )
    parser.add_argument(
        "--skip-replica-start", action="store_true", help="configure the channels but do not START them"
    )
    parser.add_argument(
        "--no-follow", action="store_true", help="stop each channel at the end of its relay logs"
    )
    parser.set_defaults(func=cmd_serve)
    return parser


def report_new_errors(statuses: list, reported: dict[tuple[str, str], tuple[int, str]], err: TextIO) -> None:
    """A line on stderr for each IO or SQL error a channel records, once (as MySQL's error log
    has it): a channel that stopped is seen where serve runs, not only by whoever asks status."""
    from engine.api import visible

    for status in statuses:
        for thread, errno, message, when in (
            ("IO", status.last_io_error_number, status.last_io_error_message, status.last_io_error_timestamp),
            ("SQL", status.last_error_number, status.last_error_message, status.last_error_timestamp),
        ):
            key = (status.channel_name, thread)
            if not errno or reported.get(key) == (errno, when):
                continue
            reported[key] = (errno, when)
            err.write(
                f"relaydeck serve: channel '{visible(status.channel_name)}': {thread} thread error "
                f"{errno}: {visible(message)}\n"
            )
            err.flush()


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Configure the channels from CONFIG (CHANGE … / SET GLOBAL), START them, serve the socket."""
    from engine.api import (
        ControlSocket,
        ReplicaServer,
        Repository,
        apply_config,
        bundled_example,
        load_config,
    )

    config = load_config(args.config) if args.config else bundled_example(Path(args.work))
    config.slave.parent.mkdir(parents=True, exist_ok=True)
    config.repository.parent.mkdir(parents=True, exist_ok=True)
    replica = ReplicaServer(
        config.slave,
        config.repository,
        follow=not args.no_follow,
        pool=config.worker_pool,
        spark_master=config.spark_master,
    )
    control = None
    stop = threading.Event()
    previous = stop_on_sigterm(stop)
    try:
        control = ControlSocket(replica)
        for warning in apply_config(replica, config, start=not args.skip_replica_start):
            sys.stderr.write(f"{warning}\n")
        out.write(
            f"relaydeck serve: pid {os.getpid()}, slave {config.slave}, repository "
            f"{config.repository}, control socket {control.path}\n"
        )
        out.flush()
        reported: dict[tuple[str, str], tuple[int, str]] = {}
        while not stop.wait(0.5):
            report_new_errors(replica.status(), reported, sys.stderr)
            if args.no_follow and not any(replica.running(c) for c in replica.repository.channels()):
                break
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if control is not None:
            control.close()
        replica.close()
    failed = False
    with Repository(config.repository) as repo:
        for status in repo.status():
            if status.last_error_number:
                failed = True
                sys.stderr.write(f"relaydeck: channel '{status.channel_name}': {status.last_error_message}\n")
    out.write("relaydeck serve: stopped\n")
    return 1 if failed else 0
