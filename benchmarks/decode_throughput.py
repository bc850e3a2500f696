"""Decode throughput: `relaydeck events --rows` against `mariadb-binlog -vv` on the same relay log.

Both run side by side, interleaved, in one invocation (the machines are shared and noisy, so only
the ratio measured this way means anything). Prints the figures and writes them to
benchmarks/results/decode_throughput.json.

    python benchmarks/decode_throughput.py [--size MB] [--workload NAME] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from generated_logs import add_relay_log_options, ensure_relay_log  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402


def run_timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) for one run, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_relay_log_options(parser, workload="oltp")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    binlog_tool = shutil.which("mariadb-binlog")
    if binlog_tool is None:
        print("mariadb-binlog is not installed (apt-get install mariadb-client)", file=sys.stderr)
        return 2
    index = ensure_relay_log(args.workload, args.size, args.seed)
    files = [str(index.parent / line.strip()) for line in index.read_text().splitlines() if line.strip()]
    total_bytes = sum(os.path.getsize(f) for f in files)

    # Count events once, through the same decoder, for events/s.
    from engine.relaylog.index import read_index
    from engine.relaylog.stream import stream_events

    events = sum(1 for _ in stream_events(read_index(index)))

    ours_cmd = [sys.executable, "-m", "console.cli", "events", "--rows", str(index)]
    peer_cmd = [binlog_tool, "--base64-output=decode-rows", "-vv", *files]
    ours, peer = [], []
    for _ in range(args.repeats):  # interleaved so both see the same machine load
        ours.append(run_timed(ours_cmd))
        peer.append(run_timed(peer_cmd))

    def summary(runs: list[tuple[float, float]]) -> dict[str, float]:
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        return {
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "mb_per_s_wall": round(total_bytes / 1e6 / wall, 2),
            "mb_per_s_cpu": round(total_bytes / 1e6 / cpu, 2),
            "events_per_s_wall": round(events / wall),
        }

    result = {
        **measurement_header(),
        "workload": args.workload,
        "seed": args.seed,
        "relay_log_bytes": total_bytes,
        "relay_log_files": len(files),
        "events": events,
        "repeats": args.repeats,
        "relaydeck_events_rows": summary(ours),
        "mariadb_binlog_decode_rows_vv": summary(peer),
    }
    result["ratio_relaydeck_to_mariadb_binlog_wall"] = round(
        result["relaydeck_events_rows"]["mb_per_s_wall"]
        / result["mariadb_binlog_decode_rows_vv"]["mb_per_s_wall"],
        3,
    )
    result["ratio_relaydeck_to_mariadb_binlog_cpu"] = round(
        result["relaydeck_events_rows"]["mb_per_s_cpu"]
        / result["mariadb_binlog_decode_rows_vv"]["mb_per_s_cpu"],
        3,
    )
    write_results("decode_throughput", result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
