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

from datetime import date, datetime, timedelta
from decimal import Decimal

from ..binlog.columns import RowImages, decode_rows_event
from ..binlog.events import Query, RowsEvent, TableMap
from ..slave.schema import Catalog, MysqlTable
from ..transactions import Transaction, statement_verb
from .writeset import writeset_hash

_DELIMITERS = frozenset({"BEGIN", "COMMIT", "XA", "SAVEPOINT", "RELEASE"})

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
        elif isinstance(event, Query) and statement_verb(event.query) not in _DELIMITERS:
            usable = False
    return (hashes if usable and hashes else None), decoded


def _row_hashes(images: RowImages, table: MysqlTable, catalog: Catalog, out: list[int]) -> bool:
    """Add the hashes of every key of every row image; False when the table has no key."""
    names = [c.name for c in table.columns]
    keys: list[tuple[str, str, str, tuple[int, ...]]] = []  # (db, table, key name, column indexes)
    if table.primary_key:
        keys.append((table.schema, table.name, "PRIMARY", tuple(names.index(c) for c in table.primary_key)))
    for key_name, columns in zip(table.unique_key_names, table.unique_keys, strict=True):
        if all(c in names for c in columns):
            keys.append((table.schema, table.name, key_name, tuple(names.index(c) for c in columns)))
    if not keys:
        return False
    for fk in table.foreign_keys:
        parent = catalog.get((fk.ref_schema, fk.ref_table))
        if parent is None or not all(c in names for c in fk.columns):
            continue
        key_name, order = _parent_key(parent, fk.ref_columns)
        child_columns = tuple(names.index(fk.columns[i]) for i in order)
        keys.append((fk.ref_schema, fk.ref_table, key_name, child_columns))
    for image in (images.before, images.after):
        if not image:
            continue
        for db, name, key_name, columns in keys:
            if not all(c in image for c in columns):
                continue  # a minimal image without this key: the other image has it
            values = [image[c] for c in columns]
            for row in range(images.count):
                key = tuple(_loose(v[row]) for v in values)
                if key_name != "PRIMARY" and None in key:
                    continue  # NULLs never collide in a unique or foreign key
                out.append(writeset_hash(db, name, key_name, key))
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
