"""Creating the repository's tables, and adding the columns a file from an earlier relaydeck lacks."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager

import sqlite_utils

from .errors import RepositoryError
from .tables import GLOBAL_VARIABLES_SQL, SERVER_SQL, SLAVE_SQL, TABLES, Table


def create_table_sql(db: sqlite_utils.Database, table: Table) -> str:
    """sqlite-utils' CREATE TABLE, with the channel column compared case-insensitively."""
    sql = db.create_table_sql(
        table.name,
        {c.name: c.kind for c in table.columns},
        pk=table.pk[0] if len(table.pk) == 1 else table.pk,
        not_null={c.name for c in table.columns if not c.nullable},
        defaults={c.name: c.default for c in table.columns if c.default is not None},
    )
    # sqlite-utils has no public per-column collation, so it is added to the generated definition.
    # NOCASE on the column (not just an index) makes the primary key, ON CONFLICT and every
    # `Channel_name = ?` ignore letter case, as MySQL's utf8mb3_general_ci channel names do
    # (NOCASE folds ASCII letters only).
    pattern = re.compile(rf'^(\s*(?:"{table.key}"|\[{table.key}\])\s+TEXT)\b', re.MULTILINE)
    sql, count = pattern.subn(r"\1 COLLATE NOCASE", sql)
    if count != 1:
        raise RepositoryError(f"cannot find the {table.key} column in sqlite-utils' SQL for {table.name}")
    return sql


def create_missing_tables(
    db: sqlite_utils.Database, write: Callable[[str], AbstractContextManager[None]]
) -> None:
    """Create the tables and columns the file lacks, in one `write` transaction (none if it has them all)."""
    extra = ("relaydeck_global_variables", "relaydeck_server", "relaydeck_slave")

    def complete() -> bool:
        for table in TABLES:
            if not db[table.name].exists():
                return False
            if {c.name for c in table.columns} - set(db[table.name].columns_dict):
                return False
        return all(db[t].exists() for t in extra)

    if complete():
        return
    with write("create the repository tables"):
        # Checked again under the write lock: another process may have just created them
        existing = set(db.table_names())
        for table in TABLES:
            if table.name not in existing:
                db.execute(create_table_sql(db, table))
                continue
            # A file from an earlier relaydeck: add the columns it lacks
            have = set(db[table.name].columns_dict)
            for column in table.columns:
                if column.name not in have:
                    default = column.default
                    literal = "NULL" if default is None else repr(default)
                    kind = {int: "INTEGER", float: "FLOAT", bytes: "BLOB"}.get(column.kind, "TEXT")
                    db.execute(
                        f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind} DEFAULT {literal}'
                    )
        for sql in (GLOBAL_VARIABLES_SQL, SERVER_SQL, SLAVE_SQL):
            db.execute(sql)
