"""Replay of a DDL-heavy generated log, by each applier, against another checkout side by side.

    python benchmarks/ddl_replay.py [--size MB] [--seed N] [--rounds N] [--workers N]
                                    [--compare-with CHECKOUT]

`relaydeck generate --workload ddl` writes a log where about half the transactions are DDL
(CREATE / ALTER / RENAME / DROP TABLE, indexes) with short stretches of row changes between
them. Each round replays it with the single applier and with `--workers N` (default 4) under
database, logical_clock and writeset, each a fresh process (checkout_replay.py) whose tables are
compared with the generator's oracle; with --compare-with, the same configurations by the engine
of that checkout (its own .venv), interleaved with this one's. Reported per configuration:
median seconds (the whole run) and trx/s, and the ratio of this checkout's time to the other's
within each round (below 1: faster here). Figures are printed and written to
benchmarks/results/ddl_replay.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from generated_logs import ensure_relay_log
from machine import measurement_header, write_bytecode, write_results

ROOT = Path(__file__).resolve().parent.parent
TYPES = ("database", "logical_clock", "writeset")


def replay(checkout: Path, index: Path, expected: Path, workers: int, kind: str | None) -> dict[str, object]:
    """One replay by `checkout`'s engine in its own interpreter: checkout_replay.py's JSON line."""
    python = checkout / ".venv" / "bin" / "python"
    command = [
        str(python if python.exists() else sys.executable),
        str(Path(__file__).resolve().parent / "checkout_replay.py"),
        "--channel",
        f"={index}",
        "--expected",
        str(expected),
        "--workers",
        str(workers),
    ]
    if kind is not None:
        command += ["--parallel-type", kind]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return {"seconds": None, "identical_tables": False, "errors": [done.stderr.strip()[-2000:]]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=2.0, help="relay-log size in MB (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--compare-with", type=Path, default=None, metavar="CHECKOUT")
    args = parser.parse_args()
    index = ensure_relay_log("ddl", args.size, args.seed)
    expected = index.parent / "expected"
    configurations = [("single applier", 0, None)] + [
        (f"--workers {args.workers} {kind}", args.workers, kind) for kind in TYPES
    ]
    checkouts = {"here": ROOT}
    if args.compare_with is not None:
        checkouts["other"] = args.compare_with.resolve()
        write_bytecode(checkouts["other"])
    runs: dict[str, dict[str, list[dict[str, object]]]] = {label: {} for label, _, _ in configurations}
    for round_number in range(args.rounds):
        for label, workers, kind in configurations:
            for name, checkout in checkouts.items():
                result = replay(checkout, index, expected, workers, kind)
                runs[label].setdefault(name, []).append(result)
                print(
                    f"round {round_number + 1} {label:<28} {name:<5} {result.get('seconds')} s, "
                    f"identical tables: {result.get('identical_tables')}",
                    flush=True,
                )
    summary: dict[str, dict[str, object]] = {}
    transactions = None
    for label, by_checkout in runs.items():
        entry: dict[str, object] = {}
        for name, results in by_checkout.items():
            seconds = [r["seconds"] for r in results if r.get("seconds") is not None]
            transactions = transactions or next(
                (r.get("transactions") for r in results if r.get("transactions")), None
            )
            median = statistics.median(seconds) if seconds else None
            entry[name] = {
                "seconds": [round(s, 2) for s in seconds],  # type: ignore[arg-type]
                "median_seconds": round(median, 2) if median else None,
                "trx_per_s": round(transactions / median) if median and transactions else None,
                "identical_tables": all(r.get("identical_tables") for r in results),
            }
        if "other" in by_checkout:
            entry["here_over_other_per_round"] = [
                round(h["seconds"] / o["seconds"], 2) if h.get("seconds") and o.get("seconds") else None
                for h, o in zip(by_checkout["here"], by_checkout["other"], strict=True)
            ]
        summary[label] = entry
    print(f"\n{transactions} transactions; median seconds (trx/s), identical tables in every run:")
    for label, entry in summary.items():
        line = f"  {label:<28}"
        for name in checkouts:
            e = entry[name]
            line += f" {name} {e['median_seconds']} s ({e['trx_per_s']}) {e['identical_tables']}"  # type: ignore[index]
        if "here_over_other_per_round" in entry:
            line += f"; here / other {entry['here_over_other_per_round']}"
        print(line)
    results = {
        **measurement_header(),
        "log": {"workload": "ddl", "size_mb": args.size, "seed": args.seed, "transactions": transactions},
        "compared_with": str(args.compare_with) if args.compare_with else None,
        "rounds": args.rounds,
        "configurations": summary,
        "identical_tables": all(
            e[name]["identical_tables"]  # type: ignore[index]
            for e in summary.values()
            for name in checkouts
        ),
    }
    print("written to", write_results("ddl_replay", results))
    return 0 if results["identical_tables"] else 1


if __name__ == "__main__":
    sys.exit(main())
