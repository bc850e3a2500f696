"""SIGKILL storm of `relaydeck serve` replicating a live MariaDB under sysbench: every restart goes on
by itself (no statement typed), and the tables end exactly as the source's.

    python benchmarks/serve_kill_storm.py [--kills N] [--kill-seed N] [--rate R] [--configs 0,4]
                                          [--tables N] [--table-size N] [--keep]

A private mariadbd on 127.0.0.1 is the source: sysbench prepares oltp_write_only tables, then runs
it with 4 threads at --rate transactions a second (0: as fast as it goes) for the whole storm. Each
configuration (replica_parallel_workers = N, one per --configs entry) is a configuration file of
its own, with its own slave and repository, whose channel `live` receives from the source with
source_use_gtid = "slave_pos" and source_connect_retry = 1, as a DBA would set it up. The
configurations take laps in turn, so each restart finds the source ahead by the other's lap, as
after a real outage, and both see the same load. A lap starts `relaydeck serve CONFIG` and SIGKILLs
it at a moment drawn from a seeded generator (--kill-seed, printed):
- half the laps wait until serve applied something new (its executed GTID set moved), then a
  random time more: the kill lands while the receiver writes relay files and the applier follows
  them, mid-transaction or between two, often while still catching up;
- some wait until serve caught up with the source's position at its start, then a random time
  more: they measure the catch-up, kill in the steady state under the load, and keep the backlog
  from growing lap after lap (each configuration is down while the other takes its lap);
- the others are killed a random time after the start, before the first new commit is to be
  expected (the median of that configuration's laps so far): in the interpreter's start, in the
  channel's configuration or in the applier's recovery of what the previous kill left.

After each kill, from the repository (`relaydeck status --json`) and the slave (read only):
- Last_SQL_Errno and Last_IO_Errno are 0: any error would stop the channel until a DBA acts;
- nothing applied twice: the slave's commit records (one per transaction, written in the
  transaction's own DuckDB commit) have as many distinct ordinals, GTIDs and relay positions;
- no process of the lap outlives it (serve, or any process it forked): each lap runs with a
  marker in its environment, and /proc is searched for it.
A restart "needed a statement" if it applied nothing new within FIRST_COMMIT_TIMEOUT_S although the
source kept writing. Recorded per lap: how far the source was ahead at the start, the transactions
applied, executed and retrieved GTIDs at the kill, the time to the first new commit and, when
reached before the kill, the time from serve's start until executed reached the source's
@@gtid_binlog_pos read at that start (catch-up).

Then the load stops and each configuration's serve starts once more: executed must reach the
source's final @@gtid_binlog_pos within FINAL_TIMEOUT_S with no error, retrieved the same; SIGTERM
must end it with exit status 0; the slave must hold exactly one commit record per source
transaction; every sbtest table must equal the source's, row by row in id order, every column.
Figures are printed and written to benchmarks/results/serve_kill_storm.json. The exit status is 0
only if every check held. The work folder (source, slaves, repositories, each serve's output) is
removed at the end unless --keep is given or a check failed; then its path is printed.
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
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from commands import relaydeck_command  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402
from marked_processes import kill_all, marked_processes, wait_until_gone  # noqa: E402

from tests.mariadb_server import MariaDBServer, start_server  # noqa: E402

DATABASE = "sbtest"
CHANNEL = "live"
POLL_S = 0.1
# A restart under load that applied nothing new in this long did not go on by itself
FIRST_COMMIT_TIMEOUT_S = 120.0
# The run after the storm: until executed reaches the source's final position
FINAL_TIMEOUT_S = 300.0
# Share of laps killed before their first new commit (start, configuration, recovery)
START_KILL_SHARE = 0.2
# Share of laps killed only once caught up with the source's position at their start: they measure
# the catch-up, and they keep the backlog from growing lap after lap (each configuration is down
# while the other takes its lap)
CAUGHT_UP_SHARE = 0.3
# Such a kill lands this long after the start at most before any first commit was measured
START_KILL_WINDOW_S = 2.0
# After its first new commit, a lap lives this much longer (seconds)
APPLYING_KILL_WINDOW_S = (0.0, 5.0)
# After it caught up, a lap lives this much longer (seconds): into the steady state under the load
CAUGHT_UP_KILL_WINDOW_S = (0.0, 2.0)
# A lap that has not caught up in this long is killed anyway (the applier slower than the load is
# a figure, not a failure)
CATCH_UP_TIMEOUT_S = 300.0
# How long a killed serve's forked processes may take to end before they count as left over
LEFTOVER_GRACE_S = 30.0
MARKER = "RELAYDECK_SERVE_KILL_STORM"


# -- GTIDs ---------------------------------------------------------------------------------------


def gtid_positions(text: str | None) -> dict[int, int]:
    """A MariaDB GTID position ('0-1-123,1-2-7') as {domain: sequence number}."""
    positions: dict[int, int] = {}
    for part in (text or "").replace("\n", "").split(","):
        part = part.strip()
        if part:
            domain, _server, seq = part.split("-")
            positions[int(domain)] = max(positions.get(int(domain), 0), int(seq))
    return positions


def reached(executed: str | None, target: str | None) -> bool:
    have = gtid_positions(executed)
    return all(have.get(domain, 0) >= seq for domain, seq in gtid_positions(target).items())


def transactions_between(before: str | None, after: str | None) -> int:
    """How many sequence numbers `after` is past `before` (one domain, one server: transactions)."""
    old, new = gtid_positions(before), gtid_positions(after)
    return sum(seq - old.get(domain, 0) for domain, seq in new.items())


# -- the source and its load ---------------------------------------------------------------------


def sysbench(server: MariaDBServer, tables: int, table_size: int, *args: str) -> list[str]:
    return [
        "sysbench", "--db-driver=mysql", f"--mysql-host={server.host}", f"--mysql-port={server.port}",
        f"--mysql-user={server.user}", f"--mysql-db={DATABASE}", f"--tables={tables}",
        f"--table-size={table_size}", *args,
    ]  # fmt: skip


def source_position(server: MariaDBServer) -> str:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        return cur.fetchone()[0]


def wait_until_load_gone(server: MariaDBServer, timeout: float = 60.0) -> None:
    """Until no session of the stopped load is left on the source (a COMMIT already sent still
    completes after its client went), so that the position read next is the final one."""
    deadline = time.monotonic() + timeout
    with server.connect() as conn, conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute(
                "SELECT COUNT(*) FROM information_schema.processlist WHERE db = %s AND id <> CONNECTION_ID()",
                (DATABASE,),
            )
            if cur.fetchone()[0] == 0:
                return
            time.sleep(0.2)


# -- one configuration: its files and what its repository and slave say --------------------------


@dataclass
class Configuration:
    workers: int
    folder: Path
    laps: list[dict[str, object]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    final: dict[str, object] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"workers={self.workers}"

    @property
    def config(self) -> Path:
        return self.folder / "serve.toml"

    @property
    def slave(self) -> Path:
        return self.folder / "data" / "slave.duckdb"

    @property
    def repository(self) -> Path:
        return self.folder / "data" / "repository.sqlite"

    @property
    def log(self) -> Path:
        return self.folder / "serve.log"

    def write(self, server: MariaDBServer) -> None:
        self.folder.mkdir(parents=True)
        self.config.write_text(
            f"""slave = "{self.slave}"
