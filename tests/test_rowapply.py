"""Set-based application gives what row-by-row application gives; tables without a primary key
are matched on the whole before image, one row at a time, as MySQL does."""

from __future__ import annotations

from dataclasses import replace

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.binlog.columns import ColumnInfo, RowImages
from engine.binlog.constants import ColumnType, RowsKind
from engine.binlog.events.base import EventHeader
from engine.binlog.events.rows import TableMap
from engine.replay import ChannelSpec, Replay
from engine.slave import rowapply
from engine.slave.rowapply import ApplyError, RowApplier
from engine.slave.schema import MysqlColumn, MysqlTable

from .conftest import MULTISOURCE
from .test_replay_oracle import assert_tables_equal

HEADER = EventHeader(0, 19, 1, 0, 0, 0)
TABLE_MAP = TableMap(HEADER, 1, 0, "db", "t", (ColumnType.LONG, ColumnType.VARCHAR), (0, 40), (False, True))
INFOS = (
    ColumnInfo(0, "id", ColumnType.LONG, 0, False, None, False, None, None),
    ColumnInfo(1, "v", ColumnType.VARCHAR, 40, False, 45, True, None, None),
)


def table(primary_key: tuple[str, ...]) -> MysqlTable:
    return MysqlTable(
        "db",
        "t",
        (MysqlColumn("id", "int", "int", nullable=False), MysqlColumn("v", "varchar(10)", "varchar")),
        primary_key=primary_key,
    )


def images(kind: RowsKind, before: list[tuple] | None, after: list[tuple] | None) -> RowImages:
    def columns(rows: list[tuple] | None) -> dict[int, list] | None:
        return None if rows is None else {i: [r[i] for r in rows] for i in range(2)}

    count = len(before or after or [])
    return RowImages(TABLE_MAP, kind, INFOS, columns(before), columns(after), count)


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA db; CREATE TABLE db.t (id INTEGER, v VARCHAR)")
    yield con
    con.close()


def rows(con) -> list[tuple]:
    return con.execute("SELECT id, v FROM db.t ORDER BY id, v").fetchall()


def test_one_batch_of_inserts_updates_key_changes_deletes_and_reinserts_nets_out_exactly(con):
    applier = RowApplier(con)
    t = table(("id",))
    applier.add(images(RowsKind.WRITE, None, [(1, "a"), (2, "b"), (3, "c")]), t)
    applier.add(images(RowsKind.UPDATE, [(1, "a")], [(10, "a2")]), t)  # the key changes
    applier.add(images(RowsKind.DELETE, [(2, "b")], None), t)
    applier.add(images(RowsKind.WRITE, None, [(2, "b again")]), t)  # re-insert of a deleted key
    applier.add(images(RowsKind.UPDATE, [(3, "c")], [(3, "c2")]), t)
    applier.add(images(RowsKind.UPDATE, [(3, "c2")], [(3, "c3")]), t)  # twice in one batch
    applier.flush()
    assert rows(con) == [(2, "b again"), (3, "c3"), (10, "a2")]


