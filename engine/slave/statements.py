"""Statement-format DML (QUERY events) translated MySQL -> DuckDB with the session the source logged.

The source logs what makes a statement deterministic around it (WL#5754: user variables,
INSERT_ID / LAST_INSERT_ID, RAND seeds, the statement's timestamp). Each becomes a literal in the
statement's syntax tree before DuckDB SQL is generated, so the slave computes what the source did:
- ``@var``            -> the USER_VAR event's value
- ``LAST_INSERT_ID()`` -> the INTVAR LAST_INSERT_ID value
- ``RAND()``          -> MySQL's own generator run from the RAND event's seeds, in evaluation order
- ``NOW()`` & co.     -> the event's timestamp (UTC; the source's session time zone when logged)
- an INSERT that leaves the AUTO_INCREMENT column out gets it from INSERT_ID, stepping by
  auto_increment_increment, in the order the rows are produced.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import sqlglot
import sqlglot.dialects.duckdb  # noqa: F401 - loaded now, not by the first statement (measured 64 ms)
from sqlglot import exp

from .guard import check_statement, replicated_schemas
from .names import duckdb_schema
from .schema import Catalog, MysqlTable
from .untranslatable import UntranslatableStatement

_RAND_MAX = 0x3FFFFFFF


@dataclass(frozen=True)
class SessionContext:
    """The source session's state for one statement, as the relay log carries it."""

    default_db: str | None
    user_vars: dict[str, object] = field(default_factory=dict)
    insert_id: int | None = None
    last_insert_id: int | None = None
    rand_seeds: tuple[int, int] | None = None
    timestamp: float = 0.0
    thread_id: int = 0
    auto_increment_increment: int = 1
    auto_increment_offset: int = 1
    sql_mode: int = 0
    temporary_tables: dict[tuple[str | None, str], tuple[str, str]] = field(default_factory=dict)


class MysqlRand:
    """MySQL's RAND() generator (my_rnd), continued from the seeds a RAND event logged."""

    def __init__(self, seed1: int, seed2: int) -> None:
        self.seed1, self.seed2 = seed1 % _RAND_MAX, seed2 % _RAND_MAX

    def next(self) -> float:
        self.seed1 = (self.seed1 * 3 + self.seed2) % _RAND_MAX
        self.seed2 = (self.seed1 + self.seed2 + 33) % _RAND_MAX
        return self.seed1 / float(_RAND_MAX)


def literal(value: object) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int | Decimal):
        return exp.Literal.number(str(value))
    if isinstance(value, float):
        # a DOUBLE as in MySQL; a bare literal would be DECIMAL in DuckDB and overflow in arithmetic
        return exp.Cast(this=exp.Literal.number(repr(value)), to=exp.DataType.build("DOUBLE"))
    if isinstance(value, bytes):
        return exp.Unhex(this=exp.Literal.string(value.hex()))
    return exp.Literal.string(str(value))


_NOW_FUNCTIONS = (exp.CurrentTimestamp, exp.CurrentDatetime)


def _assigned_columns(tree: exp.Expression) -> frozenset[str] | None:
    """The columns a DML statement assigns (see StatementTranslator.last_assigned)."""
    if isinstance(tree, exp.Delete):
        return frozenset()
    if not isinstance(tree, exp.Update):
        return None
    assigned = set()
    for assignment in tree.expressions:
        column = assignment.this if isinstance(assignment, exp.EQ) else None
        if not isinstance(column, exp.Column):
            return None  # not understood: as if every column were
        assigned.add(column.name.lower())
    return frozenset(assigned)


