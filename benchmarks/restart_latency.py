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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource"
sys.path.insert(0, str(ROOT))

from commands import replay_command  # noqa: E402
from generated_logs import ensure_relay_log  # noqa: E402
from machine import measurement_header, write_bytecode, write_results  # noqa: E402

from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences  # noqa: E402


@dataclass(frozen=True)
class Source:
    """Relay logs to replay: a folder copied for each run, its channels (name -> index file in
    it), the oracle's folder and how many transactions the channels hold."""

    name: str
    relay: Path
    channels: dict[str, str]
    expected: Path
    transactions: int


CAPTURE_SOURCE = Source(
    "the MariaDB capture",
    CAPTURE / "relay",
    {"m1": "relay-bin-m1.index", "m2": "relay-bin-m2.index"},
    CAPTURE / "expected",
    2145 + 303,  # the capture's two channels (its README)
)
WAL_POLL_S = 0.002
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
APPLIERS: dict[str, list[str]] = {
    "single": [],
    **{
        f"threads-{kind}": ["--workers", "4", "--parallel-type", kind, "--preserve-commit-order", "off"]
        for kind in ("database", "logical_clock", "writeset")
    },
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
    """A fresh copy of a source's relay logs with an empty slave and repository."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.folder = Path(tempfile.mkdtemp(prefix="relaydeck-restart-"))
        shutil.copytree(source.relay, self.folder / "relay", ignore=shutil.ignore_patterns("expected"))
        self.slave = self.folder / "slave.duckdb"
        self.repository = self.folder / "repository.sqlite"

    def command(self, options: list[str]) -> list[str]:
        channels = [f"{name}={self.folder / 'relay' / index}" for name, index in self.source.channels.items()]
        return replay_command(self.slave, self.repository, channels, options)

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
            problems = differences(slave, self.source.expected)
            records, distinct = slave.con.execute(
                "SELECT count(*), count(DISTINCT (channel, seqno)) FROM __relaydeck.commits"
            ).fetchone()
        finally:
            slave.close()
        if records != distinct:
            problems.append(f"{records - distinct} transactions committed twice")
        if distinct != self.source.transactions:
            problems.append(f"{distinct} of {self.source.transactions} transactions have a commit record")
        return problems

    def copy(self) -> Lab:
        """Another lab holding the same files (a crashed slave, to restart twice)."""
        twin = Lab.__new__(Lab)
        twin.source = self.source
        twin.folder = Path(tempfile.mkdtemp(prefix="relaydeck-restart-"))
        shutil.copytree(self.folder, twin.folder, dirs_exist_ok=True)
        twin.slave = twin.folder / self.slave.name
        twin.repository = twin.folder / self.repository.name
        return twin

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def run_to_end(lab: Lab, options: list[str], timeout: float, code: Path = ROOT) -> dict[str, object]:
    """The replay (of the checkout `code`) until it exits, watching the slave's write-ahead log
    grow meanwhile."""
    started = utc_now()
    clock = time.monotonic()
    proc = subprocess.Popen(
        lab.command(options), cwd=code, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    largest_wal = 0
    cpu: list[tuple[float, float]] = []  # (seconds after the start, CPU seconds the process used)
    while proc.poll() is None:
        largest_wal = max(largest_wal, lab.wal_size())
        used = cpu_seconds(proc.pid)
        if used is not None:
            cpu.append((time.monotonic() - clock, used))
        if time.monotonic() - clock > timeout:
            proc.kill()
        time.sleep(WAL_POLL_S)
    seconds = time.monotonic() - clock
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr is not None else ""
    if proc.stderr is not None:
        proc.stderr.close()
    first, last, count = lab.commit_times(started)
    problems = (
        lab.check() if proc.returncode == 0 else [f"exit status {proc.returncode}: {stderr.strip()[-300:]}"]
    )
    return {
        "seconds": round(seconds, 3),
        "first_commit_s": first,
        "first_commit_cpu_s": None if first is None else cpu_until(cpu, first),
        "last_commit_s": last,
        "transactions": count,
        "largest_wal_bytes": largest_wal,
        "exact": not problems,
        "problems": problems,
    }


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of a running process, all its threads (not its children)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_until(samples: list[tuple[float, float]], at: float) -> float | None:
    """The CPU time used by `at` seconds after the start (the last sample before it)."""
    before = [used for when, used in samples if when <= at]
    return round(before[-1], 2) if before else None


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


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure_applier(
    source: Source,
    name: str,
    options: list[str],
    fractions: list[float],
    timeout: float,
    baseline: Path | None,
) -> dict[str, object]:
    """Clean start, then a restart after each kill; with a baseline checkout, the same restart
    by it too, from a copy of the same crashed slave, the two in alternating order."""
    codes = {"this": ROOT, **({"baseline": baseline} if baseline is not None else {})}
    clean: dict[str, dict[str, object]] = {}
    for label, code in codes.items():
        lab = Lab(source)
        try:
            clean[label] = run_to_end(lab, options, timeout, code)
        finally:
            lab.remove()
        print(
            f"{name} ({label}): clean start: first commit after {clean[label]['first_commit_s']} s "
            f"({clean[label]['first_commit_cpu_s']} s CPU), "
            f"last {clean[label]['last_commit_s']} s, exit after {clean[label]['seconds']} s, "
            f"{'exact' if clean[label]['exact'] else '; '.join(clean[label]['problems'])}",  # type: ignore[arg-type]
            flush=True,
        )
    restarts = []
    wal = int(clean["this"]["largest_wal_bytes"])  # type: ignore[call-overload]
    for number, fraction in enumerate(fractions if clean["this"]["exact"] and wal else []):
        lab = Lab(source)
        twin: Lab | None = None
        try:
            killed = kill_at(lab, options, max(1, int(fraction * wal)))
            row: dict[str, object] = {
                "fraction": fraction,
                **killed,
                "left_by_kill": source.transactions - int(killed["transactions"]),  # type: ignore[call-overload]
            }
            labs = {"this": lab}
            if baseline is not None:
                twin = lab.copy()
                labs["baseline"] = twin
            order = list(codes) if number % 2 == 0 else list(reversed(codes))
            for label in order:
                row[label] = run_to_end(labs[label], options, timeout, codes[label])
        finally:
            lab.remove()
            if twin is not None:
                twin.remove()
        restarts.append(row)
        print(
            f"  killed at {row['killed_at_s']} s ({row['left_by_kill']} transactions left): "
            + "; ".join(
                f"{label} restart: first commit after {row[label]['first_commit_s']} s "  # type: ignore[index]
                f"({row[label]['first_commit_cpu_s']} s CPU), done in "  # type: ignore[index]
                f"{row[label]['seconds']} s, {'exact' if row[label]['exact'] else row[label]['problems']}"  # type: ignore[index]
                for label in codes
            ),
            flush=True,
        )
    result: dict[str, object] = {"options": options, "clean_start": clean, "restarts": restarts}
    landed = [r for r in restarts if not r["finished_first"]]
    for metric in ("first_commit_s", "first_commit_cpu_s"):
        for label in codes:
            values = [float(r[label][metric]) for r in landed if r[label][metric] is not None]  # type: ignore[index]
            result[f"{label}_restart_{metric}_median"] = median(values)
            result[f"{label}_restart_{metric}_max"] = max(values) if values else None
        if baseline is not None:
            ratios = [
                float(r["this"][metric]) / float(r["baseline"][metric])  # type: ignore[index]
                for r in landed
                if r["this"][metric] is not None and r["baseline"][metric]  # type: ignore[index]
            ]
            result[f"restart_{metric}_ratio_this_over_baseline_median"] = median(ratios)
    result["exact"] = all(c["exact"] for c in clean.values()) and all(
        r[label]["exact"]  # type: ignore[index]
        for r in restarts
        for label in codes
    )
    return result


def startup_only(repeats: int, code: Path = ROOT) -> float:
    """The interpreter's start and the imports a replay needs, median seconds."""
    times = []
    for _ in range(repeats):
        clock = time.monotonic()
        subprocess.run(
            [sys.executable, "-c", "import console.cli, engine.replay"], cwd=code, env=child_env(), check=True
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
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="CHECKOUT",
        help="another revision's checkout: each restart also by it, from a copy of the same crashed slave",
    )
    parser.add_argument(
        "--generated",
        type=float,
        metavar="MB",
        help="also a generated OLTP log of this size (made once, reused)",
    )
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    fractions = [float(f) for f in args.kills.split(",")]
    names = args.appliers.split(",") + (["spark"] if args.spark and "spark" not in args.appliers else [])
    unknown = [n for n in names if n not in APPLIERS]
    if unknown:
        parser.error(f"unknown applier {', '.join(unknown)}; known: {', '.join(APPLIERS)}")
    baseline = args.compare_with.resolve() if args.compare_with else None
    if baseline is not None:
        write_bytecode(baseline)
    codes = {"this": ROOT, **({"baseline": baseline} if baseline else {})}

    sources = [CAPTURE_SOURCE]
    if args.generated:
        index = ensure_relay_log("oltp", args.generated, 1)
        sources.append(generated_source(index, args.generated))
    for code in codes.values():
        startup_only(1, code)  # compiles the bytecode
    results: dict[str, object] = {
        **measurement_header(),
        "revision": revision(ROOT),
        "baseline": revision(baseline) if baseline else None,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "startup_and_imports_s": {label: startup_only(5, code) for label, code in codes.items()},
        "sources": {},
    }
    print(f"interpreter start and imports (median of 5): {results['startup_and_imports_s']} s", flush=True)
    everything_exact = True
    for source in sources:
        print(f"\n{source.name} ({source.transactions} transactions)", flush=True)
        appliers: dict[str, dict[str, object]] = {}
        for name in names:
            appliers[name] = measure_applier(source, name, APPLIERS[name], fractions, args.timeout, baseline)
        results["sources"][source.name] = {  # type: ignore[index]
            "relay": str(source.relay.relative_to(ROOT)),
            "transactions": source.transactions,
            "appliers": appliers,
        }
        print_table(source, appliers, baseline is not None)
        everything_exact = everything_exact and all(r["exact"] for r in appliers.values())
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    out = write_results("restart_latency", results)
    print(f"written to {out.relative_to(ROOT)}")
    return 0 if everything_exact else 1


def revision(checkout: Path) -> str:
    """The checkout's commit, when it is a git checkout."""
    found = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    return found.stdout.strip() if found.returncode == 0 else str(checkout)


def generated_source(index: Path, size: float) -> Source:
    """A generated OLTP log: no DDL after its first transactions, so what follows a kill is one
    long stretch of row transactions."""
    manifest = json.loads((index.parent / "expected" / "manifest.json").read_text())
    return Source(
        f"a generated {size:g} MB OLTP log",
        index.parent,
        {"": index.name},
        index.parent / "expected",
        manifest["generator"]["transactions"],
    )


def print_table(source: Source, appliers: dict[str, dict[str, object]], compared: bool) -> None:
    print(f"\n{source.name}: start to first commit after a kill, median/max: wall seconds, CPU seconds")
    header = f"{'applier':<24}{'clean start':>12}{'restart':>14}{'restart CPU':>14}"
    if compared:
        header += f"{'baseline':>14}{'baseline CPU':>14}{'ratio':>7}{'CPU ratio':>10}"
    print(header + "  tables")
    for name, r in appliers.items():
        clean = r["clean_start"]["this"]  # type: ignore[index]

        def pair(label: str, metric: str, r: dict[str, object] = r) -> str:
            return f"{r[f'{label}_restart_{metric}_median']}/{r[f'{label}_restart_{metric}_max']}"

        line = f"{name:<24}{clean['first_commit_s']!s:>12}{pair('this', 'first_commit_s'):>14}"
        line += f"{pair('this', 'first_commit_cpu_s'):>14}"
        if compared:
            line += f"{pair('baseline', 'first_commit_s'):>14}{pair('baseline', 'first_commit_cpu_s'):>14}"
            line += f"{r['restart_first_commit_s_ratio_this_over_baseline_median']!s:>7}"
            line += f"{r['restart_first_commit_cpu_s_ratio_this_over_baseline_median']!s:>10}"
        print(line + f"  {'exact' if r['exact'] else 'DIFFER'}")


if __name__ == "__main__":
    sys.exit(main())
