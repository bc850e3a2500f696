"""How `relaydeck events --rows` writes rows from decoded values (render.row_lines and
render.rows_json_text: the forms the compiled writers of binlog/_rowimage.pyx are held to)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine import render

values = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.text(),
    st.sampled_from(["it's", "back\\slash", "'", "\\'", ""]),
    st.binary(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.booleans(),
    st.datetimes(min_value=dt.datetime(1000, 1, 1)),
    st.dates(),
    st.timedeltas(),
    st.lists(st.floats(allow_nan=False, width=32), max_size=3),
)


@dataclass
class Column:
    name: str


@st.composite
def images(draw: st.DrawFn) -> tuple[list[Column], tuple[dict[int, list[object]] | None, ...], int]:
    """Columns, a before and an after image (None, or some columns' values), a row count."""
    count = draw(st.integers(0, 4))
    columns = [Column(n) for n in draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=5))]

    def image() -> dict[int, list[object]] | None:
        if draw(st.integers(0, 3)) == 0:
            return None
        present = draw(st.lists(st.sampled_from(range(len(columns))), unique=True))
        return {i: draw(st.lists(values, min_size=count, max_size=count)) for i in present}

    return columns, (image(), image()), count


def test_a_row_line_reads_like_mysqlbinlog() -> None:
    text = render.row_lines(
        "### UPDATE `db`.`t` ",
        [Column("id"), Column("note"), Column("d")],
        ({0: [7, 9], 1: ["it's", "x"]}, {0: [8, 9], 1: [None, "y"], 2: [Decimal("1.50"), Decimal(2)]}),
        2,
    )
    assert text == (
        "### UPDATE `db`.`t` (id=7, note='it\\'s') -> (id=8, note=NULL, d=1.50)\n"
        "### UPDATE `db`.`t` (id=9, note='x') -> (id=9, note='y', d=2)\n"
    )


def rows_as_json_dumps_writes_them(columns, before, after, count) -> str:  # type: ignore[no-untyped-def]
    rows = []
    for r in range(count):
        row = {}
        for label, image in (("before", before), ("after", after)):
            if image:
                row[label] = {columns[i].name: render.json_value(values[r]) for i, values in image.items()}
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False)


@settings(max_examples=400, deadline=None)
@given(case=images())
def test_rows_as_json_are_what_json_dumps_writes(case: tuple) -> None:
    columns, (before, after), count = case
    names = [c.name for c in columns]
    assume(len(set(names)) == len(names))
    keys = [json.dumps(name, ensure_ascii=False) for name in names]
    expected = rows_as_json_dumps_writes_them(columns, before, after, count)
    assert render.rows_json_text(keys, before, after, count) == expected
