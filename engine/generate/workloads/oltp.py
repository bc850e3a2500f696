"""Row-format workloads of OLTP shape: sysbench-like writes, hot rows, cross-database
transfers and a few very large transactions."""

from __future__ import annotations

import random
import string
from decimal import Decimal

from engine.binlog.column_types import TableDef
from engine.binlog.constants import EventType
from engine.generate.oracle import TableKey
from engine.generate.workloads.base import (
    Workload,
    col,
    create_database,
    create_table,
    digit_groups,
    money,
    table_def,
    value_pool,
)
from engine.generate.workloads.source import Row, SourceServer


class Oltp(Workload):
    """sysbench oltp_write_only over 3 databases x 2 tables, transactions interleaved across them."""

    name = "oltp"
    default_size_mb = 0.4
    weight = 4
    takes_namespace = True
    DBS = ("sbtest1", "sbtest2", "sbtest3")
    TABLES = ("sbtest1", "sbtest2")
    THREADS = range(10, 18)

    def __init__(self, rng: random.Random, target_bytes: int, namespace: str = "") -> None:
        super().__init__(rng, target_bytes)
        self.dbs = tuple(db + namespace for db in self.DBS)
        self.table_size = max(50, min(10000, target_bytes // 4000))
        self.c_pool = value_pool(rng, 512, digit_groups(10))
        self.pad_pool = value_pool(rng, 512, digit_groups(5))
        self.keys: list[TableKey] = [(db, t) for db in self.dbs for t in self.TABLES]
        self.next_id: dict[TableKey, int] = {}

    @staticmethod
    def schema(db: str, name: str) -> TableDef:
        return table_def(
            db,
            name,
            [
                col("id", "int", nullable=False, auto_increment=True),
                col("k", "int", nullable=False, default_sql="'0'"),
                col("c", "char(120)", nullable=False, default_sql="''"),
                col("pad", "char(60)", nullable=False, default_sql="''"),
            ],
            ["id"],
            keys=[("k_1", ["k"])],
        )

    def _row(self, pk: int) -> Row:
        rng = self.rng
        return (pk, rng.randint(1, self.table_size), rng.choice(self.c_pool), rng.choice(self.pad_pool))

    def setup(self, src: SourceServer) -> None:
        for db in self.dbs:
            create_database(src, db, 10)
        for key in self.keys:
            create_table(src, self.schema(*key), 10)
        for key in self.keys:
            # sysbench prepare: bulk inserts of up to 1000 rows per statement
            for start in range(1, self.table_size + 1, 1000):
                txn = src.rows(10)
                txn.insert(
                    key, [self._row(pk) for pk in range(start, min(start + 1000, self.table_size + 1))]
                )
                txn.commit()
            self.next_id[key] = self.table_size + 1

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        key = rng.choice(self.keys)
        state = src.oracle.state(key)
        txn = src.rows(rng.choice(self.THREADS))
        choice = rng.random()
        if choice < 0.8:
            # UPDATE ... SET k=k+1 WHERE id=?; UPDATE ... SET c=? WHERE id=?; DELETE; INSERT (same id)
            row = state.rows.get((rng.randint(1, self.table_size),))
            if row is not None:
                txn.update(key, [(row, (row[0], row[1] + 1, row[2], row[3]))])  # type: ignore[operator]
            row = state.rows.get((rng.randint(1, self.table_size),))
            if row is not None:
                txn.update(key, [(row, (row[0], row[1], rng.choice(self.c_pool), row[3]))])
            pk = rng.randint(1, self.table_size)
            row = state.rows.get((pk,))
            if row is not None:
                txn.delete(key, [row])
                txn.insert(key, [self._row(pk)])
        elif choice < 0.9:
            # an insert of fresh ids paired with a delete keeps the table size steady
            pk = self.next_id[key]
            self.next_id[key] = pk + 1
            txn.insert(key, [self._row(pk)])
            victim = state.rows.get((rng.randint(1, pk),))
            if victim is not None and victim[0] != pk:
                txn.delete(key, [victim])
        else:
            # a second database in the same transaction
            other = rng.choice([k for k in self.keys if k[0] != key[0]])
            for k in (key, other):
                row = src.oracle.state(k).rows.get((rng.randint(1, self.table_size),))
                if row is not None:
                    txn.update(k, [(row, (row[0], row[1] - 1, row[2], row[3]))])  # type: ignore[operator]
        txn.commit()


class Hot(Workload):
    """A handful of hot rows hammered by every session: long last_committed chains."""

    name = "hot"
    THREADS = range(20, 24)

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.counter = 0

    def setup(self, src: SourceServer) -> None:
        create_database(src, "hotdb", 20)
        counters = table_def(
            "hotdb",
            "counters",
            [
                col("id", "int", nullable=False),
                col("hits", "bigint", nullable=False, default_sql="'0'"),
                col("tag", "varchar(32)", nullable=False),
                col("updated_at", "datetime(6)", nullable=False),
            ],
            ["id"],
        )
        kv = table_def(
            "hotdb",
            "kv",
            [
                col("id", "int", nullable=False),
                col("name", "varchar(32)", nullable=False),
                col("val", "int", nullable=False),
            ],
            ["id"],
            unique_keys=[("uk_name", ["name"])],
        )
        create_table(src, counters, 20)
        create_table(src, kv, 20)
        txn = src.rows(20)
        txn.insert(("hotdb", "counters"), [(i, 0, f"hot-{i}", src.now()) for i in range(1, 7)])
        txn.insert(("hotdb", "kv"), [(i, f"key-{i}", i * 10) for i in range(1, 7)])
        txn.commit()

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        txn = src.rows(rng.choice(self.THREADS))
        counters = src.oracle.state(("hotdb", "counters"))
        for _ in range(rng.randint(1, 3)):
            pk = rng.choice((1, 1, 2, 2, 3, 4, 5, 6))  # skewed: ids 1 and 2 are the hottest
            row = counters.rows[(pk,)]
            txn.update(("hotdb", "counters"), [(row, (pk, row[1] + 1, row[2], src.now()))])  # type: ignore[operator]
        if rng.random() < 0.25:
            kv = src.oracle.state(("hotdb", "kv"))
            pk = rng.randint(1, 6)
            row = kv.rows[(pk,)]
            self.counter += 1
            # renaming changes the UNIQUE key, so both names enter the writeset
            txn.update(("hotdb", "kv"), [(row, (pk, f"key-{pk}-{self.counter}", row[2] + 1))])  # type: ignore[operator]
        txn.commit()


class MultiDb(Workload):
    """Transfers between banks in different databases plus an audit database, one transaction each."""

    name = "multidb"
    BANKS = ("bank_eu", "bank_us", "bank_asia")
    THREADS = range(30, 34)
    ACCOUNTS = 40

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.transfer_id = 0

    def setup(self, src: SourceServer) -> None:
        for db in (*self.BANKS, "audit"):
            create_database(src, db, 30)
        for db in self.BANKS:
            create_table(
                src,
                table_def(
                    db,
                    "accounts",
                    [
                        col("id", "int", nullable=False),
                        col("owner", "varchar(40)", nullable=False),
                        col("balance", "decimal(14,2)", nullable=False),
                        col("updated", "datetime", nullable=True, default_sql="NULL"),
                    ],
                    ["id"],
                ),
                30,
            )
        create_table(
            src,
            table_def(
                "audit",
                "transfers",
                [
                    col("id", "bigint", nullable=False),
                    col("src_db", "varchar(16)", nullable=False),
                    col("src_id", "int", nullable=False),
                    col("dst_db", "varchar(16)", nullable=False),
                    col("dst_id", "int", nullable=False),
                    col("amount", "decimal(14,2)", nullable=False),
                    col("at", "datetime(6)", nullable=False),
                ],
                ["id"],
            ),
            30,
        )
        create_table(
            src,
            table_def(
                "audit",
                "transfer_legs",
                [
                    col("transfer_id", "bigint", nullable=False),
                    col("leg", "tinyint", nullable=False),
                    col("db_name", "varchar(16)", nullable=False),
                    col("delta", "decimal(14,2)", nullable=False),
                ],
                ["transfer_id", "leg"],
            ),
            30,
        )
        owners = ["Ana", "Bo", "Chen Wei", "Dário", "Émile", "Farah", "Göran", "Hiro", "Ines", "Jamal"]
        for db in self.BANKS:
            txn = src.rows(30)
            rows = [
                (i, f"{self.rng.choice(owners)} #{i}", money(self.rng, 100, 5000), None)
                for i in range(1, self.ACCOUNTS + 1)
            ]
            txn.insert((db, "accounts"), rows)
            txn.commit()

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        txn = src.rows(rng.choice(self.THREADS))
        now = src.now()
        banks = rng.sample(self.BANKS, 3 if rng.random() < 0.2 else 2)
        src_db, dst_dbs = banks[0], banks[1:]
        amount = money(rng, 1, 200)
        src_row = src.oracle.state((src_db, "accounts")).rows[(rng.randint(1, self.ACCOUNTS),)]
        changes: list[tuple[str, Row, Row]] = []
        total = Decimal("0.00")
        for db in dst_dbs:
            dst_row = src.oracle.state((db, "accounts")).rows[(rng.randint(1, self.ACCOUNTS),)]
            changes.append(
                (db, dst_row, (dst_row[0], dst_row[1], dst_row[2] + amount, now.replace(microsecond=0)))
            )  # type: ignore[operator]
            total += amount
        src_after = (src_row[0], src_row[1], src_row[2] - total, now.replace(microsecond=0))  # type: ignore[operator]
        if len(dst_dbs) == 1 and rng.random() < 0.3:
            # UPDATE bank_a.accounts a JOIN bank_b.accounts b ...: one statement, two table maps
            db, before, after = changes[0]
            txn.statement(
                [
                    ((src_db, "accounts"), EventType.UPDATE_ROWS, [(src_row, src_after)]),
                    ((db, "accounts"), EventType.UPDATE_ROWS, [(before, after)]),
                ]
            )
        else:
            txn.update((src_db, "accounts"), [(src_row, src_after)])
            for db, before, after in changes:
                txn.update((db, "accounts"), [(before, after)])
        for db, before, _ in changes:
            self.transfer_id += 1
            tid = self.transfer_id
            txn.insert(("audit", "transfers"), [(tid, src_db, src_row[0], db, before[0], amount, now)])
            txn.insert(("audit", "transfer_legs"), [(tid, 1, src_db, -amount), (tid, 2, db, amount)])
        txn.commit()


class Large(Workload):
    """A few very large transactions: thousands of rows each, rows events split at 8 KB."""

    name = "large"
    default_size_mb = 0.5
    weight = 1
    THREAD = 50
    KEY = ("bulk", "events")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.next_id = 1
        self.batch = 0
        # thousands of rows per transaction, fewer when blended into a small mixed run
        self.batch_rows = max(1000, min(2000, target_bytes // 400))
        self.batches: list[tuple[int, int, int]] = []  # (batch, first id, last id)
        self.payloads = value_pool(
            rng,
            256,
            lambda r: "".join(r.choices(string.ascii_letters + string.digits + " ", k=r.randint(20, 120))),
        )

    def setup(self, src: SourceServer) -> None:
        create_database(src, "bulk", self.THREAD)
        create_table(
            src,
            table_def(
                "bulk",
                "events",
                [
                    col("id", "bigint", nullable=False),
                    col("batch", "int", nullable=False),
                    col("payload", "varchar(200)", nullable=False),
                    col("amount", "decimal(12,2)", nullable=False),
                    col("created", "datetime(6)", nullable=False),
                ],
                ["id"],
                keys=[("idx_batch", ["batch"])],
            ),
            self.THREAD,
        )

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        state = src.oracle.state(self.KEY)
        self.batch += 1
        n = rng.randint(self.batch_rows, 2 * self.batch_rows)
        first = self.next_id
        self.next_id += n
        now = src.now()
        rows = [
            (first + i, self.batch, rng.choice(self.payloads), money(rng, -500, 500), now) for i in range(n)
        ]
        txn = src.rows(self.THREAD)
        half = n // 2  # two INSERT statements in one transaction
        txn.insert(self.KEY, rows[:half])
        txn.insert(self.KEY, rows[half:])
        txn.commit()
        self.batches.append((self.batch, first, first + n - 1))
        if len(self.batches) >= 2:
            # UPDATE bulk.events SET amount = amount + 1 WHERE batch = <previous batch>
            _, lo, hi = self.batches[-2]
            txn = src.rows(self.THREAD)
            pairs = []
            for pk in range(lo, hi + 1):
                row = state.rows.get((pk,))
                if row is not None:
                    pairs.append((row, (row[0], row[1], row[2], row[3] + 1, row[4])))  # type: ignore[operator]
            txn.update(self.KEY, pairs)
            txn.commit()
        if len(self.batches) > 3:
            # DELETE FROM bulk.events WHERE batch = <oldest>
            _, lo, hi = self.batches.pop(0)
            txn = src.rows(self.THREAD)
            txn.delete(self.KEY, [state.rows[(pk,)] for pk in range(lo, hi + 1) if (pk,) in state.rows])
            txn.commit()
