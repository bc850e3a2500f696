"""Replicated DDL -> DuckDB: every plan runs on a real in-memory DuckDB; tables and models are checked."""

from __future__ import annotations

import csv
import datetime as dt
import doctest
import importlib
import pkgutil
from pathlib import Path

import duckdb
import pytest
import sqlglot
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL

from engine.binlog.events.query import Query
from engine.errors import RelaydeckError
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.slave import (
    Catalog,
    DdlPlan,
    DdlTranslator,
    MysqlColumn,
    MysqlTable,
    UntranslatableStatement,
    duckdb_type,
    quote_ident,
)
from engine.slave import ddl as ddl_package
from engine.slave.ddl import unwrap_executable_comments
from engine.slave.guard import RefusedStatement
from engine.slave.names import duckdb_schema, mysql_database

MULTISOURCE = Path(__file__).resolve().parent.parent / "fixtures" / "mariadb-10.11-multisource"
DDL_VERBS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")


class Replica:
    """A DuckDB slave fed one DDL statement at a time, the way the applier does."""

    def __init__(self, translator: DdlTranslator | None = None) -> None:
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        self.catalog = Catalog()
        self.translator = translator or DdlTranslator()

    def run(self, sql: str, db: str | None = "app", **kwargs: object) -> DdlPlan:
        plan = self.translator.translate(sql, db, self.catalog, **kwargs)  # type: ignore[arg-type]
        self.con.execute("BEGIN")
        for statement in plan.statements:
            self.con.execute(statement)
        self.con.execute("COMMIT")
        self.catalog = plan.catalog
        return plan

    # db is the MySQL database; the DuckDB schema holding its tables may differ (engine/slave/names.py)

    def describe(self, db: str, table: str) -> list[tuple[str, str]]:
        rows = self.con.execute(f"DESCRIBE {quote_ident(duckdb_schema(db))}.{quote_ident(table)}").fetchall()
        return [(r[0], r[1]) for r in rows]

    def columns(self, db: str, table: str) -> list[str]:
        return [name for name, _ in self.describe(db, table)]

    def rows(self, db: str, table: str, order: str = "1") -> list[tuple]:
        return self.con.execute(
            f"SELECT * FROM {quote_ident(duckdb_schema(db))}.{quote_ident(table)} ORDER BY {order}"
        ).fetchall()

    def table(self, db: str, table: str) -> MysqlTable:
        return self.catalog[(db, table)]

    def tables(self) -> set[tuple[str, str]]:
        rows = self.con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()
        return {(mysql_database(r[0]), r[1]) for r in rows}


@pytest.fixture
def replica() -> Replica:
    r = Replica()
    r.run("CREATE DATABASE app")
    return r


# ---------------------------------------------------------------------------------------------
# identifiers, databases
# ---------------------------------------------------------------------------------------------


def test_quote_ident_doubles_double_quotes() -> None:
    assert quote_ident("plain") == '"plain"'
    assert quote_ident('a"b') == '"a""b"'
    assert quote_ident("x.y z`ü") == '"x.y z`ü"'


DDL_MODULES = ["engine.slave.identifiers"] + [
    f"{ddl_package.__name__}.{m.name}" for m in pkgutil.iter_modules(ddl_package.__path__)
]


@pytest.mark.parametrize("module", DDL_MODULES)
def test_the_examples_in_the_ddl_modules_hold(module: str) -> None:
    results = doctest.testmod(importlib.import_module(module))
    assert results.failed == 0


def test_the_ddl_modules_have_examples() -> None:
    finder = doctest.DocTestFinder()
    examples = {m: sum(len(t.examples) for t in finder.find(importlib.import_module(m))) for m in DDL_MODULES}
    assert examples[f"{ddl_package.__name__}.pretransforms"] >= 10, examples
    assert sum(examples.values()) >= 30, examples


def test_create_and_drop_database() -> None:
    r = Replica()
    plan = r.run("CREATE DATABASE IF NOT EXISTS shop CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
    assert plan.kind == "create_database"
    assert r.catalog.database("shop").charset == "utf8mb4"
    assert r.catalog.database("shop").collation == "utf8mb4_general_ci"
    assert ("shop",) in r.con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()
    assert r.run("CREATE SCHEMA IF NOT EXISTS shop").kind == "ignored"

    r.run("CREATE TABLE shop.t (a INT)")
    r.run("CREATE TABLE shop.u (a INT)")
    plan = r.run("DROP DATABASE shop")
    assert plan.kind == "drop_database"
    assert set(plan.tables) == {("shop", "t"), ("shop", "u")}
    assert "shop" not in r.catalog.databases and len(r.catalog) == 0
    assert ("shop",) not in r.con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()
    assert r.run("DROP SCHEMA IF EXISTS shop").kind == "ignored"


def test_alter_database_changes_defaults_new_tables_inherit(replica: Replica) -> None:
    plan = replica.run("ALTER DATABASE app CHARACTER SET = latin1")
    assert plan.kind == "alter_database" and plan.statements == []
    replica.run("CREATE TABLE t (s VARCHAR(3), n INT)")
    assert replica.table("app", "t").column("s").charset == "latin1"
    assert replica.table("app", "t").column("n").charset is None


# ---------------------------------------------------------------------------------------------
# CREATE TABLE: types
# ---------------------------------------------------------------------------------------------

# (column type as written, DuckDB type as DESCRIBE shows it, normalized MySQL type)
TYPES = [
    ("TINYINT", "TINYINT", "tinyint"),
    ("TINYINT(4) UNSIGNED", "UTINYINT", "tinyint unsigned"),
    ("TINYINT(1)", "TINYINT", "tinyint(1)"),
    ("BOOL", "TINYINT", "tinyint(1)"),
    ("BOOLEAN", "TINYINT", "tinyint(1)"),
    ("SMALLINT", "SMALLINT", "smallint"),
    ("SMALLINT UNSIGNED", "USMALLINT", "smallint unsigned"),
    ("MEDIUMINT", "INTEGER", "mediumint"),
    ("MEDIUMINT UNSIGNED", "UINTEGER", "mediumint unsigned"),
    ("INT(11)", "INTEGER", "int"),
    ("INTEGER UNSIGNED", "UINTEGER", "int unsigned"),
    ("INT(10) UNSIGNED ZEROFILL", "UINTEGER", "int unsigned"),
    ("BIGINT(20)", "BIGINT", "bigint"),
    ("BIGINT UNSIGNED", "UBIGINT", "bigint unsigned"),
    ("INT1", "TINYINT", "tinyint"),
    ("INT3", "INTEGER", "mediumint"),
    ("MIDDLEINT", "INTEGER", "mediumint"),
    ("INT8", "BIGINT", "bigint"),
    ("SERIAL", "UBIGINT", "bigint unsigned"),
    ("DECIMAL(12,2)", "DECIMAL(12,2)", "decimal(12,2)"),
    ("DECIMAL", "DECIMAL(10,0)", "decimal(10,0)"),
    ("NUMERIC(38,10)", "DECIMAL(38,10)", "decimal(38,10)"),
    ("DECIMAL(65,30)", "VARCHAR", "decimal(65,30)"),
    ("DEC(5,2) UNSIGNED", "DECIMAL(5,2)", "decimal(5,2) unsigned"),
    ("FIXED(5,2)", "DECIMAL(5,2)", "decimal(5,2)"),
    ("FLOAT", "FLOAT", "float"),
    ("FLOAT(7,3)", "FLOAT", "float(7,3)"),
    ("FLOAT UNSIGNED", "FLOAT", "float unsigned"),
    ("FLOAT(30)", "DOUBLE", "double"),
    ("DOUBLE", "DOUBLE", "double"),
    ("DOUBLE PRECISION", "DOUBLE", "double"),
    ("REAL", "DOUBLE", "double"),
    ("DOUBLE(10,2) UNSIGNED", "DOUBLE", "double(10,2) unsigned"),
    ("BIT", "UBIGINT", "bit(1)"),
    ("BIT(64)", "UBIGINT", "bit(64)"),
    ("DATE", "DATE", "date"),
    ("DATETIME", "TIMESTAMP", "datetime"),
    ("DATETIME(6)", "TIMESTAMP", "datetime(6)"),
    ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "timestamp"),
    ("TIMESTAMP(3)", "TIMESTAMP WITH TIME ZONE", "timestamp(3)"),
    ("TIME", "INTERVAL", "time"),
    ("TIME(6)", "INTERVAL", "time(6)"),
    ("YEAR", "SMALLINT", "year"),
    ("YEAR(4)", "SMALLINT", "year"),
    ("CHAR", "VARCHAR", "char(1)"),
    ("CHAR(12)", "VARCHAR", "char(12)"),
    ("VARCHAR(190)", "VARCHAR", "varchar(190)"),
    ("CHARACTER VARYING(7)", "VARCHAR", "varchar(7)"),
    ("NATIONAL VARCHAR(5)", "VARCHAR", "varchar(5)"),
    ("NCHAR(2)", "VARCHAR", "char(2)"),
    ("TINYTEXT", "VARCHAR", "tinytext"),
    ("TEXT", "VARCHAR", "text"),
    ("TEXT(100)", "VARCHAR", "tinytext"),
    ("MEDIUMTEXT", "VARCHAR", "mediumtext"),
    ("LONGTEXT", "VARCHAR", "longtext"),
    ("LONG", "VARCHAR", "mediumtext"),
    ("LONG VARCHAR", "VARCHAR", "mediumtext"),
    ("BINARY(16)", "BLOB", "binary(16)"),
    ("VARBINARY(5)", "BLOB", "varbinary(5)"),
    ("CHAR(4) BYTE", "BLOB", "binary(4)"),
    ("VARCHAR(10) CHARACTER SET binary", "BLOB", "varbinary(10)"),
    ("TINYBLOB", "BLOB", "tinyblob"),
    ("BLOB", "BLOB", "blob"),
    ("MEDIUMBLOB", "BLOB", "mediumblob"),
    ("LONGBLOB", "BLOB", "longblob"),
    ("LONG VARBINARY", "BLOB", "mediumblob"),
    ("JSON", "JSON", "json"),
    ("ENUM('a','b''c')", "VARCHAR", "enum('a','b''c')"),
    ("SET('x','y')", "VARCHAR", "set('x','y')"),
    ("GEOMETRY", "BLOB", "geometry"),
    ("POINT", "BLOB", "point"),
    ("POINT NOT NULL SRID 4326", "BLOB", "point"),
    ("MULTIPOLYGON", "BLOB", "multipolygon"),
    ("GEOMCOLLECTION", "BLOB", "geometrycollection"),
    ("VECTOR(3)", "FLOAT[]", "vector(3)"),
    ("UUID", "UUID", "uuid"),
    ("INET6", "VARCHAR", "inet6"),
]


