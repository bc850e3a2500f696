"""Executing one transaction's events against the slave, inside a DuckDB transaction opened by the
caller: row events go to the set-based RowApplier, queries through DDL or statement translation.

Used by the single applier and by every worker of the multi-threaded one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..binlog.columns import RowImages, decode_rows_event
from ..binlog.constants import INTVAR_INSERT_ID, INTVAR_LAST_INSERT_ID
from ..binlog.events import Gtid, Intvar, MariaGtidEvent, Query, Rand, RowsEvent, TableMap, UserVar, Xid
from ..binlog.reader import LoggedEvent
from ..slave.database import Slave
from ..slave.names import TEMPORARY_SCHEMA
from ..slave.rowapply import (
    ER_NO_SUCH_TABLE,
    ApplyError,
    InvalidString,
    RowApplier,
    is_invalid_string,
    quote_ident,
    shown_invalid_bytes,
    slave_table_ref,
    table_ref,
)
from ..slave.schema import Catalog
from ..slave.translators import load_ddl, load_statements
from ..slave.types import duckdb_type
from ..transactions import DELIMITING_VERBS, Transaction, TransactionPart, statement_verb

if TYPE_CHECKING:
    from ..slave.ddl import DdlTranslator
    from ..slave.statements import StatementTranslator

ER_INVALID_CHARACTER_STRING = 1300


# The source's temporary tables live as real tables in TEMPORARY_SCHEMA, one name per (session,
# database, table): statement-format DML reads and writes them, and they outlast an applier restart
# like the source's session did. The name is never parsed back: the catalog keeps the model under it.
def temporary_name(thread_id: int, schema: str, name: str) -> str:
    return f"{thread_id}/{schema}/{name}"


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
            if verb not in DELIMITING_VERBS and verb not in _DML and verb != "ROLLBACK":
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
        self.rows = RowApplier(
            slave.con, strict=strict, catalog=slave.duckdb_catalog, inputs=slave.arrow_inputs
        )
        self._ddl: DdlTranslator | None = None
        self._statements: StatementTranslator | None = None
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
                self._rows(event, decoded.get(index) if decoded else None, logged)
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
                self._rows(event, decoded.get(index) if decoded else None, logged)
            elif isinstance(event, UserVar):
                session.user_vars[event.name.lower()] = event.value
            elif isinstance(event, Intvar):
                if event.kind == INTVAR_INSERT_ID:
                    session.insert_id = event.value
                elif event.kind == INTVAR_LAST_INSERT_ID:
                    session.last_insert_id = event.value
            elif isinstance(event, Rand):
                session.rand_seeds = (event.seed1, event.seed2)

    @property
    def ddl(self) -> DdlTranslator:
        # The translators load sqlglot: at the first DDL or statement, not at every start
        if self._ddl is None:
            self._ddl = load_ddl().DdlTranslator(duckdb_catalog=self.slave.duckdb_catalog)
        return self._ddl

    @property
    def statements(self) -> StatementTranslator:
        if self._statements is None:
            self._statements = load_statements().StatementTranslator(duckdb_catalog=self.slave.duckdb_catalog)
        return self._statements

    def flush(self) -> None:
        self._pending_bytes = 0
        self.rows.flush()

    def discard(self) -> None:
        self._pending_bytes = 0
        self.rows.discard()

    def _rows(self, event: RowsEvent, images: RowImages | None, logged: LoggedEvent) -> None:
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
                raise ApplyError(
                    1594, f"Relay log read failure in the rows event at {logged.log_name}:{logged.pos}: {exc}"
                ) from None
        self.rows.add(images, table)

    def _query(self, event: Query, session: _Session, timestamp: int) -> None:
        verb = statement_verb(event.query)
        if verb in DELIMITING_VERBS or verb == "ROLLBACK":
            # ROLLBACK TO SAVEPOINT: row format logs only what survived; a final ROLLBACK ends a
            # group whose logged changes were to non-transactional tables and did happen.
            return
        # Bytes the statement's character set does not allow (in it, or in a user variable it
        # reads): DuckDB takes only valid UTF-8. MySQL's error 1300, with its words.
        bad = next((t for t in (event.query, *session.user_vars.values()) if is_invalid_string(t)), None)
        if bad is not None:
            raise ApplyError(
                ER_INVALID_CHARACTER_STRING,
                f"Invalid utf8mb4 character string: '{shown_invalid_bytes(bad)}' in the statement",
            )
        self.rows.flush()  # statements see every row change logged before them
        database = event.database or None
        temporaries = self._session_temporaries(event.thread_id)
        if verb in _DML:
            statements = load_statements()
            context = statements.SessionContext(
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
            temporary = self.statements.last_target_temporary
            if target is not None and not temporary and target not in self.slave.catalog:
                raise ApplyError(ER_NO_SUCH_TABLE, f"Table '{target[0]}.{target[1]}' doesn't exist")
            for sql in statements:
                self.slave.con.execute(sql)
            self._check_unique(target, temporary, self.statements.last_assigned)
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

    def _check_unique(
        self, key: tuple[str, str] | None, temporary: bool, assigned: frozenset[str] | None = None
    ) -> None:
        """MySQL would have refused a statement that duplicates a primary key (error 1062); the slave
        has no constraints (see slave/ddl/), so the table is checked after the statement: a scan
        of the whole table, left out where the statement cannot have duplicated a key (a DELETE,
        an UPDATE that assigns none of the key's columns; assigned: see last_assigned)."""
        table = self.slave.catalog.get(key) if key else None
        if table is None or not table.primary_key:
            return
        if assigned is not None and not assigned & {c.lower() for c in table.primary_key}:
            return
        keys = ", ".join(quote_ident(c) for c in table.primary_key)
        ref = (
            table_ref(table.schema, table.name)
            if temporary
            else slave_table_ref(table, self.slave.duckdb_catalog)
        )
        dup = self.slave.con.execute(
            f"SELECT {keys} FROM {ref} GROUP BY ALL HAVING count(*) > 1 LIMIT 1"
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


def locate_invalid_string(
    txn: Transaction | TransactionPart, error: InvalidString
) -> tuple[LoggedEvent, int] | None:
    """The rows event of `txn` and the row in it (from 1) that logged the value `error` names."""
    table_maps: dict[int, TableMap] = {}
    for logged in txn.events:
        event = logged.event
        if isinstance(event, TableMap):
            table_maps[event.table_id] = event
            continue
        if not isinstance(event, RowsEvent):
            continue
        table_map = table_maps.get(event.table_id)
        if table_map is None or (table_map.schema, table_map.table) != (error.schema, error.table):
            continue
        try:
            images = decode_rows_event(event, table_map)
        except ValueError:
            continue
        for image in (images.before, images.after):
            values = image.get(error.index) if image else None
            for row, value in enumerate(values or ()):
                if value == error.value or (not error.value and is_invalid_string(value)):
                    return logged, row + 1
    return None
