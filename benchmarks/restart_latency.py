"""Restart cost after a crash: from the start of `relaydeck replay` to its first commit, after SIGKILL.

    python benchmarks/restart_latency.py [--kills 0.2,0.5,0.8] [--appliers NAME,...] [--spark]

For each applier (the single applier; `--workers 4` threads under each parallel type, commit order
off as in the crash reports; the process pool; with --spark, the Spark pool), on a fresh copy of
the bundled MariaDB capture (both channels into one slave), as a DBA runs it (`python -m
console.cli replay`, a process of its own):

1. an uninterrupted replay: its time to first commit from a clean start, its last commit, and
   how large the slave's DuckDB write-ahead log grew (polled from outside every 2 ms; each commit
   appends to it, and nothing in a run this size checkpoints it away);
2. for each kill point f: a fresh replay SIGKILLed as soon as its write-ahead log reaches f times
   that size, so that the kill lands at the same point of what was committed whatever the
   machine's speed at the time; then the same command again, run to its end: the time from its
   start to its first commit (what a restart costs before it applies anything), how many
   transactions the kill had left to do, and the tables compared with the capture's oracle
   (every transaction committed once, no gap left).

"First commit" is read from outside the process, after it ended: every DuckDB commit of a
transaction writes its commit records (__relaydeck.commits, with a committed_at timestamp) in the
same transaction, so the earliest record stamped after the restart began is its first commit (the
stamp is taken a few milliseconds before that COMMIT returns; commits that only move the position
write no record and do not count). Starts are timed from just before the process is spawned.

Also measured: the interpreter's start and the engine's imports alone (`python -c "import
console.cli, engine.replay"`), which every start pays. Bytecode is compiled once beforehand, as an
installed package has it (PYTHONDONTWRITEBYTECODE is dropped for the child processes).

The machine's cores are shared with whatever else runs: the load average is recorded, and medians
are what to compare. Figures are printed and written to benchmarks/results/restart_latency.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource"
sys.path.insert(0, str(ROOT))

from machine import measurement_header  # noqa: E402

from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402

CHANNELS = ("m1", "m2")
TRANSACTIONS = 2145 + 303  # the capture's two channels (its README)
WAL_POLL_S = 0.002
APPLIERS: dict[str, list[str]] = {
    "single": [],
    "threads-database": ["--workers", "4", "--parallel-type", "database", "--preserve-commit-order", "off"],
    "threads-logical_clock": [
        "--workers",
        "4",
        "--parallel-type",
        "logical_clock",
        "--preserve-commit-order",
        "off",
    ],
    "threads-writeset": ["--workers", "4", "--parallel-type", "writeset", "--preserve-commit-order", "off"],
    "processes": ["--workers", "2", "--pool", "processes"],
    "spark": ["--workers", "2", "--pool", "spark", "--parallel-type", "writeset"],
}


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Lab:
    """A fresh copy of the capture's relay logs with an empty slave and repository."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="relaydeck-restart-"))
        shutil.copytree(CAPTURE / "relay", self.folder / "relay")
        self.slave = self.folder / "slave.duckdb"
        self.repository = self.folder / "repository.sqlite"

    def command(self, options: list[str]) -> list[str]:
        channels = [f"{c}={self.folder / 'relay' / f'relay-bin-{c}.index'}" for c in CHANNELS]
        return [
            sys.executable,
            "-m",
            "console.cli",
            "replay",
            "--slave",
            str(self.slave),
            "--repository",
            str(self.repository),
            *(a for c in channels for a in ("--channel", c)),
            *options,
        ]

    def wal_size(self) -> int:
        try:
            return os.stat(f"{self.slave}.wal").st_size
        except FileNotFoundError:
            return 0

    def commit_times(self, since: dt.datetime) -> tuple[float | None, float | None, int]:
        """(first, last) commit after `since`, in seconds after it, and how many transactions the
        slave holds."""
        if not self.slave.exists():
            return None, None, 0
        slave = Slave(self.slave, read_only=True)
        try:
            if not slave.con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = '__relaydeck' "
                "AND table_name = 'commits'"
            ).fetchone()[0]:
                return None, None, 0
            first, last = slave.con.execute(
                "SELECT min(committed_at), max(committed_at) FROM __relaydeck.commits WHERE committed_at >= ?",
                [since],
            ).fetchone()
            (count,) = slave.con.execute("SELECT count(*) FROM __relaydeck.commits").fetchone()
        finally:
            slave.close()

        def seconds(at: dt.datetime | None) -> float | None:
            return None if at is None else round((at - since).total_seconds(), 3)

        return seconds(first), seconds(last), count

    def check(self) -> list[str]:
        """What is wrong with the final slave (empty: exact, each transaction once)."""
        slave = Slave(self.slave, read_only=True)
        try:
            problems = differences(slave, CAPTURE / "expected")
            records, distinct = slave.con.execute(
                "SELECT count(*), count(DISTINCT (channel, seqno)) FROM __relaydeck.commits"
            ).fetchone()
        finally:
            slave.close()
        if records != distinct:
            problems.append(f"{records - distinct} transactions committed twice")
        if distinct != TRANSACTIONS:
            problems.append(f"{distinct} of {TRANSACTIONS} transactions have a commit record")
        return problems

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def run_to_end(lab: Lab, options: list[str], timeout: float) -> dict[str, object]:
    """The replay until it exits, watching the slave's write-ahead log grow meanwhile."""
    started = utc_now()
    clock = time.monotonic()
    proc = subprocess.Popen(
        lab.command(options), cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    largest_wal = 0
    while proc.poll() is None:
        largest_wal = max(largest_wal, lab.wal_size())
        if time.monotonic() - clock > timeout:
            proc.kill()
        time.sleep(WAL_POLL_S)
    seconds = time.monotonic() - clock
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr is not None else ""
    if proc.stderr is not None:
        proc.stderr.close()
    first, last, count = lab.commit_times(started)
    return {
        "exit": proc.returncode,
        "stderr": stderr.strip()[-500:],
        "seconds": round(seconds, 3),
        "first_commit_s": first,
        "last_commit_s": last,
        "transactions": count,
        "largest_wal_bytes": largest_wal,
    }


def kill_at(lab: Lab, options: list[str], wal_bytes: int) -> dict[str, object]:
    """The replay, SIGKILLed as soon as the slave's write-ahead log holds `wal_bytes`: a point in
    what was committed, not in time, so it lands mid-run however fast the machine is today."""
    started = utc_now()
    clock = time.monotonic()
    proc = subprocess.Popen(
        lab.command(options), cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    finished = True
    while proc.poll() is None:
        if lab.wal_size() >= wal_bytes:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            finished = False
            break
        time.sleep(WAL_POLL_S)
    seconds = time.monotonic() - clock
    _, _, count = lab.commit_times(started)
    return {"killed_at_s": round(seconds, 3), "finished_first": finished, "transactions": count}


def measure_applier(
    name: str, options: list[str], fractions: list[float], timeout: float
) -> dict[str, object]:
    lab = Lab()
    try:
        clean = run_to_end(lab, options, timeout)
        clean["problems"] = lab.check() if clean["exit"] == 0 else ["exit status " + str(clean["exit"])]
    finally:
        lab.remove()
    print(
        f"{name}: clean start: first commit {clean['first_commit_s']} s, last {clean['last_commit_s']} s, "
        f"exit after {clean['seconds']} s{'' if not clean['problems'] else ', ' + '; '.join(clean['problems'])}",
        flush=True,
    )
    restarts = []
    if clean["exit"] == 0 and clean["largest_wal_bytes"]:
        for fraction in fractions:
            lab = Lab()
            try:
                killed = kill_at(lab, options, max(1, int(fraction * int(clean["largest_wal_bytes"]))))
                restart = run_to_end(lab, options, timeout)
                problems = lab.check() if restart["exit"] == 0 else ["exit status " + str(restart["exit"])]
            finally:
                lab.remove()
            row = {
                "fraction": fraction,
                **killed,
                "left_by_kill": TRANSACTIONS - int(killed["transactions"]),
                "restart_first_commit_s": restart["first_commit_s"],
                "restart_seconds": restart["seconds"],
                "exact": not problems,
                "problems": problems,
            }
            restarts.append(row)
            print(
                f"  killed at {row['killed_at_s']} s ({row['left_by_kill']} transactions left): restart's "
                f"first commit after {row['restart_first_commit_s']} s, done in {row['restart_seconds']} s, "
                f"{'exact' if not problems else '; '.join(problems)}",
                flush=True,
            )
    latencies = [
        float(r["restart_first_commit_s"])
        for r in restarts
        if not r["finished_first"] and r["restart_first_commit_s"] is not None
    ]
    return {
        "options": options,
        "clean_start": clean,
        "restarts": restarts,
        "restart_first_commit_median_s": round(statistics.median(latencies), 3) if latencies else None,
        "restart_first_commit_max_s": max(latencies) if latencies else None,
        "exact": not clean["problems"] and all(r["exact"] for r in restarts),
    }


def startup_only(repeats: int) -> float:
    """The interpreter's start and the imports a replay needs, median seconds."""
    times = []
    for _ in range(repeats):
        clock = time.monotonic()
        subprocess.run(
            [sys.executable, "-c", "import console.cli, engine.replay"], cwd=ROOT, env=child_env(), check=True
        )
        times.append(time.monotonic() - clock)
    return round(statistics.median(times), 3)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kills", default="0.2,0.5,0.8", help="kill points: fractions of a clean run's write-ahead log"
    )
    parser.add_argument("--appliers", default=",".join(a for a in APPLIERS if a != "spark"))
    parser.add_argument("--spark", action="store_true", help="also the Spark pool (starts a JVM per run)")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    fractions = [float(f) for f in args.kills.split(",")]
    names = args.appliers.split(",") + (["spark"] if args.spark and "spark" not in args.appliers else [])
    unknown = [n for n in names if n not in APPLIERS]
    if unknown:
        parser.error(f"unknown applier {', '.join(unknown)}; known: {', '.join(APPLIERS)}")

    startup_only(1)  # compiles the bytecode
    results: dict[str, object] = {
        **measurement_header(),
        "capture": str(CAPTURE.relative_to(ROOT)),
        "transactions": TRANSACTIONS,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "startup_and_imports_s": startup_only(5),
        "appliers": {},
    }
    print(f"interpreter start and imports: {results['startup_and_imports_s']} s (median of 5)", flush=True)
    appliers: dict[str, object] = {}
    for name in names:
        appliers[name] = measure_applier(name, APPLIERS[name], fractions, args.timeout)
    results["appliers"] = appliers
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print()
    print(f"{'applier':<24}{'clean start':>12}{'restart median':>16}{'restart max':>13}  tables")
    for name, r in appliers.items():
        assert isinstance(r, dict)
        print(
            f"{name:<24}{r['clean_start']['first_commit_s']!s:>12}{r['restart_first_commit_median_s']!s:>16}"
            f"{r['restart_first_commit_max_s']!s:>13}  {'exact' if r['exact'] else 'DIFFER'}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "restart_latency.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {out.relative_to(ROOT)}")
    return 0 if all(isinstance(r, dict) and r["exact"] for r in appliers.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
