"""`relaydeck events --rows --json` with --jobs 2 and --jobs 1 beside `mariadb-binlog
--base64-output=decode-rows -vv`, on the same files: the bundled MariaDB capture (both channels)
and a generated OLTP log (~100 MB), and any capture folder given with --capture (such as the
full-size one benchmarks/replay_throughput.py --peer makes with ../shared/peer/peer.sh).

The three run interleaved in one invocation (the machine is shared and noisy, so only ratios
measured this way mean anything); each figure is the median of the repeats, output discarded.
Prints the table and writes benchmarks/results/events_parallel.json.

    python benchmarks/events_parallel.py [--size MB] [--repeats N] [--capture DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from decode_throughput import ensure_relay_log, run_timed  # noqa: E402
from machine import measurement_header  # noqa: E402

CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"


def files_of(index: Path) -> list[str]:
    from engine.relaylog.index import read_index

    return [str(path) for path in read_index(index).files]


def measure(name: str, indexes: list[Path], repeats: int, tool: str) -> dict[str, object]:
    files = [f for index in indexes for f in files_of(index)]
    total_bytes = sum(os.path.getsize(f) for f in files)
    ours = [sys.executable, "-m", "console.cli", "events", "--rows", "--json"]
    commands = {
        "relaydeck_jobs_2": [*ours, "--jobs", "2", *map(str, indexes)],
        "relaydeck_jobs_1": [*ours, "--jobs", "1", *map(str, indexes)],
        "mariadb_binlog": [tool, "--base64-output=decode-rows", "-vv", *files],
    }
    runs: dict[str, list[tuple[float, float]]] = {key: [] for key in commands}
    for _ in range(repeats):  # interleaved: each sees the same machine load
        for key, command in commands.items():
            runs[key].append(run_timed(command))
    figures: dict[str, object] = {}
    for key, timed in runs.items():
        wall = statistics.median(r[0] for r in timed)
        figures[key] = {
            "wall_s": round(wall, 3),
            "best_wall_s": round(min(r[0] for r in timed), 3),
            "cpu_s": round(statistics.median(r[1] for r in timed), 3),
            "mb_per_s_wall": round(total_bytes / 1e6 / wall, 2),
            "walls_s": [round(r[0], 3) for r in timed],
        }

    def ratios(ours: str) -> dict[str, object]:
        # mariadb-binlog's wall / ours, per round (the two ran back to back), and of the medians
        # and the best walls: other programs' load comes and goes within a round less than across
        paired = [peer[0] / mine[0] for peer, mine in zip(runs["mariadb_binlog"], runs[ours], strict=True)]
        return {
            "median_round": round(statistics.median(paired), 3),
            "per_round": [round(r, 3) for r in paired],
            "of_medians": round(figures["mariadb_binlog"]["wall_s"] / figures[ours]["wall_s"], 3),  # type: ignore[index]
            "of_best": round(
                figures["mariadb_binlog"]["best_wall_s"] / figures[ours]["best_wall_s"],  # type: ignore[index]
                3,
            ),
        }

    return {
        "log": name,
        "relay_log_bytes": total_bytes,
        "relay_log_files": len(files),
        **figures,
        "ratio_jobs_2_to_mariadb_binlog": ratios("relaydeck_jobs_2"),
        "ratio_jobs_1_to_mariadb_binlog": ratios("relaydeck_jobs_1"),
        "speedup_jobs_2_over_jobs_1": round(
            figures["relaydeck_jobs_1"]["best_wall_s"] / figures["relaydeck_jobs_2"]["best_wall_s"],  # type: ignore[index]
            3,
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=100.0, help="generated log size in MB (default 100)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--capture",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also list a folder of relay logs (every relay-bin-*.index in it, e.g. the peer's capture)",
    )
    args = parser.parse_args()
    tool = shutil.which("mariadb-binlog")
    if tool is None:
        print("mariadb-binlog is not installed (apt-get install mariadb-client)", file=sys.stderr)
        return 2
    logs = {
        "bundled MariaDB 10.11 capture (m1 + m2)": [
            CAPTURE / "relay-bin-m1.index",
            CAPTURE / "relay-bin-m2.index",
        ],
        f"generated oltp, {args.size:g} MB": [ensure_relay_log("oltp", args.size, 1)],
    }
    for folder in args.capture:
        indexes = sorted(folder.glob("relay-bin-*.index"))
        if not indexes:
            print(f"{folder}: no relay-bin-*.index in it", file=sys.stderr)
            return 2
        logs[f"capture {folder} ({len(indexes)} channels)"] = indexes
    result = {
        **measurement_header(),
        "what": "relaydeck events --rows --json (--jobs 2, --jobs 1) vs mariadb-binlog "
        "--base64-output=decode-rows -vv; ratio = mariadb-binlog wall / relaydeck wall (>1: faster)",
        "load_average_before": os.getloadavg(),
        "repeats": args.repeats,
        "logs": [measure(name, indexes, args.repeats, tool) for name, indexes in logs.items()],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "events_parallel.json").write_text(json.dumps(result, indent=2) + "\n")
    print("ratio = mariadb-binlog wall / relaydeck wall; median of the rounds' ratios (of the best walls)")
    print(f"{'log':42} {'jobs 2':>8} {'jobs 1':>8} {'mariadb':>8} {'jobs 2 ratio':>13} {'jobs 1 ratio':>13}")
    for log in result["logs"]:  # type: ignore[union-attr]
        two, one = log["ratio_jobs_2_to_mariadb_binlog"], log["ratio_jobs_1_to_mariadb_binlog"]
        print(
            f"{log['log']:42} {log['relaydeck_jobs_2']['wall_s']:7.2f}s {log['relaydeck_jobs_1']['wall_s']:7.2f}s "
            f"{log['mariadb_binlog']['wall_s']:7.2f}s {two['median_round']:5.2f} ({two['of_best']:4.2f}) "
            f"{one['median_round']:6.2f} ({one['of_best']:4.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