@pytest.mark.parametrize(("declared", "duck", "mysql_type"), TYPES, ids=[t[0] for t in TYPES])
def test_column_types(replica: Replica, declared: str, duck: str, mysql_type: str) -> None:
    plan = replica.run(f"CREATE TABLE t (c {declared})")
    assert plan.kind == "create_table"
    assert replica.describe("app", "t") == [("c", duck)]
    column = replica.table("app", "t").columns[0]
    assert column.mysql_type == mysql_type
    assert column.unsigned == mysql_type.endswith("unsigned")
    assert duckdb_type(column) == duck.replace("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ")


def test_type_facts_the_applier_needs(replica: Replica) -> None:
    replica.run(
        "CREATE TABLE t (e ENUM('x','y') NOT NULL, s SET('a','b','c'), d DECIMAL(14,4), b BIT(5), "
        "ts TIMESTAMP(3) NULL, v VARBINARY(9), n NCHAR(2), z INT ZEROFILL)"
    )
    t = replica.table("app", "t")
    assert t.column("e").elements == ("x", "y") and not t.column("e").nullable
    assert t.column("s").elements == ("a", "b", "c")
    assert (t.column("d").precision, t.column("d").scale) == (14, 4)
    assert t.column("b").length == 5 and t.column("b").base_type == "bit"
    assert t.column("ts").fsp == 3 and t.column("ts").nullable
    assert t.column("v").binary and t.column("v").length == 9 and t.column("v").charset is None
    assert t.column("n").charset == "utf8mb3"
    assert t.column("z").zerofill and t.column("z").unsigned  # ZEROFILL implies UNSIGNED


def test_unsupported_type_is_untranslatable(replica: Replica) -> None:
    with pytest.raises(UntranslatableStatement, match="unsupported column type 'xml'"):
        replica.run("CREATE TABLE t (a XML)")


# ---------------------------------------------------------------------------------------------
# CREATE TABLE: attributes, keys, options
# ---------------------------------------------------------------------------------------------


def test_column_attributes(replica: Replica) -> None:
    replica.run(
        """CREATE TABLE t (
          id INT(11) UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'pk',
          name VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL DEFAULT 'it''s',
          bin_attr VARCHAR(5) BINARY,
          by_collation CHAR(2) COLLATE utf8mb4_0900_ai_ci,
          created DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
          updated TIMESTAMP NULL DEFAULT NULL ON UPDATE NOW(),
          n INT DEFAULT -1,
          f BIT(3) DEFAULT b'101',
          u BINARY(16) DEFAULT (UUID_TO_BIN(UUID())),
          doubled INT GENERATED ALWAYS AS (n * 2) VIRTUAL,
          stored INT AS (n + 1) STORED NOT NULL,
          maria INT AS (n + 2) PERSISTENT,
          hidden INT INVISIBLE,
          shown INT VISIBLE COLUMN_FORMAT FIXED STORAGE DISK ENGINE_ATTRIBUTE='{}',
          PRIMARY KEY (id)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci"""
    )
    t = replica.table("app", "t")
    assert t.charset == "utf8mb4" and t.collation == "utf8mb4_unicode_ci"
    c = {col.name: col for col in t.columns}
    assert c["id"].auto_increment and c["id"].unsigned and not c["id"].nullable
    assert c["id"].mysql_type == "int unsigned" and c["id"].charset is None
    assert (c["name"].charset, c["name"].collation, c["name"].default) == ("latin1", "latin1_bin", "'it''s'")
    assert (c["bin_attr"].charset, c["bin_attr"].collation) == ("utf8mb4", "utf8mb4_bin")
    assert (c["by_collation"].charset, c["by_collation"].collation) == ("utf8mb4", "utf8mb4_0900_ai_ci")
    assert c["created"].default == "CURRENT_TIMESTAMP(6)" and not c["created"].on_update_current_timestamp
    assert (
        c["updated"].default == "NULL" and c["updated"].on_update_current_timestamp and c["updated"].nullable
    )
    assert c["n"].default == "-1" and c["f"].default == "b'101'"
    assert c["u"].default == "(UUID_TO_BIN(UUID()))"
    assert (c["doubled"].generated_expression, c["doubled"].generated_stored) == ("n * 2", False)
    assert (c["stored"].generated_expression, c["stored"].generated_stored) == ("n + 1", True)
    assert not c["stored"].nullable
    assert c["maria"].generated_stored
    assert c["hidden"].invisible and not c["shown"].invisible
    # Every column is stored, generated and invisible ones too: row images carry them all.
    assert replica.columns("app", "t") == list(c)


def test_columns_named_like_keywords(replica: Replica) -> None:
    names = [
        "date",
        "timestamp",
        "text",
        "comment",
        "status",
        "first",
        "after",
        "storage",
        "visible",
        "system",
    ]
    replica.run("CREATE TABLE t (" + ", ".join(f"{n} INT" for n in names) + ")")
    assert replica.columns("app", "t") == names
    replica.run(
        "ALTER TABLE t ADD COLUMN x INT DEFAULT NULL AFTER visible, ADD period INT, ADD system2 INT FIRST"
    )
    assert replica.columns("app", "t") == ["system2", *names[:-1], "x", "system", "period"]


