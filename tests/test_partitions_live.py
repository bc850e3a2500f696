"""DROP / TRUNCATE / ADD / REORGANIZE PARTITION on a live MariaDB source, received and replayed:
the slave ends with exactly the source's rows (the source placed and removed them; the slave
follows from the partition definitions its catalog keeps, across two replays)."""

from __future__ import annotations

import subprocess

import duckdb
import pytest

from tests.conftest import replay_argv
from tests.test_receiver import receive

TABLES = {
    # RANGE on an expression; no key, so NULL years can be stored (NULL: the first partition)
    "by_year": (
        "CREATE TABLE by_year (id INT NOT NULL, d DATE NULL, note VARCHAR(20)) "
        "PARTITION BY RANGE (YEAR(d)) (PARTITION p2019 VALUES LESS THAN (2020), "
        "PARTITION p2020 VALUES LESS THAN (2021), PARTITION p2021 VALUES LESS THAN (2022), "
        "PARTITION pmax VALUES LESS THAN MAXVALUE)"
    ),
    # RANGE COLUMNS over two columns, MAXVALUE inside a bound
    "by_pair": (
        "CREATE TABLE by_pair (id INT NOT NULL, a INT NOT NULL, b DATE NOT NULL, PRIMARY KEY (id, a, b)) "
        "PARTITION BY RANGE COLUMNS (a, b) (PARTITION q0 VALUES LESS THAN (10, '2020-06-01'), "
        "PARTITION q1 VALUES LESS THAN (10, MAXVALUE), PARTITION q2 VALUES LESS THAN (20, '2001-01-01'), "
        "PARTITION q3 VALUES LESS THAN (100, MAXVALUE))"
    ),
    # LIST with NULL listed, and MariaDB's DEFAULT partition
    "by_kind": (
        "CREATE TABLE by_kind (id INT NOT NULL, k INT NULL) PARTITION BY LIST (k) ("
        "PARTITION odd VALUES IN (1, 3, 5), PARTITION even VALUES IN (2, 4, NULL), PARTITION other DEFAULT)"
    ),
    # LIST COLUMNS of two columns
    "by_place": (
        "CREATE TABLE by_place (id INT NOT NULL, c SMALLINT NOT NULL, n INT NOT NULL, PRIMARY KEY (id, c, n)) "
        "PARTITION BY LIST COLUMNS (c, n) (PARTITION west VALUES IN ((1, 1), (2, 1)), "
        "PARTITION east VALUES IN ((1, 2), (3, 2)), PARTITION rest VALUES IN ((2, 2), (3, 1)))"
    ),
    # HASH: only TRUNCATE PARTITION ALL can say which rows go
    "by_hash": "CREATE TABLE by_hash (id INT NOT NULL PRIMARY KEY, v INT) PARTITION BY HASH (id) PARTITIONS 3",
}
FIRST_ROWS = [
    "INSERT INTO by_year VALUES (1, '2019-05-01', 'a'), (2, '2020-01-01', 'b'), (3, '2020-12-31', 'c'), "
    "(4, '2021-06-30', 'd'), (5, '2022-02-02', 'e'), (6, NULL, 'null year'), (7, '2030-01-01', 'f'), "
    "(8, '2018-01-01', 'g')",
    "INSERT INTO by_pair VALUES (1, 5, '2030-01-01'), (2, 10, '2020-01-01'), (3, 10, '2020-06-01'), "
    "(4, 10, '2099-01-01'), (5, 15, '2010-01-01'), (6, 20, '2000-12-31'), (7, 20, '2001-01-01'), "
    "(8, 99, '1999-01-01'), (9, 9, '1990-01-01')",
    "INSERT INTO by_kind VALUES (1, 1), (2, 2), (3, NULL), (4, 7), (5, 5), (6, 4), (7, 100), (8, 3)",
    "INSERT INTO by_place VALUES (1, 1, 1), (2, 2, 1), (3, 1, 2), (4, 3, 2), (5, 2, 2), (6, 3, 1)",
    "INSERT INTO by_hash VALUES (1, 1), (2, 2), (3, 3), (4, 4)",
]
FIRST_CHANGES = [
    "ALTER TABLE by_year DROP PARTITION p2019",  # 1, 6 (NULL) and 8 go; NULL years now go to p2020
    "ALTER TABLE by_year TRUNCATE PARTITION p2021",
    "ALTER TABLE by_pair DROP PARTITION q1",  # (10, '2020-06-01') and (10, '2099-01-01')
    "ALTER TABLE by_kind TRUNCATE PARTITION even",  # 2, 4 and the NULL
]
SECOND_CHANGES = [
    "ALTER TABLE by_year REORGANIZE PARTITION pmax INTO (PARTITION p2022 VALUES LESS THAN (2023), "
    "PARTITION pmax VALUES LESS THAN MAXVALUE)",
    "INSERT INTO by_year VALUES (9, NULL, 'null again'), (10, '2019-01-01', 'below'), (11, '2022-12-31', 'h'), "
    "(12, '2023-01-01', 'i')",
    "ALTER TABLE by_year DROP PARTITION p2020",  # holds NULL and 2019 now: the lowest partition
    "ALTER TABLE by_year DROP PARTITION p2022",
    "ALTER TABLE by_pair ADD PARTITION (PARTITION q9 VALUES LESS THAN (MAXVALUE, MAXVALUE))",
    "INSERT INTO by_pair VALUES (10, 150, '2000-01-01'), (11, 100, '2000-01-01'), (12, 0, '2000-01-01')",
    "ALTER TABLE by_pair TRUNCATE PARTITION q0, q3",
    "INSERT INTO by_kind VALUES (9, NULL), (10, 9)",
    "ALTER TABLE by_kind TRUNCATE PARTITION other",
    "ALTER TABLE by_place DROP PARTITION east, rest",
    "ALTER TABLE by_hash TRUNCATE PARTITION ALL",
    "INSERT INTO by_hash VALUES (5, 5)",
]


