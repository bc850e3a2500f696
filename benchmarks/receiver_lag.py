"""Receiver lag: a live MariaDB source under a steady write load, replicated by relaydeck and by a
MariaDB replica side by side; lag from the source commit to the replica's commit, per transaction.

    python benchmarks/receiver_lag.py [--rates R,R,R] [--seconds S] [--writers N] [--warmup S]

The source is a private mariadbd (tests/mariadb_server.py: its own datadir, 127.0.0.1, ROW
binary logs, defaults otherwise: InnoDB flushes its log at each commit). The load is a stored
procedure the benchmark creates on it, run by --writers client threads at once, each paced to its
share of the rate: one autocommitted INSERT per transaction, whose `committed_us` column is the
source's clock (SYSDATE(6), microseconds) in the statement that commits. Pacing in the server
keeps the client's Python out of the way of the two replicas sharing the machine's cores.

Two replicas follow it from its first binary log, started before the load:
- relaydeck, as `relaydeck serve` runs a channel (a ReplicaServer in this process, configured from
  a TOML file with apply_config: the channel's receiver writes relay logs, its single applier
  follows them into DuckDB). Its on_commit callback stamps each transaction with the wall-clock
  time right after its DuckDB commit (the position committed with it); the row's committed_us is
  decoded from the transaction's rows event. lag = DuckDB commit time - committed_us.
- a MariaDB replica (a second mariadbd, CHANGE MASTER TO ... MASTER_USE_GTID = slave_pos; START
  SLAVE; one SQL thread, as relaydeck's single applier), with slave_run_triggers_for_rbr and a
  trigger of its own that stores SYSDATE(6) in `applied_us` as its SQL thread writes the row.
  lag = applied_us - committed_us (its commit follows the row's write in the same transaction).

Per rate: p50, p99 and max lag over the transactions committed after the first --warmup seconds,
the rate the source took, and whether each replica kept up: the median lag of the last 20% of
transactions at most that of the first 20% plus 100 ms (a replica falling behind lags more with
every transaction), and how fast the lag grew between the two. Every rate's rows are checked: relaydeck's slave holds exactly the
source's rows. The two servers and relaydeck share the machine's cores (and relaydeck's receiver
and applier one process's GIL): the figures are for that setup. They are printed and written to
benchmarks/results/receiver_lag.json with the command line and the machine's CPU count.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
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

from engine.binlog.columns import decode_rows_event  # noqa: E402
from engine.binlog.events import RowsEvent, TableMap  # noqa: E402
from engine.replica.config import apply_config, load_config  # noqa: E402
from engine.replica.server import ReplicaServer  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.transactions import Transaction  # noqa: E402
from tests.mariadb_server import MariaDBServer, replicate_from, start_server  # noqa: E402

CHANNEL = "live"
DATABASE = "lagbench"
COMMITTED_US_COLUMN = 3  # id, phase, writer, committed_us, applied_us, pad
KEPT_UP_SLACK_MS = 100.0
DRAIN_TIMEOUT_S = 180.0

SCHEMA = f"""
CREATE DATABASE {DATABASE};
CREATE TABLE {DATABASE}.t (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    phase INT NOT NULL,
    writer INT NOT NULL,
    committed_us BIGINT NOT NULL,
    applied_us BIGINT NULL,
    pad VARCHAR(64) NOT NULL
) ENGINE=InnoDB;
CREATE PROCEDURE {DATABASE}.steady_load(IN p_phase INT, IN p_writer INT, IN p_rate DOUBLE, IN p_seconds DOUBLE)
BEGIN
    DECLARE started DOUBLE DEFAULT UNIX_TIMESTAMP(SYSDATE(6));
    DECLARE n BIGINT DEFAULT 0;
    DECLARE now_s DOUBLE;
    DECLARE due DOUBLE;
    steady: LOOP
        SET now_s = UNIX_TIMESTAMP(SYSDATE(6));
        IF now_s - started >= p_seconds THEN LEAVE steady; END IF;
        SET due = started + n / p_rate;
        IF due > now_s THEN DO SLEEP(due - now_s); END IF;
        INSERT INTO {DATABASE}.t (phase, writer, committed_us, pad)
            VALUES (p_phase, p_writer, CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS INTEGER),
                    'steady load row');
        SET n = n + 1;
    END LOOP;
