"""SIGKILL storm: `relaydeck replay --workers 4` killed at random moments, lap after lap, under
every parallel type, commit order and preparing executor, then a run to the end.

    python benchmarks/kill_storm.py [--kills N] [--kill-seed N] [--size MB] [--seed N]
                                    [--spark-master URL] [--keep]

One generated relay log (with the generator's oracle) and one slave and repository, reused by
every lap as a DBA changing settings between restarts would reuse them. Lap i runs the i-th
configuration of a rotation over parallel type × commit order × executor (threads, processes,
Spark in local mode), as a process of its own, and SIGKILLs it at a random moment drawn from a
seeded generator (--kill-seed, printed). Spark laps are killed alternately during Spark's start
(local processes prepare meanwhile) and only once a Spark task is seen preparing a segment in the
repository's pool stats (relaydeck_pool_stats, what `relaydeck status` shows of the pool). Spark
gets a segment only after those submitted while it started (9 of 24 MB with 4 workers on a
resumed slave): a lap that is to be killed on Spark with less log than that left first has the
rest applied to the end (checked like the final run) and starts on an empty slave, where the
writeset applier submits few segments ahead while it creates the tables, hence the 300 MB log by
default. Under database and logical_clock Spark may still get nothing: the applier takes every
prepared segment at once and submits as many again, so local processes had prepared the whole
log 20 s into a logical_clock lap on an empty slave and Spark was ready at 60 s (measured on 2
busy cores); such a lap is killed after SPARK_READY_TIMEOUT_S and counted under "Spark ready, no
task preparing".

After every kill:
- nothing applied twice: the slave's commit records, their distinct ordinals and their distinct
  relay-log positions are as many;
- the recovery picture (`relaydeck recovery`) names the gaps after the low-water mark with no
  problem, and they are exactly the ordinals without a commit record;
- no process of the lap outlives it: each lap runs with a marker in its environment, which the
  forked preparing processes, Spark's JVM and its Python workers inherit; /proc is searched for
  it until none is left (a JVM killed during its start reads its closed stdin only once started).
The next lap, under another configuration, fills the gaps the killed one left. A lap that ends
before its kill (the log replayed to the end) is checked like the final run and the storm goes
on from an empty slave. After --kills kills, a run to the end: the tables must equal the oracle,
every transaction must have exactly one commit record, the low-water mark must be the last
transaction with no gap, and no file through which a killed lap's preparing processes handed
results over (engine/pool/handover.py) may be left in /dev/shm. Figures are printed and written to benchmarks/results/kill_storm.json.
The exit status is 0 only if every check held.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from commands import replay_command  # noqa: E402
from generated_logs import add_relay_log_options, ensure_relay_log  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402
from marked_processes import marked_processes, wait_until_gone  # noqa: E402

from engine.applier.processes import SEGMENT_BYTES  # noqa: E402
from engine.applier.vocabulary import PARALLEL_TYPES  # noqa: E402
from engine.pool.ahead import SEGMENTS_AHEAD_PER_WORKER  # noqa: E402
from engine.pool.executors import EXECUTOR_KINDS  # noqa: E402
from engine.pool.handover import PREFIX as HANDOVER_PREFIX  # noqa: E402
from engine.pool.handover import SHARED_MEMORY  # noqa: E402
from engine.pool.spark import SEGMENT_SCALE  # noqa: E402

WORKERS = 4
# Small DuckDB transactions and frequent checkpoints: workers overlap and commit out of order, so
# kills with commit order off leave gaps (the final run drops --group-size and goes fast)
LAP_OPTIONS = ("--group-size", "20", "--checkpoint-period", "50")
# A lap without Spark is killed this many seconds after it starts (the interpreter's start and
# gap recovery included: a kill may land in either; on 2 busy cores the first commit comes 2-4 s
# after the start)
KILL_WINDOW_S = (1.5, 6.0)
# A Spark lap killed during Spark's start: this many seconds after the lap starts (a local
# Spark takes 10-60 s to be ready on 2 busy cores)
SPARK_START_KILL_WINDOW_S = (1.0, 12.0)
# A Spark lap killed while Spark prepares: this many seconds after a Spark task is seen preparing
SPARK_PREPARING_KILL_WINDOW_S = (0.0, 3.0)
SPARK_READY_TIMEOUT_S = 150.0
# A resumed lap submits this many segments ahead at once, all to local processes while Spark
# starts: Spark prepares only if more log than that is left (Spark's segments are SEGMENT_SCALE
# times the usual size)
SPARK_NEEDS_BYTES = SEGMENT_BYTES * SEGMENT_SCALE * (WORKERS * SEGMENTS_AHEAD_PER_WORKER + 2)
POLL_S = 0.25
# How long a lap's processes may take to end after its kill (a JVM killed during its start
# notices only once started) before they count as left over
LEFTOVER_GRACE_S = 90.0
MARKER = "RELAYDECK_KILL_STORM_LAP"

SPARK_STARTING = "Spark starting"
SPARK_PREPARING = "preparing on Spark"
SPARK_READY = "Spark ready, no task preparing"
NO_POOL_YET = "before the pool reported"


@dataclass(frozen=True, slots=True)
class Configuration:
    parallel_type: str
    commit_order: str  # "on" / "off"
    pool: str  # an EXECUTOR_KINDS

    def options(self, spark_master: str | None) -> list[str]:
        options = [
            "--workers",
            str(WORKERS),
            "--parallel-type",
            self.parallel_type,
            "--preserve-commit-order",
            self.commit_order,
            "--pool",
            self.pool,
        ]
        if self.pool == "spark" and spark_master:
            options += ["--spark-master", spark_master]
        return options

    def __str__(self) -> str:
        return f"{self.parallel_type} order={self.commit_order} pool={self.pool}"


def rotation(pools: tuple[str, ...] = EXECUTOR_KINDS) -> tuple[Configuration, ...]:
    """Every parallel type × commit order × executor; the executor changes from lap to lap."""
    return tuple(
        Configuration(kind, order, pool)
        for kind in PARALLEL_TYPES
        for order in ("on", "off")
        for pool in pools
    )


@dataclass
class StormResults:
    kills: int = 0
    laps: int = 0
    kills_per_configuration: Counter[str] = field(default_factory=Counter)
    spark_kills_by_phase: Counter[str] = field(default_factory=Counter)
    laps_ended_before_kill: list[dict[str, object]] = field(default_factory=list)
    runs_to_the_end: list[dict[str, object]] = field(default_factory=list)  # before the final one
    kills_that_left_gaps: int = 0
    gap_transactions_seen: int = 0
    gap_transactions_recovered: int = 0
    longest_outliving_s: float = 0.0  # after a kill, until the last of the lap's processes ended
    stale_task_folders: list[int] = field(default_factory=list)  # after each lap (stale_task_folders)
    stale_handovers: list[int] = field(default_factory=list)  # after each lap (stale_handover_files)
    processes_at_kill: Counter[str] = field(default_factory=Counter)  # kinds alive when killed
    leftover_processes: list[dict[str, object]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    final: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "kills": self.kills,
            "laps": self.laps,
            "kills_per_configuration": dict(sorted(self.kills_per_configuration.items())),
            "spark_kills_by_phase": dict(self.spark_kills_by_phase),
            "laps_ended_before_kill": self.laps_ended_before_kill,
            "runs_to_the_end_before_the_final_one": self.runs_to_the_end,
            "kills_that_left_gaps": self.kills_that_left_gaps,
            "gap_transactions_seen": self.gap_transactions_seen,
            "gap_transactions_recovered": self.gap_transactions_recovered,
            "processes_alive_at_kills": dict(self.processes_at_kill),
            "longest_process_outlived_kill_s": round(self.longest_outliving_s, 1),
            "leftover_processes": self.leftover_processes,
            "stale_spark_task_folders": {
                "before_the_storm": self.stale_task_folders[0] if self.stale_task_folders else 0,
                "most_after_a_lap": max(self.stale_task_folders[1:], default=0),
                "at_the_end": self.stale_task_folders[-1] if self.stale_task_folders else 0,
            },
            "stale_handover_files": {
                "before_the_storm": self.stale_handovers[0] if self.stale_handovers else 0,
                "most_after_a_lap": max(self.stale_handovers[1:], default=0),
                "at_the_end": self.stale_handovers[-1] if self.stale_handovers else 0,
            },
            "failures": self.failures,
            "final": self.final,
        }


# -- the lap's processes -----------------------------------------------------------------------


def process_kind(command: str) -> str:
    if "pyspark.daemon" in command or "pyspark.worker" in command:
        return "pyspark worker"
    if "java" in command.split(" ", 1)[0] or "org.apache.spark" in command:
        return "Spark JVM"
    if "spark-submit" in command or "spark-class" in command:
        return "spark-submit"
    if "console.cli" in command:
        return "forked preparing process"  # the replay itself is dead: these are its forks
    return "other"


def stale_task_folders() -> list[str]:
    """The Spark tasks' segment folders (engine/pool/spark.py) in the temporary folder whose
    process has ended: what killed tasks left (the next Spark task on the machine removes them)."""
    prefix = "relaydeck-segment-"
    stale = []
    for entry in os.scandir(tempfile.gettempdir()):
        if entry.name.startswith(prefix):
            pid = entry.name[len(prefix) :].split("-", 1)[0]
            if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
                stale.append(entry.name)
    return stale


def stale_handover_files() -> list[str]:
    """The files in /dev/shm through which preparing processes hand results over
    (engine/pool/handover.py) whose applier has ended: what a killed applier left (the next
    executor started on the machine removes them)."""
    try:
        names = os.listdir(SHARED_MEMORY)
    except OSError:
        return []
    stale = []
    for name in names:
        if name.startswith(HANDOVER_PREFIX):
            pid = name[len(HANDOVER_PREFIX) :].split("-", 1)[0]
            if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
                stale.append(name)
    return stale


# -- what the running lap's pool is doing --------------------------------------------------------


def pool_phase(repository: Path, lap_started: str) -> str:
    """What the lap's preparing pool does now, as its repository shows (read only)."""
    if not repository.exists():
        return NO_POOL_YET
    try:
        con = sqlite3.connect(f"file:{repository}?mode=ro", uri=True, timeout=1.0)
        try:
            stats = con.execute(
                "SELECT started_at FROM relaydeck_channel_stats WHERE channel = ''"
            ).fetchone()
            if stats is None or (stats[0] or "") < lap_started:  # a previous lap's rows
                return NO_POOL_YET
            slots = con.execute("SELECT slot, state FROM relaydeck_pool_stats WHERE channel = ''").fetchall()
        finally:
            con.close()
    except sqlite3.Error:  # tables not created yet, or locked for longer than the timeout
        return NO_POOL_YET
    if any(slot.startswith("spark task") and state == "preparing" for slot, state in slots):
        return SPARK_PREPARING
    if any(slot.startswith("spark task") for slot, _ in slots):
        return SPARK_READY
    if any("Spark starting" in slot for slot, _ in slots):
        return SPARK_STARTING
    return NO_POOL_YET


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


