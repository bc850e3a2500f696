"""The `relaydeck` command line: thin argument handling over the engine's API."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from console.channel_option import add_channel_option, channel_and_index
from engine.errors import RelaydeckError
from engine.gc_tuning import relax_garbage_collector
from engine.listing import ListingOptions, list_events
from engine.relaylog.index import resolve_inputs
from engine.render import json_visible, visible

BUNDLED_RELAY_LOG = (
    Path(__file__).resolve().parent.parent / "fixtures" / "mariadb-10.11-multisource" / "relay"
)


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    """SHOW RELAYLOG EVENTS over files or index files."""
    list_events(
        resolve_inputs(args.inputs),
        args.from_pos,
        ListingOptions(as_json=args.json, rows=args.rows),
        out.write,
        limit=args.limit,
        jobs=args.jobs,
    )
    return 0


def cmd_generate(args: argparse.Namespace, out: TextIO) -> int:
    from engine.generate import WORKLOADS, generate

    if args.workload not in WORKLOADS:
        raise RelaydeckError(f"unknown workload {args.workload!r}; choose one of {', '.join(WORKLOADS)}")
    summary = generate(args.workload, args.seed, Path(args.out), args.size)
    out.write(
        f"{summary.workload}: {summary.transactions} transactions, {summary.events} events, "
        f"{summary.bytes / 1e6:.1f} MB in {len(summary.relay_files)} relay log files; "
        f"index {summary.index_file}\n"
    )
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("1 or more")
    return value


def _until(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.applier.vocabulary import Until, gtid_set_text

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
    from engine.applier.controls import StartControls

    try:
        return StartControls(skip_counter=args.skip_counter, sql_delay=args.sql_delay)
    except ValueError as exc:
        raise RelaydeckError(str(exc)) from None


def _limits(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from engine.applier.vocabulary import BatchLimits
    from engine.replica.variables import VARIABLES

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
    from engine.applier.vocabulary import ParallelOptions

    if not 0 <= args.workers <= 1024:
        raise RelaydeckError("--workers (replica_parallel_workers) is 0 to 1024")
    if args.workers == 0:
        if args.pool is not None:
            raise RelaydeckError(f"--pool {args.pool} prepares for workers: give --workers N (1 or more)")
        return None
    try:
        return ParallelOptions(
            workers=args.workers,
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


def cmd_replay(args: argparse.Namespace, out: TextIO) -> int:
    """Apply every channel's relay logs to the slave, then exit."""
    from engine.replay import ChannelSpec, Replay

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
        limits=_limits(args),
        on_tick=bar.update if bar else None,
        parallel=parallel,
        controls=_controls(args),
        follow=args.follow,
        schedules=schedules,
    )
    previous = _stop_on_sigterm(replay.stop)
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
            elapsed = max(1e-9, __import__("time").monotonic() - s.started)
            out.write(
                f"channel {label}: {s.transactions} transactions applied ({s.skipped} already applied"
                f"{f', {s.skipped_by_counter} skipped by the skip counter' if s.skipped_by_counter else ''}"
                f"{f', {s.gaps_accepted} relay-log gap(s) let past by the skip counter' if s.gaps_accepted else ''}), "
                f"{s.row_changes} row changes, {s.bytes / 1e6:.1f} MB in {elapsed:.2f} s "
                f"({s.transactions / elapsed:.0f} trx/s); stopped by {s.stopped_by}\n"
            )
    return 1 if failed else 0


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
        import time

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