def test_keys_are_modeled_not_created(replica: Replica) -> None:
    replica.run(
        """CREATE TABLE t (
          a INT NOT NULL, b INT, c VARCHAR(30), d INT UNIQUE, g GEOMETRY NOT NULL,
          PRIMARY KEY USING BTREE (a, b),
          UNIQUE KEY uk (c(10), d DESC) COMMENT 'x',
          UNIQUE (b),
          CONSTRAINT sym UNIQUE (c),
          KEY k_b USING HASH (b) KEY_BLOCK_SIZE=8,
          INDEX (c, a),
          FULLTEXT KEY ft (c) WITH PARSER ngram,
          SPATIAL INDEX (g),
          KEY fn ((a + b)),
          CONSTRAINT chk CHECK (a > 0),
          CONSTRAINT fk FOREIGN KEY (d) REFERENCES other.parent (id) ON DELETE CASCADE
        )"""
    )
    t = replica.table("app", "t")
    assert t.primary_key == ("a", "b")
    assert t.column("b").nullable is False  # PRIMARY KEY columns are NOT NULL
    assert t.unique_key_names == ("d", "uk", "b", "sym")
    assert t.unique_keys == (("d",), ("c", "d"), ("b",), ("c",))
    assert dict(t.indexes) == {
        "d": ("d",),
        "uk": ("c", "d"),
        "b": ("b",),
        "sym": ("c",),
        "k_b": ("b",),
        "c": ("c", "a"),
        "ft": ("c",),
        "g": ("g",),
        "fn": ("(a + b)",),
    }
    assert [(f.name, f.columns, f.ref_schema, f.ref_table, f.ref_columns) for f in t.foreign_keys] == [
        ("fk", ("d",), "other", "parent", ("id",))
    ]
    # DuckDB gets no PRIMARY KEY/UNIQUE/CHECK/FOREIGN KEY/NOT NULL and no index: the source enforced them.
    assert replica.con.execute("SELECT count(*) FROM duckdb_constraints()").fetchone() == (0,)
    assert replica.con.execute("SELECT count(*) FROM duckdb_indexes()").fetchone() == (0,)


def test_table_options_and_partitioning_are_ignored(replica: Replica) -> None:
    replica.run(
        "CREATE TABLE t (id INT, v TEXT) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=latin1 "
        "ROW_FORMAT=DYNAMIC STATS_PERSISTENT=0 KEY_BLOCK_SIZE=8 COMMENT='partitioned (a, b)' "
        "PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)"
    )
    assert replica.describe("app", "t") == [("id", "INTEGER"), ("v", "VARCHAR")]
    assert replica.table("app", "t").column("v").charset == "latin1"
    replica.run("CREATE TABLE h (id INT) /*!50100 PARTITION BY HASH (id) PARTITIONS 4 */")
    assert replica.columns("app", "h") == ["id"]


def test_sysbench_create_table_with_executable_comment(replica: Replica) -> None:
    sql = (
        "CREATE TABLE sbtest1(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n"
        "  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n"
        ") /*! ENGINE = innodb */"
    )
    replica.run(sql)
    t = replica.table("app", "sbtest1")
    assert t.column_names == ("id", "k", "c", "pad") and t.primary_key == ("id",)
    assert t.column("k").default == "'0'" and not t.column("k").nullable


def test_executable_comments_are_unwrapped_but_strings_untouched() -> None:
    sql = "DROP /*!40005 TEMPORARY */ TABLE t /* plain */ -- x\n WHERE '/*!99999 no */' /*M!100100 yes */"
    unwrapped = unwrap_executable_comments(sql)
    assert unwrapped.split() == "DROP TEMPORARY TABLE t /* plain */ -- x WHERE '/*!99999 no */' yes".split()
    assert "-- x\n" in unwrapped


def test_create_table_if_not_exists_or_replace(replica: Replica) -> None:
    replica.run("CREATE TABLE t (a INT)")
    assert replica.run("CREATE TABLE IF NOT EXISTS t (b INT)").kind == "ignored"
    assert replica.columns("app", "t") == ["a"]
    with pytest.raises(UntranslatableStatement, match="already exists"):
        replica.run("CREATE TABLE t (b INT)")
    plan = replica.run("CREATE OR REPLACE TABLE t (b BIGINT)")
    assert plan.kind == "create_table"
    assert replica.describe("app", "t") == [("b", "BIGINT")]


def test_create_table_like(replica: Replica) -> None:
    replica.run("CREATE DATABASE other")
    replica.run(
        "CREATE TABLE src (id INT PRIMARY KEY, v VARCHAR(5), KEY kv (v), FOREIGN KEY (id) REFERENCES p(id))"
    )
    replica.run("CREATE TABLE other.copy LIKE src")
    replica.run("CREATE TABLE copy2 (LIKE other.copy)")
    for db, name in (("other", "copy"), ("app", "copy2")):
        t = replica.table(db, name)
        assert replica.describe(db, name) == [("id", "INTEGER"), ("v", "VARCHAR")]
        assert t.primary_key == ("id",) and t.indexes["kv"] == ("v",)
        assert t.foreign_keys == ()  # LIKE does not copy foreign keys


def test_create_table_select(replica: Replica) -> None:
    replica.run("CREATE TABLE src (id INT, v VARCHAR(5))")
    plan = replica.run(
        "CREATE TABLE dst (id BIGINT NOT NULL, w VARCHAR(9), PRIMARY KEY (id)) SELECT id, v AS w FROM src"
    )
    assert plan.kind == "create_table"
    assert replica.describe("app", "dst") == [("id", "BIGINT"), ("w", "VARCHAR")]
    replica.run("CREATE TABLE dst2 (id INT) IGNORE SELECT id FROM src")
    assert replica.columns("app", "dst2") == ["id"]
    with pytest.raises(UntranslatableStatement, match="SELECT \\*"):
        replica.run("CREATE TABLE dst3 AS SELECT * FROM src")
    with pytest.raises(UntranslatableStatement, match="column `v` comes from the query"):
        replica.run("CREATE TABLE dst4 (id INT) SELECT id, v FROM src")


# ---------------------------------------------------------------------------------------------
# temporary tables
# ---------------------------------------------------------------------------------------------


def test_temporary_tables_are_model_only(replica: Replica) -> None:
    replica.run("CREATE TABLE t (a INT)")
    plan = replica.run("CREATE TEMPORARY TABLE t (x INT, y INT)")
    assert (plan.kind, plan.statements) == ("temporary", [])
    assert replica.catalog.get_temporary("app", "t").temporary
    assert replica.catalog.resolve("app", "t").column_names == ("x", "y")  # shadows the base table
    assert replica.table("app", "t").column_names == ("a",)

    assert replica.run("ALTER TABLE t ADD COLUMN z INT FIRST").kind == "temporary"
    assert replica.catalog.get_temporary("app", "t").column_names == ("z", "x", "y")
    assert replica.run("CREATE INDEX ix ON t (x)").kind == "temporary"
    assert replica.run("TRUNCATE TABLE t").kind == "temporary"
    assert replica.columns("app", "t") == ["a"]

    # What servers log when a session ends: DROP /*!40005 TEMPORARY */ TABLE IF EXISTS
    plan = replica.run("DROP /*!40005 TEMPORARY */ TABLE IF EXISTS `t`")
    assert (plan.kind, plan.statements) == ("temporary", [])
    assert replica.catalog.get_temporary("app", "t") is None
    assert replica.table("app", "t").column_names == ("a",)


def test_drop_table_drops_a_shadowing_temporary_table_first(replica: Replica) -> None:
    replica.run("CREATE TABLE t (a INT)")
    replica.run("CREATE TEMPORARY TABLE t (b INT)")
    assert replica.run("DROP TABLE t").kind == "temporary"
    assert ("app", "t") in replica.catalog and ("app", "t") in replica.tables()
    assert replica.run("DROP TABLE t").kind == "drop_table"
    assert ("app", "t") not in replica.tables()