def run(server, database: str, statements: list[str]) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"USE {database}")
        for statement in statements:
            cur.execute(statement)


def source_rows(server, database: str, table: str) -> list[tuple]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {database}.{table} ORDER BY id")
        return [tuple(row) for row in cur.fetchall()]


def slave_rows(slave, database: str, table: str) -> list[tuple]:
    with duckdb.connect(str(slave), read_only=True) as conn:
        return [tuple(row) for row in conn.sql(f"SELECT * FROM {database}.{table} ORDER BY id").fetchall()]


def assert_same_rows(server, slave, database: str) -> None:
    for table in TABLES:
        assert slave_rows(slave, database, table) == source_rows(server, database, table), table


@pytest.mark.parametrize(
    ("database", "options"),
    [("parts", ()), ("parts_parallel", ("--workers", "2", "--parallel-type", "writeset"))],
)
def test_partition_maintenance_on_the_source_leaves_the_slave_with_its_rows(
    mariadb_source, tmp_path, database, options
):
    with mariadb_source.connect() as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {database}")
    run(mariadb_source, database, [*TABLES.values(), *FIRST_ROWS, *FIRST_CHANGES])
    assert len(source_rows(mariadb_source, database, "by_year")) == 4  # what the source kept
    relay = tmp_path / "relay"
    index = relay / "relay-bin-parts.index"
    slave = tmp_path / "slave.duckdb"
    replay = replay_argv(slave, tmp_path / "repo.sqlite", f"parts={index}", *options)
    # the source's binlogs hold the other run's database too: the slave holds it as well
    receive(mariadb_source, relay, "parts")
    done = subprocess.run(replay, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert_same_rows(mariadb_source, slave, database)

    # a second replay: the partition lists come from the catalog the slave stored
    run(mariadb_source, database, SECOND_CHANGES)
    receive(mariadb_source, relay, "parts")
    done = subprocess.run(replay, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert_same_rows(mariadb_source, slave, database)
    assert source_rows(mariadb_source, database, "by_hash") == [(5, 5)]
