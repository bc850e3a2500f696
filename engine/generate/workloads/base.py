"""What every workload builds on: the Workload base class, schema helpers and value pools."""

from __future__ import annotations

import random
import string
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from decimal import Decimal

from engine.binlog.column_types import ColumnDef, TableDef
from engine.generate.workloads.source import SourceServer

col = ColumnDef.of


class Workload(ABC):
    """One family of sessions. setup() creates its schema; step() logs a burst of transactions."""

    name = ""
    default_size_mb = 0.3
    weight = 1
    # Whether the constructor takes namespace=, a suffix for every database name, so that several
    # generated logs of this workload can fan in to one slave without sharing databases.
    takes_namespace = False

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        self.rng = rng
        self.target_bytes = target_bytes

    @abstractmethod
    def setup(self, src: SourceServer) -> None:
        """Create the workload's databases and tables (and rows they start with)."""

    @abstractmethod
    def step(self, src: SourceServer) -> None:
        """Log the next burst of transactions."""


def table_def(
    db: str,
    name: str,
    columns: Sequence[ColumnDef],
    primary_key: Sequence[str],
    unique_keys: Sequence[tuple[str, Sequence[str]]] = (),
    keys: Sequence[tuple[str, Sequence[str]]] = (),
) -> TableDef:
    return TableDef(
        db,
        name,
        tuple(columns),
        tuple(primary_key),
        tuple((n, tuple(c)) for n, c in unique_keys),
        tuple((n, tuple(c)) for n, c in keys),
    )


def _cols(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def create_table_sql(table: TableDef, *, temporary: bool = False) -> str:
    """CREATE TABLE text as a client would send it (and the server logs it verbatim)."""
    lines = [c.ddl() for c in table.columns]
    if table.primary_key:
        lines.append(f"PRIMARY KEY ({_cols(table.primary_key)})")
    lines += [f"UNIQUE KEY `{n}` ({_cols(c)})" for n, c in table.unique_keys]
    lines += [f"KEY `{n}` ({_cols(c)})" for n, c in table.keys]
    head = "CREATE TEMPORARY TABLE" if temporary else "CREATE TABLE"
    return (
        f"{head} `{table.name}` (\n  "
        + ",\n  ".join(lines)
        + "\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci"
    )


def create_database(src: SourceServer, db: str, thread_id: int) -> None:
    src.ddl(
        f"CREATE DATABASE `{db}` /*!40100 DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci */",
        db=db,
        thread_id=thread_id,
        apply=lambda: src.oracle.create_database(db),
        create_database=True,
    )


def create_table(src: SourceServer, table: TableDef, thread_id: int) -> None:
    def apply() -> None:
        src.oracle.create_table(table)
        src.forget_table((table.db, table.name))

    src.ddl(
        create_table_sql(table),
        db=table.db,
        thread_id=thread_id,
        apply=apply,
        table_options=True,
        timestamp_columns=any(c.type.base == "timestamp" for c in table.columns),
    )


def value_pool(rng: random.Random, n: int, make: Callable[[random.Random], str]) -> list[str]:
    return [make(rng) for _ in range(n)]


def digit_groups(groups: int) -> Callable[[random.Random], str]:
    # sysbench's c/pad values: groups of 11 digits joined by '-'
    def make(rng: random.Random) -> str:
        return "-".join("".join(rng.choices(string.digits, k=11)) for _ in range(groups))

    return make


def money(rng: random.Random, low: int, high: int) -> Decimal:
    return Decimal(f"{rng.randint(low * 100, high * 100)}E-2")
