"""MySQL database names -> DuckDB schema names, so that every name MySQL accepts replicates.

A MySQL database becomes the DuckDB schema of the same name, except for the names DuckDB or
relaydeck already use in a slave file: DuckDB's default schema `main`, its catalogs `temp` and
`system` (a schema of that name is ambiguous in DuckDB), the system catalog's schemas
`pg_catalog` and `information_schema` (no schema may be created there), and relaydeck's own
schemas `__relaydeck` and `__relaydeck_tmp`. Those, compared case-insensitively as DuckDB does,
get a `~` in front; so does every name that already starts with `~`, which keeps the mapping
one-to-one (`main` -> `~main`, `~main` -> `~~main`) and reversible.
"""

from __future__ import annotations

ESCAPE = "~"
INTERNAL_SCHEMA = "__relaydeck"
TEMPORARY_SCHEMA = "__relaydeck_tmp"  # the source sessions' temporary tables
# DuckDB's own: the default schema, the temp and system catalogs, the system catalog's schemas
DUCKDB_SCHEMAS = frozenset({"main", "temp", "system", "pg_catalog", "information_schema"})
RESERVED_SCHEMAS = DUCKDB_SCHEMAS | {INTERNAL_SCHEMA, TEMPORARY_SCHEMA}


def duckdb_schema(database: str) -> str:
    """The DuckDB schema holding the tables of MySQL database `database`."""
    if database.casefold() in RESERVED_SCHEMAS or database.startswith(ESCAPE):
        return ESCAPE + database
    return database


def mysql_database(schema: str) -> str:
    """The MySQL database whose tables DuckDB schema `schema` holds (duckdb_schema's inverse)."""
    return schema[len(ESCAPE) :] if schema.startswith(ESCAPE) else schema
