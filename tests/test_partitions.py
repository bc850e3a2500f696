"""The partition definitions the catalog keeps (ddl/partitions.py): what CREATE and ALTER do to
them, that they survive the slave's storage, and what DROP / TRUNCATE PARTITION refuse. The rows
each partition holds are checked against a live MariaDB in test_partitions_live.py."""

from __future__ import annotations

import pytest

from engine.slave import Catalog, UntranslatableStatement
from engine.slave.schema import MysqlPartition, MysqlPartitioning
from tests.test_ddl import Replica

RANGED = (
    "CREATE TABLE r (id INT NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) PARTITION BY RANGE (TO_DAYS(d)) "
    "(PARTITION p0 VALUES LESS THAN (TO_DAYS('2020-01-01')), PARTITION p1 VALUES LESS THAN MAXVALUE)"
)


@pytest.fixture
def replica() -> Replica:
    replica = Replica()
    replica.run("CREATE DATABASE app", None)
    replica.run(RANGED)
    return replica


def partitions(replica: Replica, table: str = "r") -> list[str]:
    partitioning = replica.catalog.get(("app", table)).partitioning  # type: ignore[union-attr]
    return [p.name for p in partitioning.partitions] if partitioning else []


def test_create_keeps_the_definition_as_the_source_wrote_it(replica):
    partitioning = replica.catalog.get(("app", "r")).partitioning
    assert partitioning == MysqlPartitioning(
        "RANGE",
        False,
        "TO_DAYS(d)",
        (MysqlPartition("p0", (("TO_DAYS('2020-01-01')",),)), MysqlPartition("p1", (("MAXVALUE",),))),
    )


def test_the_definition_survives_the_slaves_storage_and_other_alters(replica):
    replica.run("ALTER TABLE r ADD COLUMN note VARCHAR(10)")
    replica.run("RENAME TABLE r TO r2")
    replica.run("CREATE TABLE r3 LIKE r2")
    header, tables = replica.catalog.parts()
    stored = Catalog.from_parts(header, [(kind, text) for (kind, _, _), text in tables.items()])
    assert stored == replica.catalog
    assert partitions(replica, "r2") == partitions(replica, "r3") == ["p0", "p1"]
    replica.run("ALTER TABLE r2 REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (800000), "
                "PARTITION p2 VALUES LESS THAN MAXVALUE)")  # fmt: skip
    assert partitions(replica, "r2") == ["p0", "p1", "p2"]
    replica.run("ALTER TABLE r2 DROP PARTITION p1")
    assert partitions(replica, "r2") == ["p0", "p2"]
    replica.run(
        "ALTER TABLE r2 ENGINE=InnoDB PARTITION BY LIST (id) (PARTITION a VALUES IN (1), PARTITION b DEFAULT)"
    )
    assert partitions(replica, "r2") == ["a", "b"]
    replica.run("ALTER TABLE r2 REMOVE PARTITIONING")
    assert replica.catalog.get(("app", "r2")).partitioning is None


def test_a_table_without_partitions_keeps_its_stored_document_unchanged():
    replica = Replica()
    replica.run("CREATE DATABASE app", None)
    replica.run("CREATE TABLE plain (id INT PRIMARY KEY)")
    assert "partitioning" not in replica.catalog.get(("app", "plain")).to_dict()


def test_drop_partition_deletes_what_the_partition_held(replica):
    replica.con.execute("INSERT INTO app.r VALUES (1, '2019-12-31'), (2, '2020-01-01'), (3, '2000-01-01')")
    replica.run("ALTER TABLE r TRUNCATE PARTITION p1")
    assert replica.con.sql("SELECT id FROM app.r ORDER BY id").fetchall() == [(1,), (3,)]
    replica.run("ALTER TABLE r DROP PARTITION p0")
    assert replica.con.sql("SELECT id FROM app.r").fetchall() == []


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("ALTER TABLE h TRUNCATE PARTITION p0", "hash functions"),
        ("ALTER TABLE r DROP PARTITION nope", "has no partition `nope`"),
        ("ALTER TABLE r DROP PARTITION p0, p1", "every partition"),
        ("ALTER TABLE plain DROP PARTITION p0", "holds no partitioning"),
        ("ALTER TABLE s DROP PARTITION a", "string comparison"),  # collations: 'US' = 'us'
        ("ALTER TABLE s TRUNCATE PARTITION a", "string comparison"),
        ("ALTER TABLE r EXCHANGE PARTITION p0 WITH TABLE plain", "moves rows without logging them"),
    ],
)
def test_what_cannot_be_followed_is_refused_with_its_reason(replica, statement, reason):
    replica.run("CREATE TABLE h (id INT PRIMARY KEY) PARTITION BY HASH (id) PARTITIONS 2")
    replica.run("CREATE TABLE plain (id INT PRIMARY KEY)")
    replica.run(
        "CREATE TABLE s (c VARCHAR(2) NOT NULL PRIMARY KEY) PARTITION BY LIST COLUMNS (c) "
        "(PARTITION a VALUES IN ('us'), PARTITION b VALUES IN ('ca'))"
    )
    with pytest.raises(UntranslatableStatement, match=reason):
        replica.run(statement)


def test_truncate_partition_all_empties_a_hash_partitioned_table(replica):
    replica.run("CREATE TABLE h (id INT PRIMARY KEY) PARTITION BY KEY () PARTITIONS 2")
    replica.con.execute("INSERT INTO app.h VALUES (1), (2)")
    replica.run("ALTER TABLE h TRUNCATE PARTITION ALL")
    assert replica.con.sql("SELECT count(*) FROM app.h").fetchall() == [(0,)]
