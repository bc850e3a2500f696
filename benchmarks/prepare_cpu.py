"""CPU time of the preparing stage itself: a relay log's segments prepared one after another in one
process, as each preparing process prepares the segments it is given.

    python benchmarks/prepare_cpu.py [--index INDEX ...] [--repeats N] [--rounds N]
                                     [--baseline-checkout PATH]

The segments are planned as the applier plans them (engine/applier/processes.py: SEGMENT_TRANSACTIONS
transactions or SEGMENT_BYTES, the first one not shortened) and each goes through PrepareTask.run,
nothing applied and nothing handed over. The figure is the best of --repeats passes (after one
pass to warm up), in the process's CPU time: preparing processes share the machine with the applier,
so what they cost is CPU, not wall time. Default: both channels of the bundled MariaDB capture.

With --baseline-checkout, the same passes run in another checkout's engine, in an interpreter of
their own (PYTHONPATH=PATH; this file imports nothing of the engine until it measures), alternating
with this checkout's for --rounds rounds, and the ratio of the medians is reported (below 1: this
checkout prepares with less CPU). Every run must prepare the same transactions and row changes.
Figures are printed and written to benchmarks/results/prepare_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"
DEFAULT_INDEXES = [CAPTURE / "relay-bin-m1.index", CAPTURE / "relay-bin-m2.index"]


def measure(indexes: list[Path], repeats: int) -> dict[str, object]:
    """Prepare every segment of every index `repeats` times (plus a warm-up) in this process."""
    from engine.applier.prepare import PrepareTask
    from engine.applier.prepared import PreparedRun
    from engine.applier.processes import SEGMENT_BYTES, SEGMENT_TRANSACTIONS
    from engine.gc_tuning import relax_garbage_collector
    from engine.relaylog.index import read_index
    from engine.relaylog.segments import plan_segments

    relax_garbage_collector()  # as in a preparing process
    task = PrepareTask(SEGMENT_TRANSACTIONS)
    segments = [
        segment
        for index in indexes
        for segment in plan_segments(read_index(index), None, 4, SEGMENT_TRANSACTIONS, None, SEGMENT_BYTES)
    ]

    def one_pass() -> tuple[int, int, int]:
        """Transactions prepared in runs, their row changes, and items left as read."""
        transactions = row_changes = others = 0
        for segment in segments:
            for item in task.run(segment).items:
                if isinstance(item, PreparedRun):
                    transactions += len(item.transactions)
                    row_changes += item.row_changes
                else:
                    others += 1
        return transactions, row_changes, others

    prepared = one_pass()
    cpu = []
    for _ in range(repeats):
        started = time.process_time()
        again = one_pass()
        cpu.append(time.process_time() - started)
        if again != prepared:
            raise SystemExit(f"a pass prepared {again}, the first {prepared}")
    return {
        "cpu_s_best": round(min(cpu), 4),
        "cpu_s": [round(c, 4) for c in cpu],
        "segments": len(segments),
        "transactions_in_runs": prepared[0],
        "row_changes": prepared[1],
        "items_as_read": prepared[2],
    }


def run_in(checkout: Path, indexes: list[Path], repeats: int) -> dict[str, object]:
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", "--repeats", str(repeats)]
    for index in indexes:
        command += ["--index", str(index)]
    done = subprocess.run(
        command,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the measurement failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--index", type=Path, action="append", help="a relay-log index (repeatable)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="with --baseline-checkout: alternations")
    parser.add_argument("--baseline-checkout", type=Path)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    indexes = [index.resolve() for index in args.index or DEFAULT_INDEXES]
    if args.measure:
        print(json.dumps(measure(indexes, args.repeats)))
        return 0
    trees = {"this_checkout": ROOT}
    if args.baseline_checkout:
        trees["baseline"] = args.baseline_checkout.resolve()
    runs: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    for round_number in range(args.rounds if args.baseline_checkout else 1):
        order = list(trees.items())
        for name, tree in order if round_number % 2 == 0 else order[::-1]:
            result = run_in(tree, indexes, args.repeats)
            runs[name].append(result)
            print(
                f"{name:14s} round {round_number + 1}: best {result['cpu_s_best']:.3f} s of CPU", flush=True
            )
    prepared = {
        (r["transactions_in_runs"], r["row_changes"], r["items_as_read"])
        for results in runs.values()
        for r in results
    }
    if len(prepared) != 1:
        raise SystemExit(f"the checkouts prepared different transactions or row changes: {prepared}")
    figures: dict[str, object] = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command_line": " ".join([Path(sys.executable).name, *sys.argv]),
        "indexes": [str(index) for index in indexes],
        "runs": runs,
    }
    medians = {name: statistics.median(r["cpu_s_best"] for r in results) for name, results in runs.items()}  # type: ignore[misc]
    figures["median_cpu_s"] = medians
    if "baseline" in medians:
        figures["this_over_baseline"] = round(medians["this_checkout"] / medians["baseline"], 3)
        print(f"this checkout / baseline: {figures['this_over_baseline']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "prepare_cpu.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
