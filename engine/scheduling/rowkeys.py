"""A transaction's writeset, computed by the coordinator from its row images.

One hash per key value of every row image: the primary key, each unique key, and the parent key
each foreign key refers to (so a child row and its parent row meet). A transaction without a
writeset (DDL, a statement-format change, a table with no key, a table the slave does not know)
returns None and is scheduled alone.

Key values are compared loosely on purpose: strings are case-folded and lose trailing spaces, the
way MySQL's default collations compare them. Two rows that are equal under the source's
collation then always collide; the price is an occasional false dependency, never a missed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

import numpy as np

from ..binlog.columns import RowImages, decode_rows_event
from ..binlog.events import Query, RowsEvent, TableMap
from ..slave.schema import Catalog, MysqlTable
from ..transactions import DELIMITING_VERBS, Transaction, statement_verb
from .column_hashes import int_key_hashes
from .writeset import one_column_hashes, writeset_hash

Decoded = dict[int, RowImages]  # index of the rows event in Transaction.events -> its images


def transaction_writeset(txn: Transaction, catalog: Catalog) -> tuple[list[int] | None, Decoded]:
    """(hashes or None, the decoded row images, reusable by the worker that applies them)."""
    decoded: Decoded = {}
    hashes: list[int] = []
    maps: dict[int, TableMap] = {}
    usable = True
    for index, logged in enumerate(txn.events):
        event = logged.event
        if isinstance(event, TableMap):
            maps[event.table_id] = event
        elif isinstance(event, RowsEvent):
            table_map = maps.get(event.table_id)
            if table_map is None:
                return None, decoded
            try:
                images = decode_rows_event(event, table_map)
            except ValueError:
                return None, decoded  # the worker reports the decoding error with its position
            decoded[index] = images
            table = catalog.get((table_map.schema, table_map.table))
            if usable and (table is None or not _row_hashes(images, table, catalog, hashes)):
                usable = False
        elif isinstance(event, Query) and statement_verb(event.query) not in DELIMITING_VERBS:
            usable = False
    return (hashes if usable and hashes else None), decoded


KeyColumns = tuple[tuple[str, str, str, tuple[int, ...]], ...]  # (db, table, key name, column indexes)


def table_keys(table: MysqlTable, catalog: Catalog) -> KeyColumns | None:
    """Every key a row of the table is hashed under; None when the table has no key."""
    names = [c.name for c in table.columns]
    keys: list[tuple[str, str, str, tuple[int, ...]]] = []
    if table.primary_key:
        keys.append((table.schema, table.name, "PRIMARY", tuple(names.index(c) for c in table.primary_key)))
    for key_name, columns in zip(table.unique_key_names, table.unique_keys, strict=True):
        if all(c in names for c in columns):
            keys.append((table.schema, table.name, key_name, tuple(names.index(c) for c in columns)))
    if not keys:
        return None
    for fk in table.foreign_keys:
        parent = catalog.get((fk.ref_schema, fk.ref_table))
        if parent is None or not all(c in names for c in fk.columns):
            continue
        key_name, order = _parent_key(parent, fk.ref_columns)
        child_columns = tuple(names.index(fk.columns[i]) for i in order)
        keys.append((fk.ref_schema, fk.ref_table, key_name, child_columns))
    return tuple(keys)


def key_hashes(keys: KeyColumns, columns: Sequence[Sequence[object]], rows: range, out: list[int]) -> None:
    """Add the hashes of every key of the rows `rows` of full images held column-wise."""
    for db, name, key_name, indexes in keys:
        if len(indexes) == 1:
            one_column_hashes(db, name, key_name, columns[indexes[0]], rows, out, _loose)
            continue
        values = [columns[c] for c in indexes]
        for row in rows:
            key = tuple(_loose(v[row]) for v in values)
            if key_name != "PRIMARY" and None in key:
                continue  # NULLs never collide in a unique or foreign key
            out.append(writeset_hash(db, name, key_name, key))


def key_row_hashes(
    key: tuple[str, str, str, tuple[int, ...]], columns: Sequence[Sequence[object]], count: int
) -> tuple[np.ndarray | None, np.ndarray]:
    """The hashes of one key over the first `count` rows of full images held column-wise, and the
    rows they belong to (None: one hash for every row, in order). A row whose unique or foreign
    key holds a NULL gives none."""
    db, name, key_name, indexes = key
    if len(indexes) == 1:
        column = columns[indexes[0]]
        whole = int_key_hashes(db, name, key_name, column if len(column) == count else column[:count])
        if whole is not None:
            return whole
    rows: list[int] = []
    out: list[int] = []
    for row in range(count):
        before = len(out)
        key_hashes((key,), columns, range(row, row + 1), out)
        rows.extend([row] * (len(out) - before))
    return np.asarray(rows, dtype=np.int64), np.asarray(out, dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class WritesetKeys:
    """The keys of every table the slave knows, taken from its catalog to where row images are
    decoded (the preparing stage runs in other processes or on Spark, without the slave)."""

    tables: dict[tuple[str, str], KeyColumns | None]
    fold_case: bool  # lower_case_table_names: names are looked up in lower case
    # which keys: the coordinator counts its changes, and uses a writeset only when it was
    # hashed with the keys the slave has now
    version: int = field(default=0, compare=False)

    def of(self, schema: str, name: str) -> KeyColumns | None:
        if self.fold_case:
            schema, name = schema.lower(), name.lower()
        return self.tables.get((schema, name))


def writeset_keys(catalog: Catalog, version: int = 0) -> WritesetKeys:
    fold = catalog.lower_case_table_names != 0
    tables = {}
    for (schema, name), table in catalog.items():
        key = (schema.lower(), name.lower()) if fold else (schema, name)
        tables[key] = table_keys(table, catalog)
    return WritesetKeys(tables, fold, version)


def _row_hashes(images: RowImages, table: MysqlTable, catalog: Catalog, out: list[int]) -> bool:
    """Add the hashes of every key of every row image; False when the table has no key."""
    keys = table_keys(table, catalog)
    if keys is None:
        return False
    for image in (images.before, images.after):
        if not image:
            continue
        for key in keys:
            if all(c in image for c in key[3]):  # a minimal image without this key: the other has it
                key_hashes((key,), image, range(images.count), out)
    return True


def _parent_key(parent: MysqlTable, ref_columns: tuple[str, ...]) -> tuple[str, list[int]]:
    """The parent's key a foreign key points at, and the order of the FK columns in it."""
    candidates = [("PRIMARY", parent.primary_key)] if parent.primary_key else []
    candidates += list(zip(parent.unique_key_names, parent.unique_keys, strict=True))
    for key_name, columns in candidates:
        if set(columns) == set(ref_columns) and len(columns) == len(ref_columns):
            return key_name, [ref_columns.index(c) for c in columns]
    return "FK:" + ",".join(ref_columns), list(range(len(ref_columns)))


_HASHABLE = (int, bytes, bytearray, memoryview, float, Decimal, datetime, date, timedelta)


def _loose(value: object) -> object:
    if isinstance(value, str):
        return value.casefold().rstrip(" ")
    if value is None or isinstance(value, _HASHABLE):
        return value
    return repr(value)  # e.g. a zero date: equal values still give equal text