repository = "{self.repository}"

[variables]
replica_parallel_workers = {self.workers}

[channels.{CHANNEL}]
relay_log = "{self.folder / "relay" / "relay-bin"}"
source_host = "{server.host}"
source_port = {server.port}
source_user = "repl"
source_password = "{server.repl_password}"
source_use_gtid = "slave_pos"
source_connect_retry = 1
"""
        )

    def executed(self) -> str | None:
        """The channel's executed GTIDs as the repository holds them now (read only: the applier
        publishes them at each transaction); None before the channel exists."""
        if not self.repository.exists():
            return None
        try:
            con = sqlite3.connect(f"file:{self.repository}?mode=ro", uri=True, timeout=1.0)
            try:
                row = con.execute(
                    "SELECT Executed_gtid_set FROM relay_log_info WHERE Channel_name = ?", (CHANNEL,)
                ).fetchone()
            finally:
                con.close()
        except sqlite3.Error:  # tables not created yet, or locked for longer than the timeout
            return None
        return row[0] if row else None

    def status(self) -> dict[str, object]:
        """`relaydeck status --json`'s row of the channel ({} if none, with the output if it failed)."""
        done = subprocess.run(
            relaydeck_command("status", "--repository", str(self.repository), "--json"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=child_environment(),
            timeout=120,
        )
        if done.returncode != 0:
            return {"status_failed": (done.stderr or done.stdout).strip()[-1000:]}
        rows = json.loads(done.stdout or "[]")
        return next((r for r in rows if r["channel_name"] == CHANNEL), {})


def commit_records(slave: Path) -> dict[str, int]:
    """The slave's commit records of the channel: how many, and how many distinct ordinals, GTIDs
    and relay positions (read only, after serve ended)."""
    import duckdb

    con = duckdb.connect(str(slave), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*), count(DISTINCT seqno), count(DISTINCT gtid), "
            "count(DISTINCT (relay_log_file, relay_log_pos)), coalesce(max(seqno), 0) "
            "FROM __relaydeck.commits WHERE channel = ?",
            [CHANNEL],
        ).fetchone()
    finally:
        con.close()
    assert row is not None
    return dict(zip(("records", "ordinals", "gtids", "relay_positions", "last_ordinal"), row, strict=True))