def test_create_temporary_table_like(replica: Replica) -> None:
    replica.run("CREATE TABLE t (a INT PRIMARY KEY)")
    assert replica.run("CREATE TEMPORARY TABLE tmp LIKE t").kind == "temporary"
    assert replica.catalog.get_temporary("app", "tmp").primary_key == ("a",)
    assert ("app", "tmp") not in replica.tables()


# ---------------------------------------------------------------------------------------------
# DROP / RENAME / TRUNCATE
# ---------------------------------------------------------------------------------------------


def test_drop_table_list_as_servers_log_it(replica: Replica) -> None:
    for name in ("t1", "t2", "t3"):
        replica.run(f"CREATE TABLE {name} (a INT)")
    plan = replica.run("DROP TABLE IF EXISTS `app`.`t1`,`t2`, missing /* generated by server */")
    assert plan.kind == "drop_table"
    assert set(plan.tables) == {("app", "t1"), ("app", "t2")}
    assert replica.tables() == {("app", "t3")} and list(replica.catalog) == [("app", "t3")]
    with pytest.raises(UntranslatableStatement, match="`app`.`missing` is not in the catalog"):
        replica.run("DROP TABLE t3, missing")


def test_rename_tables_in_order_including_a_swap_and_across_databases(replica: Replica) -> None:
    replica.run("CREATE DATABASE other")
    replica.run("CREATE TABLE a (x INT)")
    replica.run("CREATE TABLE b (y VARCHAR(3))")
    replica.con.execute("INSERT INTO app.a VALUES (1), (2)")
    replica.con.execute("INSERT INTO app.b VALUES ('b')")
    plan = replica.run("RENAME TABLE a TO tmp, b TO a, tmp TO b")
    assert plan.kind == "rename_table"
    assert replica.rows("app", "a") == [("b",)] and replica.rows("app", "b") == [(1,), (2,)]
    assert replica.table("app", "a").column_names == ("y",)

    replica.run("RENAME TABLES app.b TO other.moved, a TO other.a2")
    assert replica.tables() == {("other", "moved"), ("other", "a2")}
    assert replica.rows("other", "moved") == [(1,), (2,)]
    assert replica.describe("other", "a2") == [("y", "VARCHAR")]
    assert sorted(replica.catalog) == [("other", "a2"), ("other", "moved")]
    with pytest.raises(UntranslatableStatement, match="database `nowhere` is not in the catalog"):
        replica.run("RENAME TABLE other.a2 TO nowhere.a2")


def test_truncate(replica: Replica) -> None:
    replica.run("CREATE TABLE t (a INT)")
    replica.con.execute("INSERT INTO app.t VALUES (1), (2)")
    for sql in ("TRUNCATE TABLE t", "TRUNCATE app.t"):
        replica.con.execute("INSERT INTO app.t VALUES (3)")
        assert replica.run(sql).kind == "truncate_table"
        assert replica.rows("app", "t") == []


# ---------------------------------------------------------------------------------------------
# ALTER TABLE: columns
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def people(replica: Replica) -> Replica:
    replica.run("CREATE TABLE people (id INT NOT NULL, name VARCHAR(20), age INT, PRIMARY KEY (id))")
    replica.con.execute("INSERT INTO app.people VALUES (1, 'ann', 30), (2, 'bob', NULL), (3, 'cy', 41)")
    return replica


def test_add_column_at_the_end_in_place(people: Replica) -> None:
    plan = people.run("ALTER TABLE people ADD COLUMN note VARCHAR(40) NULL DEFAULT NULL")
    assert plan.kind == "alter_table"
    assert all("ADD COLUMN" in s for s in plan.statements)  # no rebuild
    assert people.columns("app", "people") == ["id", "name", "age", "note"]
    assert people.rows("app", "people") == [(1, "ann", 30, None), (2, "bob", None, None), (3, "cy", 41, None)]


def test_add_columns_first_after_and_parenthesized_rebuilds_with_data(people: Replica) -> None:
    plan = people.run(
        "ALTER TABLE people ADD COLUMN flag TINYINT NOT NULL DEFAULT 1 FIRST, "
        "ADD (city VARCHAR(10) DEFAULT 'x', zip INT), ADD email VARCHAR(50) NOT NULL AFTER name"
    )
    assert any(s.startswith("INSERT INTO") for s in plan.statements)
    assert people.columns("app", "people") == ["flag", "id", "name", "email", "age", "city", "zip"]
    assert people.rows("app", "people", "id") == [
        (1, 1, "ann", "", 30, "x", None),
        (1, 2, "bob", "", None, "x", None),
        (1, 3, "cy", "", 41, "x", None),
    ]
    assert people.table("app", "people").column_names == tuple(people.columns("app", "people"))
    assert people.tables() == {("app", "people")}  # the rebuild's work table is gone


def test_added_columns_get_what_mysql_gives_existing_rows(people: Replica) -> None:
    people.run(
        "ALTER TABLE people ADD COLUMN created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, "
        "ADD COLUMN e ENUM('p','q') NOT NULL, ADD COLUMN bits BIT(4) DEFAULT b'1010', "
        "ADD COLUMN raw VARBINARY(4) DEFAULT 0x4142, ADD COLUMN t TIME DEFAULT '-12:30:00', "
        "ADD COLUMN big DECIMAL(50,5) NOT NULL, ADD COLUMN j JSON NOT NULL, ADD COLUMN d DATE NOT NULL, "
        "ADD COLUMN price DECIMAL(8,2) DEFAULT '1.5'",
        timestamp=1700000000.25,
    )
    row = people.rows("app", "people")[0]
    assert row[3:] == (
        dt.datetime(2023, 11, 14, 22, 13, 20),  # the event's time, rounded to DATETIME(0)
        "p",  # NOT NULL ENUM without DEFAULT: its first member
        10,
        b"AB",
        -dt.timedelta(hours=12, minutes=30),
        "0.00000",  # DECIMAL(50,5) is exact text
        "null",
        None,  # zero date: DuckDB has none
        pytest.approx(1.5),
    )


def test_added_generated_and_auto_increment_columns_are_computed(people: Replica) -> None:
    people.run(
        "ALTER TABLE people ADD COLUMN twice INT AS (age * 2) STORED, ADD COLUMN d INT DEFAULT (id + 100)"
    )
    assert [r[3:] for r in people.rows("app", "people")] == [(60, 101), (None, 102), (82, 103)]
    people.con.execute("UPDATE app.people SET id = 10 - id")  # clustered order: 7, 8, 9
    people.run(
        "ALTER TABLE people DROP PRIMARY KEY, ADD seq INT NOT NULL AUTO_INCREMENT FIRST, ADD PRIMARY KEY (seq)"
    )
    assert people.rows("app", "people", "seq") == [
        (1, 7, "cy", 41, 82, 103),
        (2, 8, "bob", None, None, 102),
        (3, 9, "ann", 30, 60, 101),
    ]
    assert people.table("app", "people").primary_key == ("seq",)


def test_expression_duckdb_lacks_is_untranslatable(people: Replica) -> None:
    # MAKE_SET is MySQL's (the allow-list lets it through), DuckDB has none
    with pytest.raises(UntranslatableStatement, match="does not work in DuckDB"):
        people.run("ALTER TABLE people ADD COLUMN x VARCHAR(9) AS (MAKE_SET(1, name))")


def test_expression_with_a_function_mysql_lacks_is_refused(people: Replica) -> None:
    with pytest.raises(RefusedStatement, match="SOUNDEX_NOT_A_FUNCTION.. is not a MySQL function") as refused:
        people.run("ALTER TABLE people ADD COLUMN x VARCHAR(9) AS (SOUNDEX_NOT_A_FUNCTION(name))")
    assert refused.value.errno == 1290


def test_drop_column_updates_keys(people: Replica) -> None:
    people.run("ALTER TABLE people ADD UNIQUE KEY u_na (name, age), ADD KEY k_age (age)")
    plan = people.run("ALTER TABLE people DROP COLUMN age")
    assert plan.statements == ['ALTER TABLE "app"."people" DROP COLUMN "age"']
    t = people.table("app", "people")
    assert dict(t.indexes) == {"u_na": ("name",)} and t.unique_keys == (("name",),)
    assert people.rows("app", "people") == [(1, "ann"), (2, "bob"), (3, "cy")]


