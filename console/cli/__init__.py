"""The `relaydeck` command line: thin argument handling over the engine's API.

One module per subcommand, each with `add_parser(subparsers)` (its options) and its `cmd_…(args,
out)`; this module builds the parser from them and holds `main`. A subcommand imports what it
runs (the decoders, the listing, DuckDB, the server, Spark, Textual, PyMySQL) inside its `cmd_…`,
so building the parser loads none of it (tests/test_cli_startup.py): `relaydeck --help` takes
0.06 s against 0.16 s when `events` and `analyze` loaded their engine parts with the module, and
`relaydeck status --json` 0.27 s against 0.33 s (benchmarks/cli_startup.py, medians of 15 rounds).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import TextIO

from engine.api import RelaydeckError, relax_garbage_collector

from . import analyze, clone, console, events, generate, receive, recovery, replay, serve, sql, status

# in the order `relaydeck --help` lists them
SUBCOMMANDS = (events, generate, replay, serve, console, sql, analyze, receive, clone, recovery, status)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, with only the subcommand they name (every subcommand's
    options take a tenth of the CPU of a `relaydeck status` that a monitor polls), else all."""
    parser = argparse.ArgumentParser(
        prog="relaydeck",
        description="The `relaydeck` command line: thin argument handling over the engine's API.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    named = [m for m in SUBCOMMANDS if argv and m.__name__.rsplit(".", 1)[1] == argv[0]]
    for subcommand in named or SUBCOMMANDS:
        subcommand.add_parser(sub)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    args = build_parser(arguments).parse_args(arguments)
    stream = out if out is not None else sys.stdout
    if out is None:
        # Statements and names from a log may hold bytes that are not UTF-8 (kept as surrogates):
        # print them escaped rather than fail on a strict UTF-8 terminal.
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    if argv is None and out is None and hasattr(signal, "SIGPIPE"):
        # `relaydeck events … | head` ends quietly. Only as the program: a process calling main()
        # (a script, the tests) keeps Python's handling, where a write to a closed socket is an
        # error and not the end of the process.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    relax_garbage_collector()  # every command here decodes relay logs (see engine/gc_tuning.py)
    func: Callable[[argparse.Namespace, TextIO], int] = args.func
    try:
        return func(args, stream)
    except RelaydeckError as exc:
        sys.stderr.write(f"relaydeck: {exc.one_line()}\n")
        return 1
    except KeyboardInterrupt:
        return 130
