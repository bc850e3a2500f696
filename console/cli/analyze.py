"""`relaydeck analyze`: how much parallelism relay logs offer each scheduler, computed with Spark."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, TextIO

from engine.api import DEFAULT_HISTORY_SIZE, RelaydeckError, visible

from .channel_option import add_channel_option, channel_and_index

DEFAULT_WORKERS = (1, 2, 4, 8, 16)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "analyze",
        help="the parallelism relay logs offer under DATABASE, LOGICAL_CLOCK and WRITESET (with Spark)",
        description="Per channel: transactions, critical path and ideal speedup by worker count under each "
        "scheduler, and the hottest keys and tables. The WRITESET dependencies are the multi-threaded "
        "applier's on a fresh slave; --schedule-out writes them for a replay to use.",
    )
    add_channel_option(parser, "repeat for several")
    parser.add_argument("--json", action="store_true", help="the analysis as one JSON document")
    parser.add_argument(
        "--workers",
        type=worker_counts,
        default=DEFAULT_WORKERS,
        metavar="N,N,…",
        help="worker counts to give the ideal speedup for (default 1,2,4,8,16)",
    )
    parser.add_argument(
        "--spark-master", default=None, metavar="URL", help="a Spark cluster (default: local, every core)"
    )
    parser.add_argument(
        "--history-size",
        type=int,
        default=DEFAULT_HISTORY_SIZE,
        metavar="N",
        help=f"binlog_transaction_dependency_history_size for WRITESET (default {DEFAULT_HISTORY_SIZE})",
    )
    parser.add_argument("--top", type=int, default=10, metavar="N", help="hottest keys and tables shown (10)")
    parser.add_argument(
        "--catalog-from",
        default=None,
        metavar="SLAVE.duckdb",
        help="start from this slave's table definitions (for logs that do not begin with the CREATE TABLEs)",
    )
    parser.add_argument(
        "--schedule-out",
        default=None,
        metavar="FILE",
        help="write each channel's WRITESET dependencies (one after-ordinal per transaction) as JSON",
    )
    parser.set_defaults(func=cmd_analyze)
    return parser


def worker_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of worker counts") from None
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError("worker counts are 1 or more")
    return counts


def parse_channels(values: list[str]) -> list[tuple[str, Path]]:
    from engine.api import validate_channel_name

    channels = []
    for text in values:
        name, index = channel_and_index(text)
        channels.append((validate_channel_name(name), index))
    names = [name.lower() for name, _ in channels]
    if len(set(names)) != len(names):
        raise RelaydeckError("a channel is named twice")
    return channels


def cmd_analyze(args: argparse.Namespace, out: TextIO) -> int:
    from engine.api import analyze, read_index, spark_session

    if args.history_size < 1:
        raise RelaydeckError("--history-size must be at least 1")
    if args.top < 0:
        raise RelaydeckError("--top cannot be negative")
    # Every index is read before Spark starts: a typo should not cost a JVM start.
    channels = [(name, read_index(index)) for name, index in parse_channels(args.channel)]
    catalog = _catalog_from(args.catalog_from) if args.catalog_from else None
    started = time.perf_counter()
    spark = spark_session(args.spark_master)
    analysis = analyze(
        spark, channels, workers=args.workers, history_size=args.history_size, top=args.top, catalog=catalog
    )
    analysis.timings["total_s"] = time.perf_counter() - started
    if args.schedule_out:
        analysis.write_schedule(args.schedule_out)
    if args.json:
        out.write(json.dumps(analysis.to_dict(), indent=2) + "\n")
    else:
        write_report(analysis.to_dict(), out)
        if args.schedule_out:
            counts = sum(len(a) for a in analysis.schedule.values())
            out.write(f"WRITESET schedule of {counts} transactions written to {args.schedule_out}\n")
    return 0


def _catalog_from(path: str):  # type: ignore[no-untyped-def]
    from engine.api import Slave

    if not Path(path).exists():
        raise RelaydeckError(f"{path}: no such slave")
    slave = Slave(path, read_only=True)
    try:
        return slave.catalog
    finally:
        slave.close()


def write_report(document: dict[str, Any], out: TextIO) -> None:
    workers = document["workers"]
    for name, channel in document["channels"].items():
        out.write(
            f"channel '{name}': {channel['transactions']} transactions ({channel['run_alone']} run alone, "
            f"{channel['skipped_repeated_gtids']} repeated GTIDs skipped), total weight "
            f"{channel['total_weight']} (rows events + 1 each)\n"
        )
        head = ["scheduler", "critical path", "parallelism", *(f"x{n}" for n in workers)]
        rows = [head]
        for kind, profile in channel["schedulers"].items():
            speedups = [f"{profile['ideal_speedup'][str(n)]:.2f}" for n in workers]
            rows.append([kind, str(profile["critical_path"]), f"{profile['parallelism']:.2f}", *speedups])
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for row in rows:
            cells = [
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ]
            out.write("  " + "  ".join(cells) + "\n")
        out.write("  (ideal speedup by worker count: min(workers, total weight / critical path))\n")
        if channel["hot_keys"]:
            out.write(
                "  hottest keys: transactions writing it, of them waiting for an earlier one, key (hash)\n"
            )
            for key in channel["hot_keys"]:
                label = visible(key["key"]) if key["key"] else "key not identified"
                out.write(f"    {key['transactions']:>8}  {key['waits']:>8}  {label} ({key['hash']})\n")
        if channel["hot_tables"]:
            out.write("  hottest tables: transactions, rows events, table\n")
            for table in channel["hot_tables"]:
                out.write(
                    f"    {table['transactions']:>8}  {table['rows_events']:>10}  {visible(table['table'])}\n"
                )
        for error in channel["ddl_errors"]:
            out.write(
                f"  note: a definition change could not be replayed, later hashes may differ: {visible(error)}\n"
            )
        if channel["stopped_by"] != "end of relay log":
            out.write(f"  note: reading stopped: {visible(channel['stopped_by'])}\n")
    seconds = document["seconds"]
    out.write(
        f"analysed in {seconds.get('total_s', 0):.1f} s (reading {seconds.get('read_s', 0):.1f} s, "
        f"Spark {seconds.get('spark_s', 0):.1f} s)\n"
    )
