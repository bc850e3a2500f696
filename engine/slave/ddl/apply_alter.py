"""ALTER TABLE clauses applied to a draft, in order, as MySQL applies them.

A clause sqlglot parsed is applied by the handler its action's type names (`_ACTION_HANDLERS`),
one small function each; clauses read from tokens (table options, CONVERT TO CHARACTER SET,
RENAME INDEX, ignored ones) are applied by `apply_clause` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from sqlglot import exp

from ..schema import same_column_name
from ..types import TEXT_TYPES
from .column_rewrites import ColumnNotes
from .draft import Draft, Slot, apply_definition, new_column_fill
from .model import (
    BINARY_OF_TEXT,
    TEXTUAL,
    TextDefaults,
    charset_of_collation,
    column_definition,
    default_text,
    drop_targets,
    key_spec,
    mysql_type_text,
    name_of,
)
from .pretransforms import CharsetOptions
from .split_alter import Clause
from .tokens import DIALECT, TranslationError


@dataclass(frozen=True)
class ClauseScope:
    """What clause handlers need from the statement: the pre-transforms' notes on its columns, and
    a database or table name as the source stores it (lower_case_table_names)."""

    notes: ColumnNotes
    new_name: Callable[[str], str]


def apply_clause(draft: Draft, clause: Clause, scope: ClauseScope) -> None:
    """One ALTER TABLE clause applied to the draft.

    >>> from engine.slave.ddl.split_alter import alter_clauses
    >>> from engine.slave.ddl.tokens import Tokens
    >>> from engine.slave.schema import MysqlColumn
    >>> draft = Draft.empty("db", "t", CharsetOptions(), temporary=False)
    >>> draft.slots.append(Slot(MysqlColumn("a", "int", "int"), "a"))
    >>> scope = ClauseScope(ColumnNotes(), new_name=str)
    >>> tk = Tokens("ADD COLUMN b INT NOT NULL FIRST, RENAME COLUMN a TO c, ADD KEY (c)")
    >>> for clause in alter_clauses(tk, 0, len(tk), scope.notes):
    ...     apply_clause(draft, clause, scope)
    >>> [(slot.column.name, slot.source, slot.fill) for slot in draft.slots], draft.indexes
    ([('b', None, 'default'), ('c', 'a', None)], {'c': ('c',)})
    """
    if clause.ignored is not None:
        return
    if clause.options is not None:
        if clause.options.charset or clause.options.collation:
            draft.charset = clause.options.charset or charset_of_collation(clause.options.collation or "")
            draft.collation = clause.options.collation
        return
    if clause.convert is not None:
        convert_charset(draft, clause.convert)
        return
    if clause.rename_index is not None:
        draft.rename_key(*clause.rename_index)
        return
    action = clause.action
    handler = next((_ACTION_HANDLERS[c] for c in type(action).__mro__ if c in _ACTION_HANDLERS), None)
    if handler is None:
        raise TranslationError(f"unsupported ALTER TABLE clause {action.sql(dialect=DIALECT)!r}")
    handler(draft, action, clause.if_exists, scope)


def _text_defaults(draft: Draft) -> TextDefaults:
    return TextDefaults(draft.charset, draft.collation)


def add_column(draft: Draft, action: exp.ColumnDef, if_exists: bool, scope: ClauseScope) -> None:
    """ADD COLUMN: a new slot, filled for existing rows as the definition says."""
    definition = column_definition(action, _text_defaults(draft), scope.notes)
    if draft.find(definition.column.name) is not None:
        if if_exists or action.args.get("exists"):
            return
        raise TranslationError(f"column `{definition.column.name}` already exists")
    slot = Slot(definition.column, None, new_column_fill(definition.column))
    draft.place(slot, action.args.get("position"))
    apply_definition(draft, definition)


def modify_column(draft: Draft, action: exp.ModifyColumn, if_exists: bool, scope: ClauseScope) -> None:
    """MODIFY/CHANGE: a full new definition (attributes not restated are gone, as in MySQL)."""
    definition_node = action.this
    if not isinstance(definition_node, exp.ColumnDef):
        raise TranslationError("expected a column definition")
    rename_from = action.args.get("rename_from")
    old_name = name_of(rename_from) if rename_from is not None else definition_node.name
    i = draft.find(old_name)
    if i is None:
        if if_exists:
            return
        raise TranslationError(f"table `{draft.schema}`.`{draft.name}` has no column `{old_name}`")
    definition = column_definition(definition_node, _text_defaults(draft), scope.notes)
    new = definition.column
    if draft.find(new.name) not in (None, i):
        raise TranslationError(f"column `{new.name}` already exists")
    slot = draft.slots.pop(i)
    old = slot.column
    if slot.source is None:  # added earlier in the same statement: filled as the new definition says
        fill: str | None = new_column_fill(new)
    elif new.generated_expression is not None and new.generated_expression != old.generated_expression:
        fill = "expression"
    else:
        fill = slot.fill
    moved = Slot(new, slot.source, fill)
    position = definition_node.args.get("position")
    if position is None:
        draft.slots.insert(i, moved)  # without FIRST/AFTER the column keeps its place
    else:
        draft.place(moved, position)
    if old.name != new.name:
        draft.rename_in_keys(old.name, new.name)
    if any(same_column_name(new.name, c) for c in draft.primary_key):
        j = draft.require(new.name)
        draft.slots[j].column = replace(draft.slots[j].column, nullable=False)
    apply_definition(draft, definition)


def drop_in_alter(draft: Draft, action: exp.Drop, if_exists: bool, scope: ClauseScope) -> None:
    """DROP COLUMN/INDEX/FOREIGN KEY/CONSTRAINT/CHECK (MySQL drops a dropped column from every key)."""
    kind = str(action.args.get("kind") or "").upper()
    names = [name_of(target) for target in drop_targets(action)]
    for name in names:
        if kind == "COLUMN":
            i = draft.find(name)
            if i is None:
                if if_exists or action.args.get("exists"):
                    continue
                raise TranslationError(f"table `{draft.schema}`.`{draft.name}` has no column `{name}`")
            draft.slots.pop(i)
            draft.remove_from_keys(name)
        elif kind == "INDEX":
            draft.drop_key(name, if_exists=if_exists or bool(action.args.get("exists")))
        elif kind == "FOREIGN KEY":
            draft.drop_foreign_key(name, if_exists=if_exists)
        elif kind == "CONSTRAINT":
            # MySQL 8 DROP CONSTRAINT: a foreign key, a UNIQUE key, or a CHECK (not modeled).
            if any(fk.name.casefold() == name.casefold() for fk in draft.foreign_keys):
                draft.drop_foreign_key(name)
            elif name.upper() == "PRIMARY":
                draft.drop_primary_key()
            else:
                draft.drop_key(name, if_exists=True)
        elif kind == "CHECK":
            continue
        else:
            raise TranslationError(f"unsupported ALTER TABLE DROP {kind}")


def alter_column(draft: Draft, action: exp.AlterColumn, if_exists: bool, scope: ClauseScope) -> None:
    """ALTER COLUMN a SET DEFAULT x / DROP DEFAULT / SET VISIBLE|INVISIBLE."""
    i = draft.require(name_of(action.this))
    column = draft.slots[i].column
    if action.args.get("drop"):
        column = replace(column, default=None)
    elif action.args.get("default") is not None:
        column = replace(column, default=default_text(action.args["default"]))
    elif action.args.get("visible") is not None:
        column = replace(column, invisible=str(action.args["visible"]).upper() == "INVISIBLE")
    else:
        raise TranslationError(f"unsupported ALTER COLUMN {action.sql(dialect=DIALECT)!r}")
    draft.slots[i].column = column


def drop_primary_key(draft: Draft, action: exp.DropPrimaryKey, if_exists: bool, scope: ClauseScope) -> None:
    draft.drop_primary_key()


def rename_column(draft: Draft, action: exp.RenameColumn, if_exists: bool, scope: ClauseScope) -> None:
    old, new = name_of(action.this), name_of(action.args["to"])
    i = draft.require(old)
    if draft.find(new) not in (None, i):
        raise TranslationError(f"column `{new}` already exists")
    draft.slots[i].column = replace(draft.slots[i].column, name=new)
    draft.rename_in_keys(old, new)


def add_constraint(draft: Draft, action: exp.AddConstraint, if_exists: bool, scope: ClauseScope) -> None:
    """ADD PRIMARY KEY/UNIQUE/INDEX/FOREIGN KEY (CHECK constraints are not modeled)."""
    for node in action.expressions:
        spec = key_spec(node)
        if spec is not None:
            draft.add_key(spec, if_not_exists=if_exists)


def rename_table(draft: Draft, action: exp.AlterRename, if_exists: bool, scope: ClauseScope) -> None:
    target = action.this
    if not isinstance(target, exp.Table):
        raise TranslationError("expected RENAME TO name")
    draft.schema, draft.name = scope.new_name(target.db or draft.schema), scope.new_name(target.name)


def rename_index(draft: Draft, action: exp.RenameIndex, if_exists: bool, scope: ClauseScope) -> None:
    draft.rename_key(name_of(action.this), name_of(action.args["to"]))


def force(draft: Draft, action: exp.ForceProperty, if_exists: bool, scope: ClauseScope) -> None:
    """FORCE rebuilds the table on the source without changing it."""


_ACTION_HANDLERS: dict[type[exp.Expression], Callable[[Draft, exp.Expression, bool, ClauseScope], None]] = {
    exp.ColumnDef: add_column,
    exp.ModifyColumn: modify_column,
    exp.Drop: drop_in_alter,
    exp.DropPrimaryKey: drop_primary_key,
    exp.RenameColumn: rename_column,
    exp.AlterColumn: alter_column,
    exp.AddConstraint: add_constraint,
    exp.AlterRename: rename_table,
    exp.RenameIndex: rename_index,
    exp.ForceProperty: force,
}


def convert_charset(draft: Draft, options: CharsetOptions) -> None:
    """CONVERT TO CHARACTER SET: every text column and the table default get it."""
    charset = options.charset or (options.collation and charset_of_collation(options.collation))
    if not charset:
        raise TranslationError("CONVERT TO CHARACTER SET without a character set")
    collation = options.collation
    for slot in draft.slots:
        column = slot.column
        if column.base_type not in TEXTUAL:
            continue
        if charset == "binary" and column.base_type in TEXT_TYPES:
            base = BINARY_OF_TEXT[column.base_type]
            column = replace(column, base_type=base, charset=None, collation=None, binary=True)
        elif charset != "binary":
            column = replace(column, charset=charset, collation=collation)
        slot.column = replace(column, mysql_type=mysql_type_text(column))
    draft.charset, draft.collation = (None, None) if charset == "binary" else (charset, collation)
