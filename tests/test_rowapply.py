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


KEY_VALUES = {
    "int": st.one_of(st.none(), st.integers(-3, 3)),
    "bigint": st.integers(-(2**63), 2**63 - 1),
    "text": st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab"])),
}


@st.composite
def keyed_operations(draw):  # type: ignore[no-untyped-def]
    """(key columns, their values per row): 1-3 key columns of mixed types, repeats likely."""
    kinds = draw(st.lists(st.sampled_from(sorted(KEY_VALUES)), min_size=1, max_size=3))
    n = draw(st.integers(1, 60))
    pool = draw(st.lists(st.tuples(*(KEY_VALUES[k] for k in kinds)), min_size=1, max_size=8))
    keys = [
        draw(st.sampled_from(pool)) if draw(st.booleans()) else tuple(draw(KEY_VALUES[k]) for k in kinds)
        for _ in range(n)
    ]
    arrow_types = {"int": rowapply.pa.int32(), "bigint": rowapply.pa.int64(), "text": rowapply.pa.string()}
    columns = [rowapply.pa.array([k[i] for k in keys], arrow_types[kind]) for i, kind in enumerate(kinds)]
    return columns, keys


@settings(max_examples=150, deadline=None)
@given(keyed_operations())
def test_rows_share_a_key_code_exactly_when_they_share_every_key_value(drawn):
    columns, keys = drawn
    codes, bound = rowapply.key_codes(columns)
    assert len(codes) == len(keys)
    assert all(0 <= c < bound for c in codes.tolist())
    for i in range(len(keys)):
        for j in range(len(keys)):
            assert (codes[i] == codes[j]) == (keys[i] == keys[j])


def test_key_codes_stay_near_the_row_count_however_many_wide_columns():
    """Folding columns of many values each multiplies the bound; it is re-encoded down."""
    n = 1000
    columns = [rowapply.pa.array([(i * 7919 + c) % n for i in range(n)]) for c in range(4)]
    codes, bound = rowapply.key_codes(columns)
    assert len(set(codes.tolist())) == n
    assert bound <= 4 * n + 64


@settings(max_examples=150, deadline=None)
@given(keyed_operations(), st.randoms(use_true_random=False))
def test_a_batch_is_reduced_to_each_key_s_first_check_and_last_image(drawn, rnd):
    """Against a dict: per key, seq and must of its first operation, op and values of its last;
    then the keys found are told apart from the others whatever their types."""
    columns, keys = drawn
    n = len(keys)
    seqs = sorted(rnd.sample(range(10 * n), n))
    ops = [rnd.randint(0, 1) for _ in range(n)]
    musts = [rnd.randint(0, 1) for _ in range(n)]
    names = [f"c{i}" for i in range(len(columns))]
    table = rowapply.pa.table(
        {
            "seq": rowapply.pa.array(seqs, rowapply.pa.int64()),
            "op": rowapply.pa.array(ops, rowapply.pa.int8()),
            "must": rowapply.pa.array(musts, rowapply.pa.int8()),
            **dict(zip(names, columns, strict=True)),
            "payload": rowapply.pa.array(range(n)),
        }
    )
    model: dict[tuple, tuple] = {}
    for i, key in enumerate(keys):
        first_seq, first_must = model[key][:2] if key in model else (seqs[i], musts[i])
        model[key] = (first_seq, first_must, ops[i], i)
    reduced = rowapply.reduce_by_key(table, names)
    got = {
        tuple(row[c] for c in names): (row["seq"], row["must"], row["op"], row["payload"])
        for row in reduced.to_pylist()
    }
    assert reduced.num_rows == len(model)
    assert got == model
    found_keys = [k for k in model if rnd.random() < 0.5 and None not in k]
    found = rowapply.pa.table(
        {name: rowapply.pa.array([k[i] for k in found_keys], columns[i].type) for i, name in enumerate(names)}
    )
    mask = rowapply._found_mask(reduced, names, found).to_pylist()
    assert mask == [tuple(row[c] for c in names) in found_keys for row in reduced.to_pylist()]


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


def error_of(con, t: MysqlTable, *events: RowImages) -> tuple[int, str] | None:  # type: ignore[no-untyped-def]
    """The error (errno, message) applying the events as one batch gives, rolled back; None if none."""
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


def test_a_row_that_must_exist_and_stays_is_updated_where_it_is(con):
    """An update, and a delete and insert of one key, change the row in place; a key that
    changes is deleted and inserted. The batch's end state is the same either way."""
    con.execute("INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    before = dict(con.execute("SELECT id, rowid FROM db.t").fetchall())
    applier = RowApplier(con)
    t = table(("id",))
    applier.add(images(RowsKind.UPDATE, [(1, "a")], [(1, "a2")]), t)
    applier.add(images(RowsKind.DELETE, [(2, "b")], None), t)
    applier.add(images(RowsKind.WRITE, None, [(2, "b2")]), t)
    applier.add(images(RowsKind.UPDATE, [(3, "c")], [(4, "d")]), t)
    applier.add(images(RowsKind.WRITE, None, [(5, "e")]), t)
    applier.flush()
    assert rows(con) == [(1, "a2"), (2, "b2"), (4, "d"), (5, "e")]
    after = dict(con.execute("SELECT id, rowid FROM db.t").fetchall())
    assert after[1] == before[1] and after[2] == before[2]


def test_the_first_offending_operation_is_reported_whichever_statement_met_it(con):
    """A missing row for an in-place update and a present row for an insert are found by
    different statements; the error is the first in stream order all the same."""
    con.execute("INSERT INTO db.t VALUES (1, 'a'), (3, 'c')")
    t = table(("id",))

    update_missing = images(RowsKind.UPDATE, [(1, "a"), (2, "b")], [(1, "a2"), (2, "b2")])
    insert_present = images(RowsKind.WRITE, None, [(3, "again")])
    errno, message = error_of(con, t, update_missing, insert_present)
    assert errno == 1032 and "key 2" in message
    errno, message = error_of(con, t, insert_present, update_missing)
    assert errno == 1062 and "'3'" in message
    assert rows(con) == [(1, "a"), (3, "c")]


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
    """The keys the statements found decide the errors; a key of two columns is matched as a
    whole, by Arrow's join or, where Arrow cannot line the types up, value by value."""
    if fallback:

        def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise rowapply.pa.ArrowNotImplementedError("no join for these types")

        monkeypatch.setattr(rowapply, "_arrow_found_mask", refuse)
    con.execute("INSERT INTO db.t VALUES (1, 'a'), (2, 'b')")
    t = table(("id", "v"))

    # (1, 'b') and (2, 'a') share a column value with a row that is there, not the whole key
    assert error_of(con, t, images(RowsKind.WRITE, None, [(1, "b"), (2, "a")])) is None
    assert error_of(con, t, images(RowsKind.DELETE, [(1, "a"), (2, "b")], None)) is None
    errno, message = error_of(
        con, t, images(RowsKind.WRITE, None, [(3, "c")]), images(RowsKind.WRITE, None, [(2, "b"), (1, "a")])
    )
    assert errno == 1062 and "'2-b'" in message
    errno, message = error_of(
        con, t, images(RowsKind.DELETE, [(1, "a")], None), images(RowsKind.UPDATE, [(2, "a")], [(2, "z")])
    )
    assert errno == 1032 and "key 2-a" in message
    assert rows(con) == [(1, "a"), (2, "b")]
