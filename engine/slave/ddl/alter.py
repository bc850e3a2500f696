"""ALTER DATABASE and ALTER TABLE; ALTER of views and ignored objects.

ALTER TABLE: the clauses (`split_alter`) apply in order to a draft of the table
(`apply_alter`), then DuckDB statements take the table from the old model to the new
(`realize`). Temporary tables change in the model only.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot.tokens import TokenType

from ..schema import MysqlDatabase
from .apply_alter import ClauseScope, apply_clause
from .draft import Draft
from .model import charset_of_collation
from .partitions import MAINTENANCE, alter_partitions, partition_by_at, partitioning_at, removes_partitioning
from .plan import IGNORED_OBJECTS, DdlPlan
from .pretransforms import table_options
from .realize import AlterRealizer
from .split_alter import alter_clauses
from .tokens import Tokens, TranslationError
from .translation import Translation


def alter(t: Translation, tk: Tokens) -> DdlPlan:
    k = 1
    while tk.word(k) in ("ONLINE", "OFFLINE", "IGNORE"):
        k += 1
    target = tk.word(k)
    if target in ("DATABASE", "SCHEMA"):
        return _alter_database(t, tk, k + 1)
    if target == "TABLE":
        return _alter_table(t, tk, k + 1)
    if target == "SEQUENCE":
        raise TranslationError("MariaDB sequences are not supported")
    if target == "VIEW" or tk.find_word(k, min(len(tk), 40), "VIEW") < min(len(tk), 40):
        return t.ignored(IGNORED_OBJECTS["VIEW"])
    if target in IGNORED_OBJECTS:
        return t.ignored(IGNORED_OBJECTS[target])
    raise TranslationError("unknown ALTER statement")


def _alter_database(t: Translation, tk: Tokens, k: int) -> DdlPlan:
    option_words = {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ENCRYPTION", "READ", "COMMENT"}
    if k < len(tk) and tk.word(k) not in option_words:
        name, k = t.new_name(tk.name(k)), k + 1
    else:
        name = t.database_of(None)
    if tk.word(k) == "UPGRADE":
        return t.ignored("ALTER DATABASE ... UPGRADE DATA DIRECTORY NAME changes no table data")
    database = t.catalog.database(name)
    if database is None:
        raise TranslationError(f"database `{name}` is not in the catalog")
    options = table_options(tk, k, len(tk))
    if options.charset or options.collation:
        charset = options.charset or (options.collation and charset_of_collation(options.collation))
        collation = options.collation if options.collation or not options.charset else None
        t.catalog.add_database(MysqlDatabase(database.name, charset, collation))
    return t.plan("alter_database", "database defaults are kept in the model only")


def _alter_table(t: Translation, tk: Tokens, k: int) -> DdlPlan:
    if_exists = tk.words(k, "IF", "EXISTS")
    if if_exists:
        k += 2
    db, name, k = tk.qualified_name(k)
    if tk.word(k) == "NOWAIT":
        k += 1
    elif tk.word(k) == "WAIT" and tk.kind(k + 1) == TokenType.NUMBER:
        k += 2
    key = (t.database_of(db), t.new_name(name))
    if t.catalog.resolve(*key) is None and if_exists:
        return t.ignored(f"table `{key[0]}`.`{key[1]}` does not exist (IF EXISTS)")
    table, temporary = t.table_for_ddl(*key)
    if tk.word(k) in MAINTENANCE and tk.word(k + 1) == "PARTITION":
        return alter_partitions(t, tk, k, table, temporary)
    clauses = alter_clauses(tk, k, len(tk), t.notes)
    draft = Draft.of(table)
    scope = ClauseScope(t.notes, t.new_name)
    for clause in clauses:
        apply_clause(draft, clause, scope)
    new = draft.table()
    partition_by = partition_by_at(tk, k, len(tk))
    if partition_by < len(tk):
        new = replace(new, partitioning=partitioning_at(tk, partition_by, len(tk)))
    elif removes_partitioning(tk, k, len(tk)):
        new = replace(new, partitioning=None)
    if temporary:
        if new.key != table.key:
            t.catalog.remove_temporary(*table.key)
        t.catalog.set_temporary(new)
        return t.plan("temporary", "temporary tables are kept in the model only")
    if new.key != table.key:
        if new.key in t.catalog or t.catalog.has_view(*new.key):
            raise TranslationError(f"table `{new.schema}`.`{new.name}` already exists in the catalog")
        t.require_database(new.schema)
        t.check_table_name(new.schema, new.name, moving=table.key)
        del t.catalog[table.key]
    t.catalog[new.key] = new
    t.touched.extend([table.key, new.key])
    realizer = AlterRealizer(t.duckdb, t.rows, t.catalog, t.sql)
    t.statements.extend(realizer.statements(table, draft.slots, new))
    return t.plan("alter_table")
