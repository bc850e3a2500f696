"""DROP DATABASE/TABLE/INDEX/VIEW and TRUNCATE; DROP of ignored objects.

A temporary table shadows a base table of the same name for DROP, as in MySQL. TRUNCATE becomes
a DELETE, which runs in the caller's transaction.
"""

from __future__ import annotations

from sqlglot import exp

from ..identifiers import quote_ident
from ..names import duckdb_schema
from .draft import Draft
from .model import drop_targets
from .plan import IGNORED_OBJECTS, IGNORED_STATEMENTS, DdlPlan
from .pretransforms import strip_wait_and_algorithm
from .tokens import Tokens, TranslationError, parse
from .translation import Translation


def drop(t: Translation, tk: Tokens) -> DdlPlan:
    k = 1
    if tk.word(k) == "TEMPORARY":
        k += 1
    target = tk.word(k)
    if target in ("DATABASE", "SCHEMA"):
        return _drop_database(t, tk, k + 1)
    if target in ("TABLE", "TABLES"):
        tree = parse(strip_wait_and_algorithm(tk, 0, len(tk)), "DROP TABLE")
        return _drop_tables(t, tree)
    if target == "INDEX":
        tree = parse(strip_wait_and_algorithm(tk, 0, len(tk)), "DROP INDEX")
        return _drop_index(t, tree)
    if target == "VIEW":
        k += 1
        if tk.words(k, "IF", "EXISTS"):
            k += 2
        for start, _stop in tk.split(k, tk.find_word(k, len(tk), "RESTRICT", "CASCADE")):
            schema, name, _ = tk.qualified_name(start)
            if schema is not None or t.default_db is not None:
                t.catalog.remove_view(t.database_of(schema), t.new_name(name))
        return t.ignored(IGNORED_OBJECTS["VIEW"])
    if target == "SEQUENCE":
        raise TranslationError("MariaDB sequences are not supported")
    if target in IGNORED_OBJECTS:
        return t.ignored(IGNORED_OBJECTS[target])
    if target in ("PREPARE",):
        return t.ignored(IGNORED_STATEMENTS["PREPARE"])
    raise TranslationError("unknown DROP statement")


def _drop_database(t: Translation, tk: Tokens, k: int) -> DdlPlan:
    if_exists = tk.words(k, "IF", "EXISTS")
    if if_exists:
        k += 2
    name = t.new_name(tk.name(k))
    if t.catalog.database(name) is None:
        if if_exists:
            return t.ignored(f"database `{name}` does not exist (IF EXISTS)")
        raise TranslationError(f"database `{name}` is not in the catalog")
    t.touched.extend(table.key for table in t.catalog.tables_in(name))
    t.catalog.remove_database(name)
    # One part: DuckDB finds "catalog"."schema" ambiguous in DROP SCHEMA whenever a schema is
    # named like the catalog, and a one-part name is a schema of the current catalog.
    t.statements.append(f"DROP SCHEMA IF EXISTS {quote_ident(duckdb_schema(name))} CASCADE")
    return t.plan("drop_database")


def _drop_tables(t: Translation, tree: exp.Expression) -> DdlPlan:
    if not isinstance(tree, exp.Drop):
        raise TranslationError("expected DROP TABLE")
    temporary_only = bool(tree.args.get("temporary"))
    if_exists = bool(tree.args.get("exists"))
    dropped_base = False
    for node in drop_targets(tree):
        if not isinstance(node, exp.Table):
            raise TranslationError("expected table names")
        schema, name = t.key_of(node)
        if t.catalog.get_temporary(schema, name) is not None:
            t.catalog.remove_temporary(schema, name)  # a temporary table shadows a base table
        elif temporary_only or (schema, name) not in t.catalog:
            if not if_exists and not temporary_only:
                raise TranslationError(f"table `{schema}`.`{name}` is not in the catalog")
        else:
            t.drop_base_table(schema, name)
            dropped_base = True
    if dropped_base:
        return t.plan("drop_table")
    return t.plan("temporary", "no base table dropped (temporary or absent tables only)")


def _drop_index(t: Translation, tree: exp.Expression) -> DdlPlan:
    on = tree.args.get("cluster") if isinstance(tree, exp.Drop) else None
    targets = drop_targets(tree) if isinstance(tree, exp.Drop) else []
    if not isinstance(on, exp.OnProperty) or not isinstance(on.this, exp.Table) or len(targets) != 1:
        raise TranslationError("expected DROP INDEX name ON table")
    key = t.key_of(on.this)
    table, temporary = t.table_for_ddl(*key)
    draft = Draft.of(table)
    draft.drop_key(targets[0].name, if_exists=bool(tree.args.get("exists")))
    t.store(draft.table(), key)
    return t.plan("temporary" if temporary else "drop_index", "indexes are kept in the model only")


def truncate(t: Translation, tk: Tokens) -> DdlPlan:
    tree = parse(tk.text(0, len(tk)), "TRUNCATE")
    if not isinstance(tree, exp.TruncateTable) or len(tree.expressions) != 1:
        raise TranslationError("expected TRUNCATE [TABLE] name")
    key = t.key_of(tree.expressions[0])
    table, temporary = t.table_for_ddl(*key)
    if temporary:
        return t.plan("temporary", "temporary tables are kept in the model only")
    t.touched.append(key)
    t.statements.append(f"DELETE FROM {t.duckdb.qualified(*key)}")
    return t.plan("truncate_table")