def _stop_on_sigterm(stop) -> object:  # type: ignore[no-untyped-def]
    """SIGTERM means STOP: finish what is assigned, checkpoint, exit cleanly."""

    def handler(signum: int, frame: object) -> None:
        stop.set()

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (tests call main() from threads)
        return signal.getsignal(signal.SIGTERM)


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Configure the channels from CONFIG (CHANGE … / SET GLOBAL), START them, serve the socket."""
    import threading

    from engine.replica.config import apply_config, bundled_example, load_config
    from engine.replica.control import ControlSocket
    from engine.replica.server import ReplicaServer

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
    previous = _stop_on_sigterm(stop)
    try:
        control = ControlSocket(replica)
        for warning in apply_config(replica, config, start=not args.skip_replica_start):
            sys.stderr.write(f"{warning}\n")
        out.write(
            f"relaydeck serve: pid {__import__('os').getpid()}, slave {config.slave}, repository "
            f"{config.repository}, control socket {control.path}\n"
        )
        out.flush()
        while not stop.wait(0.5):
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
    with __import__("engine.repository", fromlist=["Repository"]).Repository(config.repository) as repo:
        for status in repo.status():
            if status.last_error_number:
                failed = True
                sys.stderr.write(f"relaydeck: channel '{status.channel_name}': {status.last_error_message}\n")
    out.write("relaydeck serve: stopped\n")
    return 1 if failed else 0


def _print_warnings(result) -> None:  # type: ignore[no-untyped-def]
    for warning in result.warnings:
        sys.stderr.write(f"{warning}\n")


def cmd_sql(args: argparse.Namespace, out: TextIO) -> int:
    """One statement: through the running server's socket, else in this process."""
    from engine.replica.commands import parse_statement
    from engine.replica.control import connect
    from engine.replica.errors import CommandError
    from engine.replica.server import ReplicaServer, check_channels
    from engine.repository import Repository

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
                    out.write(f"{key:>30}: {_shown(value)}\n")
        else:
            out.write("\t".join(result.columns) + "\n")
            for row in result.rows:
                out.write("\t".join(_shown(x) for x in row) + "\n")
    _print_warnings(result)
    return 0


def _shown(value: object) -> str:
    """A result value as text: names and statements from a log print their control characters
    escaped, never as terminal escape sequences."""
    return "" if value is None else visible(str(value))


def cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    """SHOW REPLICA STATUS from the repository (readable while a replay runs)."""
    from engine.repository import Repository

    if not Path(args.repository).exists():
        raise RelaydeckError(f"{args.repository}: repository does not exist")
    with Repository(args.repository) as repo:
        rows = repo.status(args.channel)
    if args.channel is not None and not rows:
        from engine.replica.errors import channel_does_not_exist

        raise channel_does_not_exist(args.channel)
    if args.json:
        out.write(
            json_visible(json.dumps([r.to_json() for r in rows], ensure_ascii=False, default=str)) + "\n"
        )
        return 0
    for i, row in enumerate(rows, start=1):
        out.write(f"*************************** {i}. row ***************************\n")
        for key, value in row.show_replica_status().items():
            out.write(f"{key:>30}: {_shown(value)}\n")
    return 0


