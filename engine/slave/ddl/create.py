"""CREATE DATABASE, CREATE TABLE (... LIKE, ... SELECT), CREATE INDEX; CREATE of ignored objects.

CREATE TABLE ... SELECT: in ROW format the source logs it as a plain CREATE TABLE listing every
column, followed by row events. A statement-format CREATE ... SELECT is translated only when
every selected column is also declared in the statement (their types come from the declaration);
otherwise the column types are unknown and the statement is untranslatable. Indexes are
model-only (see the package's docstring); temporary tables too (plan kind 'temporary').
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..schema import MysqlDatabase, MysqlPartitioning, MysqlTable
from .draft import Draft, Slot
from .model import (
    KeySpec,
    TextDefaults,
    charset_of_collation,
    column_definition,
    key_parts,
    key_spec,
    name_of,
)
from .partitions import partition_by_at, partitioning_at
from .plan import IGNORED_OBJECTS, DdlPlan
from .pretransforms import CharsetOptions, canonical_create_index, canonical_create_table, table_options
from .tokens import Tokens, TranslationError, parse
from .translation import Translation

_CREATE_OBJECTS = frozenset({"DATABASE", "SCHEMA", "TABLE", "INDEX", "SEQUENCE", *IGNORED_OBJECTS})


def create(t: Translation, tk: Tokens) -> DdlPlan:
    k = 1
    while k < min(len(tk), 40) and tk.word(k) not in _CREATE_OBJECTS:
        k += 1
    target = tk.word(k)
    if target == "SPATIAL" and tk.word(k + 1) in ("INDEX", "KEY"):
        target = "INDEX"  # CREATE SPATIAL INDEX, not CREATE SPATIAL REFERENCE SYSTEM
    if target in ("DATABASE", "SCHEMA"):
        return _create_database(t, tk, k + 1)
    if target == "TABLE":
        return _create_table(t, tk)
    if target == "INDEX":
        return _create_index(t, tk)
    if target == "SEQUENCE":
        raise TranslationError("MariaDB sequences are not supported")
    if target == "VIEW":
        _remember_view(t, tk, k + 1)
    if target in IGNORED_OBJECTS:
        return t.ignored(IGNORED_OBJECTS[target])
    raise TranslationError("unknown CREATE statement")


def _remember_view(t: Translation, tk: Tokens, k: int) -> None:
    """Note a view's name (RENAME TABLE and DROP VIEW may name it later)."""
    if tk.words(k, "IF", "NOT", "EXISTS"):
        k += 3
    schema, name, _ = tk.qualified_name(k)
    if schema is not None or t.default_db is not None:
        t.catalog.add_view(t.database_of(schema), t.new_name(name))


def _create_database(t: Translation, tk: Tokens, k: int) -> DdlPlan:
    if_not_exists = tk.words(k, "IF", "NOT", "EXISTS")
    if if_not_exists:
        k += 3
    name = t.new_name(tk.name(k))
    options = table_options(tk, k + 1, len(tk))
    if t.catalog.database(name) is not None:
        if if_not_exists:
            return t.ignored(f"database `{name}` exists (IF NOT EXISTS)")
        raise TranslationError(f"database `{name}` already exists in the catalog")
    _check_database_name(t, name)
    collation = options.collation
    charset = options.charset or (collation and charset_of_collation(collation)) or None
    t.catalog.add_database(MysqlDatabase(name, charset, collation))
    t.statements.append(f"CREATE SCHEMA IF NOT EXISTS {t.duckdb.quoted_schema(name)}")
    return t.plan("create_database")


def _create_table(t: Translation, tk: Tokens) -> DdlPlan:
    create = canonical_create_table(tk, t.notes)
    if create.like:
        return _create_table_like(t, parse(create.text, "CREATE TABLE ... LIKE"))
    tree = parse(create.text, "CREATE TABLE")
    if not isinstance(tree, exp.Create):
        raise TranslationError("expected CREATE TABLE")
    partition_by = partition_by_at(tk, 0, len(tk))
    partitioning = partitioning_at(tk, partition_by, len(tk)) if partition_by < len(tk) else None
    return _create_table_from(t, tree, create.options, partitioning)


def _existing_for_create(
    t: Translation, schema: str, name: str, tree: exp.Create, temporary: bool
) -> DdlPlan | None:
    """Handle an existing table of that name: None to go on creating, or the plan to return."""
    if temporary:
        exists = t.catalog.get_temporary(schema, name) is not None
    else:
        exists = (schema, name) in t.catalog or t.catalog.has_view(schema, name)
    if not exists:
        return None
    if tree.args.get("replace"):
        if temporary:
            t.catalog.remove_temporary(schema, name)
        elif t.catalog.has_view(schema, name):
            t.catalog.remove_view(schema, name)
        else:
            t.drop_base_table(schema, name)
        return None
    if tree.args.get("exists"):
        return t.ignored(f"table `{schema}`.`{name}` exists (IF NOT EXISTS)")
    raise TranslationError(f"table `{schema}`.`{name}` already exists in the catalog")


