"""Every MySQL database name replicates, including those DuckDB or relaydeck use themselves.

`main` (DuckDB's default schema), `temp` and `system` (DuckDB catalogs: a schema of that name is
ambiguous), `pg_catalog` and `information_schema` (DuckDB's system catalog takes no schemas) and
relaydeck's own `__relaydeck` / `__relaydeck_tmp` become DuckDB schemas with a `~` in front, as
does a name that starts with `~` itself. Each case is a relay log written here: the database
created, a table in it filled by row events and by statements, read back under its MySQL name and
under its DuckDB name (in a slave file named like one of the databases: `shop.duckdb`); then `DROP DATABASE __relaydeck` drops the user's database and nothing of
relaydeck's own bookkeeping.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from engine.binlog.constants import EventType
from engine.replay import ChannelSpec, Replay
from engine.slave.database import Slave
from engine.slave.export import export_csv

from .relay_logs import RelayLogBuilder, table_of

# MySQL name -> the DuckDB schema a DBA finds it under (README, "replay")
NAMES = {
    "__relaydeck": "~__relaydeck",
    "__relaydeck_tmp": "~__relaydeck_tmp",
    "main": "~main",
    "temp": "~temp",
    "SYSTEM": "~SYSTEM",
    "pg_catalog": "~pg_catalog",
    "information_schema": "~information_schema",
    "~main": "~~main",
    "shop": "shop",  # the slave file's own name (shop.duckdb): DuckDB's catalog of that name
}


def write_workload(log: RelayLogBuilder, db: str) -> None:
    """The database, a table, rows by row events (insert, update, delete) and by statements."""
    log.ddl(f"CREATE DATABASE `{db}`")
    log.ddl(f"CREATE TABLE `{db}`.`t` (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))", db)
    table = table_of(db)
    log.rows(table, EventType.WRITE_ROWS, [(1, "a"), (2, "b"), (3, "c")])
    log.rows(table, EventType.UPDATE_ROWS, [(1, "a"), (1, "a2")])
    log.rows(table, EventType.DELETE_ROWS, [(2, "b")])
    log.statement("INSERT INTO t VALUES (4, 'd')", db)  # the event's default database
    log.statement(f"UPDATE `{db}`.t SET v = 'c2' WHERE id = 3", "")  # qualified


EXPECTED_ROWS = [(1, "a2"), (3, "c2"), (4, "d")]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("names")
    log = RelayLogBuilder(folder / "relay")
    for db in NAMES:
        write_workload(log, db)
    index = log.close()
    slave, repo = folder / "shop.duckdb", folder / "r.sqlite"
    (outcome,) = Replay(slave, repo, [ChannelSpec("c1", index)]).run()
    assert outcome.error is None, outcome.error and outcome.error.one_line()
    return slave, repo, index


@pytest.mark.parametrize("db", list(NAMES))
def test_each_database_name_replicates_and_reads_back_under_its_mysql_name(replayed, db):
    slave_path, _, _ = replayed
    slave = Slave(slave_path)
    try:
        assert (db, "t") in slave.user_tables()
        table = slave.catalog.get((db, "t"))
        assert table is not None
        assert export_csv(slave, table).splitlines()[1:] == [f"{i},{v}" for i, v in EXPECTED_ROWS]
    finally:
        slave.close()


@pytest.mark.parametrize("db", list(NAMES))
def test_each_database_is_the_documented_duckdb_schema(replayed, db):
    slave_path, _, _ = replayed
    con = duckdb.connect(str(slave_path), read_only=True)
    try:
        schema = NAMES[db].replace('"', '""')
        # catalog.schema.table: `shop`.t alone would be ambiguous in shop.duckdb
        assert con.execute(f'SELECT id, v FROM shop."{schema}".t ORDER BY id').fetchall() == EXPECTED_ROWS
    finally:
        con.close()


def test_drop_database_relaydeck_drops_the_users_database_and_keeps_the_bookkeeping(replayed, tmp_path):
    slave_path, repo, index = replayed
    # the same channel's log, continued: the drop, then more changes elsewhere
    log = RelayLogBuilder(tmp_path / "relay")
    for db in NAMES:
        write_workload(log, db)
    log.ddl("DROP DATABASE `__relaydeck`")
    log.statement("INSERT INTO t VALUES (5, 'e')", "main")
    index = log.close()
    (outcome,) = Replay(slave_path, repo, [ChannelSpec("c1", index)]).run()
    assert outcome.error is None, outcome.error and outcome.error.one_line()
    assert outcome.stats.transactions == 2  # what came before was applied by the first run
    slave = Slave(slave_path)
    try:
        assert ("__relaydeck", "t") not in slave.user_tables()
        assert slave.progress("c1").transactions == 7 * len(NAMES) + 2
        main = slave.catalog.get(("main", "t"))
        assert export_csv(slave, main).splitlines()[-1] == "5,e"
    finally:
        slave.close()