def test_modify_changes_type_in_place(people: Replica) -> None:
    plan = people.run(
        "ALTER TABLE people MODIFY age BIGINT UNSIGNED NOT NULL DEFAULT 0, MODIFY COLUMN name VARCHAR(200)"
    )
    assert len(plan.statements) == 1 and "SET DATA TYPE UBIGINT" in plan.statements[0]
    assert people.describe("app", "people") == [("id", "INTEGER"), ("name", "VARCHAR"), ("age", "UBIGINT")]
    age = people.table("app", "people").column("age")
    assert (age.mysql_type, age.nullable, age.default) == ("bigint unsigned", False, "0")
    assert people.rows("app", "people")[0] == (1, "ann", 30)


def test_modify_with_position_rebuilds_and_keeps_rows(people: Replica) -> None:
    people.run("ALTER TABLE people MODIFY age SMALLINT FIRST")
    assert people.describe("app", "people") == [("age", "SMALLINT"), ("id", "INTEGER"), ("name", "VARCHAR")]
    assert people.rows("app", "people", "id") == [(30, 1, "ann"), (None, 2, "bob"), (41, 3, "cy")]
    people.run("ALTER TABLE people MODIFY COLUMN age INT AFTER name")
    assert people.columns("app", "people") == ["id", "name", "age"]
    assert people.rows("app", "people")[2] == (3, "cy", 41)


def test_change_renames_retypes_and_moves(people: Replica) -> None:
    people.run("ALTER TABLE people CHANGE COLUMN id person_id BIGINT NOT NULL AFTER age")
    assert people.describe("app", "people") == [
        ("name", "VARCHAR"),
        ("age", "INTEGER"),
        ("person_id", "BIGINT"),
    ]
    assert people.table("app", "people").primary_key == ("person_id",)
    assert people.rows("app", "people", "person_id")[0] == ("ann", 30, 1)
    people.run("ALTER TABLE people CHANGE name full_name VARCHAR(30)")
    assert people.columns("app", "people") == ["full_name", "age", "person_id"]


def test_swapping_column_names_rebuilds(people: Replica) -> None:
    people.run(
        "ALTER TABLE people CHANGE name age_text VARCHAR(20), CHANGE age name INT, CHANGE age_text age VARCHAR(20)"
    )
    assert people.describe("app", "people") == [("id", "INTEGER"), ("age", "VARCHAR"), ("name", "INTEGER")]
    assert people.rows("app", "people")[0] == (1, "ann", 30)


def test_rename_column_and_defaults(people: Replica) -> None:
    plan = people.run("ALTER TABLE people RENAME COLUMN name TO Name2, ALTER COLUMN age SET DEFAULT 18")
    assert plan.statements == ['ALTER TABLE "app"."people" RENAME COLUMN "name" TO "Name2"']
    t = people.table("app", "people")
    assert t.column_names == ("id", "Name2", "age") and t.column("AGE").default == "18"
    people.run("ALTER TABLE people ALTER age DROP DEFAULT, ALTER COLUMN Name2 SET DEFAULT ('x')")
    t = people.table("app", "people")
    assert t.column("age").default is None and t.column("name2").default == "('x')"
    people.run("ALTER TABLE people RENAME COLUMN Name2 TO name2")  # MySQL column names ignore case
    assert people.columns("app", "people") == ["id", "name2", "age"]


def test_value_conversions_follow_mysql(replica: Replica) -> None:
    replica.run("CREATE TABLE t (id INT, dt DATETIME(6), e ENUM('x','y','z'), c VARCHAR(10), n INT)")
    replica.con.execute(
        "INSERT INTO app.t VALUES (1, '2020-01-01 00:00:00.5', 'y', 'ab  ', 3), (2, '2020-01-01 00:00:00.4', 'z', 'q', 0)"
    )
    replica.run(
        "ALTER TABLE t MODIFY dt DATETIME, MODIFY e INT, MODIFY c CHAR(10), MODIFY n ENUM('a','b','c')"
    )
    # fractions round half up, ENUM <-> member index, CHAR drops trailing spaces
    assert replica.rows("app", "t") == [
        (1, dt.datetime(2020, 1, 1, 0, 0, 1), 2, "ab", "c"),
        (2, dt.datetime(2020, 1, 1, 0, 0, 0), 3, "q", ""),
    ]
    replica.run("ALTER TABLE t MODIFY c VARBINARY(10), MODIFY dt TIMESTAMP")
    assert replica.con.execute("SELECT c, CAST(dt AS VARCHAR) FROM app.t ORDER BY id").fetchall() == [
        (b"ab", "2020-01-01 00:00:01+00"),
        (b"q", "2020-01-01 00:00:00+00"),
    ]
    with pytest.raises(UntranslatableStatement, match="SET bitmasks"):
        replica.run("ALTER TABLE t MODIFY id SET('a')")


# ---------------------------------------------------------------------------------------------
# ALTER TABLE: keys, renames, options
# ---------------------------------------------------------------------------------------------


def test_primary_and_secondary_keys(people: Replica) -> None:
    plan = people.run(
        "ALTER TABLE people DROP PRIMARY KEY, ADD PRIMARY KEY (id, name), ADD INDEX idx (age), "
        "ADD UNIQUE KEY uk (name), ADD KEY (age, id), ADD UNIQUE (age), ADD FULLTEXT INDEX ft (name), "
        "ADD CONSTRAINT c_u UNIQUE (id), ADD INDEX IF NOT EXISTS idx (name)"
    )
    assert plan.statements == []
    t = people.table("app", "people")
    assert t.primary_key == ("id", "name") and not t.column("name").nullable
    assert dict(t.indexes) == {
        "idx": ("age",),
        "uk": ("name",),
        "age": ("age", "id"),
        "age_2": ("age",),
        "ft": ("name",),
        "c_u": ("id",),
    }
    assert t.unique_key_names == ("uk", "age_2", "c_u")
    people.run(
        "ALTER TABLE people DROP INDEX idx, DROP KEY uk, RENAME INDEX age TO by_age, DROP INDEX IF EXISTS nope"
    )
    t = people.table("app", "people")
    assert list(t.indexes) == ["by_age", "age_2", "ft", "c_u"] and t.unique_keys == (("age",), ("id",))
    people.run("ALTER TABLE people DROP INDEX `PRIMARY`")
    assert people.table("app", "people").primary_key == ()


def test_foreign_keys_in_the_model(replica: Replica) -> None:
    replica.run("CREATE TABLE parent (id INT PRIMARY KEY)")
    replica.run("CREATE TABLE child (id INT, pid INT)")
    replica.run(
        "ALTER TABLE child ADD CONSTRAINT fk_p FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE"
    )
    t = replica.table("app", "child")
    assert [(f.name, f.ref_schema, f.ref_table) for f in t.foreign_keys] == [("fk_p", "app", "parent")]
    assert t.indexes == {"fk_p": ("pid",)}  # InnoDB indexes an uncovered foreign key
    replica.run("ALTER TABLE child DROP FOREIGN KEY fk_p")
    assert replica.table("app", "child").foreign_keys == ()


def test_rename_table_in_alter(people: Replica) -> None:
    people.run("CREATE DATABASE archive")
    assert people.run("ALTER TABLE people RENAME TO persons").statements == [
        'ALTER TABLE "app"."people" RENAME TO "persons"'
    ]
    plan = people.run("ALTER TABLE persons RENAME AS archive.people_2020, ADD COLUMN note INT AFTER id")
    assert set(plan.tables) == {("app", "persons"), ("archive", "people_2020")}
    assert people.tables() == {("archive", "people_2020")}
    assert people.rows("archive", "people_2020")[0] == (1, None, "ann", 30)
    assert people.table("archive", "people_2020").schema == "archive"
    people.run("ALTER TABLE archive.people_2020 RENAME app.people")
    assert people.rows("app", "people")[1] == (2, None, "bob", None)


