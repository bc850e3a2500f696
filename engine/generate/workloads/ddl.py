"""The ddl workload: ALTERs of every kind interleaved with row changes to the altered tables."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from decimal import Decimal

from engine.binlog.column_types import ColumnDef, TableDef
from engine.generate.oracle import TableKey
from engine.generate.workloads.base import Workload, col, create_database, create_table, money, table_def
from engine.generate.workloads.source import SourceServer


class Ddl(Workload):
    """DDL in the stream: ALTERs of every kind interleaved with row changes to the altered tables."""

    name = "ddl"
    THREAD = 40
    DB = "ddldb"

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.round = 0
        self.script: Iterator[None] = iter(())

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.THREAD)

    def step(self, src: SourceServer) -> None:
        for _ in range(2):
            if next(self.script, StopIteration) is StopIteration:
                self.round += 1
                self.script = self._round(src, self.round)
                next(self.script)

    # helpers over the current schema of a table

    def _alter(
        self,
        src: SourceServer,
        key: TableKey,
        sql: str,
        new_table: TableDef,
        row_map: Callable[[dict[str, object]], dict[str, object]],
    ) -> None:
        def apply() -> None:
            src.oracle.alter_table(key, new_table, row_map)
            src.forget_table(key)

        src.ddl(sql, db=key[0], thread_id=self.THREAD, apply=apply, table_options=True)

    def _insert(self, src: SourceServer, key: TableKey, values: list[dict[str, object]]) -> None:
        state = src.oracle.state(key)
        ai = state.next_auto_increment
        rows = []
        for i, v in enumerate(values):
            v = dict(v)
            auto = [c.name for c in state.table.columns if c.auto_increment]
            for name in auto:
                v.setdefault(name, ai + i)
            rows.append(tuple(v.get(c.name) for c in state.table.columns))
        txn = src.rows(self.THREAD)
        txn.insert(key, rows)
        txn.commit()

    def _update_some(
        self,
        src: SourceServer,
        key: TableKey,
        change: Callable[[dict[str, object]], dict[str, object]],
        fraction: float = 0.4,
    ) -> None:
        state = src.oracle.state(key)
        names = [c.name for c in state.table.columns]
        pairs = []
        for pk in sorted(state.rows)[: max(1, int(len(state.rows) * fraction))]:
            before = state.rows[pk]
            after = change(dict(zip(names, before, strict=True)))
            pairs.append((before, tuple(after[n] for n in names)))
        txn = src.rows(self.THREAD)
        txn.update(key, pairs)
        txn.commit()

    def _delete_some(self, src: SourceServer, key: TableKey, count: int) -> None:
        state = src.oracle.state(key)
        victims = [state.rows[pk] for pk in sorted(state.rows)[-count:]]
        txn = src.rows(self.THREAD)
        txn.delete(key, victims)
        txn.commit()

    def _round(self, src: SourceServer, r: int) -> Iterator[None]:
        rng = self.rng
        db = self.DB
        key = (db, f"items_{r}")
        base = table_def(
            db,
            key[1],
            [
                col("id", "int", nullable=False, auto_increment=True),
                col("name", "varchar(32)", nullable=False),
                col("qty", "int", nullable=False, default_sql="'0'"),
            ],
            ["id"],
        )
        create_table(src, base, self.THREAD)
        yield
        seq = iter(range(1, 1_000_000))
        self._insert(
            src,
            key,
            [{"name": f"item-{r}-{next(seq)}", "qty": rng.randint(0, 50)} for _ in range(rng.randint(5, 12))],
        )
        yield

        def cols() -> list[ColumnDef]:
            return list(src.oracle.state(key).table.columns)

        def with_columns(columns: list[ColumnDef], **kw: object) -> TableDef:
            t = src.oracle.state(key).table
            return table_def(
                db,
                t.name,
                columns,
                kw.get("pk", t.primary_key),
                kw.get("uniques", t.unique_keys),
                kw.get("keys", t.keys),
            )  # type: ignore[arg-type]

        # ADD COLUMN ... AFTER
        c = cols()
        price = col("price", "decimal(10,2)", nullable=True, default_sql="NULL")
        c.insert(2, price)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {price.ddl()} AFTER `name`",
            with_columns(c),
            lambda r_: {**r_, "price": None},
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "price": money(rng, 1, 999)})
        self._insert(src, key, [{"name": f"item-{r}-{next(seq)}", "qty": 1, "price": Decimal("9.99")}])
        yield
        # ADD COLUMN ... FIRST with a default existing rows take
        c = cols()
        code = col("code", "char(8)", nullable=False, default_sql="'none'")
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {code.ddl()} FIRST",
            with_columns([code, *c]),
            lambda r_: {**r_, "code": "none"},
        )
        yield
        self._insert(
            src,
            key,
            [
                {"code": f"C{r}-{i}", "name": f"item-{r}-{next(seq)}", "qty": 2, "price": None}
                for i in range(3)
            ],
        )
        yield
        # MODIFY COLUMN: a widening type change
        c = cols()
        i = [x.name for x in c].index("qty")
        c[i] = col("qty", "bigint", nullable=False, default_sql="'0'")
        self._alter(
            src, key, f"ALTER TABLE `{key[1]}` MODIFY COLUMN {c[i].ddl()}", with_columns(c), lambda r_: r_
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "qty": r_["qty"] + 5_000_000_000})  # type: ignore[operator]
        yield
        # CHANGE COLUMN: rename and retype
        c = cols()
        i = [x.name for x in c].index("name")
        c[i] = col("title", "varchar(64)", nullable=False)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` CHANGE COLUMN `name` {c[i].ddl()}",
            with_columns(c),
            lambda r_: {**{k: v for k, v in r_.items() if k != "name"}, "title": r_["name"]},
        )
        yield
        # RENAME COLUMN
        c = cols()
        i = [x.name for x in c].index("code")
        c[i] = col("sku", "char(8)", nullable=False, default_sql="'none'")
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` RENAME COLUMN `code` TO `sku`",
            with_columns(c),
            lambda r_: {**{k: v for k, v in r_.items() if k != "code"}, "sku": r_["code"]},
        )
        yield
        self._insert(
            src, key, [{"sku": "new", "title": f"item-{r}-{next(seq)}", "qty": 7, "price": Decimal("-1.50")}]
        )
        yield
        # CREATE INDEX / CREATE UNIQUE INDEX (titles are unique): the unique key joins writesets
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"CREATE INDEX `idx_qty` ON `{key[1]}` (`qty`)",
            with_columns(list(t.columns), keys=(("idx_qty", ("qty",)),)),
            lambda r_: r_,
        )
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"CREATE UNIQUE INDEX `uk_title` ON `{key[1]}` (`title`)",
            with_columns(list(t.columns), uniques=(("uk_title", ("title",)),)),
            lambda r_: r_,
        )
        yield
        self._update_some(src, key, lambda r_: {**r_, "title": str(r_["title"]) + "*"}, 0.5)
        self._delete_some(src, key, 2)
        yield
        # DROP COLUMN / DROP INDEX
        c = [x for x in cols() if x.name != "price"]
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` DROP COLUMN `price`",
            with_columns(c),
            lambda r_: {k: v for k, v in r_.items() if k != "price"},
        )
        t = src.oracle.state(key).table
        self._alter(
            src,
            key,
            f"DROP INDEX `idx_qty` ON `{key[1]}`",
            with_columns(list(t.columns), keys=()),
            lambda r_: r_,
        )
        yield
        # ADD with AFTER on a later column, then rows that fill it
        c = cols()
        note = col("note", "varchar(40)", nullable=True, default_sql="NULL")
        c.insert([x.name for x in c].index("title") + 1, note)
        self._alter(
            src,
            key,
            f"ALTER TABLE `{key[1]}` ADD COLUMN {note.ddl()} AFTER `title`",
            with_columns(c),
            lambda r_: {**r_, "note": None},
        )
        self._update_some(src, key, lambda r_: {**r_, "note": 'naïve, "quoted"'}, 0.3)
        yield
        # RENAME TABLE, then keep writing under the new name
        new_key = (db, f"items_{r}_old")

        def rename() -> None:
            src.oracle.rename_table(key, new_key)
            src.forget_table(key)

        src.ddl(f"RENAME TABLE `{key[1]}` TO `{new_key[1]}`", db=db, thread_id=self.THREAD, apply=rename)
        yield
        key = new_key
        self._insert(src, key, [{"sku": "renamed", "title": f"item-{r}-{next(seq)}", "qty": 3, "note": None}])
        self._delete_some(src, key, 1)
        yield
        # TRUNCATE and DROP on scratch tables
        scratch = table_def(
            db,
            f"scratch_{r}",
            [col("id", "int", nullable=False), col("v", "varchar(10)", nullable=True, default_sql="NULL")],
            ["id"],
        )
        skey = (db, scratch.name)
        create_table(src, scratch, self.THREAD)
        self._insert(src, skey, [{"id": i, "v": f"v{i}"} for i in range(1, 6)])
        yield

        def truncate() -> None:
            src.oracle.truncate(skey)
            src.forget_table(skey)

        src.ddl(f"TRUNCATE TABLE `{scratch.name}`", db=db, thread_id=self.THREAD, apply=truncate)
        self._insert(src, skey, [{"id": 1, "v": "after"}])
        yield
        dropme = table_def(
            db, f"dropme_{r}", [col("id", "int", nullable=False), col("v", "int", nullable=False)], ["id"]
        )
        dkey = (db, dropme.name)
        create_table(src, dropme, self.THREAD)
        self._insert(src, dkey, [{"id": i, "v": i} for i in range(1, 4)])

        def drop() -> None:
            src.oracle.drop_table(dkey)
            src.forget_table(dkey)

        src.ddl(
            f"DROP TABLE `{dropme.name}` /* generated by server */", db=db, thread_id=self.THREAD, apply=drop
        )
        yield
