"""The draft: a table being changed, clause by clause, remembering where each column's values come from.

ALTER TABLE applies its clauses in order to a `Draft` of the table; each `Slot` knows the old
column whose values it keeps (or that it is new, and how existing rows get a value), so that the
realize step can choose between DuckDB's ALTER TABLE in place and a rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from sqlglot import exp

from ..schema import MysqlColumn, MysqlForeignKey, MysqlPartitioning, MysqlTable, same_column_name
from .model import ColumnDefinition, KeySpec, name_of
from .pretransforms import CharsetOptions
from .tokens import TranslationError


@dataclass
class Slot:
    """A column of the draft: its definition and where its values come from."""

    column: MysqlColumn
    source: str | None  # the old column whose values it keeps (converted), or None when new
    fill: str | None = None  # None, 'default', 'expression' (recompute) or 'sequence' (AUTO_INCREMENT)


@dataclass
class Draft:
    """A mutable table model that ALTER clauses change one by one."""

    schema: str
    name: str
    slots: list[Slot]
    primary_key: list[str]
    indexes: dict[str, tuple[str, ...]]
    unique: list[str]  # names of the UNIQUE entries of `indexes`
    foreign_keys: list[MysqlForeignKey]
    charset: str | None
    collation: str | None
    temporary: bool
    partitioning: MysqlPartitioning | None = None

    @classmethod
    def of(cls, table: MysqlTable) -> Draft:
        return cls(
            schema=table.schema,
            name=table.name,
            slots=[Slot(c, c.name) for c in table.columns],
            primary_key=list(table.primary_key),
            indexes=dict(table.indexes),
            unique=list(table.unique_key_names),
            foreign_keys=list(table.foreign_keys),
            charset=table.charset,
            collation=table.collation,
            temporary=table.temporary,
            partitioning=table.partitioning,
        )

    @classmethod
    def empty(cls, schema: str, name: str, options: CharsetOptions, temporary: bool) -> Draft:
        return cls(schema, name, [], [], {}, [], [], options.charset, options.collation, temporary)

    def table(self) -> MysqlTable:
        if not self.slots:
            raise TranslationError("a table needs at least one column")
        return MysqlTable(
            schema=self.schema,
            name=self.name,
            columns=tuple(s.column for s in self.slots),
            primary_key=tuple(self.primary_key),
            unique_keys=tuple(self.indexes[n] for n in self.unique),
            indexes=dict(self.indexes),
            temporary=self.temporary,
            unique_key_names=tuple(self.unique),
            foreign_keys=tuple(self.foreign_keys),
            charset=self.charset,
            collation=self.collation,
            partitioning=self.partitioning,
        )

    # -- columns -----------------------------------------------------------------------------

    def find(self, name: str) -> int | None:
        for i, slot in enumerate(self.slots):
            if same_column_name(slot.column.name, name):
                return i
        return None

    def require(self, name: str) -> int:
        i = self.find(name)
        if i is None:
            raise TranslationError(f"table `{self.schema}`.`{self.name}` has no column `{name}`")
        return i

    def place(self, slot: Slot, position: exp.Expression | None) -> None:
        """Insert a column FIRST, AFTER another, or at the end."""
        where = position.args.get("position") if isinstance(position, exp.ColumnPosition) else None
        if where is None:
            self.slots.append(slot)
        elif str(where).upper() == "FIRST":
            self.slots.insert(0, slot)
        else:
            self.slots.insert(self.require(name_of(position.this)) + 1, slot)

    def rename_in_keys(self, old: str, new: str) -> None:
        def fix(columns: Iterable[str]) -> tuple[str, ...]:
            return tuple(new if same_column_name(c, old) else c for c in columns)

        self.primary_key = list(fix(self.primary_key))
        self.indexes = {n: fix(c) for n, c in self.indexes.items()}
        self.foreign_keys = [replace(fk, columns=fix(fk.columns)) for fk in self.foreign_keys]

    def remove_from_keys(self, name: str) -> None:
        """MySQL drops a removed column from every index, and an index left empty."""

        def keep(columns: Iterable[str]) -> tuple[str, ...]:
            return tuple(c for c in columns if not same_column_name(c, name))

        self.primary_key = list(keep(self.primary_key))
        indexes = {n: keep(c) for n, c in self.indexes.items()}
        self.indexes = {n: c for n, c in indexes.items() if c}
        self.unique = [n for n in self.unique if n in self.indexes]
        self.foreign_keys = [
            fk for fk in self.foreign_keys if not any(same_column_name(c, name) for c in fk.columns)
        ]

    # -- keys --------------------------------------------------------------------------------

    def _index_named(self, name: str) -> str | None:
        return next((n for n in self.indexes if n.casefold() == name.casefold()), None)

    def free_index_name(self, base: str) -> str:
        """MySQL's name for an unnamed key: its first column, then _2, _3, ...

        >>> draft = Draft.empty("db", "t", CharsetOptions(), temporary=False)
        >>> draft.slots.append(Slot(MysqlColumn("a", "int", "int"), None))
        >>> draft.add_key(KeySpec("index", None, ("a",)))
        >>> draft.add_key(KeySpec("unique", None, ("a",)))
        >>> draft.indexes, draft.unique
        ({'a': ('a',), 'a_2': ('a',)}, ['a_2'])
        """
        candidate, n = base, 2
        while self._index_named(candidate) is not None or candidate.upper() == "PRIMARY":
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def add_key(self, spec: KeySpec, if_not_exists: bool = False) -> None:
        for column in spec.columns:
            if not column.startswith("("):
                self.require(column)
        if spec.kind == "primary":
            if self.primary_key:
                if if_not_exists:
                    return
                raise TranslationError(f"table `{self.schema}`.`{self.name}` already has a primary key")
            self.primary_key = [self.slots[self.require(c)].column.name for c in spec.columns]
            for column in spec.columns:  # PRIMARY KEY columns are NOT NULL
                slot = self.slots[self.require(column)]
                slot.column = replace(slot.column, nullable=False)
            return
        if spec.kind == "foreign":
            assert spec.reference is not None
            ref_schema, ref_table, ref_columns = spec.reference
            number = len(self.foreign_keys) + 1
            name = spec.name or f"{self.name}_ibfk_{number}"
            self.foreign_keys.append(
                MysqlForeignKey(name, spec.columns, ref_schema or self.schema, ref_table, ref_columns)
            )
            covered = [self.primary_key] + list(self.indexes.values())
            if not any(
                tuple(c.casefold() for c in cols[: len(spec.columns)])
                == tuple(c.casefold() for c in spec.columns)
                for cols in covered
            ):
                # InnoDB creates an index for a foreign key that no index covers.
                self.indexes[self.free_index_name(spec.name or spec.columns[0])] = spec.columns
            return
        name = spec.name
        if name is not None and self._index_named(name) is not None:
            if if_not_exists:
                return
            raise TranslationError(f"table `{self.schema}`.`{self.name}` already has an index `{name}`")
        if name is None:
            first = spec.columns[0]
            name = self.free_index_name(first.strip("()") if first.startswith("(") else first)
        self.indexes[name] = spec.columns
        if spec.kind == "unique":
            self.unique.append(name)

    def drop_key(self, name: str, if_exists: bool = False) -> None:
        if name.upper() == "PRIMARY":
            self.drop_primary_key()
            return
        found = self._index_named(name)
        if found is None:
            if if_exists:
                return
            raise TranslationError(f"table `{self.schema}`.`{self.name}` has no index `{name}`")
        del self.indexes[found]
        self.unique = [n for n in self.unique if n != found]

    def drop_primary_key(self) -> None:
        if not self.primary_key:
            raise TranslationError(f"table `{self.schema}`.`{self.name}` has no primary key")
        self.primary_key = []

    def drop_foreign_key(self, name: str, if_exists: bool = False) -> None:
        kept = [fk for fk in self.foreign_keys if fk.name.casefold() != name.casefold()]
        if len(kept) == len(self.foreign_keys) and not if_exists:
            raise TranslationError(f"table `{self.schema}`.`{self.name}` has no foreign key `{name}`")
        self.foreign_keys = kept

    def rename_key(self, old: str, new: str) -> None:
        found = self._index_named(old)
        if found is None:
            raise TranslationError(f"table `{self.schema}`.`{self.name}` has no index `{old}`")
        self.indexes = {(new if n == found else n): c for n, c in self.indexes.items()}
        self.unique = [new if n == found else n for n in self.unique]


def apply_definition(draft: Draft, definition: ColumnDefinition) -> None:
    """Keys a column declares inline (PRIMARY KEY, UNIQUE)."""
    name = definition.column.name
    if definition.primary_key:
        draft.add_key(KeySpec("primary", None, (name,)))
    if definition.unique:
        draft.add_key(KeySpec("unique", None, (name,)))


def new_column_fill(column: MysqlColumn) -> str:
    """How rows that exist when a column is added get their value."""
    if column.generated_expression is not None:
        return "expression"
    if column.auto_increment:
        return "sequence"
    if column.default is not None and column.default.startswith("("):
        return "expression"
    return "default"
