"""DDL shares DuckDB transactions: the single applier batches it with the row changes around it,
the parallel applier's worker applies a DDL with what the coordinator chained after it (the next
DDL, the transactions right after). Tables, positions, errors and crash recovery stay what one
commit per DDL gave."""

from __future__ import annotations

import duckdb
import pytest

from engine.applier.vocabulary import ParallelOptions
from engine.binlog.column_types import ColumnDef, TableDef
from engine.binlog.constants import EventType
from engine.generate import generate
from engine.replay import ChannelSpec, Replay

from .conftest import kill_once_wal_grew, replay_argv
from .relay_logs import RelayLogBuilder, table_of
from .test_parallel_oracle import commit_record_counts
from .test_replay_oracle import assert_tables_equal, expected_tables

SOURCE = "00000000-0000-0000-0000-00000000000b"  # RelayLogBuilder's default source (11)


def _replay(tmp_path, index, workers: int, kind: str = "logical_clock"):
    parallel = ParallelOptions(workers=workers, parallel_type=kind) if workers else None
    slave = tmp_path / "slave.duckdb"
    (outcome,) = Replay(slave, tmp_path / "repo.sqlite", [ChannelSpec("", index)], parallel=parallel).run()
    return slave, outcome


def _rows(slave, sql: str) -> list[tuple]:
    con = duckdb.connect(str(slave), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _progress(slave) -> tuple[int, str]:
    (row,) = _rows(slave, "SELECT transactions, executed_gtids FROM __relaydeck.progress WHERE channel = ''")
    return row


def _mixed_log(folder):
    """DDL between row changes and statements that need it applied first: 13 transactions, 6 DDL."""
    log = RelayLogBuilder(folder)
    two = table_of("shop")
    three = TableDef("shop", "t", (*two.columns, ColumnDef.of("w", "INT")), ("id",))
    log.ddl("CREATE DATABASE shop")
    log.ddl("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    log.rows(two, EventType.WRITE_ROWS, [(1, "a"), (2, "b")])
    log.ddl("ALTER TABLE t ADD COLUMN w INT", "shop")
    log.statement("UPDATE t SET w = id * 10", "shop")
    log.rows(three, EventType.WRITE_ROWS, [(3, "c", 30)])
    log.ddl("CREATE TABLE u (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    log.ddl("RENAME TABLE u TO u2", "shop")
    log.rows(table_of("shop", "u2"), EventType.WRITE_ROWS, [(7, "x")])
    log.ddl("DROP TABLE u2", "shop")
    log.rows(three, EventType.DELETE_ROWS, [(1, "a", 10)])
    log.statement("INSERT INTO t VALUES (4, 'd', 40)", "shop")
    log.rows(three, EventType.UPDATE_ROWS, [(4, "d", 40), (4, "e", 41)])
    return log.close()


@pytest.mark.parametrize("workers", [0, 4])
def test_ddl_between_row_changes_gives_the_same_tables_in_fewer_commits(tmp_path, workers):
    slave, outcome = _replay(tmp_path, _mixed_log(tmp_path / "relay"), workers)
    assert outcome.error is None
    assert _rows(slave, "SELECT id, v, w FROM shop.t ORDER BY id") == [
        (2, "b", 20),
        (3, "c", 30),
        (4, "e", 41),
    ]
    assert _rows(slave, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop'") == [
        ("t",)
    ]
    assert _progress(slave) == (13, f"{SOURCE}:1-13")
    (records,) = _rows(slave, "SELECT count(DISTINCT gtid) FROM __relaydeck.commits")[0]
    assert records == 13
    # one commit per DDL and per stretch of row changes between them made 10 or more
    assert outcome.stats.commits < 6


@pytest.mark.parametrize("kind", ["database", "logical_clock", "writeset"])
def test_consecutive_ddl_share_a_worker_commit_and_rows_after_them_see_it(tmp_path, kind):
    log = RelayLogBuilder(tmp_path / "relay")
    log.ddl("CREATE DATABASE shop")
    tables = [f"t{i}" for i in range(30)]
    for name in tables:
        log.ddl(f"CREATE TABLE {name} (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    for i, name in enumerate(tables):
        log.rows(table_of("shop", name), EventType.WRITE_ROWS, [(i, name), (100 + i, "z")])
    log.ddl("ALTER TABLE t3 ADD COLUMN w INT", "shop")
    log.ddl("DROP TABLE t5", "shop")
    log.rows(
        TableDef("shop", "t3", (*table_of("shop").columns, ColumnDef.of("w", "INT")), ("id",)),
        EventType.WRITE_ROWS,
        [(7, "w", 70)],
    )
    slave, outcome = _replay(tmp_path, log.close(), 4, kind)
    assert outcome.error is None
    transactions = 1 + 30 + 30 + 3
    assert _progress(slave) == (transactions, f"{SOURCE}:1-{transactions}")
    assert _rows(slave, "SELECT * FROM shop.t3 ORDER BY id") == [
        (3, "t3", None),
        (7, "w", 70),
        (103, "z", None),
    ]
    assert _rows(slave, "SELECT id, v FROM shop.t29 ORDER BY id") == [(29, "t29"), (129, "z")]
    assert ("t5",) not in _rows(
        slave, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop'"
    )
    # 31 DDL in a row, a commit each before: a worker takes those the coordinator queued while it
    # applied the one before
    assert outcome.stats.commits < 31


@pytest.mark.parametrize("workers", [0, 4])
def test_a_failing_ddl_among_batched_ones_stops_right_before_it(tmp_path, workers):
    log = RelayLogBuilder(tmp_path / "relay")
    log.ddl("CREATE DATABASE shop")
    log.ddl("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    log.rows(table_of("shop"), EventType.WRITE_ROWS, [(1, "a")])
    log.ddl("CREATE TABLE u (id INT NOT NULL PRIMARY KEY)", "shop")
    log.ddl("ALTER TABLE missing ADD COLUMN w INT", "shop")  # transaction 5: no such table
    log.ddl("CREATE TABLE after_it (id INT NOT NULL PRIMARY KEY)", "shop")
    log.rows(table_of("shop"), EventType.WRITE_ROWS, [(2, "b")])
    slave, outcome = _replay(tmp_path, log.close(), workers)
    assert outcome.error is not None
    assert f"{SOURCE}:5" in outcome.error.one_line()
    assert _progress(slave) == (4, f"{SOURCE}:1-4")
    assert _rows(slave, "SELECT * FROM shop.t") == [(1, "a")]
    names = {
        n
        for (n,) in _rows(
            slave, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop'"
        )
    }
    assert names == {"t", "u"}


@pytest.mark.parametrize("kind", ["database", "logical_clock", "writeset"])
def test_rows_after_ddl_on_a_table_without_a_key_are_applied_as_read(tmp_path, kind):
    """A short run right after DDL goes to the DDL's worker before the DDL is applied, unchecked
    against the catalog: on a table without a primary key it cannot be applied set-based, and the
    worker reads its transactions again."""
    log = RelayLogBuilder(tmp_path / "relay")
    log.ddl("CREATE DATABASE shop")
    log.ddl("CREATE TABLE bag (id INT NOT NULL, v VARCHAR(10))", "shop")
    bag = TableDef("shop", "bag", table_of("shop").columns, ())
    log.rows(bag, EventType.WRITE_ROWS, [(1, "a"), (1, "a"), (2, "b")])
    log.rows(bag, EventType.DELETE_ROWS, [(1, "a")])
    log.ddl("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", "shop")
    log.rows(table_of("shop"), EventType.WRITE_ROWS, [(5, "e")])
    slave, outcome = _replay(tmp_path, log.close(), 4, kind)
    assert outcome.error is None
    assert _rows(slave, "SELECT id, v FROM shop.bag ORDER BY id") == [(1, "a"), (2, "b")]
    assert _rows(slave, "SELECT * FROM shop.t") == [(5, "e")]
    assert _progress(slave) == (6, f"{SOURCE}:1-6")
    (records,) = _rows(slave, "SELECT count(*) FROM __relaydeck.commits")[0]
    assert records == 6


@pytest.mark.parametrize(
    "options",
    [("--workers", "0"), ("--workers", "4", "--parallel-type", "writeset", "--preserve-commit-order", "off")],
    ids=["single", "parallel-writeset-order-off"],
)
def test_sigkill_amid_ddl_batches_then_restart_gives_the_exact_tables(options, tmp_path):
    """Killed while DDL and the rows between them share commits: nothing applied twice, and the
    restart's tables are the generator's."""
    import subprocess

    summary = generate("ddl", 3, tmp_path / "relay", size_mb=0.5)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    command = replay_argv(slave, repo, f"={summary.index_file}", *options)
    # the whole replay writes about 550 KB of write-ahead log: killed twice on the way, each time
    # once its commits added 120 KB to it
    committed = 0
    for _ in range(2):
        kill_once_wal_grew(command, f"{slave}.wal", 120_000)
        records, ordinals, positions = commit_record_counts(slave)
        assert committed < records == ordinals == positions < summary.transactions
        committed = records
    final = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert commit_record_counts(slave) == (summary.transactions,) * 3
    assert_tables_equal(slave, expected_tables(tmp_path / "relay" / "expected"))
