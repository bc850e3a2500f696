"""DdlTranslator: one statement at a time, dispatched by its first word to its handler.

A statement goes to the handler its first word names (`_STATEMENTS`): CREATE, DROP, ALTER, RENAME
and TRUNCATE each live in their own module, as functions of the `Translation` they extend.
Transaction control and the statements in `plan.IGNORED_STATEMENTS` are ignored; DML is refused
(the applier applies it).
"""

from __future__ import annotations

from collections.abc import Callable

from ..schema import Catalog
from ..untranslatable import UntranslatableStatement
from .alter import alter
from .create import create
from .drop import drop, truncate
from .plan import IGNORED_STATEMENTS, DdlPlan
from .pretransforms import unwrap_executable_comments
from .realize import DuckdbNames
from .rename import rename
from .tokens import Tokens, TranslationError
from .translation import Translation
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
            names, rows = DuckdbNames(self.duckdb_catalog), ExistingRows(self.time_zone, timestamp)
            return _run(Translation(sql, default_db, catalog.copy(), names, rows))
        except TranslationError as exc:
            raise UntranslatableStatement(sql, str(exc)) from None


def _run(t: Translation) -> DdlPlan:
    """The plan of the statement, by the handler its first word names."""
    tk = Tokens(unwrap_executable_comments(t.sql))
    if not len(tk):
        return t.ignored("empty statement")
    first = tk.word(0)
    if first in _TRANSACTION_CONTROL:
        return t.ignored("transaction control is handled by the applier")
    if first in _DML:
        raise TranslationError("not DDL: statement-based DML must be applied by the applier, not translated")
    if first in IGNORED_STATEMENTS:
        return t.ignored(IGNORED_STATEMENTS[first])
    handler = _STATEMENTS.get(first)
    if handler is None:
        raise TranslationError(f"unknown statement {first or tk.text(0, 1)!r}")
    return handler(t, tk)


_STATEMENTS: dict[str, Callable[[Translation, Tokens], DdlPlan]] = {
    "CREATE": create,
    "DROP": drop,
    "ALTER": alter,
    "RENAME": rename,
    "TRUNCATE": truncate,
}
