"""The slave: a DuckDB database holding the source's tables, and the model of them it keeps.

`schema` is the model (MySQL's column facts and keys, the catalog), `types` maps MySQL types to
DuckDB types that hold every value exactly, `ddl` turns replicated DDL into DuckDB statements
and the next catalog.
"""

from __future__ import annotations

from typing import Any

from .identifiers import quote_ident
from .schema import Catalog, MysqlColumn, MysqlDatabase, MysqlForeignKey, MysqlTable, TableKey
from .types import convert_expression, duckdb_type, json_type_available
from .untranslatable import UntranslatableStatement

__all__ = [
    "Catalog",
    "DdlPlan",
    "DdlTranslator",
    "MysqlColumn",
    "MysqlDatabase",
    "MysqlForeignKey",
    "MysqlTable",
    "TableKey",
    "UntranslatableStatement",
    "convert_expression",
    "duckdb_type",
    "json_type_available",
    "quote_ident",
]

_FROM_DDL = ("DdlPlan", "DdlTranslator")


def __getattr__(name: str) -> Any:
    # ddl loads sqlglot (a tenth of a replay's start-up): only when its names are asked for, so an
    # applier that meets no DDL never loads it
    if name in _FROM_DDL:
        from .translators import load_ddl

        return getattr(load_ddl(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