# -- the checks ------------------------------------------------------------------------------------


def commit_record_counts(slave: Path) -> tuple[int, int, int]:
    """(commit records, distinct (channel, ordinal), distinct (channel, relay position))."""
    import duckdb

    con = duckdb.connect(str(slave), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*), count(DISTINCT (channel, seqno)), "
            "count(DISTINCT (channel, relay_log_file, relay_log_pos)) FROM __relaydeck.commits"
        ).fetchone()
        assert row is not None
        return row[0], row[1], row[2]
    finally:
        con.close()


def committed_among(slave: Path, ordinals: list[int]) -> set[int]:
    """Those of these ordinals of the default channel that have a commit record."""
    import duckdb

    con = duckdb.connect(str(slave), read_only=True)
    try:
        rows = con.execute(
            "SELECT seqno FROM __relaydeck.commits WHERE channel = '' AND list_contains(?, seqno)",
            [ordinals],
        ).fetchall()
        return {int(seqno) for (seqno,) in rows}
    finally:
        con.close()


def check_after_kill(slave: Path, repository: Path) -> tuple[int, list[str], list[int]]:
    """(commit records, problems, the gap ordinals) of the slave a killed lap left."""
    from engine.applier.recovery import inspect_recovery

    if not slave.exists():
        return 0, [], []
    problems = []
    records, ordinals, positions = commit_record_counts(slave)
    if not records == ordinals == positions:
        problems.append(
            f"applied twice: {records} commit records, {ordinals} distinct ordinals, "
            f"{positions} distinct relay positions"
        )
    if not repository.exists():
        return records, problems, []
    (picture,) = inspect_recovery(slave, repository, "")
    if picture.problem is not None:
        problems.append(f"recovery picture: {picture.problem}")
        return records, problems, []
    committed = [g.ordinal for g in picture.groups if not g.is_gap]
    if len(committed) != picture.committed_after_lwm:
        problems.append(
            f"recovery picture: {picture.committed_after_lwm} committed after the LWM, "
            f"{len(committed)} groups name a worker"
        )
    if picture.groups and [g.ordinal for g in picture.groups] != list(
        range(picture.lwm + 1, picture.groups[-1].ordinal + 1)
    ):
        problems.append("recovery picture: the groups after the LWM are not consecutive ordinals")
    return records, problems, [g.ordinal for g in picture.gaps]


