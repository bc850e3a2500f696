"""One statement being translated: the working catalog, the statements produced, and the names.

The statement handlers (`create`, `drop`, `alter`, `rename`) are functions of a `Translation`;
`translator` chooses one by the statement's first word.
"""

from __future__ import annotations

from sqlglot import exp

from ..schema import Catalog, MysqlTable, TableKey
from .column_rewrites import ColumnNotes
from .plan import DdlPlan
from .realize import DuckdbNames
from .tokens import TranslationError
from .values import ExistingRows


class Translation:
    """One statement being translated: the working catalog and the statements produced."""

    def __init__(
        self,
        sql: str,
        default_db: str | None,
        catalog: Catalog,
        duckdb: DuckdbNames,
        rows: ExistingRows,
    ) -> None:
        self.sql = sql
        self.default_db = default_db
        self.catalog = catalog
        self.statements: list[str] = []
        self.touched: list[TableKey] = []
        self.notes = ColumnNotes()
        self.duckdb = duckdb
        self.rows = rows

    def plan(self, kind: str, reason: str | None = None) -> DdlPlan:
        touched = tuple(dict.fromkeys(self.touched))
        return DdlPlan(list(self.statements), self.catalog, kind, reason, touched)

    def ignored(self, reason: str) -> DdlPlan:
        return DdlPlan([], self.catalog, "ignored", reason, tuple(dict.fromkeys(self.touched)))

    # -- names -------------------------------------------------------------------------------

    def new_name(self, name: str) -> str:
        """A database/table name as the source stores it (lower-cased with lower_case_table_names=1)."""
        return name.lower() if self.catalog.lower_case_table_names == 1 else name

    def database_of(self, db: str | None) -> str:
        if db:
            return self.new_name(db)
        if self.default_db is None:
            raise TranslationError("the table is not qualified and the event names no default database")
        return self.new_name(self.default_db)

    def key_of(self, table: exp.Table) -> TableKey:
        return self.database_of(table.db or None), self.new_name(table.name)

    def check_table_name(self, schema: str, name: str, moving: TableKey | None = None) -> None:
        """DuckDB compares names case-insensitively: refuse a name another table has in another case."""
        for table in self.catalog.tables_in(schema):
            if table.key == moving:
                continue
            if table.name.casefold() == name.casefold():
                raise TranslationError(
                    f"table `{schema}`.`{name}` would be the same DuckDB table as `{table.schema}`.`{table.name}` "
                    "(DuckDB names are case-insensitive)"
                )

    def require_database(self, schema: str) -> None:
        if self.catalog.database(schema) is None:
            raise TranslationError(f"database `{schema}` is not in the catalog")

    # -- tables ------------------------------------------------------------------------------

    def table_for_ddl(self, schema: str, name: str) -> tuple[MysqlTable, bool]:
        """The table DDL acts on (temporary tables first) and whether it is temporary."""
        temporary = self.catalog.get_temporary(schema, name)
        if temporary is not None:
            return temporary, True
        table = self.catalog.get((schema, name))
        if table is None:
            raise TranslationError(f"table `{schema}`.`{name}` is not in the catalog")
        return table, False

    def store(self, table: MysqlTable, key: TableKey) -> None:
        if table.temporary:
            self.catalog.set_temporary(table)
        else:
            self.catalog[key] = table
            self.touched.append(key)

    def drop_base_table(self, schema: str, name: str) -> None:
        del self.catalog[(schema, name)]
        self.touched.append((schema, name))
        self.statements.append(f"DROP TABLE IF EXISTS {self.duckdb.qualified(schema, name)}")
