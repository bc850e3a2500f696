"""`relaydeck generate`: a deterministic workload written as MySQL 8.0 relay logs with its expected tables."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from engine.api import RelaydeckError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "generate", help="write a deterministic workload as MySQL 8.0 relay logs + expected tables"
    )
    parser.add_argument(
        "--workload",
        required=True,
        metavar="NAME",
        help="oltp, hot, multidb, ddl, large, types, statement, temporary, mixed",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--size", type=float, default=None, metavar="MB", help="approximate relay-log size")
    parser.set_defaults(func=cmd_generate)
    return parser


def cmd_generate(args: argparse.Namespace, out: TextIO) -> int:
    from engine.api import WORKLOADS, generate

    if args.workload not in WORKLOADS:
        raise RelaydeckError(f"unknown workload {args.workload!r}; choose one of {', '.join(WORKLOADS)}")
    summary = generate(args.workload, args.seed, Path(args.out), args.size)
    out.write(
        f"{summary.workload}: {summary.transactions} transactions, {summary.events} events, "
        f"{summary.bytes / 1e6:.1f} MB in {len(summary.relay_files)} relay log files; "
        f"index {summary.index_file}\n"
    )
    return 0