def relay_bytes_left(index: Path, slave: Path) -> int:
    """Relay-log bytes after the slave's low-water mark (all of them without a slave)."""
    import duckdb

    names = [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
    sizes = {name: (index.parent / name).stat().st_size for name in names}
    if not slave.exists():
        return sum(sizes.values())
    con = duckdb.connect(str(slave), read_only=True)
    try:
        row = con.execute(
            "SELECT relay_log_file, relay_log_pos FROM __relaydeck.progress WHERE channel = ''"
        ).fetchone()
    finally:
        con.close()
    if row is None or row[0] is None:
        return sum(sizes.values())
    at = names.index(Path(row[0]).name)
    return sizes[names[at]] - row[1] + sum(sizes[name] for name in names[at + 1 :])


def check_complete(slave: Path, repository: Path, expected: Path, transactions: int) -> list[str]:
    """Every transaction committed exactly once, no gap, the oracle's tables; problems if not."""
    from engine.applier.recovery import inspect_recovery
    from engine.slave.database import Slave
    from engine.slave.export import differences

    problems = []
    counts = commit_record_counts(slave)
    if counts != (transactions,) * 3:
        problems.append(
            f"{transactions} transactions in the log; commit records, ordinals, positions: {counts}"
        )
    (picture,) = inspect_recovery(slave, repository, "")
    if picture.problem is not None or picture.lwm != transactions or picture.gaps:
        problems.append(
            f"recovery picture at the end: LWM {picture.lwm} of {transactions}, "
            f"gaps {[g.ordinal for g in picture.gaps]}, problem {picture.problem}"
        )
    database = Slave(slave, read_only=True)
    try:
        problems += differences(database, expected)
    finally:
        database.close()
    return problems


# -- the storm ---------------------------------------------------------------------------------


def storm(
    index: Path,
    kills: int,
    kill_seed: int,
    work: Path,
    *,
    configurations: tuple[Configuration, ...] | None = None,
    spark_master: str | None = None,
    report: Callable[[str], None] = print,
) -> StormResults:
    """Kill replays of the log under the rotating configurations until `kills` kills, checking
    after each; then replay to the end and check against the oracle beside the log."""
    configurations = configurations or rotation()
    expected = index.parent / "expected"
    transactions = json.loads((expected / "manifest.json").read_text())["generator"]["transactions"]
    slave, repository = work / "slave.duckdb", work / "repo.sqlite"
    rng = random.Random(kill_seed)
    results = StormResults()
    token = secrets.token_hex(4)
    spark_laps = 0
    spark_configurations = max(1, sum(c.pool == "spark" for c in configurations))
    open_gaps: set[int] = set()  # gap ordinals kills left that no lap has filled yet
    results.stale_task_folders.append(len(stale_task_folders()))
    results.stale_handovers.append(len(stale_handover_files()))

    def run_lap(configuration: Configuration, options: tuple[str, ...], plan: str | None) -> tuple:
        """Start a lap, kill it as `plan` says (None: let it end); (return code or None if
        killed, seconds, phase at the kill, output)."""
        marker = f"{MARKER}={token}-{results.laps}"
        command = replay_command(
            slave, repository, [f"={index}"], [*configuration.options(spark_master), *options]
        )
        environment = dict(os.environ, **dict([marker.split("=", 1)]))
        output = work / "lap.log"
        lap_started = _utc_now()
        with open(output, "wb") as out:
            started = time.monotonic()
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=out, env=environment)
            phase = None
            if plan is None:
                proc.wait()
            else:
                phase = _wait_for_kill_moment(proc, plan, repository, lap_started, rng, configuration)
            seconds = time.monotonic() - started
            if proc.poll() is None:
                alive = marked_processes(marker)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                for pid, cmd in alive.items():
                    if pid != proc.pid:
                        results.processes_at_kill[process_kind(cmd)] += 1
                code = None
            else:
                code = proc.returncode
        outlived, left = wait_until_gone(marker, LEFTOVER_GRACE_S)
        results.longest_outliving_s = max(results.longest_outliving_s, outlived)
        results.stale_task_folders.append(len(stale_task_folders()))
        results.stale_handovers.append(len(stale_handover_files()))
        if left:
            results.leftover_processes.append(
                {"lap": results.laps, "configuration": str(configuration), "processes": list(left.values())}
            )
            report(f"  LEFT OVER after {LEFTOVER_GRACE_S:.0f} s: {left}")
            for pid in left:  # ended here so that the storm goes on; reported above
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return code, seconds, phase, output.read_text(errors="replace")

    def account_gaps() -> None:
        if open_gaps and slave.exists():
            filled = committed_among(slave, sorted(open_gaps))
            results.gap_transactions_recovered += len(filled)
            open_gaps.difference_update(filled)

    def start_afresh(configuration: Configuration, seconds: float, how: str) -> None:
        """The log was applied to its end: check it like the final run, then empty the slave."""
        problems = check_complete(slave, repository, expected, transactions)
        results.runs_to_the_end.append(
            {
                "after_lap": results.laps,
                "configuration": str(configuration),
                "how": how,
                "seconds": round(seconds, 1),
                "exact": not problems,
            }
        )
        report(f"    {how} ({configuration}, {seconds:.1f} s): {'exact' if not problems else problems}")
        results.failures.extend(problems)
        for path in [*work.glob("slave.duckdb*"), *work.glob("repo.sqlite*")]:
            path.unlink()
        open_gaps.clear()  # all filled: the log was applied to its end

    while results.kills < kills and not results.failures:
        configuration = configurations[results.laps % len(configurations)]
        plan = "timer"
        if configuration.pool == "spark":
            # alternately, and the other way round in the next turn of the rotation, so that
            # each Spark configuration has laps of both kinds
            turn, place = divmod(spark_laps, spark_configurations)
            plan = "spark start" if (turn + place) % 2 == 0 else "spark preparing"
            spark_laps += 1
        if (
            plan == "spark preparing"
            and slave.exists()
            and relay_bytes_left(index, slave) < SPARK_NEEDS_BYTES
        ):
            # Too little log left for Spark to get a segment (the local processes take the
            # first ones while it starts): the rest to the end, and this lap on an empty slave,
            # where a writeset applier submits few segments ahead while it creates the tables.
            local = Configuration(configuration.parallel_type, configuration.commit_order, "processes")
            code, seconds, _, output = run_lap(local, (), None)
            account_gaps()
            if code != 0:
                results.failures.append(
                    f"the run to the end before lap {results.laps + 1} failed: {output[-2000:]}"
                )
                break
            start_afresh(local, seconds, "run to the end, to leave Spark a whole log")
            if results.failures:
                break
        code, seconds, phase, output = run_lap(configuration, LAP_OPTIONS, plan)
        results.laps += 1
        account_gaps()
        if code is not None:
            # ended before its kill: a run to the end (or a failure), checked like the final one
            if code != 0:
                results.failures.append(f"lap {results.laps} ({configuration}) failed: {output[-2000:]}")
                break
            results.laps_ended_before_kill.append(
                {"lap": results.laps, "configuration": str(configuration), "seconds": round(seconds, 1)}
            )
            report(f"lap {results.laps:3} {configuration}: ended before its kill ({seconds:.1f} s)")
            start_afresh(configuration, seconds, "lap ended before its kill")
            continue
        results.kills += 1
        results.kills_per_configuration[str(configuration)] += 1
        if configuration.pool == "spark":
            results.spark_kills_by_phase[phase or NO_POOL_YET] += 1
        records, problems, gaps = check_after_kill(slave, repository)
        if gaps:
            results.kills_that_left_gaps += 1
            results.gap_transactions_seen += len(set(gaps) - open_gaps)
            open_gaps.update(gaps)
        results.failures += [f"lap {results.laps} ({configuration}): {p}" for p in problems]
        report(
            f"lap {results.laps:3} {configuration}: killed at {seconds:5.1f} s"
            f"{f' ({phase})' if configuration.pool == 'spark' else ''}, {records} committed, "
            f"{results.stale_task_folders[-1]} stale task folders, "
            f"{results.stale_handovers[-1]} stale handover files, "
            f"{len(gaps)} gaps{'' if not problems else ' PROBLEMS: ' + '; '.join(problems)}"
        )
    if results.failures:
        return results
    # the rest in large batches (the small ones were there to make workers overlap)
    configuration = configurations[results.laps % len(configurations)]
    code, seconds, _, output = run_lap(configuration, (), None)
    account_gaps()
    problems = [f"the final run failed: {output[-2000:]}"] if code != 0 else []
    if not problems:
        problems = check_complete(slave, repository, expected, transactions)
    if not problems and open_gaps:
        problems.append(f"gaps never filled: {sorted(open_gaps)[:20]}")
    # the final run's executors removed what killed appliers left in /dev/shm, and their own
    left_in_shared_memory = stale_handover_files()
    results.stale_handovers.append(len(left_in_shared_memory))
    if left_in_shared_memory:
        problems.append(f"handover files left in {SHARED_MEMORY}: {left_in_shared_memory[:5]}")
    results.final = {
        "configuration": str(configuration),
        "seconds": round(seconds, 1),
        "transactions": transactions,
        "exact": not problems,
        "problems": problems,
    }
    results.failures += problems
    report(f"final run {configuration}: {seconds:.1f} s, {'exact' if not problems else problems}")
    return results


