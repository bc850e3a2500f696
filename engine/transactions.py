"""Events -> transactions (the seeds' "groups"), with their identity, clock and databases.

A group is what a worker applies as a unit: GTID ... XID/COMMIT, or a self-terminating statement
(DDL), with the USER_VAR/INTVAR/RAND events that belong to its query. Events that only the
coordinator acts on (format descriptions, rotates, GTID lists, heartbeats…) are passed through
between groups. A group cut off by the end of the available data is never handed on as a
transaction: it comes out as `Incomplete`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from .binlog.constants import EventType, RowsKind
from .binlog.events import (
    Gtid,
    IgnoredEvent,
    MariaGtidEvent,
    Query,
    RowsEvent,
    TableMap,
    XaPrepare,
    Xid,
)
from .binlog.reader import LoggedEvent

# Events the coordinator executes itself; they never belong to a group.
COORDINATOR_EVENTS = frozenset(
    {
        EventType.FORMAT_DESCRIPTION,
        EventType.ROTATE,
        EventType.PREVIOUS_GTIDS,
        EventType.GTID_LIST,
        EventType.BINLOG_CHECKPOINT,
        EventType.HEARTBEAT,
        EventType.HEARTBEAT_V2,
        EventType.STOP,
        EventType.START_V3,
        EventType.START_ENCRYPTION,
        EventType.INCIDENT,
        EventType.IGNORABLE,
    }
)
_DDL_VERBS = frozenset(
    {"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "ANALYZE", "OPTIMIZE", "REPAIR"}
)


# Statement verbs whose only effect is the grouping itself: they open, close or mark a transaction.
# ROLLBACK is not one of them: a final ROLLBACK may end a group whose changes to non-transactional
# tables did happen, so each reader decides what it means (applier/executor.py).
DELIMITING_VERBS = frozenset({"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE", "XA"})


def statement_verb(query: str) -> str:
    """The first keyword of a statement, skipping leading comments."""
    text = query.lstrip()
    while text.startswith("/*"):
        end = text.find("*/")
        if end < 0:
            break
        text = text[end + 2 :].lstrip()
    return text.split(None, 1)[0].upper().rstrip(";") if text else ""


def is_begin(query: str) -> bool:
    verb = statement_verb(query)
    if verb == "BEGIN":
        return True
    return verb == "XA" and query.split()[1].upper() in ("START", "BEGIN")


def is_commit_or_rollback(query: str) -> bool:
    words = query.split()
    verb = statement_verb(query)
    if verb == "COMMIT":
        return True
    return verb == "ROLLBACK" and not (len(words) > 1 and words[1].upper() == "TO")


@dataclass(slots=True, unsafe_hash=True)
class Position:
    log_name: str
    pos: int

    def __str__(self) -> str:
        return f"{self.log_name}:{self.pos}"


def describe_transaction(txn: Transaction | TransactionRecord) -> str:
    """How a DBA names a transaction in an error: its GTID, else its source position."""
    if txn.gtid:
        return f"GTID {txn.gtid}"
    return f"source position {txn.source_log_file}:{txn.source_end_pos}"


@dataclass(slots=True, unsafe_hash=True)
class Transaction:
    """One group: what a worker applies and commits as a unit."""

    events: tuple[LoggedEvent, ...]
    gtid: str | None  # 'uuid:gno', 'domain-server-seq', or None (anonymous / not logged)
    last_committed: int | None
    sequence_number: int | None
    commit_id: int | None  # MariaDB group-commit id
    databases: frozenset[str] | None  # None = the source did not log them ("unknown")
    is_ddl: bool
    start: Position
    end: Position  # relay position after the group's last event
    source_log_file: str | None
    source_end_pos: int  # end_log_pos of the last event in the source's binlog
    original_commit_timestamp: int | None  # microseconds since the epoch, where logged
    timestamp: int  # the first event's header timestamp (seconds)
    row_events: int
    size: int  # bytes of the group's events in the relay log
    # bytes of its first events, handed on ahead as TransactionParts (events holds the rest)
    streamed: int = 0

    def describe(self) -> str:
        return describe_transaction(self)


class TransactionRecord(NamedTuple):
    """A transaction without its events: what the applier schedules, records and reports of it.

    Why beside Transaction: the transactions of a prepared run (applier/prepared.py) are read and
    decoded where the run was prepared (a worker process, a Spark task); their row changes are
    already in the run's Arrow tables, so only this record of each travels to the applier, and
    it travels column-wise (PreparedRun.__getstate__, prepared_arrow.py). Its fields are
    Transaction's less the events (and is_ddl: a run holds only row-only transactions).
    """

    gtid: str | None
    start: Position
    end: Position
    source_log_file: str | None
    source_end_pos: int
    timestamp: int
    original_commit_timestamp: int | None
    size: int
    row_events: int
    # the scheduler's inputs: the source's logical clock and the databases its row events change
    last_committed: int | None
    sequence_number: int | None
    commit_id: int | None
    databases: frozenset[str]

    def describe(self) -> str:
        return describe_transaction(self)


# A record from the tuple of its fields in order, without the Python-level __new__ a named tuple's
# class adds (a quarter of the cost): the preparing stage and the applier make one per transaction.
record_from_fields = partial(tuple.__new__, TransactionRecord)


@dataclass(slots=True)
class TransactionPart:
    """The next events of a row-only transaction too large to hold whole (TransactionAssembler's
    part_bytes): applied ahead, inside the DuckDB transaction that the Transaction carrying its
    last events commits. Its table maps stay valid for the parts after it."""

    events: tuple[LoggedEvent, ...]
    gtid: str | None
    start: Position  # where the transaction starts
    size: int  # bytes of these events

    def describe(self) -> str:
        return f"GTID {self.gtid}" if self.gtid else f"the transaction at relay log {self.start}"


@dataclass(slots=True, unsafe_hash=True)
class Incomplete:
    """Events of a group that did not end: cut off by the end of data, or abandoned by the source."""

    events: tuple[LoggedEvent, ...]
    reason: str

    @property
    def start(self) -> Position:
        first = self.events[0]
        return Position(first.log_name, first.pos)


@dataclass(slots=True)
class _Open:
    events: list[LoggedEvent] = field(default_factory=list)
    multi_statement: bool = False  # BEGIN seen (or a MariaDB transactional GTID)
    gtid: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    commit_id: int | None = None
    databases: set[str] = field(default_factory=set)
    unknown_databases: bool = False
    is_ddl: bool = False
    original_commit_timestamp: int | None = None
    row_events: int = 0
    row_only: bool = True  # GTID, BEGIN, table maps and rows events so far: parts may be cut
    rows_bytes: int = 0  # bytes of the rows events in `events` (counted only with part_bytes)
    first: LoggedEvent | None = None  # the first event, once parts were handed on
    streamed: int = 0  # bytes handed on as parts


class TransactionAssembler:
    """Feeds events in; yields transactions, coordinator events and incomplete tails, in order.

    part_bytes: a row-only multi-statement transaction whose rows events held reach this many
    bytes is handed on in TransactionParts as it goes, so that its reader never holds it whole.
    """

    def __init__(self, part_bytes: int | None = None) -> None:
        self._open: _Open | None = None
        self.abandoned = 0
        self.part_bytes = part_bytes

    def feed(self, logged: LoggedEvent) -> tuple[Transaction | LoggedEvent | Incomplete, ...]:
        """What this event completes: nothing, a transaction, or a coordinator event (in order)."""
        event = logged.event
        kind = type(event)
        group = self._open
        # the most frequent events first: this runs once per event of every relay log
        if group is not None:
            if kind is TableMap:
                group.events.append(logged)
                group.databases.add(event.schema)  # type: ignore[attr-defined]
                return ()
            if kind is RowsEvent:
                group.events.append(logged)
                group.row_events += 1
                if not group.multi_statement and event.statement_end:  # type: ignore[attr-defined]
                    return (self._close(),)  # pre-GTID, BEGIN-less row changes (old logs)
                if self.part_bytes is not None and group.row_only and group.multi_statement:
                    group.rows_bytes += logged.end_pos - logged.pos
                    if group.rows_bytes >= self.part_bytes:
                        return (self._part(),)
                return ()
            if kind is Xid:
                group.events.append(logged)
                return (self._close(),)
        code = logged.type_code
        if code in COORDINATOR_EVENTS or kind is IgnoredEvent:
            if code == EventType.FORMAT_DESCRIPTION and logged.copied_fde and logged.source_end_pos:
                # A source FDE with a real position means the source restarted: MySQL rolls back
                # the unfinished group it interrupted.
                return (*self._abandon("the source restarted before it ended"), logged)
            return (logged,)
        if kind is Gtid or kind is MariaGtidEvent:
            open_group = self._open
            abandoned = (
                tuple(self._abandon("a new transaction began before it ended"))
                if open_group is not None and open_group.events
                else ()
            )
            group = self._open = _Open()
            group.events.append(logged)
            if kind is Gtid:
                group.gtid = None if event.anonymous else event.gtid_text  # type: ignore[attr-defined]
                group.last_committed = event.last_committed  # type: ignore[attr-defined]
                group.sequence_number = event.sequence_number  # type: ignore[attr-defined]
                group.original_commit_timestamp = event.original_commit_timestamp  # type: ignore[attr-defined]
            else:
                group.gtid = str(event.gtid)  # type: ignore[attr-defined]
                group.commit_id = event.commit_id  # type: ignore[attr-defined]
                group.is_ddl = event.is_ddl  # type: ignore[attr-defined]
                group.multi_statement = not event.standalone  # type: ignore[attr-defined]
            return abandoned
        if group is None:
            group = self._open = _Open()
        group.events.append(logged)
        if isinstance(event, Query):
            if is_begin(event.query):
                group.multi_statement = True
                return ()
            group.row_only = False
            if is_commit_or_rollback(event.query):
                return (self._close(),)
            self._note_query_databases(group, event)
            if not group.multi_statement:
                group.is_ddl = group.is_ddl or statement_verb(event.query) in _DDL_VERBS
                return (self._close(),)
            return ()
        if kind is XaPrepare:
            return (self._close(),)
        if kind is TableMap:
            group.databases.add(event.schema)  # type: ignore[attr-defined]
        elif kind is RowsEvent:
            group.row_events += 1
            if not group.multi_statement and event.statement_end:  # type: ignore[attr-defined]
                return (self._close(),)
        elif kind is Xid:
            return (self._close(),)
        else:
            group.row_only = False
        # Anything else (user variables, rows queries, payloads, legacy LOAD DATA blocks,
        # transaction context) stays in the group.
        return ()

    @property
    def idle(self) -> bool:
        """No group is open: the next event starts one or passes through."""
        return self._open is None

    def finish(self) -> Iterator[Incomplete]:
        """The end of the available data: an open group is incomplete, never a transaction."""
        if self._open is not None and self._open.events:
            events = tuple(self._open.events)
            self._open = None
            yield Incomplete(events, "cut off by the end of the available relay log data")

    def _abandon(self, reason: str) -> Iterator[Incomplete]:
        if self._open is not None and self._open.events:
            self.abandoned += 1
            events = tuple(self._open.events)
            self._open = None
            yield Incomplete(events, reason)

    @staticmethod
    def _note_query_databases(group: _Open, event: Query) -> None:
        names = event.status.updated_db_names
        if names is not None:
            if event.status.updated_db_over_max:
                group.unknown_databases = True
            group.databases.update(names)
        elif event.database:
            group.databases.add(event.database)
        else:
            group.unknown_databases = True

    def _part(self) -> TransactionPart:
        """The open group's events so far, handed on; the group goes on without them."""
        group = self._open
        assert group is not None
        events = tuple(group.events)
        if group.first is None:
            group.first = events[0]
        size = sum([e.end_pos - e.pos for e in events if not e.inner])
        group.events = []
        group.rows_bytes = 0
        group.streamed += size
        return TransactionPart(events, group.gtid, Position(group.first.log_name, group.first.pos), size)

    def _close(self) -> Transaction:
        group = self._open
        assert group is not None
        self._open = None
        first, last = group.first or group.events[0], group.events[-1]
        events = tuple(group.events)
        size = group.streamed + sum([e.end_pos - e.pos for e in events if not e.inner])
        return Transaction(
            events=events,
            gtid=group.gtid,
            last_committed=group.last_committed,
            sequence_number=group.sequence_number,
            commit_id=group.commit_id,
            databases=None if group.unknown_databases else frozenset(group.databases),
            is_ddl=group.is_ddl,
            start=Position(first.log_name, first.pos),
            end=Position(last.log_name, last.end_pos),
            source_log_file=last.source_log_file,
            source_end_pos=last.source_end_pos,
            original_commit_timestamp=group.original_commit_timestamp,
            timestamp=first.header.timestamp,
            row_events=group.row_events,
            size=size,
            streamed=group.streamed,
        )


def assemble(events: Iterable[LoggedEvent]) -> Iterator[Transaction | LoggedEvent | Incomplete]:
    """Group a whole event stream; a trailing open group comes out as Incomplete."""
    assembler = TransactionAssembler()
    for logged in events:
        yield from assembler.feed(logged)
    yield from assembler.finish()


_ROW_KIND_NAMES = {RowsKind.WRITE: "INSERT", RowsKind.UPDATE: "UPDATE", RowsKind.DELETE: "DELETE"}


def row_kind_name(kind: RowsKind) -> str:
    return _ROW_KIND_NAMES[kind]