def test_options_engine_force_algorithm_change_nothing(people: Replica) -> None:
    before = people.catalog.to_json()
    for sql in (
        "ALTER TABLE people ENGINE=InnoDB",
        "ALTER TABLE people ENGINE=InnoDB ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
        "ALTER TABLE people FORCE",
        "ALTER TABLE people ALGORITHM=INPLACE, LOCK=NONE",
        "ALTER TABLE people AUTO_INCREMENT = 100, COMMENT = 'x'",
        "ALTER TABLE people ORDER BY name",
        "ALTER TABLE people DISABLE KEYS",
        "ALTER TABLE people ADD CHECK (age > 0)",
        "ALTER TABLE people REMOVE PARTITIONING",
        "ALTER TABLE people COALESCE PARTITION 2",
        "ALTER TABLE people",
    ):
        plan = people.run(sql)
        assert (plan.kind, plan.statements) == ("alter_table", []), sql
    assert people.catalog.to_json() == before
    plan = people.run("ALTER ONLINE TABLE people WAIT 5 ADD COLUMN z INT, ALGORITHM=INSTANT, LOCK=DEFAULT")
    assert plan.statements == ['ALTER TABLE "app"."people" ADD COLUMN "z" INTEGER']


def test_convert_to_character_set(people: Replica) -> None:
    people.run("ALTER TABLE people CONVERT TO CHARACTER SET latin1 COLLATE latin1_swedish_ci")
    t = people.table("app", "people")
    assert (t.charset, t.collation) == ("latin1", "latin1_swedish_ci")
    assert (t.column("name").charset, t.column("name").collation) == ("latin1", "latin1_swedish_ci")
    assert t.column("age").charset is None
    people.run("ALTER TABLE people DEFAULT CHARSET = utf8mb4, ADD COLUMN s TEXT")
    assert people.table("app", "people").column("s").charset == "utf8mb4"
    people.run("ALTER TABLE people CONVERT TO CHARACTER SET binary")
    assert people.describe("app", "people")[1] == ("name", "BLOB")
    assert people.table("app", "people").column("name").mysql_type == "varbinary(20)"
    assert people.rows("app", "people")[0][1] == b"ann"


def test_mariadb_if_exists_forms(people: Replica) -> None:
    plan = people.run(
        "ALTER TABLE people CHANGE COLUMN IF EXISTS nope x INT, MODIFY COLUMN IF EXISTS nope2 INT, "
        "DROP COLUMN IF EXISTS nope3, ADD COLUMN IF NOT EXISTS id INT, DROP INDEX IF EXISTS nope4"
    )
    assert plan.statements == []
    assert people.run("ALTER TABLE IF EXISTS missing ADD x INT").kind == "ignored"


# ---------------------------------------------------------------------------------------------
# CREATE / DROP INDEX
# ---------------------------------------------------------------------------------------------


def test_create_and_drop_index_are_model_only(people: Replica) -> None:
    for sql in (
        "CREATE INDEX k_2 ON people(age)",
        "CREATE UNIQUE INDEX u ON app.people (name(10), age DESC) USING BTREE ALGORITHM=INPLACE LOCK=NONE",
        "CREATE FULLTEXT INDEX ft ON people (name)",
        "CREATE INDEX IF NOT EXISTS k_2 ON people (id)",
    ):
        plan = people.run(sql)
        assert (plan.kind, plan.statements) == ("create_index", []), sql
    t = people.table("app", "people")
    assert dict(t.indexes) == {"k_2": ("age",), "u": ("name", "age"), "ft": ("name",)}
    assert t.unique_keys == (("name", "age"),)
    people.run("DROP INDEX u ON people ALGORITHM=INPLACE LOCK=NONE")
    people.run("DROP INDEX `PRIMARY` ON app.people")
    t = people.table("app", "people")
    assert t.unique_keys == () and t.primary_key == () and list(t.indexes) == ["k_2", "ft"]
    assert people.con.execute("SELECT count(*) FROM duckdb_indexes()").fetchone() == (0,)
    with pytest.raises(UntranslatableStatement, match="has no index `nope`"):
        people.run("DROP INDEX nope ON people")


# ---------------------------------------------------------------------------------------------
# statements with nothing to do, and what cannot be translated
# ---------------------------------------------------------------------------------------------

IGNORED = [
    "CREATE VIEW v AS SELECT 1",
    "CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v2` AS select 1 AS `a`",
    "CREATE OR REPLACE VIEW v AS SELECT 2",
    "CREATE VIEW IF NOT EXISTS v3 AS SELECT 2",
    "ALTER ALGORITHM=MERGE VIEW v AS SELECT 3",
    "DROP VIEW IF EXISTS v, v2",
    "CREATE DEFINER=`root`@`localhost` TRIGGER trg BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
    "DROP TRIGGER IF EXISTS trg",
    "CREATE DEFINER=`root`@`%` PROCEDURE p() BEGIN CREATE TABLE inner_t (a INT); END",
    "DROP PROCEDURE IF EXISTS p",
    "CREATE FUNCTION f() RETURNS INT DETERMINISTIC RETURN 1",
    "DROP FUNCTION f",
    "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DELETE FROM t",
    "ALTER EVENT e DISABLE",
    "CREATE USER 'u'@'%' IDENTIFIED BY 'x'",
    "ALTER USER 'u'@'%' IDENTIFIED BY 'y'",
    "RENAME USER 'u'@'%' TO 'w'@'%'",
    "DROP USER 'w'@'%'",
    "GRANT SELECT ON *.* TO 'u'@'%'",
    "REVOKE ALL PRIVILEGES ON *.* FROM 'u'@'%'",
    "SET PASSWORD FOR 'u'@'%' = 'x'",
    "ANALYZE TABLE t",
    "OPTIMIZE TABLE t",
    "REPAIR TABLE t",
    "FLUSH PRIVILEGES",
    "BEGIN",
    "COMMIT",
    "XA START 'x'",
    "INSTALL PLUGIN p SONAME 'p.so'",
]


@pytest.mark.parametrize("sql", IGNORED)
def test_ignored_statements(replica: Replica, sql: str) -> None:
    replica.run("CREATE TABLE t (a INT)")
    before = replica.catalog
    plan = replica.run(sql)
    assert (plan.kind, plan.statements) == ("ignored", [])
    assert plan.reason
    assert list(plan.catalog) == [("app", "t")] and plan.catalog[("app", "t")] == before[("app", "t")]


def test_mysql8_create_table_select_as_logged_in_row_format(replica: Replica) -> None:
    """MySQL 8 logs CREATE TABLE ... SELECT as the full column list plus START TRANSACTION."""
    plan = replica.run(
        "CREATE TABLE `t` (\n  `a` int NOT NULL,\n  `b` varchar(3) DEFAULT NULL\n) START TRANSACTION"
    )
    assert plan.kind == "create_table"
    assert replica.describe("app", "t") == [("a", "INTEGER"), ("b", "VARCHAR")]


def test_views_are_remembered_for_rename_and_drop(replica: Replica) -> None:
    replica.run("CREATE VIEW v AS SELECT 1")
    assert replica.run("RENAME TABLE v TO v2").kind == "ignored"
    assert replica.catalog.views == {("app", "v2")}
    with pytest.raises(UntranslatableStatement, match="already exists"):
        replica.run("CREATE TABLE v2 (a INT)")
    replica.run("DROP VIEW v2")
    assert replica.catalog.views == set()