def test_one_update_event_that_moves_a_key_onto_a_key_it_then_moves_on_keeps_stream_order(con):
    # an update event lists every before image and after image pair; queued column-wise, its
    # before images come first: the net change must still follow the pairs' order
    con.execute("INSERT INTO db.t VALUES (1, 'a'), (7, 'z')")
    applier = RowApplier(con)
    t = table(("id",))
    applier.add(images(RowsKind.UPDATE, [(1, "a"), (2, "a"), (7, "z")], [(2, "a"), (3, "a"), (8, "z")]), t)
    applier.flush()
    assert rows(con) == [(3, "a"), (8, "z")]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["insert", "update", "delete"]), st.integers(0, 5), st.integers(0, 5)),
        max_size=40,
    )
)
def test_a_batch_nets_out_to_what_row_by_row_application_gives(steps):
    """Any valid sequence of single-row and multi-row events on a few keys, against a dict."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA db; CREATE TABLE db.t (id INTEGER, v VARCHAR)")
    con.execute("INSERT INTO db.t VALUES (0, 'start'), (1, 'start')")
    model = {0: "start", 1: "start"}
    applier = RowApplier(con)
    t = table(("id",))
    for n, (kind, key, other) in enumerate(steps):
        value = f"v{n}"
        if kind == "insert" and key not in model:
            applier.add(images(RowsKind.WRITE, None, [(key, value)]), t)
            model[key] = value
        elif kind == "delete" and key in model:
            applier.add(images(RowsKind.DELETE, [(key, model.pop(key))], None), t)
        elif kind == "update" and key in model and (other == key or other not in model):
            pairs = [((key, model[key]), (other, value))]
            del model[key]
            model[other] = value
            spare = next((k for k in model if k not in (key, other)), None)
            if spare is not None:  # a second row in the same event
                pairs.append(((spare, model[spare]), (spare, value + "'")))
                model[spare] = value + "'"
            applier.add(images(RowsKind.UPDATE, [b for b, _ in pairs], [a for _, a in pairs]), t)
    applier.flush()
    assert rows(con) == sorted(model.items())
    con.close()


def test_the_first_offending_row_in_stream_order_is_the_one_reported(con):
    con.execute("INSERT INTO db.t VALUES (3, 'x'), (5, 'y')")
    applier = RowApplier(con)
    t = table(("id",))
    applier.add(images(RowsKind.WRITE, None, [(4, "ok"), (5, "dup")]), t)
    applier.add(images(RowsKind.WRITE, None, [(3, "dup")]), t)
    with pytest.raises(ApplyError) as caught:
        applier.flush()
    assert caught.value.errno == 1062 and "'5'" in str(caught.value)


def test_inserting_a_key_the_slave_already_has_is_error_1062(con):
    con.execute("INSERT INTO db.t VALUES (1, 'x')")
    applier = RowApplier(con)
    applier.add(images(RowsKind.WRITE, None, [(1, "a")]), table(("id",)))
    with pytest.raises(ApplyError) as caught:
        applier.flush()
    assert caught.value.errno == 1062


def test_updating_a_row_the_slave_lacks_is_error_1032(con):
    applier = RowApplier(con)
    applier.add(images(RowsKind.UPDATE, [(5, "a")], [(5, "b")]), table(("id",)))
    with pytest.raises(ApplyError) as caught:
        applier.flush()
    assert caught.value.errno == 1032


def test_without_a_key_a_delete_removes_one_of_two_identical_rows(con):
    con.execute("INSERT INTO db.t VALUES (1, 'same'), (1, 'same'), (2, NULL)")
    applier = RowApplier(con)
    applier.add(images(RowsKind.DELETE, [(1, "same")], None), table(()))
    applier.add(images(RowsKind.UPDATE, [(2, None)], [(2, "set")]), table(()))  # NULL matches NULL
    applier.flush()
    assert rows(con) == [(1, "same"), (2, "set")]


def test_the_capture_replays_exactly_when_every_table_is_matched_on_its_before_image(tmp_path, monkeypatch):
    original = RowApplier.add

    def without_keys(self, images, table):  # type: ignore[no-untyped-def]
        return original(self, images, replace(table, primary_key=()))

    monkeypatch.setattr(rowapply.RowApplier, "add", without_keys)
    spec = ChannelSpec("m2", MULTISOURCE / "relay" / "relay-bin-m2.index")
    outcomes = Replay(tmp_path / "s.duckdb", None, [spec]).run()
    assert outcomes[0].error is None
    expected = {("shop", p.stem): p for p in (MULTISOURCE / "expected" / "shop").glob("*.csv")}
    assert_tables_equal(tmp_path / "s.duckdb", expected)


@pytest.mark.parametrize("fallback", [False, True])
def test_a_two_column_key_reports_1062_and_1032_for_the_first_offending_row(con, monkeypatch, fallback):
    """The keys DELETE … RETURNING found decide the errors; a key of two columns is matched as a
    whole, by Arrow's join or, where Arrow cannot line the types up, value by value."""
    if fallback:

        def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise rowapply.pa.ArrowNotImplementedError("no join for these types")

        monkeypatch.setattr(rowapply, "_arrow_found_mask", refuse)
    con.execute("INSERT INTO db.t VALUES (1, 'a'), (2, 'b')")
    t = table(("id", "v"))

    def outcome(*events: RowImages) -> tuple[int, str] | None:
        con.execute("BEGIN")
        applier = RowApplier(con)
        for event in events:
            applier.add(event, t)
        try:
            applier.flush()
        except ApplyError as exc:
            return exc.errno, exc.message
        finally:
            con.execute("ROLLBACK")
        return None

    # (1, 'b') and (2, 'a') share a column value with a row that is there, not the whole key
    assert outcome(images(RowsKind.WRITE, None, [(1, "b"), (2, "a")])) is None
    assert outcome(images(RowsKind.DELETE, [(1, "a"), (2, "b")], None)) is None
    errno, message = outcome(
        images(RowsKind.WRITE, None, [(3, "c")]), images(RowsKind.WRITE, None, [(2, "b"), (1, "a")])
    )
    assert errno == 1062 and "'2-b'" in message
    errno, message = outcome(
        images(RowsKind.DELETE, [(1, "a")], None), images(RowsKind.UPDATE, [(2, "a")], [(2, "z")])
    )
    assert errno == 1032 and "key 2-a" in message
    assert rows(con) == [(1, "a"), (2, "b")]
