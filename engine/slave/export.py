"""Slave tables written out the way MySQL prints them: the form the oracles (expected CSVs) use.

Header row of column names, rows ordered by primary key (all columns when there is none), NULL as
``\\N``, values as the MySQL client prints them — DECIMAL with its scale, DATETIME(n)/TIME(n) with
exactly n fractional digits, binary strings as lowercase hex, CHAR without trailing spaces — and a
field double-quoted only when empty or holding a comma, a quote, CR or LF.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..render import float_text, time_text
from .database import Slave
from .identifiers import quote_ident
from .rowapply import slave_table_ref
from .schema import MysqlColumn, MysqlTable


def _fsp(column: MysqlColumn) -> int:
    return column.fsp or 0


def _datetime_text(value: dt.datetime, fsp: int) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{value.microsecond:06d}"[: len(text) + 1 + fsp] if fsp else text


def mysql_text(value: Any, column: MysqlColumn) -> str | None:
    """One value as MySQL prints it; None for SQL NULL."""
    if value is None:
        return None
    base = column.base_type.lower()
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, dt.datetime):
        return _datetime_text(value, _fsp(column))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        text = time_text(value)
        fsp = _fsp(column)
        if "." in text:
            head, frac = text.split(".")
            return f"{head}.{frac[:fsp]}" if fsp else head
        return f"{text}.{'0' * fsp}" if fsp else text
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, Decimal):
        return f"{value:f}"  # positional always: MySQL prints 0.000000000, never 0E-9
    if isinstance(value, int):
        return f"{value:04d}" if base == "year" else str(value)
    text = str(value)
    if base == "char":
        text = text.rstrip(" ")
    return text


def csv_field(text: str | None, binary: bool = False) -> str:
    if text is None:
        return "\\N"
    if binary:
        return text  # lowercase hex: never needs quotes, and an empty value stays bare
    # The oracle was dumped by MariaDB comparing with '' and '\\N' under PAD SPACE collations, so
    # values that are only spaces (or \\N plus spaces) are quoted as well.
    bare = text.rstrip(" ")
    if bare == "" or bare == "\\N" or any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def export_csv(slave: Slave, table: MysqlTable) -> str:
    """The whole table as CSV text in the oracle's convention."""
    names = [c.name for c in table.columns]
    order = table.primary_key or tuple(names)
    rows = slave.con.execute(
        f"SELECT {', '.join(quote_ident(n) for n in names)} FROM {slave_table_ref(table, slave.duckdb_catalog)} "
        f"ORDER BY {', '.join(quote_ident(n) for n in order)}"
    ).fetchall()
    lines = [",".join(csv_field(n) for n in names)]
    for row in rows:
        lines.append(
            ",".join(csv_field(mysql_text(v, c), c.binary) for v, c in zip(row, table.columns, strict=True))
        )
    return "\n".join(lines) + "\n"


def differences(slave: Slave, *expected_dirs: Path) -> list[str]:
    """Tables of the slave that differ from oracle folders (<db>/<table>.csv; several for channels
    fanned in to one slave); empty when exact."""
    expected = {
        (p.parent.name, p.stem): p for folder in expected_dirs for p in sorted(Path(folder).glob("*/*.csv"))
    }
    problems = []
    present = set(slave.user_tables())
    for key in sorted(present - set(expected)):
        problems.append(f"{key[0]}.{key[1]}: on the slave, not in the oracle")
    for key, path in expected.items():
        table = slave.catalog.get(key)
        if table is None or key not in present:
            problems.append(f"{key[0]}.{key[1]}: missing from the slave")
        elif export_csv(slave, table) != path.read_bytes().decode("utf-8"):
            problems.append(f"{key[0]}.{key[1]}: contents differ")
    return problems
