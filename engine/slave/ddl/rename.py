"""RENAME TABLE a TO b [, c TO d], of base tables, temporary tables and views.

sqlglot keeps RENAME as an opaque command, so it is read from tokens. A table moving to another
database is copied there (DuckDB cannot move a table between schemas). RENAME USER is ignored.
"""

from __future__ import annotations

from ..schema import TableKey
from .plan import IGNORED_OBJECTS, DdlPlan
from .tokens import Tokens, TranslationError
from .translation import Translation


def rename(t: Translation, tk: Tokens) -> DdlPlan:
    if tk.word(1) in ("TABLE", "TABLES"):
        return _rename_tables(t, tk)
    return t.ignored("accounts do not exist on the slave")


def _rename_tables(t: Translation, tk: Tokens) -> DdlPlan:
    """RENAME TABLE a TO b [, c TO d]: sqlglot keeps it as an opaque command, so tokens are read."""
    k = 2
    if tk.words(k, "IF", "EXISTS"):
        raise TranslationError("RENAME TABLE IF EXISTS is not supported")
    end = tk.find_word(k, len(tk), "WAIT", "NOWAIT")
    moved: set[str] = set()
    for start, stop in tk.split(k, end):
        src_db, src_name, after = tk.qualified_name(start)
        if tk.word(after) != "TO":
            raise TranslationError("expected RENAME TABLE a TO b")
        dst_db, dst_name, after = tk.qualified_name(after + 1)
        if after != stop:
            raise TranslationError("expected RENAME TABLE a TO b")
        source = (t.database_of(src_db), t.new_name(src_name))
        target = (t.database_of(dst_db), t.new_name(dst_name))
        moved.add(_rename_one(t, source, target))
    if "table" in moved:
        return t.plan("rename_table")
    if "temporary" in moved:
        return t.plan("temporary", "temporary tables are kept in the model only")
    return t.ignored(IGNORED_OBJECTS["VIEW"])


def _rename_one(t: Translation, source: TableKey, target: TableKey) -> str:
    """Rename one table, view or temporary table; says which it was."""
    temporary = t.catalog.get_temporary(*source)
    if temporary is not None:
        t.catalog.remove_temporary(*source)
        t.catalog.set_temporary(temporary.renamed(*target))
        return "temporary"
    if t.catalog.has_view(*source):
        t.catalog.remove_view(*source)
        t.catalog.add_view(*target)
        return "view"
    table = t.catalog.get(source)
    if table is None:
        raise TranslationError(f"table `{source[0]}`.`{source[1]}` is not in the catalog")
    if target in t.catalog or t.catalog.has_view(*target):
        raise TranslationError(f"table `{target[0]}`.`{target[1]}` already exists in the catalog")
    t.require_database(target[0])
    t.check_table_name(*target, moving=source)
    del t.catalog[source]
    moved = table.renamed(*target)
    t.catalog[target] = moved
    t.touched.extend([source, target])
    t.statements.extend(t.duckdb.move_sql(table, moved))
    return "table"
