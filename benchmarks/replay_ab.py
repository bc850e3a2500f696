"""The same replays with this checkout and another one, interleaved: what a change did to them.

    python benchmarks/replay_ab.py --baseline-checkout PATH [--workload oltp] [--size MB] [--seed N]
        [--workers N ...] [--types TYPE ...] [--commit-order on|off] [--rounds N]

Each configuration (--workers 0 is the single applier; every other worker count runs under each
of --types) replays a generated relay log (`relaydeck generate`, made once under benchmarks/work/)
with this checkout's engine and PATH's, one after the other in every round, each in its own
interpreter (PATH/.venv/bin/python with PYTHONPATH=PATH, through benchmarks/checkout_replay.py),
so that both see the same machine. Every replay's tables are compared with the generator's
oracle. Reported per configuration: the median wall time of each checkout (the whole run, the
slave's close included), the CPU time of the run and its preparing processes (getrusage of the
reaped children), and the ratios this checkout / the baseline (below 1: this checkout is faster or
uses less CPU). The generated logs are in MySQL 8.0's format (GTIDs 'uuid:n'); the bundled MariaDB
capture is compared by replay_throughput.py --peer --baseline-checkout.
Figures are printed and written to benchmarks/results/replay_ab.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generated_logs import add_relay_log_options, ensure_relay_log  # noqa: E402
from machine import measurement_header, write_bytecode, write_results  # noqa: E402

PARALLEL_TYPES = ("database", "logical_clock", "writeset")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def replay_in(checkout: Path, index: Path, workers: int, kind: str | None, order: str) -> dict[str, object]:
    """One replay by `checkout`'s engine: its JSON line, with the CPU time it and its children used."""
    command = [
        str(checkout / ".venv" / "bin" / "python"),
        str(ROOT / "benchmarks" / "checkout_replay.py"),
        "--channel",
        f"={index}",
        "--expected",
        str(index.parent / "expected"),
        "--workers",
        str(workers),
    ]
    if workers:
        command += ["--parallel-type", kind or "writeset", "--preserve-commit-order", order]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    cpu_before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    process_seconds = time.perf_counter() - started
    cpu = children_cpu() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the replay failed:\n{done.stderr[-3000:]}")
    line = json.loads(done.stdout.strip().splitlines()[-1])
    line["cpu_s"] = cpu
    line["process_s"] = process_seconds
    return line


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-checkout", type=Path, required=True, metavar="PATH")
    add_relay_log_options(parser, "oltp")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 4], help="worker counts (default 0 4)")
    parser.add_argument("--types", nargs="+", choices=PARALLEL_TYPES, default=list(PARALLEL_TYPES))
    parser.add_argument("--commit-order", choices=("on", "off"), default="on")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    baseline = args.baseline_checkout.resolve()
    if not (baseline / ".venv" / "bin" / "python").exists():
        parser.error(f"{baseline} has no .venv: python3 -m venv .venv && .venv/bin/pip install -e . there")
    write_bytecode(baseline)
    index = ensure_relay_log(args.workload, args.size, args.seed)
    configurations = [
        (workers, kind) for workers in args.workers for kind in ([None] if workers == 0 else args.types)
    ]
    checkouts = {"this": ROOT, "baseline": baseline}
    runs: dict[str, dict[str, list[dict[str, object]]]] = {}
    for _ in range(args.rounds):
        for workers, kind in configurations:
            name = "single" if workers == 0 else f"{kind} x{workers}"
            for label, checkout in checkouts.items():
                line = replay_in(checkout, index, workers, kind, args.commit_order)
                if not line["identical_tables"]:
                    raise SystemExit(
                        f"{label} ({checkout}), {name}: tables differ from the oracle: {line['errors']}"
                    )
                runs.setdefault(name, {}).setdefault(label, []).append(line)
    summary = {}
    print(
        f"{'configuration':20} {'this s':>8} {'base s':>8} {'wall':>6} {'this cpu':>9} {'base cpu':>9} {'cpu':>6}"
    )
    for name, by_checkout in runs.items():
        wall = {k: statistics.median(r["seconds"] for r in v) for k, v in by_checkout.items()}  # type: ignore[misc]
        cpu = {k: statistics.median(r["cpu_s"] for r in v) for k, v in by_checkout.items()}  # type: ignore[misc]
        summary[name] = {
            "transactions": by_checkout["this"][0]["transactions"],
            "this_seconds": [round(r["seconds"], 3) for r in by_checkout["this"]],  # type: ignore[arg-type]
            "baseline_seconds": [round(r["seconds"], 3) for r in by_checkout["baseline"]],  # type: ignore[arg-type]
            "wall_ratio": round(wall["this"] / wall["baseline"], 3),
            "this_cpu_s": round(cpu["this"], 3),
            "baseline_cpu_s": round(cpu["baseline"], 3),
            "cpu_ratio": round(cpu["this"] / cpu["baseline"], 3),
            "identical_tables": True,
        }
        print(
            f"{name:20} {wall['this']:8.3f} {wall['baseline']:8.3f} {summary[name]['wall_ratio']:6.3f} "
            f"{cpu['this']:9.3f} {cpu['baseline']:9.3f} {summary[name]['cpu_ratio']:6.3f}"
        )
    results = {
        **measurement_header(),
        "baseline_checkout": str(baseline),
        "log": {"workload": args.workload, "size_mb": args.size, "seed": args.seed, "index": str(index)},
        "commit_order": args.commit_order,
        "rounds": args.rounds,
        "configurations": summary,
    }
    print(f"written to {write_results('replay_ab', results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
