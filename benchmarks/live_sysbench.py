"""Live lag under sysbench: how far `relaydeck serve` falls behind a live MariaDB source, side by
side with a MariaDB replica of the same source, on this machine.

    python benchmarks/live_sysbench.py [--workloads W,W] [--rates R,R,0] [--seconds S]
        [--configs default,workers4] [--tables N] [--table-size N] [--sample-ms MS]
        [--long-run MINUTES] [--keep]

Everything runs under a temporary folder, on 127.0.0.1 only:
- the source: a private mariadbd (tests/mariadb_server.py: ROW binary logs, InnoDB flushing its log
  at each commit), with the sysbench tables prepared in `sbtest`;
- a MariaDB replica: a second mariadbd (server id 3, slave_parallel_threads 4, optimistic), from
  CHANGE MASTER TO … MASTER_USE_GTID = slave_pos; START SLAVE, running for the whole benchmark;
- relaydeck: `relaydeck serve CONFIG.toml` as a subprocess, exactly as a user runs it, with a
  [channels.live] receiving from the source (source_use_gtid = "slave_pos") into its own folder.
  Each configuration (--configs: "default", no [variables] at all, so relaydeck's defaults, the
  worker count they gave is recorded; "workers4", replica_parallel_workers = 4; on request
  "workers0", the single applier) replicates the source from its beginning.

The configurations run one after the other, each beside the same MariaDB replica: the machine has
few cores, and the source, sysbench, the MariaDB replica and relaydeck already share them; a second
relaydeck at the same time would take CPU from all of them and make each configuration's figures
depend on the other. So every phase sees the same neighbours. A configuration started after
another first catches up with everything the source logged before it (the earlier phases too);
that catch-up is timed apart (history_catch_up) and the phases start once it is done.

How lag is measured. A sampler thread reads, every --sample-ms (10 ms by default), three positions
in MariaDB's GTID form domain-server-seq, each stamped with the middle of its own read:
- the source's @@gtid_binlog_pos (what is in its binary log, so what a replica can be sent);
- the MariaDB replica's @@gtid_slave_pos (what its SQL threads committed);
- relaydeck's Executed_gtid_set (relay_log_info, channel 'live'), read from the repository's SQLite
  file with sqlite3 in read-only mode: relaydeck publishes it at every commit of its applier, so
  it tells when the rows are in DuckDB; and the receiver's RECEIVED_TRANSACTION_SET
  (replication_connection_status), which splits the lag into receiving and applying.
The source numbers its transactions 1, 2, 3 … in one domain, so for every transaction N the source
committed during a phase, lag(N) = (first sample at which the replica's seq >= N) - (first sample at
which the source's seq >= N). This needs nothing in the rows, no trigger and no clock other than this
process's monotonic one, and it treats both replicas the same way: commit visible on the source to
commit visible on the replica. Its resolution is the sampling interval: a lag below it reads as
about 0 or about one interval, so p50s under ~10 ms are at the floor; the achieved interval is
reported (the sampler shares the cores too), and the ratios relaydeck / MariaDB count a lag under
one interval as one interval. Per phase: p50 / p99 / max (benchmarks/lags.py), the rate the source
took (sysbench's and from the seq numbers), the backlog bound (largest source seq minus replica seq
while sysbench ran) and the catch-up time (sysbench's end to the replica reaching the source's
final seq).

CPU: utime+stime from /proc (all threads; for relaydeck the whole process tree under serve, with
the children it already reaped) from sysbench's start until both replicas hold the source's last
transaction, divided by that wall time: cores used. RSS: VmRSS at each phase's end (relaydeck: the
sum over its tree, which counts pages its forked children share with it more than once; PSS, which
shares them out, is given beside it).

After a configuration's phases: relaydeck catches up, gets SIGTERM (STOP, exit 0), and, once it has
exited, every sbtest table in its DuckDB file (opened read-only) is compared row by row, ordered by
id, with the source's; at the end of the run, the MariaDB replica's too. A difference, an error in
relaydeck's status or a replica that does not catch up within --drain-timeout is a failure: the
exit status is 1.

--long-run MINUTES adds one phase of oltp_write_only at 200 trx/s with the default configuration
(its own folder, from the source's beginning), recording relaydeck's and the MariaDB replica's RSS
every 10 s: the target is relaydeck's RSS at the end within 10% of its RSS 2 minutes in.

Figures are printed and written to benchmarks/results/live_sysbench.json with the command line and
the machine (benchmarks/machine.py), and per phase the ratios relaydeck / MariaDB of p50, p99 and
CPU. They hold for this machine's cores shared by all of the above.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lags import lag_distribution  # noqa: E402
from machine import measurement_header, write_results  # noqa: E402

from tests.mariadb_server import MariaDBServer, replicate_from, start_server  # noqa: E402

CHANNEL = "live"
DATABASE = "sbtest"
CONFIGS = {
    "default": "",  # no [variables]: relaydeck's own defaults, whatever they are (the results say)
    "workers4": "\n[variables]\nreplica_parallel_workers = 4\n",
    "workers0": "\n[variables]\nreplica_parallel_workers = 0\n",  # the single applier, on request
}
SERVE_START_TIMEOUT_S = 120.0
SERVE_STOP_TIMEOUT_S = 180.0
REPLICA_SETUP_TIMEOUT_S = 120.0
SYSBENCH_GRACE_S = 120.0  # past --time: connecting, printing, a stalled server
LONG_RUN_RATE = 200
LONG_RUN_EARLY_S = 120.0  # the RSS that the end of the long run is compared with
LONG_RUN_RSS_EVERY_S = 10.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- positions -------------------------------------------------------------------------------------


def gtid_seq(position: str | None, domain: int) -> int:
    """The highest seq of `domain` in a MariaDB GTID position ("0-1-42,1-5-7"), 0 when absent."""
    best = 0
    for part in (position or "").replace("\n", "").split(","):
        bits = part.strip().split("-")
        if len(bits) == 3 and bits[0].isdigit() and int(bits[0]) == domain:
            best = max(best, int(bits[2]))
    return best


def scalar(server: MariaDBServer, query: str) -> object:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(query)
        row = cur.fetchone()
        return row[0] if row else None


def repository_uri(repository: Path) -> str:
    # read-only: the benchmark never writes relaydeck's files, and a reader never blocks its WAL
    return f"{repository.resolve().as_uri()}?mode=ro"


def relaydeck_positions(conn: sqlite3.Connection, domain: int) -> tuple[int, int]:
    """(executed seq, retrieved seq) of the channel, from the repository as relaydeck publishes it."""
    executed = conn.execute(
        "SELECT Executed_gtid_set FROM relay_log_info WHERE Channel_name = ?", (CHANNEL,)
    ).fetchone()
    retrieved = conn.execute(
        "SELECT RECEIVED_TRANSACTION_SET FROM replication_connection_status WHERE CHANNEL_NAME = ?",
        (CHANNEL,),
    ).fetchone()
    return gtid_seq(executed[0] if executed else "", domain), gtid_seq(
        retrieved[0] if retrieved else "", domain
    )


def relaydeck_errors(repository: Path) -> tuple[int, str]:
    """The applier's or the receiver's last error (number, message); (0, "") when there is none."""
    try:
        with sqlite3.connect(repository_uri(repository), uri=True, timeout=1) as conn:
            for table in ("replication_applier_status_by_coordinator", "replication_connection_status"):
                row = conn.execute(
                    f"SELECT LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE FROM {table} WHERE CHANNEL_NAME = ?",
                    (CHANNEL,),
                ).fetchone()
                if row and row[0]:
                    return int(row[0]), str(row[1])
    except sqlite3.Error:
        pass  # not created yet, or mid-checkpoint: the next look sees it
    return 0, ""


# -- the sampler -------------------------------------------------------------------------------------


@dataclass
class Samples:
    """One row per tick: (t_source, source seq, t_replica, replica seq, t_relaydeck, executed seq,
    retrieved seq); times from time.monotonic(), each the middle of its own read."""

    rows: list[tuple[float, int, float, int, float, int, int]] = field(default_factory=list)
    sqlite_errors: int = 0


class Sampler(threading.Thread):
    """Reads the three positions every `interval_s` until stopped. Its connections are its own
    (PyMySQL and sqlite3 connections belong to one thread)."""

    def __init__(
        self,
        source: MariaDBServer,
        replica: MariaDBServer,
        repository: Path | None,
        domain: int,
        interval_s: float,
    ) -> None:
        super().__init__(name="lag-sampler", daemon=True)
        self.source, self.replica, self.repository = source, replica, repository
        self.domain, self.interval_s = domain, interval_s
        self.samples = Samples()
        self.latest: tuple[int, int, int, int] = (0, 0, 0, 0)  # source, replica, executed, retrieved
        self.failure: BaseException | None = None
        self.first = threading.Event()
        self._halt = threading.Event()

    def halt(self) -> None:
        """Stop sampling, without waiting (the way out of a phase that failed)."""
        self._halt.set()

    def stop(self) -> Samples:
        self._halt.set()
        self.join(timeout=30)
        if self.failure is not None:
            raise RuntimeError(f"the sampler failed: {self.failure!r}") from self.failure
        return self.samples

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - handed to stop()
            self.failure = exc
            self.first.set()

    def _run(self) -> None:
        source = self.source.connect()
        replica = self.replica.connect()
        relaydeck = None
        if self.repository is not None:
            relaydeck = sqlite3.connect(repository_uri(self.repository), uri=True, timeout=0.05)
        executed = retrieved = 0
        try:
            with source.cursor() as src, replica.cursor() as rep:
                started = time.monotonic()
                for tick in itertools.count(1):
                    a = time.monotonic()
                    src.execute("SELECT @@gtid_binlog_pos")
                    b = time.monotonic()
                    rep.execute("SELECT @@gtid_slave_pos")
                    c = time.monotonic()
                    if relaydeck is not None:
                        try:
                            executed, retrieved = relaydeck_positions(relaydeck, self.domain)
                        except sqlite3.Error:
                            self.samples.sqlite_errors += 1  # the last values stand for this tick
                    d = time.monotonic()
                    s = gtid_seq(src.fetchone()[0], self.domain)
                    r = gtid_seq(rep.fetchone()[0], self.domain)
                    self.samples.rows.append(
                        ((a + b) / 2, s, (b + c) / 2, r, (c + d) / 2, executed, retrieved)
                    )
                    self.latest = (s, r, executed, retrieved)
                    self.first.set()
                    # on a grid, skipping the ticks a slow read overran, so the interval does not drift
                    due = started + tick * self.interval_s
                    now = time.monotonic()
                    if due < now:
                        due = now + self.interval_s - (now - started) % self.interval_s
                    if self._halt.wait(due - now):
                        return
        finally:
            source.close()
            replica.close()
            if relaydeck is not None:
                relaydeck.close()


def first_reached(times: list[float], seqs: list[int], low: int, high: int) -> list[float | None]:
    """For each N in low+1 … high: the first time at which seqs reached N (None: never sampled)."""
    found: list[float | None] = []
    i = 0
    for n in range(low + 1, high + 1):
        while i < len(seqs) and seqs[i] < n:
            i += 1
        found.append(times[i] if i < len(seqs) else None)
    return found


def lags_ms(source_at: list[float | None], replica_at: list[float | None]) -> tuple[list[float], int]:
    """Per transaction in source order: replica time - source time, in ms; and how many were never
    seen on the replica (or, rarely, on the source) while sampling."""
    lags = [
        (r - s) * 1000 for s, r in zip(source_at, replica_at, strict=True) if s is not None and r is not None
    ]
    return lags, len(source_at) - len(lags)


# -- /proc ---------------------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # from field 3 (state) on: the name may hold spaces


def process_tree(root: int) -> list[int]:
    """root and its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def tree_cpu_s(root: int) -> float:
    """utime + stime of the live processes of the tree, with what each has of the children it
    reaped (cutime + cstime), so that a child that ended during a phase still counts."""
    ticks = 0
    for pid in process_tree(root):
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / CLOCK_TICKS


