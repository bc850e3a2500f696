"""Peak memory of each applier replaying the same generated relay log.

    python benchmarks/peak_memory.py [--size MB] [--workload NAME] [--appliers NAME ...]

Each applier runs as its own `relaydeck replay` process on a generated relay log (default: the
`large` workload, bulk transactions of thousands of rows, 100 MB). Reported per applier:
  - largest_process_peak_rss_mb: the peak resident set of the largest process of the run (the
    applier, or one of the process pool's workers), exact, from the kernel (wait4);
  - process_tree_peak_pss_mb: the peak of the run's processes together, sampled ten times a second
    from /proc (proportional set size, so that pages a forked worker shares are counted once);
  - the time, transactions/s and whether the tables match the generator's oracle.
Figures are printed and written to benchmarks/results/peak_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from commands import replay_command  # noqa: E402
from generated_logs import add_relay_log_options, ensure_relay_log  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402

from engine.replay import ChannelSpec, relay_bytes  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402

# name -> `relaydeck replay` options
APPLIERS = {
    "single": [],
    "threads-4-writeset": ["--workers", "4", "--parallel-type", "writeset"],
    "processes-2": ["--workers", "2", "--pool", "processes"],
    "spark-2": ["--workers", "2", "--pool", "spark"],
}
DEFAULT_APPLIERS = ("single", "threads-4-writeset", "processes-2")


def _parents() -> dict[int, int]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            out[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    return out


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kb(root: int) -> int:
    """The proportional set size of a process and all its descendants, in kB."""
    parents = _parents()
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(_pss_kb(pid) for pid in tree)


def replay_measured(index: Path, options: list[str]) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="relaydeck-memory-"))
    try:
        cmd = replay_command(work / "slave.duckdb", work / "repo.sqlite", [f"={index}"], options)
        log = (work / "output").open("w+")
        start = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        peak_tree = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak_tree
            while not done.wait(0.1):
                peak_tree = max(peak_tree, tree_pss_kb(child.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        slave = Slave(work / "slave.duckdb")
        try:
            identical = child.returncode == 0 and not differences(slave, index.parent / "expected")
            transactions = slave.con.execute("SELECT count(*) FROM __relaydeck.commits").fetchone()[0]  # type: ignore[index]
        finally:
            slave.close()
        return {
            "largest_process_peak_rss_mb": round(usage.ru_maxrss / 1024),
            "process_tree_peak_pss_mb": round(peak_tree / 1024),
            "seconds": round(seconds, 2),
            "trx_per_s": round(transactions / seconds),
            "identical_tables": identical,
            "output": Path(log.name).read_text().strip().splitlines()[-1:],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_relay_log_options(parser, workload="large")
    parser.add_argument("--appliers", nargs="*", choices=sorted(APPLIERS), default=list(DEFAULT_APPLIERS))
    args = parser.parse_args()
    index = ensure_relay_log(args.workload, args.size, args.seed)
    results: dict[str, object] = {
        **measurement_header(),
        "workload": args.workload,
        "seed": args.seed,
        "relay_log_bytes": relay_bytes(ChannelSpec("", index)),
    }
    appliers = {}
    for name in args.appliers:
        appliers[name] = {"options": " ".join(APPLIERS[name]), **replay_measured(index, APPLIERS[name])}
        print(json.dumps({name: appliers[name]}), flush=True)
    results["appliers"] = appliers
    write_results("peak_memory", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
