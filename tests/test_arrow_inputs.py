"""A statement reads the Arrow table put last for its shape, through a view registered once per
connection, and a rollback never leaves a statement reading a missing view or an older table."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from engine.binlog.constants import RowsKind
from engine.slave.arrow_inputs import ArrowInputs
from engine.slave.database import Slave
from engine.slave.rowapply import RowApplier

from .test_rowapply import images, table


def numbers(*values: int) -> pa.Table:
    return pa.table({"n": pa.array(values, pa.int64())})


def words(*values: str) -> pa.Table:
    return pa.table({"w": pa.array(values, pa.string())})


def test_each_shape_reads_the_table_put_last_for_it():
    con = duckdb.connect()
    inputs = ArrowInputs(con)
    first = inputs.put(numbers(1, 2))
    text = inputs.put(words("a"))
    assert first != text
    assert con.execute(f"SELECT sum(n) FROM {first}").fetchone() == (3,)
    assert inputs.put(numbers(10, 20, 30)) == first  # same shape, same view, new rows
    assert con.execute(f"SELECT sum(n) FROM {first}").fetchone() == (60,)
    assert con.execute(f"SELECT list(w) FROM {text}").fetchone() == (["a"],)
    inputs.release(first)
    assert con.execute(f"SELECT count(*) FROM {first}").fetchone() == (0,)
    assert con.execute(f"SELECT count(*) FROM {text}").fetchone() == (1,)


def test_two_inputs_on_one_connection_do_not_share_views():
    con = duckdb.connect()
    one, other = ArrowInputs(con), ArrowInputs(con)
    a, b = one.put(numbers(1)), other.put(numbers(2))
    assert a != b
    assert con.execute(f"SELECT n FROM {a}").fetchone() == (1,)
    assert con.execute(f"SELECT n FROM {b}").fetchone() == (2,)


@pytest.mark.parametrize(
    "registered_before", [False, True], ids=["in the rolled-back txn", "committed before"]
)
def test_after_a_rollback_the_next_put_is_read(registered_before):
    """A view registered in the rolled-back transaction is gone; one registered before it comes
    back as it was. Either way the next put's rows are what the statement reads."""
    con = duckdb.connect()
    inputs = ArrowInputs(con)
    if registered_before:
        inputs.put(numbers(1))
    con.execute("BEGIN")
    inputs.put(numbers(2))
    con.execute("ROLLBACK")
    inputs.rolled_back()
    con.execute("BEGIN")
    name = inputs.put(numbers(3, 4))
    assert con.execute(f"SELECT sum(n) FROM {name}").fetchone() == (7,)
    con.execute("COMMIT")


def test_a_slave_session_applies_again_after_its_batch_was_rolled_back(tmp_path):
    """The worker's way: a batch applied set-based, rolled back (an error, a retry), then applied
    again on the same session. The slave tells its inputs of the rollback."""
    slave = Slave(tmp_path / "slave.duckdb")
    try:
        slave.con.execute("CREATE SCHEMA db; CREATE TABLE db.t (id INTEGER PRIMARY KEY, v VARCHAR)")
        session = slave.session()
        rows = RowApplier(session.con, inputs=session.arrow_inputs)
        t = table(("id",))
        session.begin()
        rows.add(images(RowsKind.WRITE, None, [(1, "a"), (2, "b")]), t)
        rows.flush()
        session.rollback()
        session.begin()
        rows.add(images(RowsKind.WRITE, None, [(1, "c")]), t)
        rows.flush()
        session.commit()
        assert slave.con.execute("SELECT id, v FROM db.t").fetchall() == [(1, "c")]
        session.close()
    finally:
        slave.close()
