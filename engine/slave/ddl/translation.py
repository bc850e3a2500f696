"""One statement being translated: the working catalog, the statements produced, and the dispatch.

A statement goes to the handler its first word names (`_STATEMENTS`): CREATE, DROP, ALTER, RENAME
and TRUNCATE each live in their own module, as functions of the `Translation` they extend.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from ..schema import Catalog, MysqlTable, TableKey
from ..untranslatable import UntranslatableStatement
from .alter import alter
from .column_rewrites import ColumnNotes
from .create import create
from .drop import drop, truncate
from .plan import IGNORED_STATEMENTS, DdlPlan
from .pretransforms import unwrap_executable_comments
from .realize import DuckdbNames
from .rename import rename
from .tokens import Tokens, TranslationError
from .values import ExistingRows

_TRANSACTION_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "START", "XA"})
_DML = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "LOAD",
        "CALL",
        "SELECT",
        "WITH",
        "HANDLER",
        "VALUES",
        "TABLE",
        "EXECUTE",
    }
)


class DdlTranslator:
    """Translates replicated DDL into DuckDB statements and the catalog after them.

    duckdb_catalog: qualify every name as "catalog"."schema"."table" (needed when a MySQL database
    has the name of an attached DuckDB database, which DuckDB would otherwise find ambiguous).
    time_zone: the source session's time zone, used where MySQL converts between DATETIME and
    TIMESTAMP values during DDL (DEFAULTs, type changes).

    >>> from engine.slave.schema import MysqlDatabase
    >>> catalog = Catalog()
    >>> catalog.add_database(MysqlDatabase("shop", "utf8mb4", None))
    >>> plan = DdlTranslator().translate("CREATE TABLE t (id INT8 PRIMARY KEY, v VARCHAR(10))", "shop", catalog)
    >>> plan.kind, plan.statements, plan.catalog[("shop", "t")].primary_key
    ('create_table', ['CREATE TABLE "shop"."t" ("id" BIGINT, "v" VARCHAR)'], ('id',))
    >>> plan = DdlTranslator().translate("ALTER TABLE t ADD COLUMN n INT NOT NULL FIRST", "shop", plan.catalog)
    >>> for statement in plan.statements:
    ...     print(statement)
    CREATE TABLE "shop"."t__relaydeck_rebuild" ("n" INTEGER, "id" BIGINT, "v" VARCHAR)
    INSERT INTO "shop"."t__relaydeck_rebuild" SELECT CAST(0 AS INTEGER), "id", "v" FROM "shop"."t"
    DROP TABLE "shop"."t"
    ALTER TABLE "shop"."t__relaydeck_rebuild" RENAME TO "t"
    """

    def __init__(self, *, duckdb_catalog: str | None = None, time_zone: str = "UTC") -> None:
        self.duckdb_catalog = duckdb_catalog
        self.time_zone = time_zone

    def translate(
        self,
        sql: str,
        default_db: str | None,
        catalog: Catalog,
        *,
        timestamp: float | None = None,
    ) -> DdlPlan:
        """Plan one statement. `catalog` is not changed; the plan carries the new catalog.

        timestamp: the event's time (seconds since the epoch, as the source's SET TIMESTAMP), which
        MySQL uses for CURRENT_TIMESTAMP defaults of added columns; without it the DuckDB
        transaction's start time is used.
        """
        try:
            return Translation(self, sql, default_db, catalog.copy(), timestamp).run()
        except TranslationError as exc:
            raise UntranslatableStatement(sql, str(exc)) from None


class Translation:
    """One statement being translated: the working catalog and the statements produced."""

    def __init__(
        self,
        translator: DdlTranslator,
        sql: str,
        default_db: str | None,
        catalog: Catalog,
        timestamp: float | None,
    ) -> None:
        self.sql = sql
        self.default_db = default_db
        self.catalog = catalog
        self.statements: list[str] = []
        self.touched: list[TableKey] = []
        self.notes = ColumnNotes()
        self.duckdb = DuckdbNames(translator.duckdb_catalog)
        self.rows = ExistingRows(translator.time_zone, timestamp)

    def run(self) -> DdlPlan:
        tk = Tokens(unwrap_executable_comments(self.sql))
        if not len(tk):
            return self.ignored("empty statement")
        first = tk.word(0)
        if first in _TRANSACTION_CONTROL:
            return self.ignored("transaction control is handled by the applier")
        if first in _DML:
            raise TranslationError(
                "not DDL: statement-based DML must be applied by the applier, not translated"
            )
        if first in IGNORED_STATEMENTS:
            return self.ignored(IGNORED_STATEMENTS[first])
        handler = _STATEMENTS.get(first)
        if handler is None:
            raise TranslationError(f"unknown statement {first or tk.text(0, 1)!r}")
        return handler(self, tk)

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


_STATEMENTS: dict[str, Callable[[Translation, Tokens], DdlPlan]] = {
    "CREATE": create,
    "DROP": drop,
    "ALTER": alter,
    "RENAME": rename,
    "TRUNCATE": truncate,
}
