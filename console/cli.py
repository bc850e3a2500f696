"""The `relaydeck` command line: thin argument handling over the engine's API."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from engine.binlog.columns import decode_rows_event
from engine.binlog.events import RowsEvent, TableMap
from engine.binlog.reader import LoggedEvent, ReaderState
from engine.errors import RelaydeckError
from engine.relaylog.index import resolve_inputs
from engine.relaylog.stream import stream_events
from engine.render import json_value, quoted
from engine.transactions import row_kind_name

BUNDLED_RELAY_LOG = (
    Path(__file__).resolve().parent.parent / "fixtures" / "mariadb-10.11-multisource" / "relay"
)


def _iter_inputs(paths: list[str], from_pos: int) -> Iterator[LoggedEvent]:
    first = True
    for logs in resolve_inputs(paths):
        state = ReaderState()
        start_file = logs.files[0].name if first and from_pos > 4 else None
        yield from stream_events(logs, start_file=start_file, start_pos=from_pos if first else 4, state=state)
        first = False


def _row_lines(images) -> list[str]:  # type: ignore[no-untyped-def]
    table = f"`{images.table_map.schema}`.`{images.table_map.table}`"
    verb = row_kind_name(images.kind)
    lines = []
    for before, after in images.rows():
        parts = []
        if before is not None:
            parts.append("(" + ", ".join(f"{k}={quoted(v)}" for k, v in before.items()) + ")")
        if after is not None:
            parts.append("(" + ", ".join(f"{k}={quoted(v)}" for k, v in after.items()) + ")")
        lines.append(f"### {verb} {table} " + " -> ".join(parts))
    return lines


def _rows_json(images) -> list[dict]:  # type: ignore[no-untyped-def]
    out = []
    for before, after in images.rows():
        row: dict[str, object] = {}
        if before is not None:
            row["before"] = {k: json_value(v) for k, v in before.items()}
        if after is not None:
            row["after"] = {k: json_value(v) for k, v in after.items()}
        out.append(row)
    return out


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    """SHOW RELAYLOG EVENTS over files or index files."""
    table_maps: dict[int, TableMap] = {}
    write = out.write
    if not args.json:
        write("Log_name\tPos\tEvent_type\tServer_id\tEnd_log_pos\tInfo\n")
    shown = 0
    for logged in _iter_inputs(args.inputs, args.from_pos):
        if args.limit is not None and shown >= args.limit:
            break
        shown += 1
        event = logged.event
        if isinstance(event, TableMap):
            table_maps[event.table_id] = event
        header = event.header
        images = None
        rows_error = None
        if args.rows and isinstance(event, RowsEvent):
            table_map = table_maps.get(event.table_id)
            if table_map is None:
                rows_error = f"no table map for table_id {event.table_id} before this event"
            else:
                try:
                    images = decode_rows_event(event, table_map)
                except ValueError as exc:
                    raise RelaydeckError(f"{logged.log_name} at position {logged.pos}: {exc}") from None
        if args.json:
            record: dict[str, object] = {
                "log_name": logged.log_name,
                "pos": logged.pos,
                "event_type": logged.event_type,
                "server_id": header.server_id,
                "end_log_pos": header.log_pos,
                "info": event.info(),
            }
            if args.rows and isinstance(event, RowsEvent):
                record["rows"] = _rows_json(images) if images is not None else None
                if rows_error:
                    record["rows_error"] = rows_error
            write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            info = event.info().replace("\n", " ")
            write(
                f"{logged.log_name}\t{logged.pos}\t{logged.event_type}\t{header.server_id}\t"
                f"{header.log_pos}\t{info}\n"
            )
            if images is not None:
                write("\n".join(_row_lines(images)) + "\n")
            elif rows_error:
                write(f"### ({rows_error})\n")
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
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "events" and not args.inputs:
        args.inputs = [str(BUNDLED_RELAY_LOG / "relay-bin-m2.index")]
    stream = out if out is not None else sys.stdout
    if out is None and hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `relaydeck events … | head` ends quietly
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