def _create_table_from(
    t: Translation, tree: exp.Create, options: CharsetOptions, partitioning: MysqlPartitioning | None = None
) -> DdlPlan:
    schema_node = tree.this
    table_node = schema_node.this if isinstance(schema_node, exp.Schema) else schema_node
    if not isinstance(table_node, exp.Table):
        raise TranslationError("expected a table name")
    schema, name = t.key_of(table_node)
    temporary = _is_temporary(tree)
    early = _existing_for_create(t, schema, name, tree, temporary)
    if early is not None:
        return early
    defaults = _table_text_defaults(t, schema, options)
    draft = Draft.empty(schema, name, CharsetOptions(defaults.charset, defaults.collation), temporary)
    keys: list[KeySpec] = []
    for element in schema_node.expressions if isinstance(schema_node, exp.Schema) else []:
        if isinstance(element, exp.ColumnDef):
            definition = column_definition(element, defaults, t.notes)
            if draft.find(definition.column.name) is not None:
                raise TranslationError(f"duplicate column `{definition.column.name}`")
            draft.slots.append(Slot(definition.column, None))
            if definition.primary_key:
                keys.append(KeySpec("primary", None, (definition.column.name,)))
            if definition.unique:
                keys.append(KeySpec("unique", None, (definition.column.name,)))
        else:
            spec = key_spec(element)
            if spec is not None:
                keys.append(spec)
    query = tree.expression
    if query is not None:
        _check_create_select(t, draft, query)
    # Keys after all columns (a table-level key may name a column declared after it), foreign
    # keys last (InnoDB adds an index for one only if no other key covers its columns).
    for spec in sorted(keys, key=lambda s: s.kind == "foreign"):
        draft.add_key(spec)
    draft.partitioning = partitioning
    return _finish_create(t, draft.table())


def _check_create_select(t: Translation, draft: Draft, query: exp.Expression) -> None:
    """CREATE TABLE ... SELECT: only selected columns the statement also declares are supported."""
    if not isinstance(query, exp.Query):
        raise TranslationError("CREATE TABLE ... AS needs a query")
    for projection in query.selects:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            raise TranslationError(
                "CREATE TABLE ... SELECT *: the selected columns' types are unknown to the slave"
            )
        name = projection.alias_or_name
        if not name or draft.find(name) is None:
            raise TranslationError(
                f"CREATE TABLE ... SELECT: column `{name}` comes from the query, whose types the slave "
                "cannot know (in ROW format the source logs the full column list instead)"
            )


def _create_table_like(t: Translation, tree: exp.Expression) -> DdlPlan:
    if not isinstance(tree, exp.Create):
        raise TranslationError("expected CREATE TABLE ... LIKE")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    like = tree.find(exp.LikeProperty)
    if not isinstance(target, exp.Table) or like is None or not isinstance(like.this, exp.Table):
        raise TranslationError("expected CREATE TABLE name LIKE other")
    schema, name = t.key_of(target)
    src_schema, src_name = t.key_of(like.this)
    source = t.catalog.resolve(src_schema, src_name)
    if source is None:
        raise TranslationError(f"table `{src_schema}`.`{src_name}` is not in the catalog")
    temporary = _is_temporary(tree)
    early = _existing_for_create(t, schema, name, tree, temporary)
    if early is not None:
        return early
    # LIKE copies columns and indexes but not foreign keys, nor temporariness.
    table = replace(source, schema=schema, name=name, temporary=temporary, foreign_keys=())
    return _finish_create(t, table)


def _finish_create(t: Translation, table: MysqlTable) -> DdlPlan:
    if table.temporary:
        t.catalog.set_temporary(table)
        return t.plan("temporary", "temporary tables are kept in the model only")
    t.require_database(table.schema)
    t.check_table_name(table.schema, table.name)
    t.catalog[table.key] = table
    t.touched.append(table.key)
    t.statements.append(t.duckdb.create_sql(table.schema, table.name, table))
    return t.plan("create_table")


def _create_index(t: Translation, tk: Tokens) -> DdlPlan:
    index = canonical_create_index(tk)
    tree = parse(index.text, "CREATE INDEX")
    node = tree.this
    if not isinstance(node, exp.Index) or not isinstance(node.args.get("table"), exp.Table):
        raise TranslationError("expected CREATE INDEX name ON table")
    key = t.key_of(node.args["table"])
    table, temporary = t.table_for_ddl(*key)
    params = node.args.get("params")
    columns = key_parts((params.args.get("columns") or []) if params is not None else [])
    draft = Draft.of(table)
    name = name_of(node.this)
    if index.or_replace:
        draft.drop_key(name, if_exists=True)
    kind = "unique" if tree.args.get("unique") else "index"
    draft.add_key(KeySpec(kind, name, columns), if_not_exists=index.if_not_exists)
    t.store(draft.table(), key)
    return t.plan("temporary" if temporary else "create_index", "indexes are kept in the model only")


def _check_database_name(t: Translation, name: str) -> None:
    for other in t.catalog.databases:
        if other.casefold() == name.casefold() and t.catalog.fold(other) != t.catalog.fold(name):
            raise TranslationError(
                f"database `{name}` would be the same DuckDB schema as `{other}` (DuckDB names are case-insensitive)"
            )


def _table_text_defaults(t: Translation, schema: str, options: CharsetOptions) -> TextDefaults:
    """What text columns get without a charset: the table's options, else the database's."""
    database = t.catalog.database(schema)
    charset = options.charset or (options.collation and charset_of_collation(options.collation))
    if charset:
        return TextDefaults(charset, options.collation)
    if database is not None:
        return TextDefaults(database.charset, database.collation)
    return TextDefaults()


def _is_temporary(tree: exp.Expression) -> bool:
    return tree.find(exp.TemporaryProperty) is not None