END
"""
# On the MariaDB replica only (not logged): its SQL thread's own clock as it writes each row
REPLICA_TRIGGER = f"""
CREATE TRIGGER {DATABASE}.t_applied BEFORE INSERT ON {DATABASE}.t FOR EACH ROW
    SET NEW.applied_us = CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS INTEGER)
"""


@dataclass
class CommitLog:
    """What relaydeck's on_commit saw: per row of the table, its committed_us and when the DuckDB
    commit that held it returned. Decoded as each commit is reported (some microseconds per
    transaction) rather than keeping the transactions, whose events would pile up for the garbage
    collector to walk."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    found: dict[tuple[int, int], tuple[int, float]] = field(default_factory=dict)  # (phase, id) ->
    gtids: set[str] = field(default_factory=set)
    transactions: int = 0
    commits: int = 0

    def __call__(self, batch: list[Transaction]) -> None:
        committed = time.time()
        rows = [row for txn in batch for row in table_rows(txn)]
        with self.lock:
            for phase, row_id, committed_us in rows:
                self.found[(phase, row_id)] = (committed_us, committed)
            self.gtids.update(t.gtid for t in batch if t.gtid)
            self.transactions += len(batch)
            self.commits += 1

    def has(self, gtid: str) -> bool:
        with self.lock:
            return gtid in self.gtids

    def rows(self) -> dict[tuple[int, int], tuple[int, float]]:
        with self.lock:
            return dict(self.found)


def table_rows(txn: Transaction) -> list[tuple[int, int, int]]:
    """(phase, id, committed_us) of each row the transaction inserted into the load's table."""
    maps: dict[int, TableMap] = {}
    rows = []
    for logged in txn.events:
        event = logged.event
        if isinstance(event, TableMap):
            maps[event.table_id] = event
        elif isinstance(event, RowsEvent) and event.table_id in maps:
            table_map = maps[event.table_id]
            if table_map.schema != DATABASE:
                continue
            images = decode_rows_event(event, table_map)
            if images.after is not None:
                after = images.after
                rows.extend(zip(after[1], after[0], after[COMMITTED_US_COLUMN], strict=True))
    return rows


