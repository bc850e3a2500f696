"""The workloads: simulated client sessions on a MySQL 8.0 source, logged into a relay log.

Each Workload owns some databases, creates them in setup() and then logs one burst of
transactions per step(); the driver in engine.generate calls step() until the size is reached.

- ``source``: SourceServer, the source's binary-log layer every session logs through, and the
  row- and statement-format transactions it logs.
- ``base``: the Workload base class, schema helpers and value pools.
- one module per family: ``oltp`` (oltp, hot, multidb, large), ``ddl``, ``value_types`` (types),
  ``statement`` (statement, temporary).
- here: mixed, the blend of every family, and the registry of workloads by name.
"""

from __future__ import annotations

import random

from engine.generate.workloads.base import Workload, create_table_sql
from engine.generate.workloads.ddl import Ddl
from engine.generate.workloads.oltp import Hot, Large, MultiDb, Oltp
from engine.generate.workloads.source import TIME_ZONE, RowTransaction, SourceServer, StatementTransaction
from engine.generate.workloads.statement import Statement, Temporary
from engine.generate.workloads.value_types import Types, random_value


class Mixed(Workload):
    """A blend of every workload, each with its own schema, transactions interleaved."""

    name = "mixed"
    default_size_mb = 2.0

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.parts = [cls(rng, target_bytes // 4) for cls in BLENDED]

    def setup(self, src: SourceServer) -> None:
        for part in self.parts:
            part.setup(src)

    def step(self, src: SourceServer) -> None:
        part = self.rng.choices(self.parts, weights=[p.weight for p in self.parts])[0]
        part.step(src)


BLENDED: tuple[type[Workload], ...] = (Oltp, Hot, MultiDb, Ddl, Large, Types, Statement, Temporary)
WORKLOAD_CLASSES: dict[str, type[Workload]] = {cls.name: cls for cls in (*BLENDED, Mixed)}

__all__ = [
    "TIME_ZONE",
    "WORKLOAD_CLASSES",
    "RowTransaction",
    "SourceServer",
    "StatementTransaction",
    "Workload",
    "create_table_sql",
    "random_value",
]
