"""A relay log cannot make the slave read files, the network or its configuration: statements are
held to what a MySQL statement could mean (engine/slave/guard.py), and the slave's DuckDB has no
external access. A refused statement stops the channel at the last whole transaction with error
1290, naming the transaction and its relay-log position."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest

from engine.applier.vocabulary import ChannelError
from engine.replay import ChannelSpec, Replay
from engine.slave import Catalog, DdlTranslator, UntranslatableStatement
from engine.slave.database import Slave
from engine.slave.guard import (
    ALLOWED_FUNCTIONS,
    ALLOWED_NODES,
    MYSQL_FUNCTIONS,
    SOURCE_ONLY_FUNCTIONS,
    RefusedStatement,
    collect_classes,
)
from engine.slave.rowapply import ApplyError
from engine.slave.statements import SessionContext, StatementTranslator

from .binlog_frames import raw_events, with_crc
from .conftest import MULTISOURCE
from .relay_logs import write_relay_log
from .test_replay_errors import GTID, SETUP, replay, status_of, table_rows
from .test_replay_oracle import CHANNELS, assert_tables_equal, expected_tables

PASSWD_FIRST_LINE = Path("/etc/passwd").read_text().splitlines()[0]


# -- the DuckDB functions that reach outside the slave ------------------------------------------


def _duckdb_functions(where: str) -> list[str]:
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT DISTINCT function_name FROM duckdb_functions() WHERE {where} ORDER BY 1")
        return [name for (name,) in rows.fetchall()]


# Every table function: none is MySQL, and many read files (read_*, *_scan, glob, sniff_csv,
# parquet_*), run SQL given as text (query, query_table) or show the configuration (duckdb_*).
TABLE_FUNCTIONS = _duckdb_functions("function_type IN ('table', 'table_macro')")

# Scalar functions that show or change the configuration, the environment, files, secrets,
# extensions, the catalog or the session: listed, plus every one whose name says so.
SETTING_FUNCTIONS = sorted(
    {
        "current_setting",
        "getenv",
        "which_secret",
        "version",
        "current_database",
        "current_schema",
        "current_schemas",
        "current_query",
        "current_user",
        "current_role",
        "current_catalog",
        "database_size",
        "database_list",
        "extension_versions",
        "copy_database",
        "import_database",
        "pg_sleep",
        "nextval",
        "currval",
        "setseed",
        "uuid",
        "gen_random_uuid",
        *(
            name
            for name in _duckdb_functions("function_type NOT IN ('table', 'table_macro')")
            if re.search(
                r"setting|secret|extension|env|file|path|dir|database|schema|catalog|version|current_"
                r"|^pg_|^duckdb_|query|profil|checkpoint|import|export|copy|attach|http|url|^read_",
                name,
            )
            # MySQL's own (CURRENT_DATE, ...) are translated, not DuckDB's to run
            and name.upper() not in MYSQL_FUNCTIONS
        ),
    }
)


def test_the_duckdb_functions_are_enumerated():
    assert {"read_csv", "read_text", "read_parquet", "read_json", "read_blob", "glob", "query"} <= set(
        TABLE_FUNCTIONS
    )
    assert {"current_setting", "getenv", "version"} <= set(SETTING_FUNCTIONS)


# -- translation: the allow-list --------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    ddl = DdlTranslator()
    current = Catalog()
    for sql in (
        "CREATE DATABASE shop",
        "CREATE TABLE shop.t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10))",
        "CREATE TABLE shop.u (id INT NOT NULL PRIMARY KEY, w VARCHAR(10))",
    ):
        current = ddl.translate(sql, None, current).catalog
    return current


def translate(sql: str, catalog: Catalog, default_db: str | None = "shop") -> list[str]:
    return StatementTranslator().translate(sql, SessionContext(default_db=default_db), catalog)


def assert_refused(sql: str, catalog: Catalog, what: str) -> None:
    """Refused before any DuckDB text exists: by the allow-list, or because MySQL's grammar has no
    such statement (sqlglot's MySQL parser rejects it)."""
    with pytest.raises(UntranslatableStatement) as refused:
        translate(sql, catalog)
    if not isinstance(refused.value, RefusedStatement):
        assert "MySQL syntax not understood" in str(refused.value)
        return
    assert refused.value.errno == 1290
    assert what.lower() in str(refused.value).lower()


# Where a statement can call a function: {function} stands for its name.
TABLE_FUNCTION_USES = (
    "INSERT INTO t (id, v) SELECT 6, 'x' FROM {function}('/etc/passwd') AS f LIMIT 1",
    "INSERT INTO t VALUES (7, (SELECT 'x' FROM {function}('/etc/passwd') AS f LIMIT 1))",
    "UPDATE t SET v = (SELECT 'x' FROM {function}('/etc/passwd') AS f LIMIT 1) WHERE id = 1",
    "DELETE FROM t WHERE id IN (SELECT 1 FROM shop.u JOIN {function}('/etc') AS f ON TRUE)",
)
SETTING_FUNCTION_USES = (
    "INSERT INTO t VALUES (7, {function}('home_directory'))",
    "INSERT INTO t (id, v) SELECT 8, {function}() FROM shop.u",
    "UPDATE t SET v = CONCAT(v, {function}('home_directory')) WHERE id = 1",
    "DELETE FROM t WHERE v = (SELECT {function}('x'))",
)


def assert_every_use_refused(function: str, uses: tuple[str, ...], catalog: Catalog) -> None:
    for use in uses:
        assert_refused(use.format(function=function), catalog, function)


@pytest.mark.parametrize("function", TABLE_FUNCTIONS)
def test_every_duckdb_table_function_is_refused(function, catalog):
    assert_every_use_refused(function, TABLE_FUNCTION_USES, catalog)


@pytest.mark.parametrize("function", SETTING_FUNCTIONS)
def test_every_duckdb_setting_function_is_refused(function, catalog):
    assert_every_use_refused(function, SETTING_FUNCTION_USES, catalog)


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        (
            "INSERT INTO t (id, v) SELECT 6, column0 FROM read_csv('/etc/passwd', header=false, "
            "columns={'column0':'VARCHAR'}) LIMIT 1",
            "read_csv",
        ),
        ("INSERT INTO t VALUES (6, LOAD_FILE('/etc/passwd'))", "load_file"),
        ("INSERT INTO t VALUES (6, SLEEP(1))", "sleep"),
        ("INSERT INTO t SELECT 6, table_name FROM information_schema.tables", "information_schema"),
        ("INSERT INTO t SELECT 6, database_name FROM pg_catalog.pg_database", "pg_catalog"),
        ("INSERT INTO t SELECT 6, channel FROM __relaydeck.progress", "__relaydeck"),
        ("UPDATE t SET v = (SELECT body FROM `__relaydeck`.`catalog` LIMIT 1)", "__relaydeck"),
        ("INSERT INTO t SELECT 6, name FROM `__relaydeck_tmp`.`1/shop/x`", "__relaydeck_tmp"),
        ("INSERT INTO t SELECT 6, v FROM system.main.t", "catalog"),
        ("INSERT INTO t SELECT * FROM main.t", "main"),
        ("INSERT INTO t VALUES (6, @@secure_file_priv)", "SessionParameter"),
        ("INSERT INTO t SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) AS j", "JSON"),
    ],
)
def test_statements_reaching_outside_the_replicated_databases_are_refused(sql, what, catalog):
    assert_refused(sql, catalog, what)