def lag_figures(pairs: list[tuple[int, float]], warmup_s: float) -> dict[str, object]:
    """pairs: (committed_us, commit time in seconds) per transaction."""
    if not pairs:
        return {"measured": 0}
    pairs = sorted(pairs)
    start_us = pairs[0][0] + warmup_s * 1e6
    lags = [(done - us / 1e6) * 1000 for us, done in pairs if us >= start_us]
    if not lags:
        return {"measured": 0}
    fifth = max(1, len(lags) // 5)
    figures = lag_distribution(lags)
    first, last = figures["lag_ms_first_20pct_median"], figures["lag_ms_last_20pct_median"]
    measured = [us for us in (us for us, _ in pairs) if us >= start_us]
    # between the middles of the first and the last fifth
    span_s = (statistics.median(measured[-fifth:]) - statistics.median(measured[:fifth])) / 1e6
    return {
        "measured": len(lags),
        **figures,
        "lag_growth_ms_per_s": round((last - first) / span_s, 1) if span_s > 0 else None,
        "kept_up": last <= first + KEPT_UP_SLACK_MS,
    }


def run_sql(server: MariaDBServer, script: str) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        for statement in split_script(script):
            cur.execute(statement)


def split_script(script: str) -> list[str]:
    """Statements separated by a line ending in ';' (the procedure's body keeps its own)."""
    statements, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        if line.endswith(";") and not line.startswith(" ") or line == "END":
            statements.append("\n".join(current).rstrip(";"))
            current = []
    if current:
        statements.append("\n".join(current))
    return [s for s in statements if s.strip()]


def scalar(server: MariaDBServer, query: str) -> object:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(query)
        row = cur.fetchone()
        return row[0] if row else None


def write_config(work: Path, source: MariaDBServer) -> Path:
    config = work / "relaydeck.toml"
    config.write_text(
        f"""slave = "slave.duckdb"
repository = "repository.sqlite"

[channels.{CHANNEL}]
source_host = "{source.host}"
source_port = {source.port}
source_user = "repl"
source_password = "{source.repl_password}"
relay_log = "relay/relay-bin"
source_heartbeat_period = 1
"""
    )
    return config


def start_mariadb_replica(base: Path, source: MariaDBServer) -> MariaDBServer:
    replica = start_server(
        base, extra_options=("--server-id=3", "--slave-run-triggers-for-rbr=YES", "--skip-log-bin")
    )
    replicate_from(replica, source, heartbeat_period=1)
    return replica


def wait_for(condition, timeout: float, step: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def load(source: MariaDBServer, phase: int, rate: float, seconds: float, writers: int) -> tuple[int, float]:
    """The steady load of one phase; (transactions committed, seconds it took)."""
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            with source.connect() as conn, conn.cursor() as cur:
                cur.execute(
                    f"CALL {DATABASE}.steady_load(%s, %s, %s, %s)", (phase, number, rate / writers, seconds)
                )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - started
    if errors:
        raise RuntimeError(f"load: {errors[0]}")
    count = scalar(source, f"SELECT COUNT(*) FROM {DATABASE}.t WHERE phase = {phase}")
    return int(count), took  # type: ignore[arg-type]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,1000,5000", help="transactions per second, per phase")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--writers", type=int, default=8, help="client sessions writing at once")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of each phase not measured")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]

    work = Path(tempfile.mkdtemp(prefix="relaydeck-receiver-lag-"))
    (work / "source").mkdir()
    (work / "replica").mkdir()
    source = start_server(work / "source")
    servers = [source]
    results: dict[str, object] = {
        **measurement_header(),
        "options": {
            "rates": rates,
            "seconds": args.seconds,
            "writers": args.writers,
            "warmup_s": args.warmup,
            "kept_up_rule": "last-20% median lag <= first-20% median + 100 ms",
            "relaydeck": "relaydeck serve's channel in-process: receiver + single applier",
            "mariadb": "MariaDB replica, one SQL thread (slave_parallel_threads = 0)",
        },
        "mariadb_version": None,
        "runs": [],
    }
    try:
        results["mariadb_version"] = scalar(source, "SELECT VERSION()")
        replica = start_mariadb_replica(work / "replica", source)
        servers.append(replica)
        run_sql(source, SCHEMA)
        commits = CommitLog()
        relaydeck = ReplicaServer(work / "slave.duckdb", work / "repository.sqlite", on_commit=commits)
        try:
            for warning in apply_config(relaydeck, load_config(write_config(work, source))):
                print(f"relaydeck: {warning}", file=sys.stderr)
            # both replicas have the schema before the load starts
            table_query = f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{DATABASE}'"
            if not wait_for(lambda: scalar(replica, table_query) == 1, 60):
                raise RuntimeError("the MariaDB replica did not create the table")
            with replica.connect() as conn, conn.cursor() as cur:
                cur.execute("SET sql_log_bin = 0")
                cur.execute(REPLICA_TRIGGER)
            schema_end = str(scalar(source, "SELECT @@gtid_binlog_pos"))
            if not wait_for(lambda: commits.has(schema_end), 60):
                raise RuntimeError(f"relaydeck did not apply the schema: {relaydeck.status(CHANNEL)[0]}")
            for phase, rate in enumerate(rates, start=1):
                results["runs"].append(  # type: ignore[union-attr]
                    one_phase(source, replica, relaydeck, commits, phase, rate, args)
                )
                print_run(results["runs"][-1])  # type: ignore[index]
            # DuckDB checkpoints inside the commit that takes its WAL past CHECKPOINT_THRESHOLD
            wal = work / "slave.duckdb.wal"
            results["slave_wal_bytes_at_end"] = wal.stat().st_size if wal.exists() else 0
        finally:
            relaydeck.close()
        results["relaydeck_exact"] = exact_rows(source, work / "slave.duckdb")
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    path = write_results("receiver_lag", results)
    print(f"relaydeck's slave holds exactly the source's rows: {results['relaydeck_exact']}")
    print(f"the slave's write-ahead log at the end: {results['slave_wal_bytes_at_end'] / 1e6:.1f} MB")
    print(f"written to {path.relative_to(ROOT)}")
    return 0


def one_phase(
    source: MariaDBServer,
    replica: MariaDBServer,
    relaydeck: ReplicaServer,
    commits: CommitLog,
    phase: int,
    rate: float,
    args: argparse.Namespace,
) -> dict[str, object]:
    before, commits_before = commits.transactions, commits.commits
    cpu_before = time.process_time()
    count, took = load(source, phase, rate, args.seconds, args.writers)
    relaydeck_done = wait_for(lambda: commits.transactions >= before + count, DRAIN_TIMEOUT_S)
    cpu = time.process_time() - cpu_before
    replica_done = wait_for(
        lambda: scalar(replica, f"SELECT COUNT(*) FROM {DATABASE}.t WHERE phase = {phase}") == count,
        DRAIN_TIMEOUT_S,
    )
    ours = [pair for (p, _), pair in commits.rows().items() if p == phase]
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT committed_us, applied_us / 1e6 FROM {DATABASE}.t WHERE phase = {phase}")
        theirs = [(int(us), float(done)) for us, done in cur.fetchall() if done is not None]
    status = relaydeck.status(CHANNEL)[0]
    return {
        "target_trx_per_s": rate,
        "source_trx": count,
        "source_trx_per_s": round(count / took),
        "relaydeck": {
            "caught_up": relaydeck_done,
            "applied": len(ours),
            # this process's CPU (receiver, applier, DuckDB; the load's clients only wait), per
            # transaction: steadier than the lag on a shared machine
            "cpu_ms_per_trx": round(cpu * 1000 / count, 3) if count else None,
            "commits": commits.commits - commits_before,
            **lag_figures(ours, args.warmup),
            "last_error": status.last_error_message or None,
            "status": None if relaydeck_done else str(status),
        },
        "mariadb_replica": {
            "caught_up": replica_done,
            "applied": len(theirs),
            **lag_figures(theirs, args.warmup),
        },
    }


def exact_rows(source: MariaDBServer, slave_path: Path) -> bool:
    with source.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, phase, writer, committed_us FROM {DATABASE}.t ORDER BY id")
        expected = [tuple(int(v) for v in row) for row in cur.fetchall()]
    slave = Slave(slave_path)
    try:
        got = slave.con.execute(
            f"SELECT id, phase, writer, committed_us FROM {DATABASE}.t ORDER BY id"
        ).fetchall()
    finally:
        slave.close()
    return [tuple(int(v) for v in row) for row in got] == expected


def print_run(run: dict[str, object]) -> None:
    print(
        f"{run['target_trx_per_s']:>6.0f} trx/s target, source took {run['source_trx_per_s']} trx/s "
        f"({run['source_trx']} transactions)"
    )
    for name in ("relaydeck", "mariadb_replica"):
        f = run[name]  # type: ignore[index]
        if not f.get("measured"):
            print(f"    {name:16} nothing measured ({f})")
            continue
        print(
            f"    {name:16} lag p50 {f['lag_ms_p50']:7.1f} ms  p99 {f['lag_ms_p99']:7.1f} ms  "
            f"max {f['lag_ms_max']:7.1f} ms  first/last 20% median {f['lag_ms_first_20pct_median']:.1f}/"
            f"{f['lag_ms_last_20pct_median']:.1f} ms  kept up: {f['kept_up']}  caught up: {f['caught_up']}"
            + (
                f"  CPU {f['cpu_ms_per_trx']:.3f} ms/trx, {f['commits']} commits"
                if "cpu_ms_per_trx" in f
                else ""
            )
        )


if __name__ == "__main__":
    sys.exit(main())
