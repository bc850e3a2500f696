"""Creating the repository's tables, and adding the columns a file from an earlier relaydeck lacks.

sqlite-utils writes the tables' definitions. It is loaded only when a table or a column is
missing: a repository that has them all (every one but the first open) opens with Python's
sqlite3 alone, because sqlite-utils and what it imports cost a tenth of a second of CPU, which
was most of a `relaydeck status` that a monitoring script polls.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from .errors import RepositoryError
from .tables import GLOBAL_VARIABLES_SQL, SERVER_SQL, SLAVE_SQL, TABLES, Table

if TYPE_CHECKING:
    import sqlite_utils

_EXTRA_TABLES = ("relaydeck_global_variables", "relaydeck_server", "relaydeck_slave")


def tables_complete(conn: sqlite3.Connection) -> bool:
    """Whether the file has every table and every column this relaydeck writes."""
    existing = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if any(name not in existing for name in (*(t.name for t in TABLES), *_EXTRA_TABLES)):
        return False
    for table in TABLES:
        have = {row[1] for row in conn.execute(f'PRAGMA table_info("{table.name}")')}
        if {c.name for c in table.columns} - have:
            return False
    return True


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
    conn: sqlite3.Connection, write: Callable[[str], AbstractContextManager[None]]
) -> None:
    """Create the tables and columns the file lacks, in one `write` transaction (none if it has them all)."""
    if tables_complete(conn):
        return
    from ..without_pandas import import_sqlite_utils

    import_sqlite_utils()  # without the pandas it would load (see engine/without_pandas.py)
    import sqlite_utils

    # sqlite-utils 4 nests its writes in savepoints; 3.x commits from inside them, which would
    # break the repository's single-transaction writes.
    if not hasattr(sqlite_utils.Database, "atomic"):
        raise RepositoryError("the replication repository needs sqlite-utils 4 or later")
    db = sqlite_utils.Database(conn)
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