def _wait_for_kill_moment(
    proc: subprocess.Popen[bytes],
    plan: str,
    repository: Path,
    lap_started: str,
    rng: random.Random,
    configuration: Configuration,
) -> str | None:
    """Sleep until the lap is to be killed (or ends); the pool's phase then (Spark laps)."""
    started = time.monotonic()
    phase = None
    if plan == "timer":
        deadline = started + rng.uniform(*KILL_WINDOW_S)
    elif plan == "spark start":
        deadline = started + rng.uniform(*SPARK_START_KILL_WINDOW_S)
    else:  # "spark preparing": once a Spark task prepares, a little later
        extra = rng.uniform(*SPARK_PREPARING_KILL_WINDOW_S)
        deadline = started + SPARK_READY_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            phase = pool_phase(repository, lap_started)
            if phase == SPARK_PREPARING:
                deadline = time.monotonic() + extra
                break
            time.sleep(POLL_S)
    while proc.poll() is None and time.monotonic() < deadline:
        if configuration.pool == "spark":
            phase = pool_phase(repository, lap_started)
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    if configuration.pool == "spark" and proc.poll() is None:
        phase = pool_phase(repository, lap_started)
    return phase


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_relay_log_options(parser, "oltp")
    parser.set_defaults(size=300.0)
    parser.add_argument(
        "--kills", type=int, default=50, help="SIGKILLs before the run to the end (default 50)"
    )
    parser.add_argument(
        "--kill-seed", type=int, default=None, help="seed of the kill moments (default: random)"
    )
    parser.add_argument(
        "--spark-master", default=None, help="a cluster URL for the Spark laps (default: local mode)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the slave and repository (their folder is printed)"
    )
    args = parser.parse_args()
    kill_seed = args.kill_seed if args.kill_seed is not None else random.randrange(2**31)
    index = ensure_relay_log(args.workload, args.size, args.seed)
    manifest = json.loads((index.parent / "expected" / "manifest.json").read_text())["generator"]
    work = Path(tempfile.mkdtemp(prefix="relaydeck-kill-storm-"))
    print(
        f"kill seed {kill_seed}; {manifest['transactions']} transactions in {index.parent}; slave in {work}"
    )
    started = time.monotonic()
    try:
        results = storm(index, args.kills, kill_seed, work, spark_master=args.spark_master)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    summary = results.to_json()
    out = write_results(
        "kill_storm",
        {
            **measurement_header(),
            "log": {
                "workload": args.workload,
                "size_mb": args.size,
                "seed": args.seed,
                "transactions": manifest["transactions"],
                "bytes": manifest["bytes"],
            },
            "kill_seed": kill_seed,
            "workers": WORKERS,
            "lap_options": list(LAP_OPTIONS),
            "spark_master": args.spark_master or "local",
            **summary,
            "ok": not results.failures,
            "seconds": round(seconds, 1),
        },
    )
    print(
        f"{results.kills} kills in {results.laps} laps ({len(results.laps_ended_before_kill)} ended before their "
        f"kill; {len(results.runs_to_the_end)} runs to the end before the final one, each exact), {results.kills_that_left_gaps} left gaps ({results.gap_transactions_seen} gap transactions, "
        f"{results.gap_transactions_recovered} recovered by the next laps); Spark kills {dict(results.spark_kills_by_phase)}; "
        f"processes outlived a kill by at most {results.longest_outliving_s:.1f} s, "
        f"{len(results.leftover_processes)} left over; stale Spark task folders "
        f"{summary['stale_spark_task_folders']}; stale handover files {summary['stale_handover_files']}; final run "
        f"{'exact' if results.final.get('exact') else 'NOT exact'}; {seconds:.0f} s; {out}"
    )
    for failure in results.failures:
        print(f"FAILED: {failure}")
    return 0 if not results.failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
