"""Executing one transaction's events against the slave, inside a DuckDB transaction opened by the
caller: row events go to the set-based RowApplier, queries through DDL or statement translation.

Used by the single applier and by every worker of the multi-threaded one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..binlog.columns import RowImages, decode_rows_event
from ..binlog.constants import INTVAR_INSERT_ID, INTVAR_LAST_INSERT_ID
from ..binlog.events import Gtid, Intvar, MariaGtidEvent, Query, Rand, RowsEvent, TableMap, UserVar, Xid
from ..slave.database import Slave
from ..slave.ddl import DdlTranslator
from ..slave.rowapply import ER_NO_SUCH_TABLE, ApplyError, RowApplier, quote_ident, table_ref
from ..slave.schema import Catalog
from ..slave.statements import SessionContext, StatementTranslator
from ..slave.types import duckdb_type
from ..transactions import Transaction, TransactionPart, statement_verb

# The source's temporary tables live as real tables here, one name per (session, database, table):
# statement-format DML reads and writes them, and they outlast an applier restart like the
# source's session did. The name is never parsed back: the catalog keeps the model under it.
TEMPORARY_SCHEMA = "__relaydeck_tmp"


def temporary_name(thread_id: int, schema: str, name: str) -> str:
    return f"{thread_id}/{schema}/{name}"


# Statements that only delimit a transaction: their effect is the grouping itself.
_DELIMITERS = frozenset({"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "XA"})
_DML = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE"})


_NEVER_STRUCTURAL = frozenset({TableMap, RowsEvent, Xid, Gtid, MariaGtidEvent})


def is_structural(txn: Transaction) -> bool:
    """Transactions that change definitions: applied alone, in their own DuckDB transaction."""
    if txn.is_ddl:
        return True
    for logged in txn.events:
        event = logged.event
        if type(event) in _NEVER_STRUCTURAL:  # once per event applied: the common types first
            continue
        if isinstance(event, Query):
            if event.query == "BEGIN":
                continue
            verb = statement_verb(event.query)
            if verb not in _DELIMITERS and verb not in _DML and verb != "ROLLBACK":
                return True
    return False


@dataclass
class _Session:
    """What the source logged about its session before a statement (WL#5754: kept with the query)."""

    user_vars: dict[str, object] = field(default_factory=dict)
    insert_id: int | None = None
    last_insert_id: int | None = None
    rand_seeds: tuple[int, int] | None = None


class TransactionExecutor:
    """Applies transactions to a slave; the caller owns BEGIN/COMMIT and calls flush() before it."""

    def __init__(self, slave: Slave, strict: bool = True, flush_bytes: int | None = None) -> None:
        """flush_bytes: hand the decoded rows to DuckDB whenever their rows events reach this many
        bytes, inside the caller's transaction, so that a batch's decoded rows are never all held."""
        self.slave = slave
        self.flush_bytes = flush_bytes
        self._pending_bytes = 0
        self.rows = RowApplier(slave.con, strict=strict)
        self.ddl = DdlTranslator()
        self.statements = StatementTranslator()
        self._table_maps: dict[int, TableMap] = {}

    def apply(
        self, txn: Transaction | TransactionPart, decoded: Mapping[int, RowImages] | None = None
    ) -> None:
        """decoded: row images the coordinator already decoded, by index in txn.events. A part of a
        large transaction is applied like a transaction: its table maps stay for the next parts."""
        session = _Session()
        for index, logged in enumerate(txn.events):
            event = logged.event
            kind = type(event)  # exact types first: this runs once per event applied
            if kind is TableMap:
                self._table_maps[event.table_id] = event
            elif kind is RowsEvent:
                self._rows(event, decoded.get(index) if decoded else None)
                if self.flush_bytes is not None:
                    self._pending_bytes += logged.end_pos - logged.pos
                    if self._pending_bytes >= self.flush_bytes:
                        self.flush()
            elif kind is Query and event.query == "BEGIN":
                session = _Session()  # what _query does for it, without parsing the statement
            elif isinstance(event, Query):
                self._query(event, session, logged.header.timestamp)
                session = _Session()
            elif isinstance(event, TableMap):
                self._table_maps[event.table_id] = event
            elif isinstance(event, RowsEvent):
                self._rows(event, decoded.get(index) if decoded else None)
            elif isinstance(event, UserVar):
                session.user_vars[event.name.lower()] = event.value
            elif isinstance(event, Intvar):
                if event.kind == INTVAR_INSERT_ID:
                    session.insert_id = event.value
                elif event.kind == INTVAR_LAST_INSERT_ID:
                    session.last_insert_id = event.value
            elif isinstance(event, Rand):
                session.rand_seeds = (event.seed1, event.seed2)

    def flush(self) -> None:
        self._pending_bytes = 0
        self.rows.flush()

    def discard(self) -> None:
        self._pending_bytes = 0
        self.rows.discard()

    def _rows(self, event: RowsEvent, images: RowImages | None) -> None:
        table_map = self._table_maps.get(event.table_id)
        if table_map is None:
            raise ApplyError(1593, f"rows event for table_id {event.table_id} has no table map before it")
        table = self.slave.catalog.get((table_map.schema, table_map.table))
        if table is None:
            raise ApplyError(ER_NO_SUCH_TABLE, f"Table '{table_map.schema}.{table_map.table}' doesn't exist")
        if images is None:
            try:
                images = decode_rows_event(event, table_map)
            except ValueError as exc:
                raise ApplyError(1594, f"Relay log read failure: {exc}") from None
        self.rows.add(images, table)

    def _query(self, event: Query, session: _Session, timestamp: int) -> None:
        verb = statement_verb(event.query)
        if verb in _DELIMITERS or verb == "ROLLBACK":
            # ROLLBACK TO SAVEPOINT: row format logs only what survived; a final ROLLBACK ends a
            # group whose logged changes were to non-transactional tables and did happen.
            return
        self.rows.flush()  # statements see every row change logged before them
        database = event.database or None
        temporaries = self._session_temporaries(event.thread_id)
        if verb in _DML:
            context = SessionContext(
                default_db=database,
                user_vars=dict(session.user_vars),
                insert_id=session.insert_id,
                last_insert_id=session.last_insert_id,
                rand_seeds=session.rand_seeds,
                timestamp=timestamp + (event.status.microseconds or 0) / 1e6,
                thread_id=event.thread_id,
                auto_increment_increment=event.status.auto_increment_increment or 1,
                auto_increment_offset=event.status.auto_increment_offset or 1,
                sql_mode=event.status.sql_mode or 0,
                temporary_tables={
                    key: (TEMPORARY_SCHEMA, slave_name) for key, slave_name in temporaries.items()
                },
            )
            statements = self.statements.translate(event.query, context, self.slave.catalog, self.slave.con)
            target = self.statements.last_target
            if target is not None and target[0] != TEMPORARY_SCHEMA and target not in self.slave.catalog:
                raise ApplyError(ER_NO_SUCH_TABLE, f"Table '{target[0]}.{target[1]}' doesn't exist")
            for sql in statements:
                self.slave.con.execute(sql)
            self._check_unique(target)
            return
        session_catalog = self.slave.catalog.copy()
        for (schema, name), slave_name in temporaries.items():
            model = session_catalog[(TEMPORARY_SCHEMA, slave_name)]
            session_catalog.set_temporary(replace(model, schema=schema, name=name, temporary=True))
        plan = self.ddl.translate(event.query, database, session_catalog, timestamp=float(timestamp))
        for sql in plan.statements:
            self.slave.con.execute(sql)
        catalog = self._realize_temporaries(event, plan.kind, temporaries, plan.catalog)
        self.slave.save_catalog(catalog)

    def _check_unique(self, key: tuple[str, str] | None) -> None:
        """MySQL would have refused a statement that duplicates a primary key (error 1062); the slave
        has no constraints (see slave/ddl.py), so the table is checked after the statement."""
        table = self.slave.catalog.get(key) if key else None
        if table is None or not table.primary_key:
            return
        keys = ", ".join(quote_ident(c) for c in table.primary_key)
        dup = self.slave.con.execute(
            f"SELECT {keys} FROM {table_ref(table.schema, table.name)} GROUP BY ALL HAVING count(*) > 1 LIMIT 1"
        ).fetchall()
        if dup:
            shown = "-".join(str(v) for v in dup[0])
            raise ApplyError(
                1062, f"Duplicate entry '{shown}' for key 'PRIMARY' in {table.schema}.{table.name}"
            )

    def _session_temporaries(self, thread_id: int) -> dict[tuple[str, str], str]:
        """This source session's temporary tables: (database, name) -> name in TEMPORARY_SCHEMA."""
        prefix = f"{thread_id}/"
        out = {}
        for schema, slave_name in self.slave.catalog:
            if schema == TEMPORARY_SCHEMA and slave_name.startswith(prefix):
                _, db, name = slave_name.split("/", 2)
                out[(db, name)] = slave_name
        return out

    def _realize_temporaries(
        self, event: Query, kind: str, before: dict[tuple[str, str], str], catalog: Catalog
    ) -> Catalog:
        """Create, drop or empty the slave tables behind the session's temporary tables."""
        after = {key: table for key, table in catalog.temporary.items()}
        for key in list(after):
            catalog.remove_temporary(*key)
        con = self.slave.con
        for key, slave_name in before.items():
            if key not in after:
                con.execute(f"DROP TABLE IF EXISTS {table_ref(TEMPORARY_SCHEMA, slave_name)}")
                del catalog[(TEMPORARY_SCHEMA, slave_name)]
        for key, table in after.items():
            slave_name = temporary_name(event.thread_id, *key)
            model = replace(table, schema=TEMPORARY_SCHEMA, name=slave_name, temporary=False)
            old = catalog.get((TEMPORARY_SCHEMA, slave_name))
            if key not in before:
                columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in model.columns)
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(TEMPORARY_SCHEMA)}")
                con.execute(f"CREATE TABLE {table_ref(TEMPORARY_SCHEMA, slave_name)} ({columns})")
            elif statement_verb(event.query) == "TRUNCATE":
                con.execute(f"DELETE FROM {table_ref(TEMPORARY_SCHEMA, slave_name)}")
            elif old is not None and old.columns != model.columns:
                raise ApplyError(1105, "ALTER TABLE of a temporary table is not supported by relaydeck")
            catalog[(TEMPORARY_SCHEMA, slave_name)] = model
        return catalog
