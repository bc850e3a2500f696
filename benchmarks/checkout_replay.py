"""One timed replay with the engine of another checkout of relaydeck, in its own interpreter.

    CHECKOUT/.venv/bin/python benchmarks/checkout_replay.py --channel NAME=INDEX [...]
        --expected DIR [--workers N --pool processes|threads|spark [--parallel-type TYPE]
        [--preserve-commit-order on|off]]

Run with PYTHONPATH=CHECKOUT, so that `engine` is that checkout's (this file imports nothing of the
checkout it sits in). It replays the channels into a fresh slave, compares the tables with the
expected CSVs and prints one JSON line: seconds (the whole run, the slave's close included),
seconds_to_last_commit, transactions, DuckDB commits, errors, identical_tables. Only the
interface every version shares is used: Replay (with on_commit), ChannelSpec, ParallelOptions,
differences.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

try:
    from engine.applier.vocabulary import ParallelOptions
except ModuleNotFoundError:  # a checkout from before the applier's vocabulary had a module of its own
    from engine.applier.parallel import ParallelOptions  # type: ignore[no-redef]
from engine.replay import ChannelSpec, Replay
from engine.slave.database import Slave
from engine.slave.export import differences


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--channel", action="append", required=True, metavar="NAME=INDEX")
    parser.add_argument("--expected", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=0, help="0: the single applier")
    parser.add_argument("--pool", default="processes")
    parser.add_argument("--parallel-type", default=None)
    parser.add_argument("--preserve-commit-order", choices=("on", "off"), default=None)
    args = parser.parse_args()
    channels = [
        ChannelSpec(name, Path(index)) for name, index in (text.split("=", 1) for text in args.channel)
    ]
    parallel = None
    if args.workers:
        settings: dict[str, object] = {"workers": args.workers, "pool": args.pool}
        if args.parallel_type:
            settings["parallel_type"] = args.parallel_type
        if args.preserve_commit_order:
            settings["preserve_commit_order"] = args.preserve_commit_order == "on"
        parallel = ParallelOptions(**settings)  # type: ignore[arg-type]
    work = Path(tempfile.mkdtemp(prefix="relaydeck-bench-checkout-"))
    last_commit = [0.0]

    def committed(_: object) -> None:
        last_commit[0] = time.perf_counter()

    try:
        start = time.perf_counter()
        replay = Replay(
            work / "slave.duckdb", work / "repo.sqlite", channels, parallel=parallel, on_commit=committed
        )
        outcomes = replay.run()
        seconds = time.perf_counter() - start
        errors = [o.error.one_line() for o in outcomes if o.error]
        transactions = sum(o.stats.transactions for o in outcomes if o.stats)
        commits = sum(o.stats.commits for o in outcomes if o.stats)
        slave = Slave(work / "slave.duckdb")
        try:
            diffs = differences(slave, args.expected)
        finally:
            slave.close()
        print(
            json.dumps(
                {
                    "seconds": seconds,
                    "seconds_to_last_commit": last_commit[0] - start if last_commit[0] else seconds,
                    "transactions": transactions,
                    "commits": commits,
                    "errors": errors,
                    "identical_tables": not diffs and not errors,
                }
            ),
            flush=True,
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