def applied_twice(counts: dict[str, int]) -> str | None:
    if counts["records"] == counts["ordinals"] == counts["gtids"] == counts["relay_positions"]:
        return None
    return (
        f"applied twice: {counts['records']} commit records, {counts['ordinals']} distinct ordinals, "
        f"{counts['gtids']} distinct GTIDs, {counts['relay_positions']} distinct relay positions"
    )


def recorded_gtids(slave: Path) -> set[str]:
    import duckdb

    con = duckdb.connect(str(slave), read_only=True)
    try:
        rows = con.execute("SELECT gtid FROM __relaydeck.commits WHERE channel = ?", [CHANNEL]).fetchall()
    finally:
        con.close()
    return {gtid for (gtid,) in rows if gtid}


def table_differences(server: MariaDBServer, slave: Path) -> tuple[dict[str, int], list[str]]:
    """({table: rows}, differences) of every sbtest table, source against slave, row by row in id
    order, every column."""
    import duckdb

    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (DATABASE,)
        )
        tables = [name for (name,) in cur.fetchall()]
        source = {}
        for table in tables:
            cur.execute(f"SELECT * FROM {DATABASE}.{table} ORDER BY id")
            source[table] = [tuple(row) for row in cur.fetchall()]
    con = duckdb.connect(str(slave), read_only=True)
    problems = []
    try:
        found = {
            name
            for (name,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [DATABASE]
            ).fetchall()
        }
        if found != set(tables):
            problems.append(f"tables: source {sorted(tables)}, slave {sorted(found)}")
        for table in tables:
            if table not in found:
                continue
            rows = [tuple(r) for r in con.execute(f"SELECT * FROM {DATABASE}.{table} ORDER BY id").fetchall()]
            if rows != source[table]:
                first = next(
                    (i for i, (a, b) in enumerate(zip(source[table], rows, strict=False)) if a != b),
                    min(len(rows), len(source[table])),
                )
                problems.append(
                    f"{table}: {len(source[table])} rows on the source, {len(rows)} on the slave; first "
                    f"difference at row {first}: source "
                    f"{source[table][first] if first < len(source[table]) else None}, slave "
                    f"{rows[first] if first < len(rows) else None}"
                )
    finally:
        con.close()
    return {table: len(rows) for table, rows in source.items()}, problems


# -- processes -------------------------------------------------------------------------------------


def child_environment(marker: str | None = None) -> dict[str, str]:
    # bytecode written once and loaded by every start, as an installed relaydeck does
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if marker is not None:
        environment[MARKER] = marker
    return environment


def lap_processes(marker: str) -> dict[int, str]:
    """The live processes started under MARKER=marker (a prefix of it when marker ends with '*')."""
    return marked_processes(f"{MARKER}={marker}")


def lap_gone(marker: str, grace: float) -> tuple[float, dict[int, str]]:
    return wait_until_gone(f"{MARKER}={marker}", grace)


def start_serve(configuration: Configuration, marker: str, heading: str) -> subprocess.Popen[bytes]:
    with open(configuration.log, "ab") as log:
        log.write(f"\n==== {heading} ====\n".encode())
        log.flush()
        return subprocess.Popen(
            relaydeck_command("serve", str(configuration.config)),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_environment(marker),
        )


