"""The slave's catalog of MySQL definitions as the file stores it: a header row and one row per
table, written only where a DDL changed something, read back as the same catalog; a slave that
holds the catalog as one document (as relaydeck wrote it before) is read, and its next DDL writes
the rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from engine.generate import generate
from engine.replay import ChannelSpec, Replay
from engine.slave.database import ChannelProgress, Slave
from engine.slave.names import INTERNAL_SCHEMA
from engine.slave.schema import Catalog, MysqlColumn, MysqlTable

from .test_replay_oracle import assert_tables_equal


def stored_rows(path: Path) -> dict[tuple[str, str, str], str]:
    slave = Slave(path, read_only=True)
    try:
        rows = slave.con.execute(
            f"SELECT kind, schema_name, table_name, body FROM {INTERNAL_SCHEMA}.catalog_tables"
        ).fetchall()
    finally:
        slave.close()
    keys = [(kind, schema, name) for kind, schema, name, _ in rows]
    assert len(keys) == len(set(keys))  # one row per table
    return {(kind, schema, name): body for kind, schema, name, body in rows}


def catalog_of(path: Path) -> str:
    slave = Slave(path, read_only=True)
    try:
        return slave.catalog.to_json()
    finally:
        slave.close()


def with_column(table: MysqlTable, name: str) -> MysqlTable:
    return replace(table, columns=(*table.columns, MysqlColumn(name=name, mysql_type="int", base_type="int")))


def save_with_a_column_added(slave: Slave, column: str) -> str:
    """The slave's first table given one more column, saved and committed as a DDL saves it;
    the catalog's JSON after."""
    catalog = slave.catalog.copy()
    first = sorted(catalog)[0]
    catalog[first] = with_column(catalog[first], column)
    slave.begin(changes_definitions=True)
    slave.save_catalog(catalog)
    slave.commit()
    return catalog.to_json()


def copy_of(slave_path: Path, folder: Path) -> Path:
    path = folder / "slave.duckdb"
    path.write_bytes(slave_path.read_bytes())
    return path


