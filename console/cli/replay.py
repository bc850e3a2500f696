"""`relaydeck replay`: apply every channel's relay logs to the slave, then exit (or follow them).

Its options are the applier's variables as MySQL names them (replica_parallel_workers, …); they
are checked here and turned into the engine's types, whose modules are imported only when a
replay runs.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError

from .channel_option import add_channel_option, channel_and_index
from .common import stop_on_sigterm

DEFAULT_WORKERS = 4  # replaying to the end of the logs: MySQL 8.0.27's replica_parallel_workers


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "replay", help="apply relay logs to a DuckDB slave (exits at the end of the logs)"
    )
    parser.add_argument("--slave", required=True, metavar="SLAVE.duckdb")
    parser.add_argument("--repository", required=True, metavar="REPO.sqlite")
    add_channel_option(parser, "repeat for fan-in")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="replica_parallel_workers (default 4, as MySQL 8.0.27, fed by the preparing stage; with "
        "--follow 0, the single applier, which lags less behind a live source)",
    )
    parser.add_argument(
        "--parallel-type",
        choices=("database", "logical_clock", "writeset"),
        default="writeset",
        help="replica_parallel_type: how the coordinator finds independent transactions (default writeset)",
    )
    parser.add_argument(
        "--preserve-commit-order",
        choices=("on", "off"),
        default="on",
        help="replica_preserve_commit_order: commit in source order (default on)",
    )
    parser.add_argument(
        "--pending-jobs-size-max",
        type=int,
        default=128 * 1024 * 1024,
        metavar="BYTES",
        help="replica_pending_jobs_size_max: bytes of transactions queued to workers; for the single "
        "applier, relay-log bytes read and not yet committed (default 128M)",
    )
    parser.add_argument(
        "--checkpoint-group",
        type=int,
        default=512,
        metavar="N",
        help="replica_checkpoint_group: checkpoint at least every N transactions (default 512)",
    )
    parser.add_argument(
        "--checkpoint-period",
        type=int,
        default=300,
        metavar="MS",
        help="replica_checkpoint_period: checkpoint at least every MS milliseconds (default 300)",
    )
    parser.add_argument(
        "--skip-counter",
        type=int,
        default=0,
        metavar="N",
        help="sql_replica_skip_counter: skip N events first (whole transactions; a gap in the relay logs counts as one)",
    )
    parser.add_argument(
        "--sql-delay",
        type=int,
        default=0,
        metavar="SECONDS",
        help="SOURCE_DELAY: apply each transaction only this long after the source committed it",
    )
    parser.add_argument(
        "--until-gtid", metavar="SET", help="stop once every GTID of SET is applied (SQL_AFTER_GTIDS)"
    )
    parser.add_argument(
        "--until-pos", metavar="FILE:POS", help="stop at this relay-log or source-log position"
    )
    parser.add_argument(
        "--group-size",
        type=int,
        default=None,
        metavar="N",
        help="commit at most N source transactions per DuckDB transaction (default 20000)",
    )
    parser.add_argument(
        "--schedule",
        default=None,
        metavar="FILE",
        help="WRITESET dependencies from `relaydeck analyze --schedule-out` (a replay from the start)",
    )
    parser.add_argument(
        "--pool",
        choices=("processes", "spark", "threads"),
        default=None,
        help="where the relay log is read, decoded and prepared for the --workers: processes (default, "
        "one per core), spark (Spark tasks; --spark-master for a cluster) or threads (the coordinator's "
        "own thread, for tiny logs)",
    )
    parser.add_argument(
        "--spark-master", default=None, metavar="URL", help="a Spark cluster (default: local mode)"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep applying as the relay logs grow (events appended, files added) until SIGTERM or Ctrl-C",
    )
    parser.set_defaults(func=cmd_replay)
    return parser


def cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    """Apply every channel's relay logs to the slave, then exit."""
    from engine.api import ChannelSpec, Replay

    specs = [ChannelSpec(*channel_and_index(c)) for c in args.channel]
    parallel = _parallel_options(args)
    schedules = _schedules(args, specs, parallel)
    show_bar = out is sys.stdout and sys.stdout.isatty()
    bar = _ProgressBar(specs) if show_bar else None
    replay = Replay(
        args.slave,
        args.repository,
        specs,
        until=_until(args),
        limits=batch_limits(args),
        on_tick=bar.update if bar else None,
        parallel=parallel,
        controls=_controls(args),
        follow=args.follow,
        schedules=schedules,
    )
    previous = stop_on_sigterm(replay.stop)
    try:
        outcomes = replay.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if bar is not None:
            bar.close()
    failed = False
    for outcome in outcomes:
        label = f"'{outcome.name}'"
        if outcome.error is not None:
            failed = True
            sys.stderr.write(f"relaydeck: {outcome.error.one_line()}\n")
        elif outcome.stats is not None:
            s = outcome.stats
            elapsed = max(1e-9, time.monotonic() - s.started)
            out.write(
                f"channel {label}: {s.transactions} transactions applied ({s.skipped} already applied"
                f"{f', {s.skipped_by_counter} skipped by the skip counter' if s.skipped_by_counter else ''}"
                f"{f', {s.gaps_accepted} relay-log gap(s) let past by the skip counter' if s.gaps_accepted else ''}), "
                f"{s.row_changes} row changes, {s.bytes / 1e6:.1f} MB in {elapsed:.2f} s "
                f"({s.transactions / elapsed:.0f} trx/s); stopped by {s.stopped_by}\n"
            )
    return 1 if failed else 0