def cmd_recovery(args: argparse.Namespace, out: TextIO) -> int:
    """The recovery picture after a parallel applier stopped: LWM, worker checkpoints, gaps, plan."""
    from engine.applier.recovery import inspect_recovery

    pictures = inspect_recovery(args.slave, args.repository, args.channel)
    if args.json:
        out.write(json_visible(json.dumps([p.to_json() for p in pictures], ensure_ascii=False)) + "\n")
        return 0
    lines: list[str] = []
    for picture in pictures:
        lines.append(f"channel '{picture.channel}'")
        lwm = f"  low-water mark: #{picture.lwm} at relay log {picture.lwm_relay_position or '(start)'}"
        lines.append(lwm + (f", source {picture.lwm_source_position}" if picture.lwm_source_position else ""))
        lines.append(f"  committed after it: {picture.committed_after_lwm}; gaps: {len(picture.gaps)}")
        for w in picture.workers:
            lines.append(
                f"  worker {w.worker}: last {w.relay_log}, checkpoint {w.checkpoint_relay_log}, "
                f"seqno {w.checkpoint_seqno}/{w.checkpoint_group_size}, bitmap {w.bitmap or '-'}"
            )
        for g in picture.groups:
            who = "GAP" if g.is_gap else f"committed by worker {g.committed_by}"
            lines.append(f"  #{g.ordinal} {g.transaction} at {g.relay_start}: {who}")
        if picture.problem:
            lines.append(f"  problem: {picture.problem}")
        lines.extend(f"  plan: {step}" for step in picture.plan)
    # channel names, file names and transactions come from logs: print them escaped
    out.writelines(visible(line) + "\n" for line in lines)
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="relaydeck", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    events = sub.add_parser("events", help="list relay-log events (SHOW RELAYLOG EVENTS)")
    events.add_argument(
        "inputs", nargs="*", metavar="FILE_OR_INDEX", help="relay/binlog files or .index files"
    )
    events.add_argument("--json", action="store_true", help="one JSON object per line")
    events.add_argument("--rows", action="store_true", help="decode row images (like mysqlbinlog -v)")
    events.add_argument(
        "--from-pos", type=int, default=4, metavar="N", help="start at this position of the first file"
    )
    events.add_argument("--limit", type=int, default=None, metavar="N", help="show at most N events")
    events.add_argument(
        "--jobs",
        type=_positive,
        default=os.cpu_count() or 1,
        metavar="N",
        help="decode with N processes (default: the core count; 1: in this process)",
    )
    events.set_defaults(func=cmd_events)

    gen = sub.add_parser(
        "generate", help="write a deterministic workload as MySQL 8.0 relay logs + expected tables"
    )
    gen.add_argument(
        "--workload",
        required=True,
        metavar="NAME",
        help="oltp, hot, multidb, ddl, large, types, statement, temporary, mixed",
    )
    gen.add_argument("--seed", type=int, default=1)
    gen.add_argument("--out", required=True, metavar="DIR")
    gen.add_argument("--size", type=float, default=None, metavar="MB", help="approximate relay-log size")
    gen.set_defaults(func=cmd_generate)

    rep = sub.add_parser("replay", help="apply relay logs to a DuckDB slave (exits at the end of the logs)")
    rep.add_argument("--slave", required=True, metavar="SLAVE.duckdb")
    rep.add_argument("--repository", required=True, metavar="REPO.sqlite")
    add_channel_option(rep, "repeat for fan-in")
    rep.add_argument(
        "--workers", type=int, default=0, metavar="N", help="replica_parallel_workers (0: single applier)"
    )
    rep.add_argument(
        "--parallel-type",
        choices=("database", "logical_clock", "writeset"),
        default="writeset",
        help="replica_parallel_type: how the coordinator finds independent transactions (default writeset)",
    )
    rep.add_argument(
        "--preserve-commit-order",
        choices=("on", "off"),
        default="on",
        help="replica_preserve_commit_order: commit in source order (default on)",
    )
    rep.add_argument(
        "--pending-jobs-size-max",
        type=int,
        default=128 * 1024 * 1024,
        metavar="BYTES",
        help="replica_pending_jobs_size_max: bytes of transactions queued to workers; for the single "
        "applier, relay-log bytes read and not yet committed (default 128M)",
    )
    rep.add_argument(
        "--checkpoint-group",
        type=int,
        default=512,
        metavar="N",
        help="replica_checkpoint_group: checkpoint at least every N transactions (default 512)",
    )
    rep.add_argument(
        "--checkpoint-period",
        type=int,
        default=300,
        metavar="MS",
        help="replica_checkpoint_period: checkpoint at least every MS milliseconds (default 300)",
    )
    rep.add_argument(
        "--skip-counter",
        type=int,
        default=0,
        metavar="N",
        help="sql_replica_skip_counter: skip N events first (whole transactions; a gap in the relay logs counts as one)",
    )
    rep.add_argument(
        "--sql-delay",
        type=int,
        default=0,
        metavar="SECONDS",
        help="SOURCE_DELAY: apply each transaction only this long after the source committed it",
    )
    rep.add_argument(
        "--until-gtid", metavar="SET", help="stop once every GTID of SET is applied (SQL_AFTER_GTIDS)"
    )
    rep.add_argument("--until-pos", metavar="FILE:POS", help="stop at this relay-log or source-log position")
    rep.add_argument(
        "--group-size",
        type=int,
        default=None,
        metavar="N",
        help="commit at most N source transactions per DuckDB transaction (default 20000)",
    )
    rep.add_argument(
        "--schedule",
        default=None,
        metavar="FILE",
        help="WRITESET dependencies from `relaydeck analyze --schedule-out` (a replay from the start)",
    )
    rep.add_argument(
        "--pool",
        choices=("processes", "spark", "threads"),
        default=None,
        help="where the relay log is read, decoded and prepared for the --workers: processes (default, "
        "one per core), spark (Spark tasks; --spark-master for a cluster) or threads (the coordinator's "
        "own thread, for tiny logs)",
    )
    rep.add_argument(
        "--spark-master", default=None, metavar="URL", help="a Spark cluster (default: local mode)"
    )
    rep.add_argument(
        "--follow",
        action="store_true",
        help="keep applying as the relay logs grow (events appended, files added) until SIGTERM or Ctrl-C",
    )
    rep.set_defaults(func=cmd_replay)

    srv = sub.add_parser(
        "serve",
        help="run the channels of a configuration file, following their relay logs, until SIGTERM",
    )
    srv.add_argument("config", nargs="?", metavar="CONFIG.toml", help="default: the bundled example")
    srv.add_argument(
        "--work",
        default="relaydeck-example",
        metavar="DIR",
        help="where the bundled example writes (no CONFIG)",
    )
    srv.add_argument(
        "--skip-replica-start", action="store_true", help="configure the channels but do not START them"
    )
    srv.add_argument(
        "--no-follow", action="store_true", help="stop each channel at the end of its relay logs"
    )
    srv.set_defaults(func=cmd_serve)

    con = sub.add_parser(
        "console",
        help="the operator console: channels, workers, statements, recovery, relay logs (attaches to a running serve)",
    )
    con.add_argument(
        "config",
        nargs="?",
        metavar="CONFIG.toml",
        help="run this configuration (default: the bundled example)",
    )
    con.add_argument(
        "--repository", metavar="REPO.sqlite", help="attach to the serve running on this repository"
    )
    con.add_argument(
        "--slave",
        metavar="SLAVE.duckdb",
        help="with --repository and no serve running: default, the one recorded",
    )
    con.add_argument(
        "--work",
        default="relaydeck-example",
        metavar="DIR",
        help="where the bundled example writes (no CONFIG)",
    )
    con.add_argument(
        "--lag-warn", type=float, default=5.0, metavar="SECONDS", help="lag shown yellow from here"
    )
    con.add_argument(
        "--lag-crit", type=float, default=30.0, metavar="SECONDS", help="lag shown red from here"
    )
    con.add_argument("--light", action="store_true", help="start in the light theme (d switches)")
    con.set_defaults(func=cmd_console)

    sql = sub.add_parser(
        "sql",
        help="run a replication statement (CHANGE REPLICATION SOURCE, START/STOP/RESET REPLICA, SHOW …, SET GLOBAL)",
    )
    sql.add_argument("statement", metavar="STATEMENT")
    sql.add_argument("--repository", required=True, metavar="REPO.sqlite")
    sql.add_argument(
        "--slave", default=None, metavar="SLAVE.duckdb", help="when no server runs: default, the one recorded"
    )
    sql.add_argument("--json", action="store_true", help="the result as JSON")
    sql.set_defaults(func=cmd_sql)

    from console.analyze_cli import add_parser as add_analyze_parser

    add_analyze_parser(sub)

    from console.receive_cli import add_parser as add_receive_parser

    add_receive_parser(sub)

    from console.clone_cli import add_parser as add_clone_parser

    add_clone_parser(sub)

    rec = sub.add_parser(
        "recovery",
        help="show what the next start recovers after a parallel applier stopped (changes nothing)",
    )
    rec.add_argument("--slave", required=True, metavar="SLAVE.duckdb")
    rec.add_argument("--repository", required=True, metavar="REPO.sqlite")
    rec.add_argument("--channel", default=None, metavar="NAME")
    rec.add_argument("--json", action="store_true")
    rec.set_defaults(func=cmd_recovery)

    st = sub.add_parser("status", help="SHOW REPLICA STATUS from the repository")
    st.add_argument("--repository", required=True, metavar="REPO.sqlite")
    st.add_argument("--channel", default=None, metavar="NAME")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "events" and not args.inputs:
        args.inputs = [str(BUNDLED_RELAY_LOG / "relay-bin-m2.index")]
    stream = out if out is not None else sys.stdout
    if out is None:
        # Statements and names from a log may hold bytes that are not UTF-8 (kept as surrogates):
        # print them escaped rather than fail on a strict UTF-8 terminal.
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    if out is None and hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `relaydeck events … | head` ends quietly
    relax_garbage_collector()  # every command here decodes relay logs (see engine/gc_tuning.py)
    func: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        return func(args, stream)
    except RelaydeckError as exc:
        sys.stderr.write(f"relaydeck: {exc.one_line()}\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
