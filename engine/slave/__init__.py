"""The slave: a DuckDB database holding the source's tables, and the model of them it keeps.

`schema` is the model (MySQL's column facts and keys, the catalog), `types` maps MySQL types to
DuckDB types that hold every value exactly, `ddl` turns replicated DDL into DuckDB statements
and the next catalog.
"""

from __future__ import annotations

from .ddl import DdlPlan, DdlTranslator, UntranslatableStatement, quote_ident
from .schema import Catalog, MysqlColumn, MysqlDatabase, MysqlForeignKey, MysqlTable, TableKey
from .types import convert_expression, duckdb_type, json_type_available

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