def _until(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.api import Until, gtid_set_text

    if args.until_gtid and args.until_pos:
        raise RelaydeckError("give --until-gtid or --until-pos, not both")
    if args.until_gtid:
        try:
            return Until(after_gtids=gtid_set_text(args.until_gtid))
        except ValueError as exc:
            raise RelaydeckError(f"--until-gtid: {exc}") from None
    if args.until_pos:
        file, sep, pos = args.until_pos.rpartition(":")
        if not sep or not pos.isdigit():
            raise RelaydeckError("--until-pos takes FILE:POS")
        return Until(log_file=Path(file).name, log_pos=int(pos))
    return None


def _controls(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.api import StartControls

    try:
        return StartControls(skip_counter=args.skip_counter, sql_delay=args.sql_delay)
    except ValueError as exc:
        raise RelaydeckError(str(exc)) from None


def batch_limits(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The single applier's BatchLimits from --group-size and --pending-jobs-size-max."""
    from engine.api import VARIABLES, BatchLimits

    if args.group_size is not None and args.group_size < 1:
        raise RelaydeckError("--group-size must be at least 1")
    least = VARIABLES["replica_pending_jobs_size_max"].minimum
    if args.pending_jobs_size_max < least:
        raise RelaydeckError(f"--pending-jobs-size-max (replica_pending_jobs_size_max) is at least {least}")
    defaults = BatchLimits()
    return BatchLimits(
        transactions=defaults.transactions if args.group_size is None else args.group_size,
        bytes=args.pending_jobs_size_max,
    )


def _parallel_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.api import ParallelOptions

    workers = args.workers
    if workers is None:
        # the fastest for each: to the end of the logs the workers, fed by the preparing stage;
        # following, the single applier (see engine/replica/variables.py)
        workers = 0 if args.follow else DEFAULT_WORKERS
    if not 0 <= workers <= 1024:
        raise RelaydeckError("--workers (replica_parallel_workers) is 0 to 1024")
    if workers == 0:
        if args.pool is not None:
            raise RelaydeckError(f"--pool {args.pool} prepares for workers: give --workers N (1 or more)")
        return None
    try:
        return ParallelOptions(
            workers=workers,
            parallel_type=args.parallel_type,
            preserve_commit_order=args.preserve_commit_order == "on",
            pending_jobs_size_max=args.pending_jobs_size_max,
            checkpoint_group=args.checkpoint_group,
            checkpoint_period_ms=args.checkpoint_period,
            pool=args.pool or "processes",
            spark_master=args.spark_master,
        )
    except ValueError as exc:
        raise RelaydeckError(str(exc)) from None


def _schedules(args: argparse.Namespace, specs, parallel) -> dict[str, tuple[int, ...]] | None:  # type: ignore[no-untyped-def]
    """--schedule: each channel's WRITESET after-ordinals from `relaydeck analyze --schedule-out`."""
    if args.schedule is None:
        return None
    if parallel is None or parallel.parallel_type != "writeset":
        raise RelaydeckError(
            "--schedule is a WRITESET schedule: give --workers N and --parallel-type writeset"
        )
    try:
        document = json.loads(Path(args.schedule).read_text())
        channels = document["channels"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RelaydeckError(f"{args.schedule}: not a schedule from relaydeck analyze ({exc})") from None
    schedules = {}
    for spec in specs:
        entry = channels.get(spec.name)
        if entry is None:
            raise RelaydeckError(f"{args.schedule}: no schedule for channel '{spec.name}'")
        if Path(entry["index_file"]).resolve() != Path(spec.index_file).resolve():
            raise RelaydeckError(
                f"{args.schedule}: channel '{spec.name}' was analysed from {entry['index_file']}, not {spec.index_file}"
            )
        schedules[spec.name] = tuple(int(a) for a in entry["after"])
    return schedules


class _ProgressBar:
    """Rich progress on a terminal: bytes and transactions per channel, trx/s, ETA."""

    def __init__(self, specs) -> None:  # type: ignore[no-untyped-def]
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[trx]} trx  {task.fields[rate]} trx/s"),
            TimeRemainingColumn(),
        )
        self.tasks = {
            s.name: self.progress.add_task(f"channel '{s.name}'", total=None, trx=0, rate=0) for s in specs
        }
        self.progress.start()

    def update(self, live) -> None:  # type: ignore[no-untyped-def]
        for name, state in live.items():
            elapsed = max(1e-6, time.monotonic() - state.started)
            self.progress.update(
                self.tasks[name],
                total=state.total_bytes,
                completed=state.bytes_done,
                trx=state.transactions,
                rate=f"{state.transactions / elapsed:.0f}",
            )

    def close(self) -> None:
        self.progress.stop()