@pytest.mark.parametrize("function", sorted(SOURCE_ONLY_FUNCTIONS))
def test_mysqls_own_functions_only_the_source_could_compute_are_refused_as_such(function, catalog):
    # SLEEP, UUID, VERSION and the like are MySQL's: a DBA is told why the slave will not run
    # them, not that MySQL has no such function
    with pytest.raises(UntranslatableStatement) as refused:
        translate(f"INSERT INTO t VALUES (6, {function}())", catalog)
    message = str(refused.value)
    assert function.lower() in message.lower()
    assert "is not a MySQL function" not in message
    assert "reproduce" in message


def test_a_column_added_with_a_default_only_the_source_could_compute_is_refused_as_such(catalog):
    # the source filled its rows with values of its own, which no event carries
    with pytest.raises(RefusedStatement, match=r"(?i)uuid\(\) gives what only the source server knew"):
        DdlTranslator().translate("ALTER TABLE t ADD COLUMN u VARCHAR(36) DEFAULT (uuid())", "shop", catalog)
    with pytest.raises(RefusedStatement, match=r"(?i)no_such_function\(\) is not a MySQL function"):
        DdlTranslator().translate(
            "ALTER TABLE t ADD COLUMN u INT DEFAULT (no_such_function())", "shop", catalog
        )