def tree_memory_mb(root: int) -> tuple[float, float]:
    """(RSS summed over the tree, PSS summed over the tree) in MB."""
    rss = pss = 0
    for pid in process_tree(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            match = re.search(r"^VmRSS:\s+(\d+)", status, re.M)
            rss += int(match.group(1)) if match else 0
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            match = re.search(r"^Pss:\s+(\d+)", rollup, re.M)
            pss += int(match.group(1)) if match else 0
        except OSError:
            continue  # ended meanwhile
    return round(rss / 1024, 1), round(pss / 1024, 1)


def machine_busy_s() -> float:
    """CPU seconds all cores spent busy since boot: not idle, not waiting for the disk (time the
    hypervisor stole counts as busy: the cores were not ours to use)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLOCK_TICKS


@dataclass
class CpuMark:
    at: float
    relaydeck: float
    replica: float
    source: float
    machine: float
    benchmark: float  # this process: the sampler, mostly
    reaped: float  # this process's children it waited for: sysbench


def cpu_mark(serve: subprocess.Popen | None, replica: MariaDBServer, source: MariaDBServer) -> CpuMark:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return CpuMark(
        time.monotonic(),
        tree_cpu_s(serve.pid) if serve is not None else 0.0,
        tree_cpu_s(replica.process.pid),
        tree_cpu_s(source.process.pid),
        machine_busy_s(),
        own.ru_utime + own.ru_stime,
        children.ru_utime + children.ru_stime,
    )


def cores(before: CpuMark, after: CpuMark) -> dict[str, float | None]:
    """Cores used over the span, by whom: "others" is what the machine was busy with besides the
    benchmark's own processes: other programs (on a shared machine they make every figure worse),
    and the kernel's own threads and interrupts (disk flushes, loopback networking)."""
    wall = after.at - before.at
    if wall <= 0:
        return {}
    used = {
        name: (getattr(after, name) - getattr(before, name)) / wall
        for name in ("relaydeck", "replica", "source", "reaped", "benchmark", "machine")
    }
    mine = sum(v for k, v in used.items() if k != "machine")
    return {
        "machine_busy": round(used["machine"], 3),
        "source_mariadbd": round(used["source"], 3),
        "sysbench": round(used["reaped"], 3),
        "sampler_and_benchmark": round(used["benchmark"], 3),
        "others": round(max(0.0, used["machine"] - mine), 3),
    }


# -- servers, relaydeck, sysbench --------------------------------------------------------------------


def start_mariadb_replica(base: Path, source: MariaDBServer, args: argparse.Namespace) -> MariaDBServer:
    replica = start_server(
        base,
        extra_options=(
            "--server-id=3",
            f"--slave-parallel-threads={args.mariadb_parallel_threads}",
            "--slave-parallel-mode=optimistic",
            f"--innodb-buffer-pool-size={args.buffer_pool}",
        ),
    )
    replicate_from(replica, source)
    return replica


def replica_error(replica: MariaDBServer) -> str:
    import pymysql

    with replica.connect(cursorclass=pymysql.cursors.DictCursor) as conn, conn.cursor() as cur:
        cur.execute("SHOW SLAVE STATUS")
        row = cur.fetchone() or {}
    if row.get("Last_SQL_Errno") or row.get("Last_IO_Errno"):
        return f"SQL {row.get('Last_SQL_Errno')}: {row.get('Last_SQL_Error')}; IO {row.get('Last_IO_Errno')}: {row.get('Last_IO_Error')}"
    return ""


def relaydeck_command() -> list[str]:
    """The `relaydeck` a user runs: this checkout's virtualenv's script, else the one beside this
    Python, else the module."""
    for candidate in (ROOT / ".venv" / "bin" / "relaydeck", Path(sys.executable).parent / "relaydeck"):
        if candidate.exists():
            return [str(candidate)]
    return [sys.executable, "-m", "console.cli"]


def write_config(folder: Path, source: MariaDBServer, variables: str) -> Path:
    config = folder / "relaydeck.toml"
    config.write_text(
        f"""slave = "data/slave.duckdb"
repository = "data/repository.sqlite"
{variables}
[channels.{CHANNEL}]
relay_log = "relay/relay-bin"
source_host = "{source.host}"
source_port = {source.port}
source_user = "repl"
source_password = "{source.repl_password}"
source_use_gtid = "slave_pos"
"""
    )
    return config


@dataclass
class Serve:
    folder: Path
    process: subprocess.Popen
    log: Path

    @property
    def repository(self) -> Path:
        return self.folder / "data" / "repository.sqlite"

    @property
    def slave(self) -> Path:
        return self.folder / "data" / "slave.duckdb"

    def said(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""


def start_serve(folder: Path, source: MariaDBServer, variables: str) -> Serve:
    folder.mkdir(parents=True)
    config = write_config(folder, source, variables)
    log = folder / "serve.log"
    with open(log, "wb") as out:  # a file, not a pipe: nothing to drain while it runs
        process = subprocess.Popen(
            [*relaydeck_command(), "serve", str(config)], cwd=folder, stdout=out, stderr=subprocess.STDOUT
        )
    serve = Serve(folder, process, log)
    deadline = time.monotonic() + SERVE_START_TIMEOUT_S
    while "relaydeck serve: pid" not in serve.said():
        if process.poll() is not None:
            raise RuntimeError(f"relaydeck serve exited with {process.returncode}: {serve.said()}")
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"relaydeck serve did not start within {SERVE_START_TIMEOUT_S:.0f} s: {serve.said()}"
            )
        time.sleep(0.1)
    return serve


def stop_serve(serve: Serve) -> int | None:
    """SIGTERM (STOP: commit, checkpoint, exit 0); SIGKILL after the timeout. Its exit status, None
    when it had to be killed."""
    if serve.process.poll() is not None:
        return serve.process.returncode
    serve.process.send_signal(signal.SIGTERM)
    try:
        return serve.process.wait(SERVE_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        serve.process.kill()
        serve.process.wait(30)
        return None


def relaydeck_status(repository: Path) -> dict[str, object]:
    done = subprocess.run(
        [*relaydeck_command(), "status", "--repository", str(repository), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = json.loads(done.stdout or "[]") if done.returncode == 0 else []
    row = next((r for r in rows if r.get("channel_name") == CHANNEL), {})
    keys = ("executed_gtid_set", "retrieved_gtid_set", "last_error_number", "last_error_message",
            "last_io_error_number", "last_io_error_message", "transactions_applied")  # fmt: skip
    return {key: row.get(key) for key in keys} | (
        {} if done.returncode == 0 else {"status_error": done.stderr[-500:]}
    )


def sysbench_command(source: MariaDBServer, args: argparse.Namespace, *more: str) -> list[str]:
    return [
        "sysbench", "--db-driver=mysql", f"--mysql-host={source.host}", f"--mysql-port={source.port}",
        f"--mysql-user={source.user}", f"--mysql-db={DATABASE}", f"--tables={args.tables}",
        f"--table-size={args.table_size}", *more,
    ]  # fmt: skip


def sysbench_tps(output: str) -> float | None:
    match = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", output)
    return float(match.group(1)) if match else None


def wait_until(condition, timeout: float, step: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


class Failed(Exception):
    """relaydeck serve exited while sysbench ran: the configuration's remaining phases are skipped."""


# -- one phase ---------------------------------------------------------------------------------------


def run_phase(
    source: MariaDBServer,
    replica: MariaDBServer,
    serve: Serve,
    domain: int,
    workload: str,
    rate: int,
    seconds: float,
    args: argparse.Namespace,
    rss_series: list[dict[str, float]] | None = None,
) -> dict[str, object]:
    """sysbench for `seconds`, sampled, then until both replicas hold its last transaction."""
    start_seq = gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)
    sampler = Sampler(source, replica, serve.repository, domain, args.sample_ms / 1000)
    sampler.start()
    try:
        if not sampler.first.wait(30):
            raise RuntimeError("the sampler read nothing within 30 s")
        return sampled_phase(sampler, start_seq, source, replica, serve, domain, workload, rate, seconds, args,
                             rss_series)  # fmt: skip
    finally:
        sampler.halt()  # also when the phase failed: its connections go with it


def sampled_phase(
    sampler: Sampler,
    start_seq: int,
    source: MariaDBServer,
    replica: MariaDBServer,
    serve: Serve,
    domain: int,
    workload: str,
    rate: int,
    seconds: float,
    args: argparse.Namespace,
    rss_series: list[dict[str, float]] | None,
) -> dict[str, object]:
    out_path = serve.folder / f"sysbench-{workload}-{rate}.out"
    command = sysbench_command(
        source, args, "--threads=4", f"--rate={rate}", f"--time={int(seconds)}", "--report-interval=0",
        workload, "run",
    )  # fmt: skip
    before = cpu_mark(serve.process, replica, source)
    started = before.at
    rss_early: tuple[float, ...] | None = None
    next_rss = started + LONG_RUN_RSS_EVERY_S
    with open(out_path, "wb") as out:
        load = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = started + seconds + SYSBENCH_GRACE_S
        while load.poll() is None:
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(f"sysbench ran past {seconds + SYSBENCH_GRACE_S:.0f} s")
            if serve.process.poll() is not None:
                raise Failed(f"relaydeck serve exited with {serve.process.returncode}: {serve.said()}")
            if rss_series is not None and now >= next_rss:
                rss_series.append(memory_point(now - started, serve, replica))
                next_rss += LONG_RUN_RSS_EVERY_S
                if rss_early is None and now - started >= LONG_RUN_EARLY_S:
                    rss_early = (rss_series[-1]["relaydeck_rss_mb"], rss_series[-1]["mariadb_rss_mb"])
            time.sleep(0.02)  # sysbench's end starts the catch-up time: seen within 20 ms
    finally:
        if load.poll() is None:
            load.terminate()
            load.wait(30)
    ended = time.monotonic()
    said = out_path.read_text(errors="replace")
    if load.returncode != 0:
        raise RuntimeError(f"sysbench exited with {load.returncode}: {said[-1500:]}")
    final_seq = gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)

    # until both replicas hold the source's last transaction, watching for errors on the way
    failure = ""
    deadline = time.monotonic() + args.drain_timeout
    last_check = 0.0
    while True:
        _, r, e, _ = sampler.latest
        if r >= final_seq and e >= final_seq:
            break
        if serve.process.poll() is not None:
            failure = f"relaydeck serve exited with {serve.process.returncode}: {serve.said()}"
            break
        if time.monotonic() - last_check > 2:
            last_check = time.monotonic()
            number, message = relaydeck_errors(serve.repository)
            if number:
                failure = f"relaydeck error {number}: {message}"
                break
            if said_error := replica_error(replica):
                failure = f"MariaDB replica error: {said_error}"
                break
        if time.monotonic() > deadline:
            failure = (
                f"not caught up within {args.drain_timeout:.0f} s: source {final_seq}, MariaDB replica {r}, "
                f"relaydeck {e}"
            )
            break
        time.sleep(0.02)
    after = cpu_mark(serve.process, replica, source)
    rd_rss, rd_pss = tree_memory_mb(serve.process.pid)
    rd_processes = len(process_tree(serve.process.pid))  # serve and the pool's forked processes
    maria_rss, _ = tree_memory_mb(replica.process.pid)
    if rss_series is not None:
        rss_series.append(memory_point(after.at - started, serve, replica))
    samples = sampler.stop()
    status = relaydeck_status(serve.repository)

    rows = samples.rows
    t_src, s_src = [r[0] for r in rows], [r[1] for r in rows]
    t_rep, s_rep = [r[2] for r in rows], [r[3] for r in rows]
    t_rd, s_exec, s_retr = [r[4] for r in rows], [r[5] for r in rows], [r[6] for r in rows]
    source_at = first_reached(t_src, s_src, start_seq, final_seq)
    wall = after.at - before.at
    trx = final_seq - start_seq
    intervals = [(b - a) * 1000 for a, b in itertools.pairwise(t_src)]
    loaded = [r for r in rows if started <= r[0] <= ended]

    def replica_figures(
        times: list[float], seqs: list[int], seq_column: int, cpu_s: float
    ) -> dict[str, object]:
        lags, unseen = lags_ms(source_at, first_reached(times, seqs, start_seq, final_seq))
        reached = next((t for t, s in zip(times, seqs, strict=True) if s >= final_seq), None)
        return {
            "measured": len(lags),
            "not_seen": unseen,
            **(lag_distribution(lags) if lags else {}),
            "backlog_max_trx": max((r[1] - r[seq_column] for r in loaded), default=None),
            "catch_up_s": None if reached is None else round(max(0.0, reached - ended), 3),
            "cpu_s": round(cpu_s, 2),
            "cores": round(cpu_s / wall, 3) if wall > 0 else None,
            "cpu_ms_per_trx": round(cpu_s * 1000 / trx, 3) if trx else None,
        }

    relaydeck = replica_figures(t_rd, s_exec, 5, after.relaydeck - before.relaydeck)
    retrieved_lags, _ = lags_ms(source_at, first_reached(t_rd, s_retr, start_seq, final_seq))
    relaydeck["received_lag"] = lag_distribution(retrieved_lags) if retrieved_lags else {}
    relaydeck.update(rss_mb=rd_rss, pss_mb=rd_pss, processes=rd_processes, status=status)
    mariadb = replica_figures(t_rep, s_rep, 3, after.replica - before.replica)
    mariadb.update(rss_mb=maria_rss)
    if not failure and (status.get("last_error_number") or status.get("last_io_error_number")):
        failure = f"relaydeck status: {status}"
    result: dict[str, object] = {
        "workload": workload,
        "rate": rate,
        "seconds": seconds,
        "source": {
            "trx": trx,
            "trx_per_s": round(trx / (ended - started), 1) if ended > started else None,
            "sysbench_tps": sysbench_tps(said),
        },
        "phase_wall_s": round(wall, 2),
        "machine_cores": cores(before, after),
        "sampling": {
            "samples": len(rows),
            "interval_ms_median": round(statistics.median(intervals), 2) if intervals else None,
            "interval_ms_max": round(max(intervals), 1) if intervals else None,
            "sqlite_read_errors": samples.sqlite_errors,
        },
        "relaydeck": relaydeck,
        "mariadb_replica": mariadb,
        "ratios_relaydeck_over_mariadb": {
            "p50": ratio(relaydeck.get("lag_ms_p50"), mariadb.get("lag_ms_p50"), args.sample_ms),
            "p99": ratio(relaydeck.get("lag_ms_p99"), mariadb.get("lag_ms_p99"), args.sample_ms),
            "cpu": ratio(relaydeck["cpu_s"], mariadb["cpu_s"]),
            "lags_floored_at_ms": args.sample_ms,
        },
        "caught_up": not failure,
    }
    if rss_early is not None:
        result["rss_at_2_min"] = {"relaydeck_rss_mb": rss_early[0], "mariadb_rss_mb": rss_early[1]}
    if failure:
        result["failure"] = failure
    return result


def memory_point(at: float, serve: Serve, replica: MariaDBServer) -> dict[str, float]:
    rss, pss = tree_memory_mb(serve.process.pid)
    return {
        "at_s": round(at, 1),
        "relaydeck_rss_mb": rss,
        "relaydeck_pss_mb": pss,
        "mariadb_rss_mb": tree_memory_mb(replica.process.pid)[0],
    }


def ratio(ours: object, theirs: object, floor: float = 0.0) -> float | None:
    """ours / theirs, each at least `floor`: a lag under one sampling interval is not resolved (it
    reads as about 0 or about one interval), so it counts as one interval rather than dividing by
    noise."""
    if not isinstance(ours, int | float) or not isinstance(theirs, int | float):
        return None
    ours, theirs = max(ours, floor), max(theirs, floor)
    return round(ours / theirs, 2) if theirs > 0 else None


# -- the tables --------------------------------------------------------------------------------------


def mysql_rows(server: MariaDBServer, table: str):  # type: ignore[no-untyped-def]
    import pymysql

    with server.connect(cursorclass=pymysql.cursors.SSCursor) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {DATABASE}.{table} ORDER BY id")
        while batch := cur.fetchmany(5000):
            yield from (tuple(row) for row in batch)


def duckdb_rows(con, table: str):  # type: ignore[no-untyped-def]
    result = con.execute(f"SELECT * FROM {DATABASE}.{table} ORDER BY id")
    while batch := result.fetchmany(5000):
        yield from (tuple(row) for row in batch)


def same_rows(expected, got) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """(rows compared, "" or the first difference), streaming both in id order."""
    missing = object()
    count = 0
    for count, (a, b) in enumerate(itertools.zip_longest(expected, got, fillvalue=missing), start=1):
        if a != b:
            show = ["(none)" if row is missing else repr(row)[:200] for row in (a, b)]
            return count, f"row {count}: source {show[0]}, replica {show[1]}"
    return count, ""


def source_tables(source: MariaDBServer) -> list[str]:
    with source.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (DATABASE,)
        )
        return [row[0] for row in cur.fetchall()]


def check_relaydeck_tables(source: MariaDBServer, slave: Path) -> dict[str, object]:
    """Every sbtest table of relaydeck's DuckDB file against the source's, row by row."""
    import duckdb

    tables = source_tables(source)
    result: dict[str, object] = {"tables": {}, "equal": True}
    with duckdb.connect(str(slave), read_only=True) as con:
        held = {
            row[0]
            for row in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = ?", [DATABASE]
            ).fetchall()
        }
        for table in tables:
            if table not in held:
                result["tables"][table] = {"rows": 0, "difference": "missing"}  # type: ignore[index]
                result["equal"] = False
                continue
            count, difference = same_rows(mysql_rows(source, table), duckdb_rows(con, table))
            result["tables"][table] = {"rows": count, **({"difference": difference} if difference else {})}  # type: ignore[index]
            result["equal"] = result["equal"] and not difference
    return result


def check_mariadb_tables(source: MariaDBServer, replica: MariaDBServer) -> dict[str, object]:
    result: dict[str, object] = {"tables": {}, "equal": True}
    for table in source_tables(source):
        count, difference = same_rows(mysql_rows(source, table), mysql_rows(replica, table))
        result["tables"][table] = {"rows": count, **({"difference": difference} if difference else {})}  # type: ignore[index]
        result["equal"] = result["equal"] and not difference
    return result


# -- one configuration ---------------------------------------------------------------------------------


def number_of_workers(repository: Path) -> int | None:
    """The channel's applier workers as relaydeck recorded them when it started (0: the single
    applier): what "default" resolved to."""
    try:
        with sqlite3.connect(repository_uri(repository), uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT Number_of_workers FROM relay_log_info WHERE Channel_name = ?", (CHANNEL,)
            ).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else int(row[0])


def caught_up_to(serve: Serve, target: int, domain: int, timeout: float) -> tuple[bool, str]:
    """Waits until relaydeck's executed seq reaches target; (reached, why not)."""
    deadline = time.monotonic() + timeout
    last = 0
    while True:
        try:
            with sqlite3.connect(repository_uri(serve.repository), uri=True, timeout=1) as conn:
                last = relaydeck_positions(conn, domain)[0]
        except sqlite3.Error:
            pass  # the repository is being created
        if last >= target:
            return True, ""
        if serve.process.poll() is not None:
            return False, f"relaydeck serve exited with {serve.process.returncode}: {serve.said()}"
        number, message = relaydeck_errors(serve.repository)
        if number:
            return False, f"relaydeck error {number}: {message}"
        if time.monotonic() > deadline:
            return False, f"relaydeck at {last} of {target} after {timeout:.0f} s"
        time.sleep(0.1)


def run_config(
    name: str,
    folder: Path,
    source: MariaDBServer,
    replica: MariaDBServer,
    domain: int,
    phases: list[tuple[str, int, float]],
    args: argparse.Namespace,
    running: list[Serve],
    rss_series: list[dict[str, float]] | None = None,
) -> dict[str, object]:
    result: dict[str, object] = {"config": name, "variables": CONFIGS[name].strip() or None, "phases": []}
    failures: list[str] = []
    history = gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)
    started = time.monotonic()
    serve = start_serve(folder, source, CONFIGS[name])
    running.append(serve)
    try:
        reached, why = caught_up_to(serve, history, domain, args.drain_timeout)
        took = time.monotonic() - started
        result["history_catch_up"] = {
            "trx": history,
            "seconds_from_start": round(took, 2),
            "trx_per_s": round(history / took, 1) if reached and took > 0 else None,
            "rss_mb": tree_memory_mb(serve.process.pid)[0],
        }
        result["workers"] = number_of_workers(serve.repository)
        if not reached:
            failures.append(f"{name}: history: {why}")
        for workload, rate, seconds in phases if reached else []:
            try:
                phase = run_phase(source, replica, serve, domain, workload, rate, seconds, args, rss_series)
            except Failed as exc:
                failures.append(f"{name} {workload} {rate_name(rate)}: {exc}")
                break
            phase["config"] = name
            result["phases"].append(phase)  # type: ignore[union-attr]
            print_phase(phase)
            if "failure" in phase:
                failures.append(f"{name} {workload} {rate_name(rate)}: {phase['failure']}")
                break
        # caught up before the stop, so that the tables compared are the source's last ones
        final = gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)
        reached, why = caught_up_to(serve, final, domain, args.drain_timeout)
        result["final_status"] = relaydeck_status(serve.repository)
    finally:
        exit_status = stop_serve(serve)
        running.remove(serve)
    result["serve_exit_status"] = exit_status
    if exit_status != 0:
        failures.append(f"{name}: relaydeck serve exited with {exit_status} on SIGTERM: {serve.said()}")
    if not reached:
        failures.append(f"{name}: before the table check: {why}")
        result["tables"] = {"equal": False, "not_compared": why}
    else:
        result["tables"] = check_relaydeck_tables(source, serve.slave)
        if not result["tables"]["equal"]:  # type: ignore[index]
            failures.append(f"{name}: relaydeck's tables differ from the source's: {result['tables']}")
    result["failures"] = failures
    return result