def log_tail(configuration: Configuration, chars: int = 2000) -> str:
    try:
        return configuration.log.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


# -- the storm -------------------------------------------------------------------------------------


def lap(
    configuration: Configuration,
    server: MariaDBServer,
    rng: random.Random,
    token: str,
    report: Callable[[str], None],
) -> None:
    """One lap: start serve, kill it as drawn, check what it left. Failures go to the configuration."""
    number = len(configuration.laps) + 1
    # both drawn up front, so that the kill moments depend on the seed alone, not on timings
    draw = rng.random()
    plan = (
        "start"
        if draw < START_KILL_SHARE
        else "caught up"
        if draw < START_KILL_SHARE + CAUGHT_UP_SHARE
        else "applying"
    )
    fraction = rng.random()
    first_commits = [lap["first_commit_s"] for lap in configuration.laps if lap["first_commit_s"] is not None]
    start_window = statistics.median(first_commits) if first_commits else START_KILL_WINDOW_S
    marker = f"{token}-{configuration.workers}-{number}"
    before = configuration.executed()
    target = source_position(server)
    started = time.monotonic()
    serve = start_serve(configuration, marker, f"{configuration.name} lap {number}: {plan}")
    kill_at = started + fraction * start_window if plan == "start" else None
    first_commit = caught_up = None
    exited = None
    stuck = False
    while True:
        now = time.monotonic()
        if serve.poll() is not None:
            exited = serve.returncode
            break
        executed = configuration.executed()
        if first_commit is None and transactions_between(before, executed) > 0:
            first_commit = now - started
            if plan == "applying":
                low, high = APPLYING_KILL_WINDOW_S
                kill_at = now + low + fraction * (high - low)
        if caught_up is None and executed is not None and reached(executed, target):
            caught_up = now - started
            if plan == "caught up":
                low, high = CAUGHT_UP_KILL_WINDOW_S
                kill_at = now + low + fraction * (high - low)
        if kill_at is not None and now >= kill_at:
            break
        if first_commit is None and plan != "start" and now - started > FIRST_COMMIT_TIMEOUT_S:
            stuck = True
            break
        if plan == "caught up" and caught_up is None and now - started > CATCH_UP_TIMEOUT_S:
            break
        time.sleep(POLL_S)
    killed_after = time.monotonic() - started
    alive = lap_processes(marker)
    if serve.poll() is None:
        os.kill(serve.pid, signal.SIGKILL)
    serve.wait()
    outlived, left = lap_gone(marker, LEFTOVER_GRACE_S)
    kill_all(left)

    status = configuration.status()
    problems = []
    if exited is not None:
        problems.append(f"serve exited by itself with status {exited}: {log_tail(configuration)}")
    if stuck:
        problems.append(
            f"needed a statement: nothing new applied within {FIRST_COMMIT_TIMEOUT_S:.0f} s "
            f"(status {json.dumps({k: status.get(k) for k in SHOWN})})"
        )
    if "status_failed" in status:
        problems.append(f"relaydeck status failed: {status['status_failed']}")
    if status.get("last_error_number"):
        problems.append(f"Last_SQL_Errno {status['last_error_number']}: {status.get('last_error_message')}")
    if status.get("last_io_error_number"):
        problems.append(
            f"Last_IO_Errno {status['last_io_error_number']}: {status.get('last_io_error_message')}"
        )
    if left:
        problems.append(f"left over {LEFTOVER_GRACE_S:.0f} s after the kill: {list(left.values())}")
    counts = commit_records(configuration.slave) if configuration.slave.exists() else None
    if counts is not None and (twice := applied_twice(counts)):
        problems.append(twice)
    executed, retrieved = status.get("executed_gtid_set") or "", status.get("retrieved_gtid_set") or ""
    record = {
        "lap": number,
        "plan": plan,
        "killed_after_s": round(killed_after, 2),
        "first_commit_s": None if first_commit is None else round(first_commit, 2),
        "caught_up_s": None if caught_up is None else round(caught_up, 2),
        "source_at_start": target,
        "executed_before": before or "",
        "behind_at_start": transactions_between(before, target),
        "executed": executed,
        "retrieved": retrieved,
        "applied": transactions_between(before, executed),
        "transactions_applied": status.get("transactions_applied"),
        "received_not_applied": transactions_between(executed, retrieved),
        "commit_records": counts,
        "processes_at_kill": len(alive),
        "processes_outlived_kill_s": round(outlived, 2),
        "problems": problems,
    }
    configuration.laps.append(record)
    configuration.failures += [f"{configuration.name} lap {number}: {p}" for p in problems]
    report(
        f"{configuration.name:10} lap {number:3} {plan:9} {record['behind_at_start']:6} behind; killed at "
        f"{killed_after:5.2f} s; first commit {_seconds(first_commit)}, caught up {_seconds(caught_up)}; "
        f"applied {record['applied']:6}; "
        f"executed {executed or '-'} retrieved {retrieved or '-'} ({record['received_not_applied']} "
        f"received, not applied); {len(alive)} processes"
        + ("" if not problems else "; FAILED: " + " | ".join(problems))
    )


