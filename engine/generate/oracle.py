"""The generator's oracle: the model of every table's rows, kept in step with the events it emits.

Each change the generator logs is applied here as it is logged, so at the end the model holds
what a correct replica holds. write_expected() renders it the way MySQL prints values (the same
CSV convention as the shared MariaDB fixture) plus a manifest describing tables and parameters.
This module also knows MySQL's text forms of values (CSV rendering, SQL literals, JSON output)
and its RAND() generator, which statement-format replay must reproduce from RAND events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from engine.binlog.column_types import DECIMAL_CONTEXT, ColumnTypeInfo, TableDef
from engine.binlog.json_binary import json_key_order

TableKey = tuple[str, str]
TempKey = tuple[int, str, str]  # (thread_id, db, name): temporary tables live in a session

NULL_TEXT = "\\N"


class OracleError(Exception):
    """The generator asked for a change a MySQL server would have refused."""


# --------------------------------------------------------------------------------------------
# MySQL's RAND()


class MysqlRand:
    """MySQL's my_rnd(): the sequence RAND() draws from the seeds a RAND event carries."""

    MAX_VALUE = 0x3FFFFFFF

    def __init__(self, seed1: int, seed2: int) -> None:
        self.seed1 = seed1
        self.seed2 = seed2

    def next(self) -> float:
        self.seed1 = (self.seed1 * 3 + self.seed2) % self.MAX_VALUE
        self.seed2 = (self.seed1 + self.seed2 + 33) % self.MAX_VALUE
        return self.seed1 / float(self.MAX_VALUE)


# --------------------------------------------------------------------------------------------
# Text forms of values


