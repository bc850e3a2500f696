"""The slave's model of the source's tables: MySQL's column facts, keys, and the catalog of them.

Row events carry positional row images and no column names, so the applier needs each table's
columns in exactly MySQL's order together with what MySQL knows about them (type, unsignedness,
nullability, keys, defaults, generated expressions). These frozen records are that knowledge;
`Catalog` maps (database, table) to them and round-trips through JSON so the caller can store it
inside the DuckDB file in the same transaction as the data it describes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

TableKey = tuple[str, str]

WHOLE_CATALOG_FORMAT = 1  # the whole catalog as one JSON document (to_json)
_PARTS_FORMAT = 2  # the header of parts(), its tables stored apart
TABLE_KINDS = ("table", "temporary")


def same_column_name(a: str, b: str) -> bool:
    """MySQL column names are case-insensitive."""
    return a.casefold() == b.casefold()


@dataclass(frozen=True, slots=True)
class MysqlColumn:
    """One column as MySQL defines it; `mysql_type` is normalized lower-case ('int unsigned')."""

    name: str
    mysql_type: str
    base_type: str
    nullable: bool = True
    default: str | None = None  # MySQL SQL text of the DEFAULT clause ('0', "'x'", 'CURRENT_TIMESTAMP(6)')
    unsigned: bool = False
    auto_increment: bool = False
    generated_expression: str | None = None  # MySQL SQL text, without the outer parentheses
    generated_stored: bool = False
    charset: str | None = None
    collation: str | None = None
    binary: bool = False  # the value is a byte string (BINARY/VARBINARY/BLOB family, CHARACTER SET binary)
    on_update_current_timestamp: bool = False
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY length, BIT width, VECTOR dimensions
    precision: int | None = None  # DECIMAL/FLOAT/DOUBLE (M,D): M
    scale: int | None = None  # DECIMAL/FLOAT/DOUBLE (M,D): D
    fsp: int | None = None  # fractional seconds of DATETIME/TIMESTAMP/TIME
    elements: tuple[str, ...] = ()  # ENUM/SET members: row events carry indexes/bitmasks into them
    zerofill: bool = False
    invisible: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MysqlColumn:
        values = dict(data)
        values["elements"] = tuple(values.get("elements", ()))
        return cls(**values)


@dataclass(frozen=True, slots=True)
class MysqlForeignKey:
    """A FOREIGN KEY as declared; kept for the record, never enforced on the slave."""

    name: str
    columns: tuple[str, ...]
    ref_schema: str
    ref_table: str
    ref_columns: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MysqlForeignKey:
        return cls(
            name=data["name"],
            columns=tuple(data["columns"]),
            ref_schema=data["ref_schema"],
            ref_table=data["ref_table"],
            ref_columns=tuple(data["ref_columns"]),
        )


@dataclass(frozen=True, slots=True)
class MysqlPartition:
    """One partition of a RANGE or LIST partitioned table, its bounds as MySQL SQL text.

    values: RANGE: one tuple, the LESS THAN bound per column ('MAXVALUE' where it is); LIST: one
    tuple per value listed (one element per column); None: MariaDB's DEFAULT partition of a LIST;
    () for HASH and KEY partitions, which have no bounds."""

    name: str
    values: tuple[tuple[str, ...], ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "values": None if self.values is None else [list(v) for v in self.values]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MysqlPartition:
        values = data.get("values")
        return cls(data["name"], None if values is None else tuple(tuple(v) for v in values))


@dataclass(frozen=True, slots=True)
class MysqlPartitioning:
    """How a table is partitioned on the source (PARTITION BY): what DROP and TRUNCATE PARTITION
    need to know which rows a partition holds (ddl/partitions.py)."""

    method: str  # RANGE, LIST, HASH, KEY (LINEAR HASH and LINEAR KEY as such), SYSTEM_TIME
    columns: bool  # RANGE COLUMNS / LIST COLUMNS: `expression` is a list of columns
    expression: str  # the MySQL text inside PARTITION BY method (...)
    partitions: tuple[MysqlPartition, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "columns": self.columns,
            "expression": self.expression,
            "partitions": [p.to_dict() for p in self.partitions],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MysqlPartitioning:
        return cls(
            data["method"],
            bool(data["columns"]),
            data["expression"],
            tuple(MysqlPartition.from_dict(p) for p in data.get("partitions", ())),
        )


@dataclass(frozen=True, slots=True)
class MysqlTable:
    """A table: columns in MySQL's ordinal order, primary key, unique keys and every secondary index.

    `indexes` holds every secondary index by name (UNIQUE ones included); `unique_keys` lists the
    columns of the UNIQUE ones and `unique_key_names` their index names, in the same order.
    Index entries that are expressions (MySQL 8 functional key parts) are kept as '(expr)'.
    """

    schema: str
    name: str
    columns: tuple[MysqlColumn, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, ...], ...] = ()
    indexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    temporary: bool = False
    unique_key_names: tuple[str, ...] = ()
    foreign_keys: tuple[MysqlForeignKey, ...] = ()
    charset: str | None = None  # table default, applied to text columns declared without one
    collation: str | None = None
    partitioning: MysqlPartitioning | None = None  # PARTITION BY on the source; the slave has none

    def __post_init__(self) -> None:
        if len(self.unique_key_names) != len(self.unique_keys):
            # Built without names (e.g. by hand): name each key after the index holding its columns.
            names: list[str] = []
            for columns in self.unique_keys:
                match = next((n for n, c in self.indexes.items() if c == columns and n not in names), None)
                names.append(match if match is not None else columns[0])
            object.__setattr__(self, "unique_key_names", tuple(names))

    @property
    def key(self) -> TableKey:
        return (self.schema, self.name)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column_index(self, name: str) -> int | None:
        """Position of a column by MySQL's case-insensitive name, or None."""
        for i, column in enumerate(self.columns):
            if same_column_name(column.name, name):
                return i
        return None

    def column(self, name: str) -> MysqlColumn | None:
        i = self.column_index(name)
        return None if i is None else self.columns[i]

    def renamed(self, schema: str, name: str) -> MysqlTable:
        return replace(self, schema=schema, name=name)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema": self.schema,
            "name": self.name,
            "columns": [c.to_dict() for c in self.columns],
            "primary_key": list(self.primary_key),
            "unique_keys": [list(k) for k in self.unique_keys],
            "unique_key_names": list(self.unique_key_names),
            # A list of pairs, not an object: index names are data and their order matters.
            "indexes": [[n, list(c)] for n, c in self.indexes.items()],
            "temporary": self.temporary,
            "foreign_keys": [fk.to_dict() for fk in self.foreign_keys],
            "charset": self.charset,
            "collation": self.collation,
        }
        # absent when unpartitioned: those tables' stored documents stay as they were
        if self.partitioning is not None:
            data["partitioning"] = self.partitioning.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MysqlTable:
        return cls(
            schema=data["schema"],
            name=data["name"],
            columns=tuple(MysqlColumn.from_dict(c) for c in data["columns"]),
            primary_key=tuple(data.get("primary_key", ())),
            unique_keys=tuple(tuple(k) for k in data.get("unique_keys", ())),
            indexes={n: tuple(c) for n, c in data.get("indexes", ())},
            temporary=bool(data.get("temporary", False)),
            unique_key_names=tuple(data.get("unique_key_names", ())),
            foreign_keys=tuple(MysqlForeignKey.from_dict(f) for f in data.get("foreign_keys", ())),
            charset=data.get("charset"),
            collation=data.get("collation"),
            partitioning=(
                MysqlPartitioning.from_dict(data["partitioning"]) if data.get("partitioning") else None
            ),
        )