UNTRANSLATABLE = [
    ("INSERT INTO t VALUES (1)", "not DDL"),
    ("UPDATE t SET a = 1", "not DDL"),
    # t is not partitioned: which rows a partition held is unknown (tests/test_partitions.py)
    ("ALTER TABLE t DROP PARTITION p0", "holds no partitioning"),
    ("ALTER TABLE t TRUNCATE PARTITION p0", "holds no partitioning"),
    ("ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u", "moves rows"),
    ("ALTER TABLE t IMPORT TABLESPACE", "never logged"),
    ("ALTER TABLE t ADD SYSTEM VERSIONING", "system-versioned"),
    ("CREATE TABLE sv (a INT) WITH SYSTEM VERSIONING", "system-versioned"),
    ("CREATE SEQUENCE s", "sequences"),
    ("ALTER TABLE missing ADD x INT", "`app`.`missing` is not in the catalog"),
    ("ALTER TABLE t ADD COLUMN a INT", "column `a` already exists"),
    ("ALTER TABLE t DROP COLUMN nope", "has no column `nope`"),
    ("ALTER TABLE t ADD INDEX (nope)", "has no column `nope`"),
    ("ALTER TABLE t FROBNICATE", "unsupported ALTER TABLE clause"),
    ("CREATE TABLE other_db.t (a INT)", "database `other_db` is not in the catalog"),
    ("CREATE TABLE T (a INT)", "DuckDB names are case-insensitive"),
    ("CREATE DATABASE App", "DuckDB names are case-insensitive"),
    ("FROBNICATE EVERYTHING", "unknown statement"),
    ("CREATE TABLE bad (a INT", "unbalanced parentheses"),
]


@pytest.mark.parametrize(("sql", "reason"), UNTRANSLATABLE, ids=[u[0] for u in UNTRANSLATABLE])
def test_untranslatable_statements_name_the_statement(replica: Replica, sql: str, reason: str) -> None:
    replica.run("CREATE TABLE t (a INT)")
    before = replica.catalog.to_json()
    with pytest.raises(UntranslatableStatement) as caught:
        replica.run(sql)
    error = caught.value
    assert isinstance(error, RelaydeckError)
    assert error.statement == sql
    assert reason in error.reason
    assert sql[:40] in error.one_line() and "\n" not in error.one_line()
    assert replica.catalog.to_json() == before


def test_unqualified_table_needs_a_default_database(replica: Replica) -> None:
    with pytest.raises(UntranslatableStatement, match="no default database"):
        replica.run("CREATE TABLE t (a INT)", db=None)


# ---------------------------------------------------------------------------------------------
# names are data
# ---------------------------------------------------------------------------------------------


def test_identifiers_with_backticks_quotes_dots_spaces_and_unicode() -> None:
    r = Replica()
    r.run('CREATE DATABASE `we``ird "db".x`')
    db = 'we`ird "db".x'
    r.run(
        'CREATE TABLE `we``ird "db".x`.`t.a b` (`c"ol` INT PRIMARY KEY, `ü ñ 日本` VARCHAR(3), `sp ace` INT)',
        db=None,
    )
    assert r.describe(db, "t.a b") == [('c"ol', "INTEGER"), ("ü ñ 日本", "VARCHAR"), ("sp ace", "INTEGER")]
    r.con.execute(f"INSERT INTO {quote_ident(db)}.{quote_ident('t.a b')} VALUES (1, 'x', 2)")
    r.run(
        "ALTER TABLE `t.a b` ADD COLUMN `x.y``z` INT FIRST, CHANGE `sp ace` `'quoted'` BIGINT AFTER `c\"ol`",
        db=db,
    )
    assert r.columns(db, "t.a b") == ["x.y`z", 'c"ol', "'quoted'", "ü ñ 日本"]
    assert r.rows(db, "t.a b") == [(None, 1, 2, "x")]
    r.run("RENAME TABLE `t.a b` TO `ö'q; DROP TABLE x`", db=db)
    assert r.table(db, "ö'q; DROP TABLE x").primary_key == ('c"ol',)
    assert r.tables() == {(db, "ö'q; DROP TABLE x")}
    r.run("CREATE INDEX `i``x` ON `ö'q; DROP TABLE x` (`ü ñ 日本`)", db=db)
    assert r.table(db, "ö'q; DROP TABLE x").indexes == {"i`x": ("ü ñ 日本",)}
    r.run('DROP DATABASE `we``ird "db".x`')
    assert r.tables() == set()


_NAMES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12
).filter(lambda n: not n.endswith(" "))  # MySQL refuses names ending in a space