def json_text(value: Any) -> str:
    """A JSON value as MySQL prints it: ", " and ": " separators, keys in stored order."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, str):
        return _json_quote(value)
    if isinstance(value, list):
        return "[" + ", ".join(json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{_json_quote(k)}: {json_text(value[k])}" for k in json_key_order(value)) + "}"
        )
    raise TypeError(f"not a JSON value: {type(value).__name__}")


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _json_quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)  # MySQL prints non-ASCII characters as they are
    out.append('"')
    return "".join(out)


def _double_text(value: float) -> str:
    # MySQL prints the shortest round-trip digits like repr() does; the exponent and integral
    # spellings differ, so the generator only uses values where both agree.
    text = repr(value)
    if "e" in text or "n" in text or value.is_integer():
        raise ValueError(f"double {value!r} has no unambiguous MySQL spelling")
    return text


def _float_text(value: float) -> str:
    text = f"{value:.6g}"  # FLOAT shows FLT_DIG (6) significant digits
    if "e" in text:
        raise ValueError(f"float {value!r} has no unambiguous MySQL spelling")
    return text


def _fraction(usec: int, fsp: int) -> str:
    return "." + f"{usec:06d}"[:fsp] if fsp else ""


def time_text(value: timedelta, fsp: int) -> str:
    total = value // timedelta(microseconds=1)
    sign = "-" if total < 0 else ""
    total = abs(total)
    seconds, usec = divmod(total, 1_000_000)
    return f"{sign}{seconds // 3600:02d}:{(seconds // 60) % 60:02d}:{seconds % 60:02d}{_fraction(usec, fsp)}"


def datetime_text(value: datetime, fsp: int) -> str:
    return f"{value:%Y-%m-%d %H:%M:%S}{_fraction(value.microsecond, fsp)}"


def decimal_text(value: Decimal, scale: int) -> str:
    return format(value.quantize(Decimal(1).scaleb(-scale), context=DECIMAL_CONTEXT), "f")


def render_value(ctype: ColumnTypeInfo, value: object) -> str | None:
    """A column value as MySQL prints it; None for SQL NULL."""
    if value is None:
        return None
    base = ctype.base
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint", "bit"):
        return str(value)
    if base == "decimal":
        return decimal_text(value, ctype.scale)  # type: ignore[arg-type]
    if base == "double":
        v = float(value)  # type: ignore[arg-type]
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else _double_text(v)
    if base == "float":
        v = float(value)  # type: ignore[arg-type]
        return str(int(v)) if v.is_integer() else _float_text(v)
    if base == "date":
        return value.isoformat()  # type: ignore[attr-defined]
    if base in ("datetime", "timestamp"):
        return datetime_text(value, ctype.fsp)  # type: ignore[arg-type]
    if base == "time":
        return time_text(value, ctype.fsp)  # type: ignore[arg-type]
    if base == "year":
        return f"{value:04d}"
    if base == "char":
        return value.rstrip(" ")  # type: ignore[attr-defined]
    if base in ("varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"):
        return value  # type: ignore[return-value]
    if base in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        raw = bytes(value)  # type: ignore[arg-type]
        if base == "binary":
            raw = raw.ljust(ctype.length, b"\x00")
        return raw.hex()
    if base == "json":
        return json_text(value)
    raise TypeError(f"no rendering for {ctype.sql}")


_BINARY_BASES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


def csv_field(text: str | None, binary: bool = False) -> str:
    """One CSV field: \\N for NULL, quoted only when empty or holding , \" CR or LF; binary values
    are bare hex (an empty one too), as in the MariaDB capture's expected tables."""
    if text is None:
        return NULL_TEXT
    if binary:
        return text
    bare = text.rstrip(" ")  # MariaDB's dump compared under PAD SPACE: spaces-only values are quoted
    if bare == "" or bare == "\\N" or any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def sql_string(text: str) -> str:
    """A quoted SQL string literal (backslash escapes on, as in a default sql_mode)."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\x00", "\\0").replace("\n", "\\n")
    return "'" + escaped.replace("\r", "\\r").replace("\x1a", "\\Z") + "'"


# --------------------------------------------------------------------------------------------
# The model


@dataclass
class TableState:
    """One table's schema, rows (keyed by primary key) and AUTO_INCREMENT counter."""

    table: TableDef
    rows: dict[tuple[object, ...], tuple[object, ...]] = field(default_factory=dict)
    next_auto_increment: int = 1
    unique_index: dict[str, dict[tuple[object, ...], tuple[object, ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._reindex()

    def pk(self, row: Sequence[object]) -> tuple[object, ...]:
        return tuple(row[i] for i in self.table.pk_positions)

    def _reindex(self) -> None:
        table = self.table
        self._pk_positions = table.pk_positions
        self._single_pk = table.pk_positions[0] if len(table.pk_positions) == 1 else None
        self._unique = [(n, p) for n, p in table.unique_positions if n != "PRIMARY"]
        self._auto = next((i for i, c in enumerate(table.columns) if c.auto_increment), None)
        self._width = len(table.columns)
        self.unique_index = {name: {} for name, _ in self._unique}
        for pk, row in self.rows.items():
            self._index(row, pk)

    def _key(self, row: Sequence[object]) -> tuple[object, ...]:
        if self._single_pk is not None:
            return (row[self._single_pk],)
        return tuple(row[i] for i in self._pk_positions)

    def _unique_values(self, row: Sequence[object]) -> list[tuple[str, tuple[object, ...]]]:
        out = []
        for name, positions in self._unique:
            values = tuple(row[i] for i in positions)
            if None not in values:  # NULLs never collide in a UNIQUE key
                out.append((name, values))
        return out

    def _index(self, row: Sequence[object], pk: tuple[object, ...]) -> None:
        for name, values in self._unique_values(row):
            owner = self.unique_index[name].get(values)
            if owner is not None and owner != pk:
                raise OracleError(
                    f"duplicate entry {values} for key {name} in {self.table.db}.{self.table.name}"
                )
            self.unique_index[name][values] = pk

    def _unindex(self, row: Sequence[object]) -> None:
        for name, values in self._unique_values(row):
            self.unique_index[name].pop(values, None)

    def insert(self, row: tuple[object, ...]) -> None:
        if len(row) != self._width:
            raise OracleError(f"row has {len(row)} values for {self._width} columns")
        pk = self._key(row)
        if pk in self.rows:
            raise OracleError(f"duplicate primary key {pk} in {self.table.db}.{self.table.name}")
        if self._unique:
            self._index(row, pk)
        self.rows[pk] = row
        if self._auto is not None:
            value = row[self._auto]
            if isinstance(value, int) and value >= self.next_auto_increment:
                self.next_auto_increment = value + 1

    def delete(self, row: tuple[object, ...]) -> None:
        pk = self._key(row)
        if self.rows.get(pk) != row:
            raise OracleError(f"delete of a row not in {self.table.db}.{self.table.name}: {pk}")
        if self._unique:
            self._unindex(row)
        del self.rows[pk]

    def update(self, before: tuple[object, ...], after: tuple[object, ...]) -> None:
        self.delete(before)
        try:
            self.insert(after)
        except OracleError:
            self.insert(before)
            raise


class Oracle:
    """Every database and table the source has, with their rows, as a replica must end up."""

    def __init__(self) -> None:
        self.databases: dict[str, None] = {}
        self._tables: dict[TableKey | TempKey, TableState] = {}

    # schema changes

    def create_database(self, db: str) -> None:
        self.databases.setdefault(db, None)

    def create_table(self, table: TableDef, *, temporary_thread: int | None = None) -> TableState:
        key: TableKey | TempKey = (
            (table.db, table.name) if temporary_thread is None else (temporary_thread, table.db, table.name)
        )
        if key in self._tables:
            raise OracleError(f"table {table.db}.{table.name} already exists")
        if temporary_thread is None and table.db not in self.databases:
            raise OracleError(f"unknown database {table.db}")
        state = TableState(table)
        self._tables[key] = state
        return state

    def drop_table(self, key: TableKey | TempKey) -> None:
        self._tables.pop(key)

    def rename_table(self, key: TableKey, new_key: TableKey) -> TableState:
        if new_key in self._tables:
            raise OracleError(f"table {new_key} already exists")
        state = self._tables.pop(key)
        state.table = _renamed(state.table, *new_key)
        state._reindex()
        self._tables[new_key] = state
        return state

    def truncate(self, key: TableKey) -> None:
        state = self._tables[key]
        state.rows.clear()
        state.next_auto_increment = 1
        state._reindex()

    def alter_table(
        self, key: TableKey, new_table: TableDef, row_map: Callable[[dict[str, object]], dict[str, object]]
    ) -> TableState:
        """Reshape every row: row_map gets the row by column name and returns it by new name."""
        state = self._tables[key]
        old = state.table
        names = [c.name for c in old.columns]
        new_names = [c.name for c in new_table.columns]
        reshaped: dict[tuple[object, ...], tuple[object, ...]] = {}
        for row in state.rows.values():
            mapped = row_map(dict(zip(names, row, strict=True)))
            new_row = tuple(mapped[n] for n in new_names)
            reshaped[tuple(new_row[i] for i in new_table.pk_positions)] = new_row
        state.table = new_table
        state.rows = reshaped
        state._reindex()
        return state

    # rows

    def state(self, key: TableKey | TempKey) -> TableState:
        try:
            return self._tables[key]
        except KeyError:
            raise OracleError(f"no table {key}") from None

    def has_table(self, key: TableKey | TempKey) -> bool:
        return key in self._tables

    def tables(self) -> list[TableState]:
        """Every permanent table, ordered by database and name."""
        return [self._tables[k] for k in sorted(k for k in self._tables if len(k) == 2)]  # type: ignore[type-var]

    # expected output

    def write_expected(self, directory: Path, parameters: Mapping[str, object]) -> dict[str, int]:
        """Write <db>/<table>.csv for every table and manifest.json; return row counts."""
        directory.mkdir(parents=True, exist_ok=True)
        counts: dict[str, int] = {}
        manifest_tables: dict[str, object] = {}
        for state in self.tables():
            table = state.table
            qualified = f"{table.db}.{table.name}"
            relative = f"{table.db}/{table.name}.csv"
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [",".join(csv_field(c.name) for c in table.columns)]
            types = [c.type for c in table.columns]
            for pk in sorted(state.rows, key=_pk_sort_key):
                row = state.rows[pk]
                lines.append(
                    ",".join(
                        csv_field(render_value(t, v), t.base in _BINARY_BASES)
                        for t, v in zip(types, row, strict=True)
                    )
                )
            path.write_bytes(("\n".join(lines) + "\n").encode())
            counts[qualified] = len(state.rows)
            manifest_tables[qualified] = {
                "file": relative,
                "columns": [
                    {"name": c.name, "type": c.type.sql, "nullable": c.nullable} for c in table.columns
                ],
                "primary_key": list(table.primary_key),
                "unique_keys": {name: list(cols) for name, cols in table.unique_keys},
                "rows": len(state.rows),
            }
        manifest = {
            "format": "relaydeck-expected/1",
            "generator": dict(parameters),
            "databases": sorted(self.databases),
            "tables": manifest_tables,
        }
        (directory / "manifest.json").write_text(
            json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
        return counts


def _pk_sort_key(pk: tuple[object, ...]) -> tuple[object, ...]:
    return tuple((v is not None, v) for v in pk)


def _renamed(table: TableDef, db: str, name: str) -> TableDef:
    return TableDef(db, name, table.columns, table.primary_key, table.unique_keys, table.keys)