@dataclass(frozen=True, slots=True)
class MysqlDatabase:
    """A database and its defaults, which text columns inherit when the table names none."""

    name: str
    charset: str | None = None
    collation: str | None = None


class Catalog(MutableMapping[TableKey, MysqlTable]):
    """(database, table) -> MysqlTable for the base tables, plus databases, views and temporary tables.

    Database and table names are compared case-sensitively, as MySQL does on Linux
    (lower_case_table_names=0). With 1 MySQL stores and compares them lower-cased, with 2 it keeps
    the spelling but compares lower-cased; the flag is kept with the catalog because it is a
    property of the source server. Temporary tables live apart: they shadow base tables of the
    same name for DDL, and row events never reference them.
    """

    def __init__(
        self,
        tables: Iterable[MysqlTable] = (),
        databases: Iterable[MysqlDatabase | str] = (),
        *,
        lower_case_table_names: int = 0,
        views: Iterable[TableKey] = (),
        temporary: Iterable[MysqlTable] = (),
    ) -> None:
        if lower_case_table_names not in (0, 1, 2):
            raise ValueError(f"lower_case_table_names must be 0, 1 or 2, not {lower_case_table_names}")
        self.lower_case_table_names = lower_case_table_names
        self._tables: dict[TableKey, MysqlTable] = {}
        self._databases: dict[str, MysqlDatabase] = {}
        self._views: dict[TableKey, TableKey] = {}
        self._temporary: dict[TableKey, MysqlTable] = {}
        # id(table) -> (table, its JSON text), shared by this catalog's copies: a DDL compares
        # every table's text with what the slave holds, and serializing every table each time
        # made a DDL-heavy log quadratic (relaydeck generate --workload ddl, 4.2 MB, some 800
        # tables: 46% of a 190 s replay in to_json). Tables are immutable, so a text stays right for as long as its table is the one
        # held (the entry holds it, so its id is not reused meanwhile).
        self._table_texts: dict[int, tuple[MysqlTable, str]] = {}
        for db in databases:
            self.add_database(db if isinstance(db, MysqlDatabase) else MysqlDatabase(db))
        for table in tables:
            self[table.key] = table
        for view in views:
            self.add_view(*view)
        for table in temporary:
            self.set_temporary(table)

    # -- names -------------------------------------------------------------------------------

    def fold(self, name: str) -> str:
        """A database or table name as MySQL compares it under lower_case_table_names."""
        return name if self.lower_case_table_names == 0 else name.lower()

    def _key(self, key: TableKey) -> TableKey:
        return (self.fold(key[0]), self.fold(key[1]))

    # -- base tables (the mapping) -----------------------------------------------------------

    def __getitem__(self, key: TableKey) -> MysqlTable:
        return self._tables[self._key(key)]

    def get(self, key: TableKey, default: MysqlTable | None = None) -> MysqlTable | None:  # type: ignore[override]
        # once per rows event applied: a plain dict lookup, not Mapping.get's try/except
        if self.lower_case_table_names == 0:
            return self._tables.get(key, default)
        return self._tables.get(self._key(key), default)

    def __setitem__(self, key: TableKey, table: MysqlTable) -> None:
        self._tables[self._key(key)] = table

    def __delitem__(self, key: TableKey) -> None:
        del self._tables[self._key(key)]

    def __iter__(self) -> Iterator[TableKey]:
        return iter([t.key for t in self._tables.values()])

    def __len__(self) -> int:
        return len(self._tables)

    def tables_in(self, database: str) -> list[MysqlTable]:
        folded = self.fold(database)
        return [t for k, t in self._tables.items() if k[0] == folded]

    # -- databases ---------------------------------------------------------------------------

    @property
    def databases(self) -> set[str]:
        return {db.name for db in self._databases.values()}

    def database(self, name: str) -> MysqlDatabase | None:
        return self._databases.get(self.fold(name))

    def add_database(self, database: MysqlDatabase) -> None:
        self._databases[self.fold(database.name)] = database

    def remove_database(self, name: str) -> None:
        """Forget a database and everything in it."""
        folded = self.fold(name)
        self._databases.pop(folded, None)
        for mapping in (self._tables, self._views, self._temporary):
            for key in [k for k in mapping if k[0] == folded]:
                del mapping[key]

    # -- views (names only: they hold no data, but RENAME/DROP must know them) ---------------

    @property
    def views(self) -> set[TableKey]:
        return set(self._views.values())

    def has_view(self, schema: str, name: str) -> bool:
        return self._key((schema, name)) in self._views

    def add_view(self, schema: str, name: str) -> None:
        self._views[self._key((schema, name))] = (schema, name)

    def remove_view(self, schema: str, name: str) -> None:
        self._views.pop(self._key((schema, name)), None)

    # -- temporary tables --------------------------------------------------------------------

    @property
    def temporary(self) -> dict[TableKey, MysqlTable]:
        return {t.key: t for t in self._temporary.values()}

    def get_temporary(self, schema: str, name: str) -> MysqlTable | None:
        return self._temporary.get(self._key((schema, name)))

    def set_temporary(self, table: MysqlTable) -> None:
        self._temporary[self._key(table.key)] = table

    def remove_temporary(self, schema: str, name: str) -> None:
        self._temporary.pop(self._key((schema, name)), None)

    def resolve(self, schema: str, name: str) -> MysqlTable | None:
        """The table DDL naming (schema, name) acts on: a temporary table shadows a base table."""
        return self.get_temporary(schema, name) or self.get((schema, name))

    # -- copies and persistence --------------------------------------------------------------

    def copy(self) -> Catalog:
        """An independent catalog (tables are immutable, so sharing them is safe)."""
        other = Catalog(lower_case_table_names=self.lower_case_table_names)
        other._tables = dict(self._tables)
        other._databases = dict(self._databases)
        other._views = dict(self._views)
        other._temporary = dict(self._temporary)
        other._table_texts = self._table_texts
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Catalog):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def to_json(self) -> str:
        """json.dumps of the catalog as a dict (keys sorted, non-ASCII kept)."""
        tables = self._table_texts_in_order()
        listed = {kind: [text for (k, _, _), text in tables.items() if k == kind] for kind in TABLE_KINDS}
        head = self._header(WHOLE_CATALOG_FORMAT)
        # the keys in sorted order, as json.dumps(..., sort_keys=True) writes them
        return (
            f'{{"databases": {_dumps(head["databases"])}, "format": {_dumps(WHOLE_CATALOG_FORMAT)}, '
            f'"lower_case_table_names": {_dumps(self.lower_case_table_names)}, '
            f'"tables": [{", ".join(listed["table"])}], "temporary": [{", ".join(listed["temporary"])}], '
            f'"views": {_dumps(head["views"])}}}'
        )

    def parts(self) -> tuple[str, dict[tuple[str, str, str], str]]:
        """The catalog as the slave stores it: a header (databases, views, the case rule) and the
        JSON text of each table by (kind, database, table) in key order, kind "table" or
        "temporary"."""
        return _dumps(self._header(_PARTS_FORMAT)), self._table_texts_in_order()

    def _header(self, format_number: int) -> dict[str, Any]:
        return {
            "format": format_number,
            "lower_case_table_names": self.lower_case_table_names,
            "databases": [
                {"name": d.name, "charset": d.charset, "collation": d.collation}
                for d in sorted(self._databases.values(), key=lambda d: d.name)
            ],
            "views": [list(v) for v in sorted(self._views.values())],
        }

    def _table_texts_in_order(self) -> dict[tuple[str, str, str], str]:
        """Each table's JSON text by (kind, database, table), base tables then temporary ones,
        each in key order. A text comes from the copies' shared cache when the same table was
        serialized before, so a DDL re-serializes only what it changed."""
        known, kept = self._table_texts, {}
        tables: dict[tuple[str, str, str], str] = {}
        for kind, held in (("table", self._tables), ("temporary", self._temporary)):
            for key in sorted(held, key=lambda k: held[k].key):
                table = held[key]
                hit = known.get(id(table))
                text = hit[1] if hit is not None and hit[0] is table else _dumps(table.to_dict())
                kept[id(table)] = (table, text)
                tables[(kind, *key)] = text
        known.clear()  # in place: the copies share it; what no longer is held goes
        known.update(kept)
        return tables

    @classmethod
    def from_parts(cls, header: str, tables: Iterable[tuple[str, str]]) -> Catalog:
        """parts() back: the header and each table's (kind, JSON text)."""
        data = json.loads(header)
        if data.get("format") != _PARTS_FORMAT:
            raise ValueError(f"unknown catalog format {data.get('format')!r}")
        by_kind: dict[str, list[MysqlTable]] = {kind: [] for kind in TABLE_KINDS}
        for kind, text in tables:
            by_kind[kind].append(MysqlTable.from_dict(json.loads(text)))
        return cls(
            tables=by_kind["table"],
            databases=[
                MysqlDatabase(d["name"], d.get("charset"), d.get("collation")) for d in data["databases"]
            ],
            lower_case_table_names=data.get("lower_case_table_names", 0),
            views=[(v[0], v[1]) for v in data.get("views", ())],
            temporary=by_kind["temporary"],
        )

    @classmethod
    def from_json(cls, text: str) -> Catalog:
        data = json.loads(text)
        if data.get("format") != WHOLE_CATALOG_FORMAT:
            raise ValueError(f"unknown catalog format {data.get('format')!r}")
        return cls(
            tables=[MysqlTable.from_dict(t) for t in data["tables"]],
            databases=[
                MysqlDatabase(d["name"], d.get("charset"), d.get("collation")) for d in data["databases"]
            ],
            lower_case_table_names=data.get("lower_case_table_names", 0),
            views=[(v[0], v[1]) for v in data.get("views", ())],
            temporary=[MysqlTable.from_dict(t) for t in data.get("temporary", ())],
        )

    def __repr__(self) -> str:
        return f"Catalog({len(self._databases)} databases, {len(self._tables)} tables)"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
