"""Realize: DuckDB statements derived from the old and new models of a table.

Tables hold MySQL's columns in MySQL's order, nothing else. Column order changes (FIRST/AFTER),
and any ALTER whose column changes DuckDB's in-place ALTER TABLE cannot express, rebuild the
table: CREATE a new table in MySQL's column order, INSERT ... SELECT with value conversions, DROP
the old one, RENAME the new one - all in the caller's transaction. Other ALTERs use DuckDB's ALTER
TABLE in place. Added columns are filled as `values.ExistingRows` says; generated columns and
expression DEFAULTs are transpiled by sqlglot, checked against DuckDB, then computed;
AUTO_INCREMENT columns are numbered in clustered-index order (PRIMARY KEY, else the first UNIQUE
NOT NULL key, else insertion order).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot.errors import SqlglotError

from ..database import sandbox_config
from ..identifiers import quote_ident
from ..names import duckdb_schema
from ..schema import Catalog, MysqlColumn, MysqlTable, same_column_name
from ..types import ConversionError, convert_expression, duckdb_type
from .draft import Slot
from .tokens import DIALECT, TranslationError, first_line
from .values import ExistingRows


@dataclass(frozen=True)
class DuckdbNames:
    """The slave's DuckDB names for MySQL tables, and the statements that create or move one.

    catalog: qualify every name as "catalog"."schema"."table" (needed when a MySQL database has
    the name of an attached DuckDB database, which DuckDB would otherwise find ambiguous).

    >>> DuckdbNames("slave").qualified("main", 'a"b')
    '"slave"."~main"."a""b"'
    """

    catalog: str | None

    def qualified(self, schema: str, name: str) -> str:
        schema = duckdb_schema(schema)
        parts = [schema, name] if self.catalog is None else [self.catalog, schema, name]
        return ".".join(quote_ident(p) for p in parts)

    def quoted_schema(self, schema: str) -> str:
        schema = duckdb_schema(schema)
        if self.catalog is None:
            return quote_ident(schema)
        return f"{quote_ident(self.catalog)}.{quote_ident(schema)}"

    def create_sql(self, schema: str, name: str, table: MysqlTable) -> str:
        columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in table.columns)
        return f"CREATE TABLE {self.qualified(schema, name)} ({columns})"

    def move_sql(self, old: MysqlTable, new: MysqlTable) -> list[str]:
        """DuckDB statements giving a table a new name, possibly in another schema."""
        if old.key == new.key:
            return []
        src = self.qualified(*old.key)
        if old.schema == new.schema:
            return [f"ALTER TABLE {src} RENAME TO {quote_ident(new.name)}"]
        # DuckDB cannot move a table to another schema: copy it there.
        return [
            self.create_sql(new.schema, new.name, new),
            f"INSERT INTO {self.qualified(*new.key)} SELECT * FROM {src}",
            f"DROP TABLE {src}",
        ]


@dataclass(frozen=True)
class AlterRealizer:
    """ALTER TABLE realized in one statement's setting: DuckDB names, values for existing rows,
    the catalog (for a free name to rebuild under) and the statement (named by errors)."""

    names: DuckdbNames
    rows: ExistingRows
    catalog: Catalog
    sql: str

    def statements(self, old: MysqlTable, slots: list[Slot], new: MysqlTable) -> list[str]:
        """DuckDB statements taking the table from `old` to `new`, whose columns `slots` describe."""
        old_positions = [old.column_index(s.source) for s in slots if s.source is not None]
        survivors = len(old_positions)
        in_order = old_positions == sorted(old_positions) and all(
            s.source is not None for s in slots[:survivors]
        )
        needs_sequence = any(s.fill == "sequence" for s in slots)
        dropped = [
            c
            for c in old.columns
            if not any(s.source is not None and same_column_name(s.source, c.name) for s in slots)
        ]
        renames = [
            (s.source, s.column.name) for s in slots if s.source is not None and s.source != s.column.name
        ]
        if in_order and not needs_sequence and survivors > 0 and self.renames_are_safe(old, dropped, renames):
            statements = self.alter_in_place(old, slots, dropped, renames)
            statements.extend(self.names.move_sql(old, new))
        else:
            statements = self.rebuild(old, slots, new)
        statements.extend(self.recompute(slots, new))
        return statements

    @staticmethod
    def renames_are_safe(
        old: MysqlTable, dropped: list[MysqlColumn], renames: list[tuple[str | None, str]]
    ) -> bool:
        """Renames done one by one must never hit a name still present (swaps need a rebuild)."""
        present = {c.name.casefold() for c in old.columns} - {c.name.casefold() for c in dropped}
        for source, target in renames:
            assert source is not None
            present.discard(source.casefold())
            if target.casefold() in present:
                return False
            present.add(target.casefold())
        return True

    def alter_in_place(
        self,
        old: MysqlTable,
        slots: list[Slot],
        dropped: list[MysqlColumn],
        renames: list[tuple[str | None, str]],
    ) -> list[str]:
        table = self.names.qualified(*old.key)
        statements = [f"ALTER TABLE {table} DROP COLUMN {quote_ident(c.name)}" for c in dropped]
        statements.extend(
            f"ALTER TABLE {table} RENAME COLUMN {quote_ident(s)} TO {quote_ident(t)}" for s, t in renames if s
        )
        for slot in slots:
            if slot.source is None:
                continue
            before = old.column(slot.source)
            assert before is not None
            converted = self.convert(quote_ident(slot.column.name), before, slot.column)
            if converted != quote_ident(slot.column.name) or duckdb_type(before) != duckdb_type(slot.column):
                statements.append(
                    f"ALTER TABLE {table} ALTER COLUMN {quote_ident(slot.column.name)} "
                    f"SET DATA TYPE {duckdb_type(slot.column)} USING {converted}"
                )
        for slot in slots:
            if slot.source is not None:
                continue
            column = slot.column
            statement = f"ALTER TABLE {table} ADD COLUMN {quote_ident(column.name)} {duckdb_type(column)}"
            value = self.rows.fill_value(column) if slot.fill == "default" else "NULL"
            if value == "NULL":
                statements.append(statement)
            else:
                # DuckDB fills existing rows from the DEFAULT; the slave keeps no defaults after that.
                statements.append(f"{statement} DEFAULT {value}")
                statements.append(f"ALTER TABLE {table} ALTER COLUMN {quote_ident(column.name)} DROP DEFAULT")
        return statements

    def rebuild(self, old: MysqlTable, slots: list[Slot], new: MysqlTable) -> list[str]:
        """CREATE the new shape, INSERT ... SELECT converted values, DROP the old, RENAME the new."""
        moving_elsewhere = new.schema != old.schema or new.name.casefold() != old.name.casefold()
        build_name = new.name if moving_elsewhere else self._free_table_name(new.schema, new.name)
        values = []
        for slot in slots:
            if slot.source is not None:
                before = old.column(slot.source)
                assert before is not None
                values.append(self.convert(quote_ident(before.name), before, slot.column))
            elif slot.fill == "sequence":
                order = ", ".join(quote_ident(c) for c in _clustered_key(old)) or "rowid"
                values.append(f"CAST(row_number() OVER (ORDER BY {order}) AS {duckdb_type(slot.column)})")
            elif slot.fill == "default":
                values.append(self.rows.fill_value(slot.column))
            else:
                values.append("NULL")  # computed afterwards from the new columns
        src = self.names.qualified(*old.key)
        statements = [
            self.names.create_sql(new.schema, build_name, new),
            f"INSERT INTO {self.names.qualified(new.schema, build_name)} SELECT {', '.join(values)} FROM {src}",
            f"DROP TABLE {src}",
        ]
        if not moving_elsewhere:
            statements.append(
                f"ALTER TABLE {self.names.qualified(new.schema, build_name)} RENAME TO {quote_ident(new.name)}"
            )
        return statements

    def recompute(self, slots: list[Slot], new: MysqlTable) -> list[str]:
        """Generated columns and expression DEFAULTs, computed from the final columns, in column order."""
        wanted = [s.column for s in slots if s.fill == "expression"]
        if not wanted:
            return []
        expressions = {c.name: self.column_expression(c) for c in wanted}
        _check_expressions(new, expressions)
        table = self.names.qualified(*new.key)
        return [
            f"UPDATE {table} SET {quote_ident(name)} = CAST(({sql}) AS {duckdb_type(new.column(name))})"  # type: ignore[arg-type]
            for name, sql in expressions.items()
        ]

    def column_expression(self, column: MysqlColumn) -> str:
        mysql_sql = column.generated_expression
        if mysql_sql is None:
            assert column.default is not None
            mysql_sql = column.default
        try:
            tree = sqlglot.parse_one(mysql_sql, read=DIALECT)
        except SqlglotError as exc:
            raise TranslationError(
                f"cannot translate expression {mysql_sql!r} of column `{column.name}`: {first_line(exc)}"
            ) from None
        # Loaded here: the guard builds on this module's error type.
        from ..guard import check_statement

        # A generated column or DEFAULT expression reads no table at all.
        check_statement(self.sql, tree, frozenset())
        try:
            return tree.sql(dialect="duckdb", identify=True)
        except SqlglotError as exc:
            raise TranslationError(
                f"cannot translate expression {mysql_sql!r} of column `{column.name}`: {first_line(exc)}"
            ) from None

    def convert(self, value: str, old: MysqlColumn, new: MysqlColumn) -> str:
        try:
            return convert_expression(value, old, new, time_zone=self.rows.time_zone)
        except ConversionError as exc:
            raise TranslationError(f"column `{new.name}`: {exc}") from None

    def _free_table_name(self, schema: str, name: str) -> str:
        taken = {t.name.casefold() for t in self.catalog.tables_in(schema)}
        candidate, n = f"{name}__relaydeck_rebuild", 2
        while candidate.casefold() in taken:
            candidate, n = f"{name}__relaydeck_rebuild_{n}", n + 1
        return candidate


def _clustered_key(table: MysqlTable) -> tuple[str, ...]:
    """InnoDB's row order: PRIMARY KEY, else the first UNIQUE key of NOT NULL columns, else none."""
    if table.primary_key:
        return table.primary_key
    for columns in table.unique_keys:
        cols = [table.column(c) for c in columns]
        if all(c is not None and not c.nullable for c in cols):
            return columns
    return ()


def _check_expressions(table: MysqlTable, expressions: dict[str, str]) -> None:
    """Bind each transpiled expression against an empty copy of the table, so a function DuckDB
    lacks fails here (naming the statement) rather than in the caller's transaction."""
    columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in table.columns)
    with duckdb.connect(config=sandbox_config()) as scratch:
        scratch.execute(f"CREATE TABLE t ({columns})")
        for name, sql in expressions.items():
            column = table.column(name)
            assert column is not None
            try:
                scratch.execute(f"SELECT CAST(({sql}) AS {duckdb_type(column)}) FROM t").fetchall()
            except duckdb.Error as exc:
                raise TranslationError(
                    f"expression of column `{name}` does not work in DuckDB ({sql}): {first_line(exc)}"
                ) from None