class StatementTranslator:
    """MySQL DML -> DuckDB statements for the slave."""

    last_target: tuple[str, str] | None = None  # the table the last translated statement changes
    last_target_temporary = False  # ... is a source session's temporary table
    # the columns the last statement assigns, lower case: an UPDATE's SET, none for a DELETE;
    # None for an INSERT (every column of the rows it adds)
    last_assigned: frozenset[str] | None = None
    _schemas: frozenset[str] = frozenset()  # where the statement being translated may read and write
    _temporary: tuple[tuple[str, str], ...] = ()  # its session's temporary tables, (schema, name)

    def __init__(self, duckdb_catalog: str | None = None) -> None:
        """duckdb_catalog: name every replicated table in this DuckDB catalog (Slave.duckdb_catalog)."""
        self.duckdb_catalog = duckdb_catalog

    def translate(self, sql: str, ctx: SessionContext, catalog: Catalog, con: object = None) -> list[str]:
        """DuckDB statements reproducing `sql`; `con` reads the slave where rows must be enumerated."""
        try:
            tree = sqlglot.parse_one(sql, read="mysql")
        except sqlglot.errors.ParseError as exc:
            raise UntranslatableStatement(
                sql, f"MySQL syntax not understood ({str(exc).splitlines()[0]})"
            ) from None
        if not isinstance(tree, exp.Insert | exp.Update | exp.Delete):
            raise UntranslatableStatement(sql, f"not a DML statement ({type(tree).__name__})")
        self._check_supported(sql, tree)
        self._qualify_tables(tree, ctx)
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        self._schemas = replicated_schemas(catalog)
        self._temporary = tuple(ctx.temporary_tables.values())
        self.last_target = (target.db, target.name) if isinstance(target, exp.Table) else None
        self.last_target_temporary = self.last_target in self._temporary
        self.last_assigned = _assigned_columns(tree)
        self._substitute_session(sql, tree, ctx)
        self._guard(sql, tree)
        rand = MysqlRand(*ctx.rand_seeds) if ctx.rand_seeds else None
        rand_nodes = list(tree.find_all(exp.Rand))
        if rand_nodes and rand is None:
            raise UntranslatableStatement(sql, "RAND() without a logged RAND event")
        if isinstance(tree, exp.Insert):
            return [self._insert(sql, tree, ctx, catalog, rand)]
        if rand_nodes:
            return list(self._per_row_with_rand(sql, tree, catalog, rand, con))  # type: ignore[arg-type]
        return [self._duckdb_sql(sql, self._limited(sql, tree))]

    # -- the allow-list -----------------------------------------------------------------------

    def _guard(self, sql: str, tree: exp.Expression) -> None:
        """Refuse what no MySQL statement could mean (slave/guard.py) before DuckDB sees any of it."""
        check_statement(sql, tree, self._schemas, self._temporary)

    def _duckdb_sql(self, sql: str, tree: exp.Expression) -> str:
        """The DuckDB text of a translated tree, checked once more after the rewriting."""
        self._guard(sql, tree)
        return self._slave_names(tree).sql(dialect="duckdb", identify=True)

    def _slave_names(self, tree: exp.Expression) -> exp.Expression:
        """The tree with MySQL's database names replaced by the slave's (names.duckdb_schema, in
        the slave's catalog): done last, so that everything before sees MySQL's names."""
        tree = tree.copy()
        temporary = set(self._temporary)
        for table in tree.find_all(exp.Table):
            if not table.db:
                continue  # a CTE
            if (table.db, table.name) not in temporary:
                table.set("db", exp.to_identifier(duckdb_schema(table.db)))
            if self.duckdb_catalog is not None:
                table.set("catalog", exp.to_identifier(self.duckdb_catalog))
        for column in tree.find_all(exp.Column):
            db = column.args.get("db")
            if db is not None:
                column.set("db", exp.to_identifier(duckdb_schema(db.name)))
        return tree

    # -- transforms --------------------------------------------------------------------------

    @staticmethod
    def _check_supported(sql: str, tree: exp.Expression) -> None:
        if isinstance(tree, exp.Insert):
            if (
                tree.args.get("conflict")
                or tree.args.get("ignore")
                or "REPLACE" == sql.lstrip().split()[0].upper()
            ):
                raise UntranslatableStatement(
                    sql, "INSERT IGNORE / REPLACE / ON DUPLICATE KEY UPDATE in statement format"
                )
        tables = [t for t in tree.find_all(exp.Table)]
        if isinstance(tree, exp.Update | exp.Delete) and (
            tree.args.get("from")
            or tree.args.get("joins")
            or (isinstance(tree.this, exp.Table) and tree.this.args.get("joins"))
        ):
            raise UntranslatableStatement(sql, "multi-table UPDATE/DELETE in statement format")
        if not tables:
            raise UntranslatableStatement(sql, "no table")

    @staticmethod
    def _qualify_tables(tree: exp.Expression, ctx: SessionContext) -> None:
        cte_names = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            name = table.name
            db = table.db or None
            if not name or (db is None and name in cte_names):
                continue
            temp = ctx.temporary_tables.get((db or ctx.default_db, name))
            if temp is not None:
                table.set("db", exp.to_identifier(temp[0]))
                table.set("this", exp.to_identifier(temp[1]))
            elif db is None and ctx.default_db:
                table.set("db", exp.to_identifier(ctx.default_db))

    @staticmethod
    def _substitute_session(sql: str, tree: exp.Expression, ctx: SessionContext) -> None:
        for param in list(tree.find_all(exp.Parameter)):
            name = param.name.lower()
            # A variable the source never set is NULL there too (and logged as such).
            param.replace(literal(ctx.user_vars.get(name)))
        for func in list(tree.find_all(exp.Anonymous)):
            fname = func.name.upper()
            if fname == "LAST_INSERT_ID" and not func.expressions:
                func.replace(literal(ctx.last_insert_id or 0))
            elif fname in ("UNIX_TIMESTAMP",) and not func.expressions:
                func.replace(literal(int(ctx.timestamp)))
            elif fname in ("SYSDATE", "UTC_TIMESTAMP", "NOW"):
                func.replace(_timestamp_literal(ctx.timestamp))
            elif fname in (
                "UUID",
                "UUID_SHORT",
                "CONNECTION_ID",
                "USER",
                "CURRENT_USER",
                "FOUND_ROWS",
                "ROW_COUNT",
            ):
                raise UntranslatableStatement(sql, f"{fname}() cannot be reproduced from the relay log")
        for node in list(tree.find_all(*_NOW_FUNCTIONS)):
            node.replace(_timestamp_literal(ctx.timestamp))
        for node in list(tree.find_all(exp.CurrentDate)):
            node.replace(exp.Cast(this=_timestamp_literal(ctx.timestamp), to=exp.DataType.build("DATE")))

    def _insert(
        self, sql: str, tree: exp.Insert, ctx: SessionContext, catalog: Catalog, rand: MysqlRand | None
    ) -> str:
        target = tree.this
        table_expr = target.this if isinstance(target, exp.Schema) else target
        table = catalog.get((table_expr.db, table_expr.name)) if isinstance(table_expr, exp.Table) else None
        columns = [c.name for c in target.expressions] if isinstance(target, exp.Schema) else None
        source = tree.expression
        auto = next((c for c in table.columns if c.auto_increment), None) if table else None
        needs_id = (
            auto is not None
            and ctx.insert_id is not None
            and columns is not None
            and auto.name.lower() not in {c.lower() for c in columns}
        )
        if isinstance(source, exp.Values):
            rows = list(source.expressions)
            for i, row in enumerate(rows):
                if rand is not None:
                    for node in list(row.find_all(exp.Rand)):
                        node.replace(literal(rand.next()))
                if needs_id:
                    assert ctx.insert_id is not None and auto is not None
                    row.append("expressions", literal(ctx.insert_id + i * ctx.auto_increment_increment))
            if needs_id:
                assert isinstance(target, exp.Schema) and auto is not None
                target.append("expressions", exp.to_identifier(auto.name))
        else:
            if rand is not None and list(tree.find_all(exp.Rand)):
                raise UntranslatableStatement(sql, "RAND() in INSERT … SELECT")
            if needs_id:
                assert isinstance(target, exp.Schema) and auto is not None and ctx.insert_id is not None
                if not isinstance(source, exp.Select):
                    raise UntranslatableStatement(
                        sql, "INSERT … SELECT with a set operation and AUTO_INCREMENT"
                    )
                # Number the rows in the order the SELECT produces them (its ORDER BY); each takes
                # the next AUTO_INCREMENT value, as on the source.
                inner = source.copy()
                order = inner.args.get("order")
                window = exp.Window(this=exp.RowNumber(), order=order.copy() if order else None)
                width = len(inner.expressions)
                inner.set("expressions", [exp.alias_(e, f"__c{i}") for i, e in enumerate(inner.expressions)])
                inner.append("expressions", exp.alias_(window, "__rn"))
                base = ctx.insert_id - ctx.auto_increment_increment
                id_expr = exp.Add(
                    this=literal(base),
                    expression=exp.Mul(
                        this=exp.column("__rn"), expression=literal(ctx.auto_increment_increment)
                    ),
                )
                outer = exp.select(*[exp.column(f"__c{i}") for i in range(width)], id_expr).from_(
                    exp.alias_(exp.Subquery(this=inner), "__numbered")
                )
                outer = outer.order_by("__rn")
                tree.set("expression", outer)
                target.append("expressions", exp.to_identifier(auto.name))
        return self._duckdb_sql(sql, tree)

    @staticmethod
    def _limited(sql: str, tree: exp.Update | exp.Delete) -> exp.Expression:
        """UPDATE/DELETE … ORDER BY … LIMIT n: DuckDB has neither, so pick the rows by rowid."""
        limit = tree.args.get("limit")
        order = tree.args.get("order")
        if limit is None and order is None:
            return tree
        table = tree.this if isinstance(tree, exp.Update) else tree.this
        select = exp.select("rowid").from_(table.copy())
        where = tree.args.get("where")
        if where is not None:
            select = select.where(where.this.copy())
        if order is not None:
            select.set("order", order.copy())
        if limit is not None:
            select.set("limit", limit.copy())
        tree.set("limit", None)
        tree.set("order", None)
        tree.set("where", exp.Where(this=exp.In(this=exp.column("rowid"), query=exp.Subquery(this=select))))
        return tree

    def _per_row_with_rand(
        self, sql: str, tree: exp.Update | exp.Delete, catalog: Catalog, rand: MysqlRand, con: object
    ) -> Iterator[str]:
        """RAND() in UPDATE: MySQL draws one value per row in scan order; InnoDB scans by primary
        key, so the rows are taken in key order and updated one by one with their own values."""
        if not isinstance(tree, exp.Update) or con is None:
            raise UntranslatableStatement(sql, "RAND() in a statement over several rows")
        table_expr = tree.this
        table: MysqlTable | None = catalog.get((table_expr.db, table_expr.name))
        if table is None or not table.primary_key:
            raise UntranslatableStatement(sql, "RAND() in UPDATE of a table without a primary key")
        keys = [exp.column(k) for k in table.primary_key]
        select = exp.select(*keys).from_(table_expr.copy())
        where = tree.args.get("where")
        if where is not None:
            select = select.where(where.this.copy())
        select = select.order_by(*[k.copy() for k in keys])
        if tree.args.get("limit") is not None:
            select.set("limit", tree.args["limit"].copy())
        rows = con.execute(self._duckdb_sql(sql, select)).fetchall()  # type: ignore[attr-defined]
        for row in rows:
            single = tree.copy()
            single.set("limit", None)
            single.set("order", None)
            for node in list(single.find_all(exp.Rand)):
                node.replace(literal(rand.next()))
            match = exp.and_(
                *[
                    exp.EQ(this=exp.column(k), expression=literal(v))
                    for k, v in zip(table.primary_key, row, strict=True)
                ]
            )
            single.set("where", exp.Where(this=match))
            yield self._duckdb_sql(sql, single)


def _timestamp_literal(ts: float) -> exp.Expression:
    moment = dt.datetime.fromtimestamp(ts, dt.UTC).replace(tzinfo=None)
    return exp.Cast(this=exp.Literal.string(moment.isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMP"))