SHOWN = (
    "service_state",
    "io_service_state",
    "executed_gtid_set",
    "retrieved_gtid_set",
    "last_error_number",
    "last_error_message",
    "last_io_error_number",
    "last_io_error_message",
)


def _seconds(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.2f} s"


def final_run(
    configuration: Configuration,
    server: MariaDBServer,
    target: str,
    token: str,
    report: Callable[[str], None],
) -> None:
    """Serve once more after the load stopped: to the source's final position, SIGTERM, then the
    checks of the slave against the source."""
    marker = f"{token}-{configuration.workers}-final"
    problems: list[str] = []
    started = time.monotonic()
    serve = start_serve(configuration, marker, f"{configuration.name} final run")
    status: dict[str, object] = {}
    caught_up = None
    try:
        next_status = started
        while True:
            now = time.monotonic()
            if serve.poll() is not None:
                problems.append(
                    f"serve exited by itself with status {serve.returncode}: {log_tail(configuration)}"
                )
                break
            executed = configuration.executed()
            if executed is not None and gtid_positions(executed) == gtid_positions(target):
                caught_up = now - started
                break
            if now >= next_status:  # the errors, once a second
                status = configuration.status()
                if status.get("last_error_number") or status.get("last_io_error_number"):
                    problems.append(
                        f"error before catching up: {json.dumps({k: status.get(k) for k in SHOWN})}"
                    )
                    break
                next_status = now + 1.0
            if now - started > FINAL_TIMEOUT_S:
                problems.append(
                    f"needed a statement: executed did not reach the source's {target} within "
                    f"{FINAL_TIMEOUT_S:.0f} s ({json.dumps({k: status.get(k) for k in SHOWN})})"
                )
                break
            time.sleep(POLL_S)
        status = configuration.status()
        if (
            gtid_positions(status.get("retrieved_gtid_set")) != gtid_positions(target)
            and caught_up is not None
        ):
            problems.append(f"retrieved {status.get('retrieved_gtid_set')} at the end, the source {target}")
        for key, message in (("last_error_number", "last_error_message"), ("last_io_error_number", "last_io_error_message")):  # fmt: skip
            if status.get(key):
                problems.append(f"{key} {status[key]}: {status.get(message)}")
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
        try:
            code = serve.wait(120)
        except subprocess.TimeoutExpired:
            serve.kill()
            code = serve.wait()
            problems.append("serve did not end within 120 s of SIGTERM")
        _, left = lap_gone(marker, LEFTOVER_GRACE_S)
        kill_all(left)
    if code != 0:
        problems.append(f"exit status {code} after SIGTERM: {log_tail(configuration)}")
    if left:
        problems.append(f"left over after the final run: {list(left.values())}")
    counts = commit_records(configuration.slave)
    if twice := applied_twice(counts):
        problems.append(twice)
    # one domain, one server: the source's transactions are 0-1-1 … 0-1-N
    expected = {f"{d}-1-{seq}" for d, last in gtid_positions(target).items() for seq in range(1, last + 1)}
    gtids = recorded_gtids(configuration.slave)
    if gtids != expected:
        problems.append(
            f"commit records: {len(expected - gtids)} source transactions without one "
            f"(first {sorted(expected - gtids, key=lambda g: int(g.rsplit('-', 1)[1]))[:5]}), "
            f"{len(gtids - expected)} not of the source ({sorted(gtids - expected)[:5]})"
        )
    rows, differences = table_differences(server, configuration.slave)
    problems += differences
    configuration.final = {
        "catch_up_s": None if caught_up is None else round(caught_up, 1),
        "exit_status": code,
        "executed": status.get("executed_gtid_set"),
        "retrieved": status.get("retrieved_gtid_set"),
        "commit_records": counts,
        "rows": rows,
        "tables_exact": not differences,
        "problems": problems,
    }
    configuration.failures += [f"{configuration.name} final run: {p}" for p in problems]
    report(
        f"{configuration.name:10} final run: caught up to {target} in {_seconds(caught_up)}, exit status {code}, "
        f"{counts['records']} commit records, tables {'exact' if not differences else 'DIFFER'}"
        + ("" if not problems else "; FAILED: " + " | ".join(problems))
    )