def _backticked(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@settings(max_examples=25, deadline=None)
@given(db=_NAMES, table=_NAMES, column=_NAMES)
@example(db="~", table="0", column="0")  # a database whose DuckDB schema is another name ("~~")
def test_any_name_is_data(db: str, table: str, column: str) -> None:
    r = Replica()
    r.run(f"CREATE DATABASE {_backticked(db)}")
    r.run(f"CREATE TABLE {_backticked(db)}.{_backticked(table)} ({_backticked(column)} INT PRIMARY KEY)")
    other = "c" if column.casefold() != "c" else "d"
    r.run(f"ALTER TABLE {_backticked(table)} ADD {other} INT FIRST", db=db)
    assert r.columns(db, table) == [other, column]
    assert r.table(db, table).primary_key == (column,)


def test_duckdb_catalog_qualifies_names_when_a_database_shares_the_schema_name() -> None:
    r = Replica(DdlTranslator(duckdb_catalog="memory"))
    r.con.execute("ATTACH ':memory:' AS shop")
    r.run("CREATE DATABASE shop")
    plan = r.run("CREATE TABLE shop.t (a INT)")
    assert plan.statements == ['CREATE TABLE "memory"."shop"."t" ("a" INTEGER)']
    r.run("ALTER TABLE shop.t ADD b INT FIRST")
    assert r.con.execute('DESCRIBE "memory"."shop"."t"').fetchall()[0][0] == "b"


def test_lower_case_table_names() -> None:
    r = Replica()
    r.catalog = Catalog(lower_case_table_names=1)
    r.run("CREATE DATABASE Shop")
    r.run("CREATE TABLE Shop.Orders (ID INT)")
    assert list(r.catalog) == [("shop", "orders")] and r.tables() == {("shop", "orders")}
    assert r.run("ALTER TABLE SHOP.ORDERS ADD x INT").kind == "alter_table"
    assert r.catalog[("SHOP", "Orders")].column_names == ("ID", "x")


# ---------------------------------------------------------------------------------------------
# catalog
# ---------------------------------------------------------------------------------------------


def test_translate_never_mutates_the_input_catalog(people: Replica) -> None:
    catalog = people.catalog
    before = catalog.to_json()
    plan = people.translator.translate("ALTER TABLE people ADD x INT, ADD KEY (x)", "app", catalog)
    assert catalog.to_json() == before and plan.catalog is not catalog
    assert plan.catalog[("app", "people")].column_names[-1] == "x"


def test_catalog_json_round_trip(people: Replica) -> None:
    people.run(
        "CREATE TABLE t2 (e ENUM('a','b') DEFAULT 'a', g INT AS (1) STORED, FOREIGN KEY (g) REFERENCES people (id))"
    )
    people.run("CREATE TEMPORARY TABLE tmp (a INT)")
    people.run("CREATE VIEW v AS SELECT 1")
    people.run("CREATE UNIQUE INDEX u ON people (name)")
    text = people.catalog.to_json()
    again = Catalog.from_json(text)
    assert again == people.catalog and again.to_json() == text
    assert again[("app", "people")] == people.table("app", "people")
    assert again.views == {("app", "v")} and ("app", "tmp") in again.temporary
    assert again.database("app") == people.catalog.database("app")


def test_catalog_json_is_json_dumps_of_its_dict_while_tables_change_between_copies(people: Replica) -> None:
    import json

    def canonical(text: str) -> str:  # what json.dumps makes of the same data
        return json.dumps(json.loads(text), ensure_ascii=False, sort_keys=True)

    people.run("CREATE DATABASE `ünï` CHARACTER SET utf8mb4")
    people.run("CREATE TABLE `ünï`.`tä` (id INT PRIMARY KEY, `nämé` VARCHAR(10) DEFAULT 'é')")
    people.run("CREATE TEMPORARY TABLE tmp (a INT)")
    people.run("CREATE VIEW v AS SELECT 1")
    first = people.catalog.to_json()
    assert first == canonical(first)
    copy = people.catalog.copy()
    # a table replaced in one copy, added in the other: each text follows its own tables
    people.run("ALTER TABLE people ADD COLUMN extra INT")
    people.run("CREATE TABLE later (id INT PRIMARY KEY)")
    second = people.catalog.to_json()
    assert second == canonical(second) and second != first
    assert copy.to_json() == first
    assert Catalog.from_json(second).to_json() == second
    assert "extra" in json.dumps(json.loads(second)["tables"]) and "extra" not in first
    people.run("DROP TABLE later")
    assert people.catalog.to_json() == canonical(people.catalog.to_json())
    assert "later" not in {t["name"] for t in json.loads(people.catalog.to_json())["tables"]}


def test_table_built_by_hand_names_its_unique_keys() -> None:
    column = MysqlColumn(name="a", mysql_type="int", base_type="int")
    table = MysqlTable("db", "t", (column,), unique_keys=(("a",),), indexes={"ua": ("a",)})
    assert table.unique_key_names == ("ua",)


# ---------------------------------------------------------------------------------------------
# what sqlglot parses on its own (why the pre-transforms exist)
# ---------------------------------------------------------------------------------------------

NEEDS_TRANSFORM = [
    "RENAME TABLE a TO b",
    "ALTER TABLE t ADD COLUMN (x INT, y INT)",
    "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
    "ALTER TABLE t RENAME AS t2",
    "ALTER IGNORE TABLE t ADD COLUMN q INT",
    "CREATE TABLE t (a INT) PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "CREATE TABLE t (a FLOAT UNSIGNED)",
    "CREATE TABLE t (a INT AS (1) PERSISTENT)",
    "CREATE TABLE t (a POINT)",
    "CREATE TABLE t (a INT VISIBLE)",
    "CREATE TABLE t (a INT, PRIMARY KEY USING BTREE (a))",
    "CREATE TABLE t (a INT, KEY k (a) IGNORED)",
    "CREATE FULLTEXT INDEX f ON t (c)",
    "DROP INDEX i ON t ALGORITHM=INPLACE",
]


@pytest.mark.parametrize("sql", NEEDS_TRANSFORM)
def test_sqlglot_alone_cannot_parse(sql: str) -> None:
    """Measured with sqlglot's 'mysql' dialect; if one starts passing, its transform may go."""
    try:
        tree = sqlglot.parse_one(sql, read="mysql")
    except sqlglot.errors.ParseError:
        return
    assert isinstance(tree, exp.Command)


def test_sqlglot_misreads_type_synonyms() -> None:
    def kind(declared: str) -> exp.DataType.Type:
        return (
            sqlglot.parse_one(f"CREATE TABLE t (c {declared})", read=MySQL)
            .find(exp.ColumnDef)
            .args["kind"]
            .this
        )

    # MySQL: INT8 is BIGINT, LONG is MEDIUMTEXT, REAL is DOUBLE
    assert (kind("INT8"), kind("LONG"), kind("REAL")) == (
        exp.DataType.Type.TINYINT,
        exp.DataType.Type.BIGINT,
        exp.DataType.Type.FLOAT,
    )


# ---------------------------------------------------------------------------------------------
# the real relay logs and workload files
# ---------------------------------------------------------------------------------------------


def _relay_ddl(channel: str) -> list[tuple[str, str | None, int]]:
    """(statement, default database, timestamp) of every DDL Query event of a channel, in order."""
    statements = []
    for logged in stream_events(read_index(MULTISOURCE / "relay" / f"relay-bin-{channel}.index")):
        event = logged.event
        if isinstance(event, Query) and event.query.split(None, 1)[0].upper() in DDL_VERBS:
            statements.append((event.query, event.database or None, event.header.timestamp))
    return statements


@pytest.fixture(scope="module")
def relay_ddl() -> dict[str, list[tuple[str, str | None, int]]]:
    return {channel: _relay_ddl(channel) for channel in ("m1", "m2")}


def _expected_headers() -> dict[tuple[str, str], list[str]]:
    headers = {}
    for path in sorted((MULTISOURCE / "expected").glob("*/*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            headers[(path.parent.name, path.stem)] = next(csv.reader(f))
    return headers


def _check_against_expected(r: Replica, databases: set[str]) -> None:
    expected = {k: v for k, v in _expected_headers().items() if k[0] in databases}
    assert {t.key for t in r.catalog.values() if t.schema in databases} == set(expected)
    for (db, table), header in expected.items():
        assert r.columns(db, table) == header, (db, table)
        assert list(r.table(db, table).column_names) == header


def test_relay_log_ddl_reproduces_the_expected_tables(relay_ddl: dict) -> None:
    r = Replica()
    kinds = []
    for channel in ("m1", "m2"):
        for sql, db, timestamp in relay_ddl[channel]:
            kinds.append(r.run(sql, db, timestamp=timestamp).kind)
    assert len(kinds) == 29 and kinds.count("create_table") == 13 and kinds.count("create_index") == 7
    _check_against_expected(r, {"sbtest1", "sbtest2", "sbtest3", "shop"})
    customers = r.table("shop", "customers")
    assert r.describe("shop", "customers") == [
        ("id", "INTEGER"),
        ("email", "VARCHAR"),
        ("full_name", "VARCHAR"),
        ("tier", "TINYINT"),
        ("balance", "DECIMAL(12,2)"),
        ("created_at", "TIMESTAMP"),
        ("last_login", "TIMESTAMP"),
        ("birthday", "DATE"),
        ("prefs", "JSON"),
        ("bio", "VARCHAR"),
        ("avatar", "BLOB"),
    ]
    assert customers.unique_keys == (("email",),) and customers.column("email").charset == "utf8mb4"
    assert r.table("shop", "order_lines").primary_key == ("order_id", "line_no")
    assert r.table("shop", "orders").indexes == {"k_customer": ("customer_id",)}
    assert r.table("sbtest1", "sbtest2").indexes == {"k_2": ("k",), "idx_note": ("note",)}
    assert r.table("sbtest3", "sbtest1").column("c").mysql_type == "varchar(200)"
    assert r.table("sbtest3", "stmt_log").column("id").auto_increment


def _sql_file_statements(path: Path) -> list[tuple[str, str | None]]:
    """(statement, database of the preceding USE) for the DDL of a workload file."""
    text = path.read_text(encoding="utf-8")
    tokens = MySQL().tokenize(text)
    statements, start, current_db = [], 0, None
    for tok in tokens:
        if tok.token_type == sqlglot.tokens.TokenType.SEMICOLON:
            sql = text[start : tok.start].strip()
            start = tok.end + 1
            while sql.startswith("--"):
                sql = sql.split("\n", 1)[1].strip() if "\n" in sql else ""
            verb = sql.split(None, 1)[0].upper() if sql else ""
            if verb == "USE":
                current_db = sql.split()[1].strip("`")
            elif verb in DDL_VERBS:
                statements.append((sql, current_db))
    return statements


def test_workload_files_ddl_reproduces_the_expected_tables(relay_ddl: dict) -> None:
    """meta/shop.sql from nothing; meta/mid.sql on top of sysbench's prepare (from the relay log)."""
    r = Replica()
    mid = _sql_file_statements(MULTISOURCE / "meta" / "mid.sql")
    assert mid[0][0].startswith("ALTER TABLE sbtest1.sbtest2 ADD COLUMN note")
    m1 = relay_ddl["m1"]
    prepare = m1[: [sql for sql, _, _ in m1].index(mid[0][0])]
    for sql, db, _ in prepare:
        r.run(sql, db)
    for sql, db in mid + _sql_file_statements(MULTISOURCE / "meta" / "shop.sql"):
        r.run(sql, db)
    _check_against_expected(r, {"sbtest1", "sbtest2", "sbtest3", "shop"})

    from_relay = Replica()
    for channel in ("m1", "m2"):
        for sql, db, _ in relay_ddl[channel]:
            from_relay.run(sql, db)
    assert r.catalog == from_relay.catalog
