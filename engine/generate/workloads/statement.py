"""Statement-format workloads: context events (USER_VAR, INTVAR, RAND, NOW(6)) and sessions
with their own temporary tables."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal

from engine.generate.oracle import MysqlRand, TableState, TempKey, sql_string
from engine.generate.workloads.base import (
    Workload,
    col,
    create_database,
    create_table,
    create_table_sql,
    money,
    table_def,
)
from engine.generate.workloads.source import SourceServer, UserVar


class Statement(Workload):
    """STATEMENT-format DML: USER_VAR, INTVAR (INSERT_ID, LAST_INSERT_ID), RAND and NOW(6)."""

    name = "statement"
    default_size_mb = 0.2
    DB = "stmtdb"
    THREADS = range(70, 73)
    LOG = ("stmtdb", "stmt_log")
    CHILD = ("stmtdb", "stmt_child")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.last_parent: dict[int, int] = {}

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, 70)
        create_table(
            src,
            table_def(
                self.DB,
                "stmt_log",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("k", "int", nullable=False),
                    col("note", "varchar(64)", nullable=False),
                    col("r", "int", nullable=True, default_sql="NULL"),
                    col("ts", "datetime(6)", nullable=True, default_sql="NULL"),
                ],
                ["id"],
                keys=[("idx_k", ["k"])],
            ),
            70,
        )
        create_table(
            src,
            table_def(
                self.DB,
                "stmt_child",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("parent_id", "int", nullable=False),
                    col("amount", "decimal(10,2)", nullable=False),
                ],
                ["id"],
            ),
            70,
        )

    def _insert_log(self, values: list[tuple[int, str, object, object]]) -> Callable[[TableState], list[int]]:
        def insert(state: TableState) -> list[int]:
            ids = []
            for k, note, r, ts in values:
                pk = state.next_auto_increment
                state.insert((pk, k, note, r, ts))
                ids.append(pk)
            return ids

        return insert

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        thread = rng.choice(self.THREADS)
        txn = src.statements(thread, self.DB)
        log = src.oracle.state(self.LOG)
        child = src.oracle.state(self.CHILD)
        for _ in range(rng.randint(1, 3)):
            kind = rng.randrange(9)
            if kind == 0:
                v = rng.randint(-1000, 1000)
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note) VALUES (@v, 'user var')",
                    apply=lambda _, v=v: self._insert_log([(v, "user var", None, None)])(log),
                    user_vars=[UserVar("v", v)],
                    insert_id=pk,
                )
            elif kind == 1:
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note, ts) VALUES (5, 'parent', NOW(6))",
                    apply=lambda now, pk=pk: log.insert((pk, 5, "parent", None, now)),
                    insert_id=pk,
                    uses_now=True,
                )
                amount = money(rng, 1, 999)
                cpk = child.next_auto_increment
                txn.query(
                    f"INSERT INTO stmt_child (parent_id, amount) VALUES (LAST_INSERT_ID(), {amount})",
                    apply=lambda _, cpk=cpk, amount=amount, pk=pk: child.insert((cpk, pk, amount)),
                    last_insert_id=pk,
                    insert_id=cpk,
                )
                self.last_parent[thread] = pk
            elif kind == 2 and log.rows:
                ids = sorted(pk[0] for pk in log.rows)  # type: ignore[misc]
                lo = rng.choice(ids)
                hi = min(lo + rng.randint(0, 6), ids[-1])
                seeds = (rng.randrange(MysqlRand.MAX_VALUE), rng.randrange(MysqlRand.MAX_VALUE))

                def rand_update(
                    _: datetime, lo: int = lo, hi: int = hi, seeds: tuple[int, int] = seeds
                ) -> None:
                    gen = MysqlRand(*seeds)
                    for pk in range(lo, hi + 1):  # InnoDB walks the primary key in order
                        row = log.rows.get((pk,))
                        if row is not None:
                            r = int(gen.next() * 1000)
                            log.update(row, (row[0], row[1], row[2], r, row[4]))

                txn.query(
                    f"UPDATE stmt_log SET r = FLOOR(RAND()*1000) WHERE id BETWEEN {lo} AND {hi}",
                    apply=rand_update,
                    rand_seeds=seeds,
                )
            elif kind == 3:
                note = rng.choice(["héllo 😀", "it's", "back\\slash", "名前"])
                pk = log.next_auto_increment
                txn.query(
                    "INSERT INTO stmt_log (k, note) VALUES (7, @note)",
                    apply=lambda _, note=note: self._insert_log([(7, note, None, None)])(log),
                    user_vars=[UserVar("note", note)],
                    insert_id=pk,
                )
            elif kind == 4:
                amt = money(rng, -50, 50)
                parent_id = self.last_parent.get(thread, 0)
                cpk = child.next_auto_increment
                txn.query(
                    f"INSERT INTO stmt_child (parent_id, amount) VALUES ({parent_id}, @amt)",
                    apply=lambda _, cpk=cpk, parent_id=parent_id, amt=amt: child.insert(
                        (cpk, parent_id, amt)
                    ),
                    user_vars=[UserVar("amt", amt)],
                    insert_id=cpk,
                )
            elif kind == 5:
                n = rng.randint(2, 4)
                values = [(rng.randint(0, 9), f"multi-{i}", None, None) for i in range(n)]
                pk = log.next_auto_increment
                text = ", ".join(f"({k}, {sql_string(note)})" for k, note, _, _ in values)
                txn.query(
                    f"INSERT INTO stmt_log (k, note) VALUES {text}",
                    apply=lambda _, values=values: self._insert_log(values)(log),
                    insert_id=pk,
                )
            elif kind == 6:
                target = rng.randint(0, 9)
                # rows older than the last few hundred ids go too, so the table stays small
                cutoff = max(1, log.next_auto_increment - 300)

                def delete(_: datetime, target: int = target, cutoff: int = cutoff) -> None:
                    for row in [r for r in log.rows.values() if r[1] == target or r[0] < cutoff]:  # type: ignore[operator]
                        log.delete(row)

                txn.query(f"DELETE FROM stmt_log WHERE k = {target} OR id < {cutoff}", apply=delete)

                def orphans(_: datetime) -> None:
                    for row in [r for r in child.rows.values() if (r[1],) not in log.rows]:
                        child.delete(row)

                # keeps stmt_child bounded; a subquery on another table is safe in STATEMENT format
                txn.query(
                    "DELETE FROM stmt_child WHERE parent_id NOT IN (SELECT id FROM stmt_log)", apply=orphans
                )
            elif kind == 7 and child.rows:
                parent_id = rng.choice(sorted(r[1] for r in child.rows.values()))  # type: ignore[type-var]

                def bump(_: datetime, parent_id: object = parent_id) -> None:
                    for row in [r for r in child.rows.values() if r[1] == parent_id]:
                        child.update(row, (row[0], row[1], row[2] + Decimal("1.25")))  # type: ignore[operator]

                txn.query(
                    f"UPDATE stmt_child SET amount = amount + 1.25 WHERE parent_id = {parent_id}", apply=bump
                )
            else:
                pk = log.next_auto_increment
                if rng.random() < 0.5:
                    txn.query(
                        "INSERT INTO stmt_log (k, note, r) VALUES (11, 'null var', @nv)",
                        apply=lambda _: self._insert_log([(11, "null var", None, None)])(log),
                        user_vars=[UserVar("nv", None)],
                        insert_id=pk,
                    )
                else:
                    f = rng.randint(0, 400) / 4 + 0.25
                    txn.query(
                        "INSERT INTO stmt_log (k, note, r) VALUES (12, 'real var', FLOOR(@f))",
                        apply=lambda _, f=f: self._insert_log([(12, "real var", int(f // 1), None)])(log),
                        user_vars=[UserVar("f", f)],
                        insert_id=pk,
                    )
        txn.commit()


class Temporary(Workload):
    """Sessions staging data in same-named temporary tables, folding it into a real table."""

    name = "temporary"
    default_size_mb = 0.2
    DB = "tmpdb"
    SESSIONS = (1001, 1002, 1003, 1004)
    TOTALS = ("tmpdb", "totals")

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.scripts: dict[int, Iterator[None]] = {}

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.SESSIONS[0])
        create_table(
            src,
            table_def(
                self.DB,
                "totals",
                [
                    col("id", "int", nullable=False, auto_increment=True),
                    col("session_id", "int", nullable=False),
                    col("n", "int", nullable=False),
                    col("total", "decimal(12,2)", nullable=False),
                ],
                ["id"],
            ),
            self.SESSIONS[0],
        )

    def step(self, src: SourceServer) -> None:
        thread = self.rng.choice(self.SESSIONS)
        script = self.scripts.get(thread)
        if script is None or next(script, StopIteration) is StopIteration:
            self.scripts[thread] = self._session(src, thread)
            next(self.scripts[thread])

    def _session(self, src: SourceServer, thread: int) -> Iterator[None]:
        rng = self.rng
        db = self.DB
        stage = table_def(
            db,
            "tmp_stage",
            [col("id", "int", nullable=False), col("amount", "decimal(10,2)", nullable=False)],
            ["id"],
        )
        tkey: TempKey = (thread, db, "tmp_stage")
        src.standalone_query(
            create_table_sql(stage, temporary=True),
            db=db,
            thread_id=thread,
            apply=lambda: src.oracle.create_table(stage, temporary_thread=thread),
        )
        yield
        next_id = 1
        for _ in range(rng.randint(1, 3)):
            values = [(next_id + i, money(rng, 0, 300)) for i in range(rng.randint(1, 4))]
            next_id += len(values)
            text = ", ".join(f"({pk}, {amount})" for pk, amount in values)
            txn = src.statements(thread, db)

            def stage_rows(_: datetime, values: list[tuple[int, Decimal]] = values) -> None:
                state = src.oracle.state(tkey)
                for row in values:
                    state.insert(row)

            txn.query(f"INSERT INTO tmp_stage VALUES {text}", apply=stage_rows, temporary=True)
            txn.commit()
            yield
        if rng.random() < 0.5:
            txn = src.statements(thread, db)

            def double(_: datetime) -> None:
                state = src.oracle.state(tkey)
                for row in [r for r in state.rows.values() if r[0] <= 2]:  # type: ignore[operator]
                    state.update(row, (row[0], row[1] * 2))  # type: ignore[operator]

            txn.query("UPDATE tmp_stage SET amount = amount * 2 WHERE id <= 2", apply=double, temporary=True)
            txn.commit()
            yield
        txn = src.statements(thread, db)
        totals = src.oracle.state(self.TOTALS)
        pk = totals.next_auto_increment

        def fold(_: datetime) -> None:
            rows = list(src.oracle.state(tkey).rows.values())
            totals.insert((pk, thread, len(rows), sum((r[1] for r in rows), Decimal("0.00"))))  # type: ignore[misc]

        txn.query(
            f"INSERT INTO totals (session_id, n, total) SELECT {thread}, COUNT(*), SUM(amount) FROM tmp_stage",
            apply=fold,
            insert_id=pk,
            temporary=True,
        )
        txn.commit()
        yield
        src.standalone_query(
            "DROP TEMPORARY TABLE IF EXISTS `tmp_stage` /* generated by server */",
            db=db,
            thread_id=thread,
            apply=lambda: src.oracle.drop_table(tkey),
        )