def test_a_table_without_a_database_is_refused(catalog):
    # No default database logged: a bare name would be DuckDB's to resolve (a view, a file).
    with pytest.raises(RefusedStatement, match="is in no database"):
        translate("INSERT INTO shop.t SELECT * FROM duckdb_settings", catalog, default_db=None)


def test_a_database_the_slave_does_not_hold_is_a_missing_table(catalog):
    with pytest.raises(ApplyError) as missing:
        translate("INSERT INTO t SELECT * FROM elsewhere.t", catalog)
    assert missing.value.errno == 1146


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1, CONCAT('a', NOW())), (2, IFNULL(NULL, 'b'))",
        "INSERT INTO t (id, v) VALUES (3, DATE_FORMAT(NOW(), '%Y')), (4, LPAD(UPPER('x'), 3, '-'))",
        "INSERT INTO t SELECT id + 10, SUBSTRING(w, 1, 2) FROM u WHERE w LIKE 'a%' ORDER BY id LIMIT 3",
        "INSERT INTO t SELECT u.id, MAX(u.w) FROM shop.u AS u JOIN shop.t ON t.id = u.id GROUP BY u.id",
        "INSERT INTO t WITH c AS (SELECT id, w FROM u) SELECT id, w FROM c",
        "INSERT INTO t VALUES (5, (SELECT w FROM u WHERE id = 1))",
        "UPDATE t SET v = (SELECT w FROM u WHERE u.id = t.id) WHERE id IN (SELECT id FROM u)",
        "UPDATE t SET v = CASE WHEN id > 1 THEN 'big' ELSE LEFT(v, 1) END ORDER BY id LIMIT 2",
        "DELETE FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.id = t.id) AND v IS NOT NULL",
        "INSERT INTO t VALUES (10, CAST(ROUND(RAND() * 100, 2) AS CHAR))",
    ],
)
def test_ordinary_mysql_statements_still_translate(sql, catalog):
    context = SessionContext(default_db="shop", rand_seeds=(1, 2))
    assert StatementTranslator().translate(sql, context, catalog)


def test_generated_and_default_expressions_are_held_to_the_allow_list(catalog):
    ddl = DdlTranslator()
    for sql in (
        "ALTER TABLE shop.t ADD COLUMN g VARCHAR(99) AS (current_setting('home_directory'))",
        "ALTER TABLE shop.t ADD COLUMN g VARCHAR(99) DEFAULT (getenv('HOME'))",
        "ALTER TABLE shop.t ADD COLUMN g VARCHAR(99) AS ((SELECT content FROM read_text('/etc/passwd')))",
    ):
        with pytest.raises(UntranslatableStatement) as refused:
            ddl.translate(sql, None, catalog)
        assert refused.value.errno == 1290
    assert ddl.translate("ALTER TABLE shop.t ADD COLUMN g VARCHAR(99) AS (CONCAT(v, '!'))", None, catalog)


def test_the_allow_list_is_what_mysql_parses_into():
    """The kept lists are what parsing MySQL's functions and syntax gives (a newer sqlglot may
    build other classes: collect again), and no function that reads outside the slave is in it."""
    functions, nodes = collect_classes()
    assert (functions, nodes) == (ALLOWED_FUNCTIONS, ALLOWED_NODES)
    outside = {"ReadCSV", "ReadParquet", "Anonymous", "Struct", "Array", "Map", "Unnest", "Explode"}
    assert not outside & (ALLOWED_FUNCTIONS | ALLOWED_NODES)
    assert not {"Command", "Pragma", "Set", "Copy", "Attach", "Lateral", "Insert"} & ALLOWED_NODES


# -- the slave's DuckDB: no external access -----------------------------------------------------


