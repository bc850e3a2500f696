"""Arrow tables that one DuckDB connection's statements read by name, registered once per shape.

Registering an Arrow table with DuckDB creates a temporary view in the connection's catalog, and
dropping it is another catalog change: 0.6-0.8 ms of CPU for the pair, paid for every table of
every batch a worker applies (92 times in a 4-worker replay of the full-size MariaDB capture, as
much CPU as the batches' UPDATE statements). Instead, each shape of table (its Arrow schema) gets
a holder registered once per connection; a statement's input is put into the holder of its
shape, which hands DuckDB whatever it holds at the moment the statement scans it.

A name is only ever bound to its one holder, so whatever a rollback does to the views (it drops
those its transaction registered, and brings back what they replaced), a view of ours can only
read the holder's current table or be gone. After a rollback every holder is registered again at
its next use (`rolled_back`); the owner of the connection must say when it rolls back.
"""

from __future__ import annotations

import itertools
from typing import Any

import duckdb
import pyarrow as pa

_instances = itertools.count(1)


class _Holder:
    """What DuckDB scans: the Arrow PyCapsule interface of the table held now."""

    __slots__ = ("table",)

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_schema__(self) -> Any:
        return self.table.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.table.__arrow_c_stream__(requested_schema)


class ArrowInputs:
    """The inputs of one DuckDB connection's statements (one per connection: views are per connection)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        # names unique to this object, so two of them on one connection never share a view
        self._prefix = f"__relaydeck_input_{next(_instances)}"
        self._names: dict[pa.Schema, str] = {}  # a shape's view
        self._holders: dict[str, _Holder] = {}  # a view's holder
        self._registered: set[str] = set()

    def put(self, table: pa.Table) -> str:
        """The name a statement reads `table` by, until the next put of a table of its shape."""
        name = self._names.get(table.schema)
        if name is None:
            name = self._names[table.schema] = f"{self._prefix}_{len(self._names)}"
            self._holders[name] = _Holder(table)
        holder = self._holders[name]
        holder.table = table
        if name not in self._registered:
            self._con.register(name, holder)
            self._registered.add(name)
        return name

    def release(self, name: str) -> None:
        """Let go of the table under `name` (its memory), keeping the view for the next of its shape."""
        holder = self._holders[name]
        holder.table = holder.table.schema.empty_table()

    def rolled_back(self) -> None:
        """The connection's transaction was rolled back: the views it registered are gone."""
        self._registered.clear()