def rate_name(rate: int) -> str:
    return "unthrottled" if rate == 0 else f"{rate}/s"


# -- printing --------------------------------------------------------------------------------------


def fmt(value: object, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


HEADER = (
    f"{'config':9} {'workload':16} {'rate':>11} {'src trx/s':>9} | {'relaydeck p50/p99/max ms':>24} | "
    f"{'MariaDB p50/p99/max ms':>23} | {'p50 x':>6} {'p99 x':>6} | {'cores rd/mdb':>12} {'cpu x':>5} | "
    f"{'RSS MB rd/mdb':>13} | {'backlog rd/mdb':>14} | {'catch-up s rd/mdb':>17}"
)


def print_phase(p: dict[str, object]) -> None:
    rd, md, src, ratios = (
        p["relaydeck"],
        p["mariadb_replica"],
        p["source"],
        p["ratios_relaydeck_over_mariadb"],
    )
    print(
        f"{p.get('config', ''):9} {p['workload']:16} {rate_name(p['rate']):>11} {fmt(src['trx_per_s'], '.0f'):>9} | "  # type: ignore[index]
        f"{fmt(rd.get('lag_ms_p50')):>7} {fmt(rd.get('lag_ms_p99')):>7} {fmt(rd.get('lag_ms_max')):>8} | "  # type: ignore[union-attr]
        f"{fmt(md.get('lag_ms_p50')):>6} {fmt(md.get('lag_ms_p99')):>7} {fmt(md.get('lag_ms_max')):>8} | "  # type: ignore[union-attr]
        f"{fmt(ratios['p50'], '.2f'):>6} {fmt(ratios['p99'], '.2f'):>6} | "  # type: ignore[index]
        f"{fmt(rd['cores'], '.2f'):>5} / {fmt(md['cores'], '.2f'):<4} {fmt(ratios['cpu'], '.1f'):>5} | "  # type: ignore[index]
        f"{fmt(rd['rss_mb'], '.0f'):>5} / {fmt(md['rss_mb'], '.0f'):<5} | "  # type: ignore[index]
        f"{fmt(rd['backlog_max_trx'], 'd'):>6} / {fmt(md['backlog_max_trx'], 'd'):<5} | "  # type: ignore[index]
        f"{fmt(rd['catch_up_s'], '.2f'):>7} / {fmt(md['catch_up_s'], '.2f'):<7}",  # type: ignore[index]
        flush=True,
    )
    received = rd.get("received_lag") or {}  # type: ignore[union-attr]
    print(
        f"{'':38}  relaydeck received p50 {fmt(received.get('lag_ms_p50'))} / p99 {fmt(received.get('lag_ms_p99'))} ms; "
        f"{src['trx']} trx, sysbench {fmt(src['sysbench_tps'], '.0f')}/s; "  # type: ignore[index]
        f"machine busy {fmt(p['machine_cores'].get('machine_busy'), '.2f')} cores "  # type: ignore[union-attr]
        f"(source {fmt(p['machine_cores'].get('source_mariadbd'), '.2f')}, "  # type: ignore[union-attr]
        f"sysbench {fmt(p['machine_cores'].get('sysbench'), '.2f')}, "  # type: ignore[union-attr]
        f"sampler {fmt(p['machine_cores'].get('sampler_and_benchmark'), '.2f')}, "  # type: ignore[union-attr]
        f"others {fmt(p['machine_cores'].get('others'), '.2f')}); "
        f"sample every {fmt(p['sampling']['interval_ms_median'], '.1f')} ms (max {fmt(p['sampling']['interval_ms_max'], '.0f')})"  # type: ignore[index]
        + (f"; FAILED: {p['failure']}" if "failure" in p else ""),
        flush=True,
    )


# -- main ------------------------------------------------------------------------------------------


def parse_rates(text: str) -> list[int]:
    return [0 if r.strip() in ("0", "unthrottled") else int(r) for r in text.split(",") if r.strip()]


def checkout() -> dict[str, object]:
    """The commit measured and the files changed from it (read-only git)."""

    def git(*argv: str) -> str:
        try:
            return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            return ""

    return {
        "commit": git("rev-parse", "HEAD").strip() or None,
        "modified": [line[3:] for line in git("status", "--porcelain").splitlines() if line[:2] != "??"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--workloads", default="oltp_write_only,oltp_read_write")
    parser.add_argument(
        "--rates", default="200,1000,3000,0", help="trx/s per phase; 0 (or unthrottled): --rate=0"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="sysbench's run per phase")
    parser.add_argument("--configs", default="default,workers4", help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--table-size", type=int, default=20000)
    parser.add_argument("--sample-ms", type=float, default=10.0, help="sampling interval, at most 50 ms")
    parser.add_argument("--long-run", type=float, default=0.0, metavar="MINUTES",
                        help="add a phase of oltp_write_only at 200 trx/s this long (default config)")  # fmt: skip
    parser.add_argument("--drain-timeout", type=float, default=900.0,
                        help="seconds a replica gets to catch up (history, after a phase)")  # fmt: skip
    parser.add_argument(
        "--mariadb-parallel-threads", type=int, default=4, help="the replica's slave_parallel_threads"
    )
    parser.add_argument("--buffer-pool", default="256M", help="innodb_buffer_pool_size of both servers")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    if not 0 < args.sample_ms <= 50:
        parser.error("--sample-ms must be above 0 and at most 50")
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    rates = parse_rates(args.rates)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if unknown := [c for c in configs if c not in CONFIGS]:
        parser.error(f"unknown configuration {unknown}: {', '.join(CONFIGS)}")
    if shutil.which("sysbench") is None:
        parser.error("sysbench is not installed")
    phases = [(w, r, args.seconds) for w in workloads for r in rates]

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # the finally blocks below stop what was started

    signal.signal(signal.SIGTERM, on_sigterm)
    work = Path(tempfile.mkdtemp(prefix="relaydeck-live-sysbench-"))
    results: dict[str, object] = {
        **measurement_header(),
        "checkout": checkout(),
        # other programs on the machine take cores from everything measured here (per phase: "others")
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
        "options": {
            "workloads": workloads,
            "rates": rates,
            "seconds": args.seconds,
            "configs": {name: CONFIGS[name].strip() or "(no [variables])" for name in configs},
            "tables": args.tables,
            "table_size": args.table_size,
            "sample_ms": args.sample_ms,
            "sysbench_threads": 4,
            "long_run_minutes": args.long_run or None,
            "mariadb_replica": (
                f"slave_parallel_threads={args.mariadb_parallel_threads}, slave_parallel_mode=optimistic, "
                "MASTER_USE_GTID=slave_pos"
            ),
            "innodb_buffer_pool_size": args.buffer_pool,
            "order": "configurations one after another beside the same MariaDB replica",
            "lag": "first sample with replica seq >= N minus first sample with source seq >= N",
            "cpu": "utime+stime (relaydeck: its process tree) from sysbench's start until both caught up",
        },
        "versions": {},
        "configs": [],
    }
    failures: list[str] = []
    servers: list[MariaDBServer] = []
    running: list[Serve] = []
    try:
        (work / "source").mkdir()
        (work / "replica").mkdir()
        source = start_server(
            work / "source", extra_options=(f"--innodb-buffer-pool-size={args.buffer_pool}",)
        )
        servers.append(source)
        replica = start_mariadb_replica(work / "replica", source, args)
        servers.append(replica)
        sysbench_version = subprocess.run(
            ["sysbench", "--version"], capture_output=True, text=True, timeout=30
        )
        results["versions"] = {
            "mariadb": scalar(source, "SELECT VERSION()"),
            "sysbench": sysbench_version.stdout.strip(),
        }
        domain = int(scalar(source, "SELECT @@gtid_domain_id"))  # type: ignore[arg-type]
        with source.connect() as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DATABASE}")
        prepared = time.monotonic()
        subprocess.run(
            sysbench_command(source, args, "oltp_write_only", "prepare"),
            check=True, capture_output=True, timeout=1800,
        )  # fmt: skip
        results["prepare_s"] = round(time.monotonic() - prepared, 1)
        at = gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)
        if not wait_until(
            lambda: gtid_seq(str(scalar(replica, "SELECT @@gtid_slave_pos")), domain) >= at,
            REPLICA_SETUP_TIMEOUT_S,
            0.2,
        ):
            raise RuntimeError(f"the MariaDB replica did not apply the prepare: {replica_error(replica)}")
        print(HEADER, flush=True)
        for name in configs:
            config = run_config(name, work / name, source, replica, domain, phases, args, running)
            results["configs"].append(config)  # type: ignore[union-attr]
            failures.extend(config["failures"])  # type: ignore[arg-type]
            print(
                f"{name}: {config['workers']} applier workers; history {config['history_catch_up']}; "
                f"serve exit {config['serve_exit_status']}; "
                f"tables equal to the source's: {config['tables']['equal']}",  # type: ignore[index]
                flush=True,
            )
        if args.long_run:
            series: list[dict[str, float]] = []
            config = run_config(
                "default", work / "long-run", source, replica, domain,
                [("oltp_write_only", LONG_RUN_RATE, args.long_run * 60)], args, running, series,
            )  # fmt: skip
            failures.extend(config["failures"])  # type: ignore[arg-type]
            results["long_run"] = long_run_figures(config, series)
            print_long_run(results["long_run"])  # type: ignore[arg-type]
        # the MariaDB replica too: the comparison means something only if it replicated exactly
        if not wait_until(
            lambda: (
                gtid_seq(str(scalar(replica, "SELECT @@gtid_slave_pos")), domain)
                >= gtid_seq(str(scalar(source, "SELECT @@gtid_binlog_pos")), domain)
            ),
            args.drain_timeout,
            0.2,
        ):
            failures.append(f"the MariaDB replica did not catch up at the end: {replica_error(replica)}")
        else:
            results["mariadb_tables"] = check_mariadb_tables(source, replica)
            if not results["mariadb_tables"]["equal"]:  # type: ignore[index]
                failures.append(f"the MariaDB replica's tables differ: {results['mariadb_tables']}")
    finally:
        for serve in running:
            stop_serve(serve)
        for server in servers:
            server.stop()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    # only a run that went to its end is written (an interrupted one would replace a whole one)
    results["failures"] = failures
    path = write_results("live_sysbench", results)
    print(f"written to {path.relative_to(ROOT)}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


def long_run_figures(config: dict[str, object], series: list[dict[str, float]]) -> dict[str, object]:
    phases = config["phases"]
    phase = phases[0] if phases else {}  # type: ignore[index]
    early = phase.get("rss_at_2_min") if phase else None  # type: ignore[union-attr]
    end = series[-1] if series else None
    within = None
    if early and end:
        within = end["relaydeck_rss_mb"] <= early["relaydeck_rss_mb"] * 1.10
    return {
        "config": "default",
        "history_catch_up": config.get("history_catch_up"),
        "phase": phase,
        "rss_at_2_min": early,
        "rss_at_end": end,
        "relaydeck_rss_within_10pct": within,
        "rss_series": series,
        "tables": config.get("tables"),
        "serve_exit_status": config.get("serve_exit_status"),
    }


def print_long_run(figures: dict[str, object]) -> None:
    early, end = figures["rss_at_2_min"], figures["rss_at_end"]
    print(
        f"long run: relaydeck RSS {fmt((early or {}).get('relaydeck_rss_mb'))} MB at 2 min, "  # type: ignore[union-attr]
        f"{fmt((end or {}).get('relaydeck_rss_mb'))} MB at the end "  # type: ignore[union-attr]
        f"(within 10%: {figures['relaydeck_rss_within_10pct']}); MariaDB replica "
        f"{fmt((early or {}).get('mariadb_rss_mb'))} / {fmt((end or {}).get('mariadb_rss_mb'))} MB; "  # type: ignore[union-attr]
        f"tables equal: {(figures['tables'] or {}).get('equal')}",  # type: ignore[union-attr]
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