def test_the_slave_connection_has_no_external_access(tmp_path):
    slave = Slave(tmp_path / "s.duckdb")
    try:
        con = slave.con
        for sql in (
            "SELECT * FROM read_text('/etc/passwd')",
            "SELECT * FROM read_csv('/etc/passwd')",
            "SELECT * FROM glob('/etc/*')",
            "SELECT * FROM '/etc/passwd'",
            f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'",
            f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
            "INSTALL httpfs",
        ):
            with pytest.raises(duckdb.Error):
                con.execute(sql)
        assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.duckdb").exists()
        for sql in (
            "SET enable_external_access = true",
            "SET allowed_directories = ['/etc']",
            "SET threads = 1",
        ):
            with pytest.raises(duckdb.Error):
                con.execute(sql)
        # what the applier itself needs still works: its own tables and registered Arrow data
        session = slave.session()
        assert session.con.execute("SELECT count(*) FROM __relaydeck.progress").fetchall() == [(0,)]
        session.close()
    finally:
        slave.close()


# -- replay: a clean error, nothing half-applied, the right answer once the log is repaired ---------

ATTACKS = [
    "INSERT INTO t (id, v) SELECT 6, column0 FROM read_csv('/etc/passwd', header=false, "
    "columns={'column0':'VARCHAR'}) LIMIT 1",
    "INSERT INTO t (id, v) SELECT 6, content FROM read_text('/etc/passwd')",
    "INSERT INTO t VALUES (6, (SELECT content FROM read_text('/etc/passwd')))",
    "UPDATE t SET v = (SELECT content FROM read_text('/etc/passwd')) WHERE id = 1",
    "UPDATE t SET v = current_setting('home_directory') WHERE id = 2",
    "INSERT INTO t SELECT 6, content FROM read_blob('/etc/passwd')",
    "INSERT INTO t SELECT * FROM query('SELECT 6, current_setting(''home_directory'')')",
    "INSERT INTO t SELECT 6, value FROM duckdb_settings() WHERE name = 'home_directory'",
    "INSERT INTO t SELECT 6, channel FROM __relaydeck.progress",
]


def write_log_with(folder: Path, statement: str) -> Path:
    """SETUP, the statement's transaction (GTID :5), then one more insert."""
    return write_relay_log(folder, [*SETUP, (statement, False), ("INSERT INTO t VALUES (9, 'z')", False)])


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_statement_reading_outside_the_slave_stops_the_channel_with_nothing_applied(tmp_path, attack):
    index = write_log_with(tmp_path / "relay", attack)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    run = replay(index, slave, repo, "--group-size", "100")
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "Error 1290" in run.stderr and f"GTID {GTID}:5" in run.stderr
    assert re.search(r"relay log [^ ]+\.\d+:\d+\)", run.stderr), run.stderr
    assert table_rows(slave) == [(1, "a"), (2, "b")]
    row = status_of(repo)
    assert row["last_error_number"] == 1290 and f"{GTID}:5" in row["last_error_message"]
    assert row["transactions_applied"] == 4
    assert PASSWD_FIRST_LINE not in run.stdout + run.stderr + row["last_error_message"].replace(attack, "")


def test_the_replay_goes_on_once_the_statement_is_replaced(tmp_path):
    attack = ATTACKS[1]
    relay = tmp_path / "relay"
    index = write_log_with(relay, attack)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    assert replay(index, slave, repo).returncode == 1
    # the repaired log: the same transaction with a statement of the same length (same positions)
    repaired = "INSERT INTO t (id, v) VALUES (6, 'six')"
    for file in relay.iterdir():
        file.unlink()
    write_log_with(relay, repaired.ljust(len(attack)))
    rerun = replay(index, slave, repo)
    assert rerun.returncode == 0, rerun.stderr
    assert table_rows(slave) == [(1, "a"), (2, "b"), (6, "six"), (9, "z")]
    assert status_of(repo)["last_error_number"] == 0


@pytest.mark.parametrize(
    "applier", [["--workers", "2"], ["--workers", "2", "--pool", "processes"]], ids=["threads", "processes"]
)
def test_every_applier_refuses_the_statement_the_same_way(tmp_path, applier):
    attack = ATTACKS[2]
    index = write_log_with(tmp_path / "relay", attack)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    run = replay(index, slave, repo, *applier)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "Error 1290" in run.stderr and f"GTID {GTID}:5" in run.stderr and "read_text" in run.stderr
    assert table_rows(slave) == [(1, "a"), (2, "b")]
    assert status_of(repo)["last_error_number"] == 1290