def summary(configuration: Configuration) -> dict[str, object]:
    laps = configuration.laps
    first = [lap["first_commit_s"] for lap in laps if lap["first_commit_s"] is not None]
    caught = [lap for lap in laps if lap["caught_up_s"] is not None]

    def spread(values: list) -> dict[str, object]:  # type: ignore[type-arg]
        if not values:
            return {"laps": 0}
        return {"laps": len(values), "median_s": round(statistics.median(values), 2), "max_s": max(values)}

    return {
        "workers": configuration.workers,
        "kills": len(laps),
        "kills_by_plan": dict(Counter(lap["plan"] for lap in laps)),
        "kills_before_first_commit": sum(lap["first_commit_s"] is None for lap in laps),
        "kills_with_received_not_applied": sum(bool(lap["received_not_applied"]) for lap in laps),
        "kills_with_forked_processes": sum(lap["processes_at_kill"] > 1 for lap in laps),
        "restarts_that_needed_a_statement": sum(
            any(str(p).startswith("needed a statement") for p in lap["problems"]) for lap in laps
        )
        + any(str(p).startswith("needed a statement") for p in configuration.final.get("problems", [])),
        "errors": [p for lap in laps for p in lap["problems"]],
        "first_new_commit": spread(first),
        "catch_up_to_source_at_start": {
            **spread([lap["caught_up_s"] for lap in caught]),
            "median_behind_at_start": statistics.median([lap["behind_at_start"] for lap in caught])
            if caught
            else None,
            "max_behind_at_start": max((lap["behind_at_start"] for lap in caught), default=None),
        },
        "caught_up_laps_that_did_not_catch_up": sum(
            lap["plan"] == "caught up" and lap["caught_up_s"] is None for lap in laps
        ),
        "transactions_applied_in_laps": sum(lap["applied"] for lap in laps),
        "final": configuration.final,
        "failures": configuration.failures,
        "laps": laps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs per configuration (default 30)")
    parser.add_argument(
        "--kill-seed", type=int, default=None, help="seed of the kill moments (default: random)"
    )
    parser.add_argument(
        "--rate",
        type=int,
        default=500,
        help="sysbench transactions a second during the storm (0: unthrottled)",
    )
    parser.add_argument(
        "--configs", default="0,4", help="replica_parallel_workers of each configuration (default 0,4)"
    )
    parser.add_argument("--tables", type=int, default=4, help="sysbench tables (default 4)")
    parser.add_argument("--table-size", type=int, default=5000, help="rows per sysbench table (default 5000)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    args = parser.parse_args()
    if shutil.which("sysbench") is None:
        parser.error("sysbench is not installed (apt-get install sysbench)")
    workers = [int(w) for w in args.configs.split(",") if w.strip()]
    kill_seed = args.kill_seed if args.kill_seed is not None else random.randrange(2**31)
    rng = random.Random(kill_seed)
    token = secrets.token_hex(4)
    work = Path(tempfile.mkdtemp(prefix="relaydeck-serve-kill-storm-"))
    print(f"kill seed {kill_seed}; work folder {work}", flush=True)
    started = time.monotonic()
    server = load = load_log = None
    configurations = [Configuration(w, work / f"workers-{w}") for w in workers]
    load_figures: dict[str, object] = {}
    failures: list[str] = []
    try:
        (work / "source").mkdir()
        server = start_server(work / "source")
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DATABASE}")
        subprocess.run(
            sysbench(server, args.tables, args.table_size, "oltp_write_only", "prepare"),
            check=True,
            capture_output=True,
        )
        for configuration in configurations:
            configuration.write(server)
        prepared = source_position(server)
        load_log = open(work / "sysbench.log", "wb")  # noqa: SIM115 (open for the load's lifetime)
        load = subprocess.Popen(
            sysbench(
                server,
                args.tables,
                args.table_size,
                "--threads=4",
                f"--rate={args.rate}",
                "--time=0",
                "oltp_write_only",
                "run",
            ),  # fmt: skip
            stdout=load_log,
            stderr=subprocess.STDOUT,
        )
        load_started = time.monotonic()
        print(
            f"source 127.0.0.1:{server.port}, {args.tables} tables of {args.table_size} rows ({prepared}); "
            f"sysbench oltp_write_only, 4 threads, rate {args.rate or 'unthrottled'}",
            flush=True,
        )
        for round_ in range(args.kills):
            for configuration in configurations:
                if configuration.failures:
                    continue  # stopped at its first failure; the others go on
                if load.poll() is not None:
                    failures.append(
                        f"the sysbench load stopped (status {load.returncode}) before lap {round_ + 1}"
                    )
                    break
                lap(configuration, server, rng, token, lambda line: print(line, flush=True))
            if failures or all(c.failures for c in configurations):
                break
        load.terminate()
        load.wait(60)
        load_seconds = time.monotonic() - load_started
        wait_until_load_gone(server)
        target = source_position(server)
        load_figures = {
            "transactions": transactions_between(prepared, target),
            "seconds": round(load_seconds, 1),
            "per_second": round(transactions_between(prepared, target) / load_seconds, 1),
        }
        print(
            f"load stopped: {load_figures['transactions']} transactions in {load_seconds:.0f} s "
            f"({load_figures['per_second']}/s); the source is at {target}",
            flush=True,
        )
        for configuration in configurations:
            if not configuration.failures:
                final_run(configuration, server, target, token, lambda line: print(line, flush=True))
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        if load_log is not None:
            load_log.close()
        leftovers = lap_processes(f"{token}-*")
        if leftovers:
            failures.append(f"serve processes left at the end: {list(leftovers.values())}")
            kill_all(leftovers)
        if server is not None:
            server.stop()
    failures += [f for c in configurations for f in c.failures]
    seconds = time.monotonic() - started
    results = {
        **measurement_header(),
        "kill_seed": kill_seed,
        "options": {
            "kills": args.kills,
            "rate": args.rate,
            "configs": workers,
            "tables": args.tables,
            "table_size": args.table_size,
        },
        "kill_plan": {
            "start_kill_share": START_KILL_SHARE,
            "start_kill_window_s": "median first new commit of the configuration so far "
            f"({START_KILL_WINDOW_S} s before one was measured)",
            "applying_kill_window_s": list(APPLYING_KILL_WINDOW_S),
            "caught_up_share": CAUGHT_UP_SHARE,
            "caught_up_kill_window_s": list(CAUGHT_UP_KILL_WINDOW_S),
        },
        "load": load_figures,
        "configurations": {c.name: summary(c) for c in configurations},
        "failures": failures,
        "ok": not failures,
        "seconds": round(seconds, 1),
    }
    out = write_results("serve_kill_storm", results)
    print()
    for c in configurations:
        s = results["configurations"][c.name]
        final = c.final or {}
        print(
            f"{c.name}: {s['kills']} kills {s['kills_by_plan']} ({s['kills_before_first_commit']} before the "
            f"first new commit, {s['kills_with_received_not_applied']} with transactions received and not "
            f"applied, {s['kills_with_forked_processes']} with forked processes alive); restarts that needed "
            f"a statement {s['restarts_that_needed_a_statement']}; errors {len(s['errors'])}; first new commit "
            f"{s['first_new_commit']}; catch-up to the source at start {s['catch_up_to_source_at_start']}; "
            f"final run: caught up in {final.get('catch_up_s')} s, exit status {final.get('exit_status')}, "
            f"tables {'exact' if final.get('tables_exact') else 'NOT exact'}"
        )
    print(f"{seconds:.0f} s; {out}")
    for failure in failures:
        print(f"FAILED: {failure}")
    if args.keep or failures:
        print(f"work folder kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