@pytest.fixture(scope="module")
def ddl_slave(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A slave after the generated DDL workload (tables created, altered, renamed, dropped),
    its expected tables, and its catalog as the replay left it."""
    folder = tmp_path_factory.mktemp("ddl")
    summary = generate("ddl", 3, folder / "gen", size_mb=0.3)
    slave_path = folder / "slave.duckdb"
    (outcome,) = Replay(slave_path, None, [ChannelSpec("", summary.index_file)]).run()
    assert outcome.error is None, outcome.error
    return slave_path, folder / "gen" / "expected", catalog_of(slave_path)


def test_a_ddl_heavy_log_leaves_one_row_per_table_and_reads_back_the_same(ddl_slave) -> None:  # type: ignore[no-untyped-def]
    slave_path, expected, catalog_text = ddl_slave
    expected_tables = {(p.parent.name, p.stem): p for p in sorted(expected.glob("*/*.csv"))}
    assert_tables_equal(slave_path, expected_tables)
    rows = stored_rows(slave_path)
    catalog = Catalog.from_json(catalog_text)
    assert {(schema, name) for kind, schema, name in rows if kind == "table"} == set(catalog)
    assert len(catalog) >= 3
    # each row is its table's own text
    header, parts = catalog.parts()
    assert rows == parts


def test_a_catalog_change_rewrites_its_tables_rows_and_survives_a_reopen(tmp_path, ddl_slave) -> None:  # type: ignore[no-untyped-def]
    path = copy_of(ddl_slave[0], tmp_path)
    before = stored_rows(path)
    slave = Slave(path)
    try:
        catalog = slave.catalog.copy()
        first, second, *_ = sorted(catalog)
        catalog[first] = with_column(catalog[first], "added")
        del catalog[second]
        slave.begin(changes_definitions=True)
        slave.save_catalog(catalog)
        slave.commit()
        changed = catalog.to_json()
    finally:
        slave.close()
    assert catalog_of(path) == changed
    after = stored_rows(path)
    assert ("table", *second) not in after and after[("table", *first)] != before[("table", *first)]
    assert {k: v for k, v in after.items() if k[1:] != first} == {
        k: v for k, v in before.items() if k[1:] not in (first, second)
    }


def test_a_rolled_back_catalog_change_leaves_the_stored_one(tmp_path, ddl_slave) -> None:  # type: ignore[no-untyped-def]
    path = copy_of(ddl_slave[0], tmp_path)
    slave = Slave(path)
    try:
        original = slave.catalog.to_json()
        first = sorted(slave.catalog)[0]
        dropped = slave.catalog.copy()
        del dropped[first]
        slave.begin(changes_definitions=True)
        slave.save_catalog(dropped)
        slave.rollback()
        assert slave.catalog.to_json() == original
        # what the handle believes stored is the file's again: a later change writes in full
        expected = save_with_a_column_added(slave, "later")
    finally:
        slave.close()
    assert catalog_of(path) == expected


def test_a_slave_holding_the_catalog_as_one_document_is_read_and_moved_to_rows(tmp_path, ddl_slave) -> None:  # type: ignore[no-untyped-def]
    slave_path, expected, catalog_text = ddl_slave
    path = copy_of(slave_path, tmp_path)
    slave = Slave(path)
    try:  # the layout relaydeck wrote before: one document, no catalog_tables
        slave.con.execute(f"DROP TABLE {INTERNAL_SCHEMA}.catalog_tables")
        slave.con.execute(f"UPDATE {INTERNAL_SCHEMA}.catalog SET body = ? WHERE id = 1", [catalog_text])
    finally:
        slave.close()
    assert catalog_of(path) == catalog_text
    slave = Slave(path)
    try:
        changed = save_with_a_column_added(slave, "moved")
    finally:
        slave.close()
    assert catalog_of(path) == changed
    assert stored_rows(path) == Catalog.from_json(changed).parts()[1]


def test_the_catalog_is_in_force_at_once_and_written_once_when_its_transaction_commits(
    tmp_path, ddl_slave
) -> None:  # type: ignore[no-untyped-def]
    """A worker applies a chain of DDL as one transaction: each change is the catalog in force
    from then on, and only the last is written to the file, at the commit."""
    path = copy_of(ddl_slave[0], tmp_path)
    before = stored_rows(path)
    slave = Slave(path)
    try:
        first, second, *_ = sorted(slave.catalog)
        widened = slave.catalog.copy()
        widened[first] = with_column(widened[first], "added")
        narrowed = widened.copy()
        del narrowed[second]
        slave.begin(changes_definitions=True)
        slave.save_catalog(widened)
        assert slave.catalog.to_json() == widened.to_json()
        slave.save_catalog(narrowed)
        assert slave.catalog.to_json() == narrowed.to_json()
        inside = slave.con.execute(
            f"SELECT kind, schema_name, table_name, body FROM {INTERNAL_SCHEMA}.catalog_tables"
        ).fetchall()
        assert {(k, s, n): b for k, s, n, b in inside} == before  # nothing written yet
        slave.commit()
    finally:
        slave.close()
    assert catalog_of(path) == narrowed.to_json()
    assert stored_rows(path) == narrowed.parts()[1]


def test_a_commit_that_fails_leaves_the_catalog_the_file_holds(tmp_path, ddl_slave) -> None:  # type: ignore[no-untyped-def]
    """The catalog is written at the commit: when the commit fails (here DuckDB refuses it, as
    another session committed the same new channel's position first), nothing of the transaction
    stays, in the file or in memory, and the handle goes on as usual."""
    path = copy_of(ddl_slave[0], tmp_path)
    slave = Slave(path)
    other = slave.session()
    try:
        original = slave.catalog.to_json()
        dropped = slave.catalog.copy()
        del dropped[sorted(dropped)[0]]
        slave.begin(changes_definitions=True)
        slave.save_catalog(dropped)
        slave.record_progress(ChannelProgress("new"))
        other.begin()
        other.record_progress(ChannelProgress("new"))
        other.commit()
        with pytest.raises(duckdb.Error):
            slave.commit()
        assert slave.catalog.to_json() == original
        expected = save_with_a_column_added(slave, "later")
    finally:
        other.close()
        slave.close()
    assert catalog_of(path) == expected