@pytest.mark.parametrize(
    "sql",
    [
        "COPY shop.t FROM '/etc/passwd'",
        "COPY (SELECT * FROM shop.t) TO '/tmp/out.csv'",
        "ATTACH '/tmp/other.duckdb' AS other",
        "DETACH other",
        "PRAGMA enable_profiling",
        "SET enable_external_access = true",
        "SET GLOBAL allowed_directories = '/'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "CALL pragma_version()",
        "EXPORT DATABASE '/tmp/export'",
        "IMPORT DATABASE '/tmp/export'",
        "CREATE SECRET s (TYPE s3)",
        "CREATE MACRO m() AS 1",
        "CHECKPOINT",
        "SELECT * FROM read_text('/etc/passwd')",
        "DO read_text('/etc/passwd')",
        "CREATE VIEW shop.v AS SELECT * FROM read_text('/etc/passwd')",
        "CREATE TABLE shop.x AS SELECT * FROM read_csv('/etc/passwd')",
    ],
)
def test_other_statements_never_reach_duckdb(sql, catalog):
    """Anything but INSERT/UPDATE/DELETE goes to the DDL translator: refused, or a plan that runs
    nothing on the slave (MySQL statements that change no table data)."""
    try:
        plan = DdlTranslator().translate(sql, "shop", catalog)
    except UntranslatableStatement:
        return
    assert plan.statements == [], plan.statements


# -- the bundled MariaDB capture with one statement turned into a file read ---------------------

CAPTURE_FILE = "relay-bin-m1.000010"
CAPTURE_STATEMENT = (
    b"INSERT INTO stmt_log (k, note) SELECT id, LEFT(c, 30) FROM sbtest3.sbtest2 "
    b"WHERE id BETWEEN 1 AND 25 ORDER BY id"
)
CAPTURE_ATTACK = b"INSERT INTO stmt_log (k, note) SELECT 1, content FROM read_text('/etc/passwd')"


def test_the_capture_with_a_file_reading_statement_stops_before_it_and_replays_once_repaired(tmp_path):
    relay = tmp_path / "relay"
    shutil.copytree(MULTISOURCE / "relay", relay)
    original = (relay / CAPTURE_FILE).read_bytes()
    at = original.index(CAPTURE_STATEMENT)
    event = next(ev for ev in raw_events(original)[0] if ev.pos <= at < ev.end)
    # same length (trailing spaces end a MySQL statement harmlessly): every position stays valid
    tampered = bytearray(original)
    tampered[at : at + len(CAPTURE_STATEMENT)] = CAPTURE_ATTACK.ljust(len(CAPTURE_STATEMENT))
    (relay / CAPTURE_FILE).write_bytes(with_crc(tampered, event))

    channels = [ChannelSpec(c.name, relay / c.index_file.name) for c in CHANNELS]
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "repo.sqlite"
    m1, m2 = Replay(slave, repo, channels).run()
    assert m2.error is None
    assert isinstance(m1.error, ChannelError) and m1.error.errno == 1290
    assert (
        "read_text" in m1.error.message
        and m1.error.transaction
        and m1.error.transaction.startswith("GTID 1-1-")
    )
    # the position is where the failing transaction starts: its GTID event, before the statement
    file, pos = (m1.error.position or "").rsplit(":", 1)
    assert file == CAPTURE_FILE and 0 < event.pos - int(pos) < 1000
    failed = int(m1.error.transaction.rsplit("-", 1)[1])
    check = Slave(slave)
    try:
        (executed,) = check.con.execute(
            "SELECT executed_gtids FROM __relaydeck.progress WHERE channel = 'm1'"
        ).fetchone()
        leaked = check.con.execute(
            "SELECT count(*) FROM sbtest3.stmt_log WHERE note LIKE ?", [PASSWD_FIRST_LINE[:20] + "%"]
        ).fetchone()
    finally:
        check.close()
    assert executed.endswith(f"1-1-{failed - 1}") and leaked == (0,)

    (relay / CAPTURE_FILE).write_bytes(original)
    outcomes = Replay(slave, repo, channels).run()
    assert [o.error for o in outcomes] == [None, None]
    assert_tables_equal(slave, expected_tables())
