"""What a worker process of the process pool does with one segment of a relay log.

It reads the segment, assembles its transactions and, for each run of consecutive row-only
transactions (GTID, BEGIN, table maps, row events, XID/COMMIT), decodes the row images and
collects them per table, column-wise, into Arrow tables of operations: the same operations the
set-based RowApplier collects (slave/rowapply.py), so the coordinator only has to apply them.
Everything else — coordinator events, DDL, statements, transactions whose images are partial or
do not decode — comes back as read, for the coordinator to execute the ordinary way. Nothing
here needs the slave: conversions that depend on the slave's definitions happen at apply time.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from ..binlog.columns import ColumnInfo, RowDecoder, cached_full_decoder, row_decoder
from ..binlog.compiled import load
from ..binlog.constants import ROWS_EVENT_TYPES, ChecksumAlg, EventType, RowsKind
from ..binlog.events import Gtid, MariaGtidEvent, Query, RowsEvent, TableMap, Xid
from ..binlog.events.query import decoded_begins
from ..binlog.events.rows import shared_table_maps
from ..binlog.primitives import uuid_text
from ..binlog.reader import BinlogFile, LoggedEvent
from ..errors import BinlogError, RelayLogGap
from ..gtids import GtidBatch, MariaGtid
from ..relaylog.continuity import Continuity
from ..relaylog.segments import Segment
from ..scheduling.rowkeys import WritesetKeys, key_row_hashes
from ..slave.rowapply import operations_table, value_converter
from ..transactions import (
    Incomplete,
    Position,
    Transaction,
    TransactionAssembler,
    TransactionRecord,
    record_from_fields,
)
from .prepared import PreparedRun, PreparedSegment, RunWritesets, TableOps
from .prepared_arrow import decode_segment, encode_segment

_PLAIN = frozenset({Gtid, MariaGtidEvent, Xid})
_WRITE, _UPDATE = RowsKind.WRITE, RowsKind.UPDATE
# The only statements a run's transactions hold, compared as logged (whole, not by verb): the
# BEGIN that opens a row-only transaction and the COMMIT that ends one without an XID.
_RUN_STATEMENTS = frozenset({"BEGIN", "COMMIT"})
# what a malformed row image raises in the compiled decoder (RowDecoder.decode_data_into words it)
_DECODING_FAULTS = (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError, OverflowError)
_ROWS_KINDS = {code: kind for code, (kind, _version, _compressed) in ROWS_EVENT_TYPES.items()}
_runscan = load("_runscan", package="engine.binlog")
_CRC32 = int(ChecksumAlg.CRC32)
_MARIADB_GTID = int(EventType.MARIADB_GTID)
_MYSQL_GTID = int(EventType.GTID)
_SCANNED_GTIDS = frozenset({_MARIADB_GTID, _MYSQL_GTID})  # the events the compiled scanner starts at
_TABLE_MAPS = shared_table_maps()  # one dict for the process's life (emptied, never replaced)
_BEGINS = decoded_begins()  # likewise
_SIDS: dict[bytes, str] = {}  # the text of each MySQL source UUID the scanner returned


def _mysql_gtid_text(sid: bytes, gno: int) -> str:
    """'uuid:gno' of a MySQL GTID the compiled scanner read (each source UUID formatted once)."""
    text = _SIDS.get(sid)
    if text is None:
        if len(_SIDS) >= 1024:
            _SIDS.clear()
        text = _SIDS[sid] = uuid_text(sid)
    return f"{text}:{gno}"


class _Rescan(Exception):
    """A run read by the compiled scanner must go back to the coordinator as read: the segment
    is read again without the scanner (rare: only values Arrow refuses lead here)."""


@dataclass(slots=True)
class _Table:
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    # each rows event's operations, four integers each: seq of its first, its rows, 1 for an
    # UPDATE's two images a row, else 0, op of its rows; seq, op and must are spelled out once,
    # at build(). Flat, because numpy reads a flat list of integers 2.5x as fast as one of tuples.
    spans: list[int] = field(default_factory=list)
    operations: int = 0
    values: list[Any] = field(default_factory=list)  # per column: a list, or a ColumnBuffer
    rows: int = 0
    both: list[Any] = field(default_factory=list)  # values twice: an UPDATE's before and after images

    def operations_arrays(self) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """seq, op and must of every operation (see rowapply.operations_table): a DELETE's rows
        0/1 (delete, the row must exist), a WRITE's 1/0, an UPDATE's rows 0/1 then 1/null."""
        spans = np.array(self.spans, dtype=np.int64).reshape(-1, 4)
        firsts, counts, updates, ops = spans[:, 0], spans[:, 1], spans[:, 2], spans[:, 3]
        per_span = counts << updates  # an UPDATE's rows are two operations each
        starts = np.cumsum(per_span) - per_span  # each span's first operation
        index = np.arange(self.operations)
        local = index - np.repeat(starts, per_span)  # the operation's place in its span
        seq = np.repeat(firsts, per_span) + local
        update = np.repeat(updates, per_span).astype(bool)
        after = update & (local % 2 == 1)  # an UPDATE's after image: an upsert, either way
        op = np.where(update, local % 2, np.repeat(ops, per_span)).astype(np.int8)
        must = pa.array(1 - op, type=pa.int8(), mask=after)
        return seq, op, must


class _Plan(NamedTuple):
    """How the rows events of one table map, kind and width are taken into a run."""

    key: tuple[str, str]  # (schema, table)
    decoder: RowDecoder
    program: Any  # the decoder's compiled form (binlog/_rowimage.pyx), None without it
    columns: tuple[ColumnInfo, ...]
    two: bool  # an UPDATE: two images a row, two operations
    op: int  # the op of its rows' operations (1: WRITE), see _Table.spans
    table_map: TableMap  # held: its id names no other map while the run lives


class _RunBuilder:
    """Collects row-only transactions into a run; refuses what a run cannot hold."""

    def __init__(self, keys: WritesetKeys | None = None) -> None:
        self.keys = keys
        self.op_starts: list[int] = []
        self.transactions: list[TransactionRecord] = []
        # each one's events; None for one the compiled scanner read
        self.sources: list[tuple[LoggedEvent, ...] | list[LoggedEvent] | None] = []
        self.tables: dict[tuple[str, str], _Table] = {}
        self.gtids = GtidBatch()
        # MariaDB GTIDs by domain: (lowest seq_no, highest, the highest's server id); see _maria_gtid
        self._maria: dict[int, tuple[int, int, int]] = {}
        self._plans: dict[tuple[int, int, int], _Plan] = {}
        self.seq = 0
        self.rows = 0

    def add(self, txn: Transaction) -> bool | None:
        """True: taken. False: row-only, but its tables' column lists differ from the run's (it
        starts the next run). None: not row-only, or its images cannot be taken set-based."""
        if txn.is_ddl:
            return None
        for logged in txn.events:
            event = logged.event
            kind = type(event)
            if kind is MariaGtidEvent:
                if event.xa_format_id is not None:
                    return None
            elif kind is Query:
                if event.query not in _RUN_STATEMENTS:
                    return None
            elif kind is not TableMap and kind is not RowsEvent and kind not in _PLAIN:
                return None
        return self._add_row_only(txn.events, txn.gtid, txn.original_commit_timestamp)

    def _add_row_only(
        self,
        events: tuple[LoggedEvent, ...] | list[LoggedEvent],
        gtid: str | None,
        original_commit_timestamp: int | None,
        maria_gtid: MariaGtid | None = None,
    ) -> bool | None:
        """add() for a transaction known to hold nothing but its GTID, BEGIN/COMMIT, table maps,
        rows events and XID; maria_gtid: its MariaDB GTID as read, when the caller has it."""
        maps: dict[int, TableMap] = {}
        decoded = []
        databases = set()
        for logged in events:
            event = logged.event
            kind = type(event)
            if kind is TableMap:
                maps[event.table_id] = event
                databases.add(event.schema)
            elif kind is RowsEvent:
                table_map = maps.get(event.table_id)
                if table_map is None:
                    return None
                try:
                    decoder = row_decoder(event, table_map)
                except ValueError:
                    return None  # the coordinator's own decoding reports it
                if not decoder.full:
                    return None  # partial images are applied row by row
                decoded.append((event.rows_data, table_map, decoder))
        first, last = events[0], events[-1]
        opening = first.event
        last_committed = sequence_number = commit_id = None
        if type(opening) is Gtid:
            last_committed, sequence_number = opening.last_committed, opening.sequence_number
        elif type(opening) is MariaGtidEvent:
            commit_id = opening.commit_id
        if first.log_name is last.log_name and not last.inner:  # one file, one stretch of it
            size = last.end_pos - first.pos
        else:
            size = sum([e.end_pos - e.pos for e in events if not e.inner])
        transaction = TransactionRecord(
            gtid,
            Position(first.log_name, first.pos),
            Position(last.log_name, last.end_pos),
            last.source_log_file,
            last.header.log_pos,
            first.header.timestamp,
            original_commit_timestamp,
            size,
            len(decoded),
            last_committed,
            sequence_number,
            commit_id,
            frozenset(databases),
        )
        return self._take(decoded, transaction, events, maria_gtid)

    def add_scanned(
        self,
        scanned: tuple[Any, ...],
        log_name: str,
        pos: int,
        source_log_file: str,
        mysql_gtid: str | None = None,
    ) -> bool | None:
        """add() for a transaction the compiled scanner read at (log_name, pos); mysql_gtid: the
        text of its MySQL GTID, where the caller has made it.

        Most of a segment comes this way, a transaction of a few rows events at a time, so this
        is _take() written out for it, in one pass: each rows event's decoder, table and kind of
        operation are looked up once per run (_Plan), the compiled decoder is called directly,
        and whatever the transaction queued is taken back when one of its events cannot be
        taken. With Continuity.scanned's shortcut, preparing the MariaDB capture's m1 channel took
        0.76-0.78 of the CPU time it took before (best of 5, two runs)."""
        if len(scanned) == 8:  # MariaDB's
            end, server_id, domain, seq_no, timestamp, source_end_pos, rows, commit_id = scanned
            gtid = f"{domain}-{server_id}-{seq_no}"
            last_committed = sequence_number = original_commit_timestamp = None
        else:
            end, server_id, sid, gno, timestamp, source_end_pos, rows = scanned[:7]
            last_committed, sequence_number, original_commit_timestamp = scanned[7:]
            gtid = mysql_gtid or _mysql_gtid_text(sid, gno)
            domain = commit_id = None
        plans, tables = self._plans, self.tables
        # where each table this transaction changes stands, to take it back (None: new to the run)
        marks: dict[tuple[str, str], tuple[int, int, int] | None] = {}
        seq = before = self.seq
        count = 0
        for table_map, type_code, width, data in rows:
            plan = plans.get((id(table_map), type_code, width))
            if plan is None:
                plan = self._plan(table_map, type_code, width)
                if plan is None:
                    self._take_back(marks)
                    return None  # not compiled yet, or partial: the reader's way
            key = plan.key
            table = tables.get(key)
            if key not in marks:
                if table is None:
                    marks[key] = None
                    table = self._new_table(key, plan.decoder)
                elif table.columns is not plan.columns and table.columns != plan.columns:
                    self._take_back(marks)
                    return False
                else:
                    marks[key] = (len(table.spans), table.operations, table.rows)
            two = plan.two
            program = plan.program
            try:
                if program is None:
                    n = plan.decoder.decode_data_into(data, table_map, table.both if two else table.values)
                else:
                    # the compiled decoder itself: decode_data_into() words the error, for the
                    # coordinator's decoding, which reports it; here a fault only sends it there
                    at, n = program.decode_into(data, table.both if two else table.values)
                    if at != len(data):
                        raise ValueError
            except _DECODING_FAULTS:
                self._take_back(marks)
                return None  # the coordinator's own decoding reports it
            table.spans.extend((seq, n, two, plan.op))
            operations = n + n if two else n
            table.operations += operations
            seq += operations
            table.rows += n
            count += n
        self.seq = seq
        self.rows += count
        self.transactions.append(
            record_from_fields(
                (
                    gtid,
                    Position(log_name, pos),
                    Position(log_name, end),
                    source_log_file,
                    source_end_pos,
                    timestamp,
                    original_commit_timestamp,
                    end - pos,
                    len(rows),
                    last_committed,
                    sequence_number,
                    commit_id,
                    frozenset([key[0] for key in marks]),
                ),
            )
        )
        self.op_starts.append(before)
        self.sources.append(None)
        if domain is None:
            self.gtids.add(gtid)  # MySQL's: the batch folds consecutive numbers into ranges
        else:
            self._maria_gtid(domain, server_id, seq_no)
        return True

    def _plan(self, table_map: TableMap, type_code: int, width: int) -> _Plan | None:
        decoder = cached_full_decoder(table_map, _ROWS_KINDS[type_code], width)
        if decoder is None or not decoder.full:
            return None
        kind = decoder.kind
        plan = _Plan(
            (table_map.schema, table_map.table),
            decoder,
            decoder.compiled_program,
            decoder.columns,
            kind is _UPDATE,
            1 if kind is _WRITE else 0,
            table_map,
        )
        self._plans[(id(table_map), type_code, width)] = plan
        return plan

    def _maria_gtid(self, domain: int, server_id: int, seq_no: int) -> None:
        """GtidBatch.add_maria without a MariaGtid per transaction: the run's GTIDs are kept per
        domain as (lowest seq_no, highest, its server id) and handed to the batch at build()."""
        entry = self._maria.get(domain)
        if entry is None:
            self._maria[domain] = (seq_no, seq_no, server_id)
        elif seq_no >= entry[1]:  # the usual case, seq_no growing: the lowest stays
            self._maria[domain] = (entry[0], seq_no, server_id)
        else:
            self._maria[domain] = (min(entry[0], seq_no), entry[1], entry[2])

    def _take_back(self, marks: dict[tuple[str, str], tuple[int, int, int] | None]) -> None:
        """Each table back where marks say it stood before the transaction being added."""
        tables = self.tables
        for key, mark in marks.items():
            if mark is None:
                tables.pop(key, None)
                continue
            table = tables[key]
            spans, table.operations, table.rows = mark
            del table.spans[spans:]
            for column in table.values:
                del column[table.operations :]

    def _new_table(self, key: tuple[str, str], decoder: RowDecoder) -> _Table:
        # the decoder writes integers and strings straight into Arrow's layout where it can
        values = decoder.column_buffers() or [[] for _ in decoder.columns]
        table = self.tables[key] = _Table(key[0], key[1], decoder.columns, values=values)
        table.both = values + values
        return table

    def _take(
        self,
        decoded: list[tuple[bytes, TableMap, RowDecoder]],
        transaction: TransactionRecord,
        source: tuple[LoggedEvent, ...] | list[LoggedEvent] | None,
        maria_gtid: MariaGtid | None,
    ) -> bool | None:
        tables = self.tables
        # where each table this transaction changes stands, to take the transaction back (None:
        # new to the run with it)
        marks: dict[tuple[str, str], tuple[int, int, int] | None] = {}
        for _data, table_map, decoder in decoded:
            key = (table_map.schema, table_map.table)
            table = tables.get(key)
            if table is None:
                marks[key] = None
            elif table.columns is not decoder.columns and table.columns != decoder.columns:
                return False
            elif key not in marks:
                marks[key] = (len(table.spans), table.operations, table.rows)
        seq, rows = self.seq, self.rows
        try:
            for data, table_map, decoder in decoded:
                self._queue(data, table_map, decoder)
        except ValueError:
            self._take_back(marks)
            self.seq, self.rows = seq, rows
            return None  # the coordinator's own decoding reports it
        self.transactions.append(transaction)
        self.op_starts.append(seq)
        self.sources.append(source)
        gtid = transaction.gtid
        if maria_gtid is None and gtid and ":" not in gtid:
            maria_gtid = MariaGtid.parse(gtid)
        if maria_gtid is not None:
            self._maria_gtid(maria_gtid.domain_id, maria_gtid.server_id, maria_gtid.seq_no)
        elif gtid:
            self.gtids.add(gtid)  # MySQL's: the batch folds consecutive numbers into ranges
        return True

    def as_read(self) -> list[Transaction]:
        """The run's transactions as the reader assembles them, for the coordinator's way."""
        assembler = TransactionAssembler()
        out: list[Transaction] = []
        for events in self.sources:
            if events is None:
                raise _Rescan  # read by the scanner: no events to hand back
            for logged in events:
                out.extend(assembler.feed(logged))  # type: ignore[arg-type]
        return out

    def _queue(self, data: bytes, table_map: TableMap, decoder: RowDecoder) -> None:
        """Decode the event's images straight into its table's columns: a row's before image and
        after image (UPDATE) follow each other, numbered in stream order."""
        key = (table_map.schema, table_map.table)
        table = self.tables.get(key)
        if table is None:
            table = self._new_table(key, decoder)
        kind = decoder.kind
        two = kind is _UPDATE
        n = decoder.decode_data_into(data, table_map, table.both if two else table.values)
        operations = 2 * n if two else n
        table.spans.extend((self.seq, n, two, 1 if kind is _WRITE else 0))
        table.operations += operations
        self.seq += operations
        table.rows += n
        self.rows += n

    def build(self) -> PreparedRun:
        for domain, (lowest, highest, server_id) in self._maria.items():
            self.gtids.add_maria(MariaGtid(domain, server_id, lowest))
            self.gtids.add_maria(MariaGtid(domain, server_id, highest))
        self._maria.clear()
        tables = []
        seqs = []
        for table in self.tables.values():
            seq, op, must = table.operations_arrays()
            seqs.append(seq)
            columns = []
            for info, values in zip(table.columns, table.values, strict=True):
                convert, arrow_type = value_converter(info)
                if type(values) is list:
                    columns.append(pa.array(convert(values) if convert else values, type=arrow_type))
                else:  # a ColumnBuffer (_rowimage.pyx): integers, DECIMALs and strings, which need no conversion
                    columns.append(values.to_arrow(arrow_type))
            ops = operations_table(seq, op, must, columns)
            tables.append(TableOps(table.schema, table.name, table.columns, ops, table.rows))
        return PreparedRun(
            self.transactions,
            tables,
            self.rows,
            self.seq,
            self.gtids,
            self.op_starts,
            self._writesets(seqs) if self.keys is not None else None,
            self.keys.version if self.keys is not None else None,
        )

    def _writesets(self, seqs: list[np.ndarray]) -> RunWritesets:
        """Each transaction's writeset: the distinct hashes of every key of its row images, none
        when it changed a table without a key (or nothing). Hashed a table's key at a time over
        the whole run, not a rows event at a time: a key of integers is then one numpy pass (an
        OLTP transaction's rows event holds a row or two, too few to hash other than one by one)."""
        keys = self.keys
        assert keys is not None
        count = len(self.transactions)
        starts = np.asarray(self.op_starts, dtype=np.int64)
        unusable = np.zeros(count, dtype=bool)
        owners_of_hashes = [np.zeros(0, dtype=np.int64)]
        hashes = [np.zeros(0, dtype=np.uint64)]
        for table, seq in zip(self.tables.values(), seqs, strict=True):  # seq of each operation
            if not table.operations:
                continue
            # the transaction of each row image: the last whose first operation is not after it
            owners = np.searchsorted(starts, seq, side="right") - 1
            table_keys = keys.of(table.schema, table.name)
            if table_keys is None:
                unusable[owners] = True
                continue
            for key in table_keys:
                rows, key_hashes = key_row_hashes(key, table.values, table.operations)
                owners_of_hashes.append(owners if rows is None else owners[rows])
                hashes.append(key_hashes)
        owners = np.concatenate(owners_of_hashes)
        flat = np.concatenate(hashes)
        order = np.lexsort((flat, owners))  # by transaction, then hash: repeats side by side
        owners, flat = owners[order], flat[order]
        distinct = np.ones(len(flat), dtype=bool)
        distinct[1:] = (owners[1:] != owners[:-1]) | (flat[1:] != flat[:-1])
        owners, flat = owners[distinct], flat[distinct]
        sizes = np.bincount(owners, minlength=count)
        return RunWritesets(flat, np.cumsum(sizes), (sizes > 0) & ~unusable)


@dataclass(frozen=True, slots=True)
class PrepareTask:
    """The preparing stage's task (engine/pool): a segment read and its runs prepared."""

    run_length: int  # transactions per run at most
    keys: WritesetKeys | None = None  # given: each transaction's writeset is computed too

    def run(self, segment: Segment) -> PreparedSegment:
        return prepare_segment(segment, self.run_length, keys=self.keys)

    def to_arrow(self, result: PreparedSegment) -> bytes:
        return encode_segment(result)

    def from_arrow(self, data: bytes, segment: Segment) -> PreparedSegment:
        return decode_segment(data, segment)


def prepare_segment(
    segment: Segment, run_length: int, fast_path: bool = True, keys: WritesetKeys | None = None
) -> PreparedSegment:
    """Read one segment and prepare its runs (in a worker process); runs hold at most run_length
    transactions.

    Where the compiled scanner is built, a MariaDB row-only transaction is read straight from the
    mapped file (binlog/_runscan.pyx), without an object per event; everything else, and
    everything with fast_path=False, is read event by event and grouped by the transaction
    assembler, the one way the rest of relaydeck reads (the tests compare the two)."""
    if not fast_path or _runscan is None:
        return _prepare(segment, run_length, fast_path, None, keys)
    again = copy.deepcopy(segment)  # reading changes the segment's reader state
    try:
        return _prepare(segment, run_length, True, _runscan, keys)
    except _Rescan:
        return _prepare(again, run_length, True, None, keys)


def _prepare(
    segment: Segment, run_length: int, fast_path: bool, scanner: Any, keys: WritesetKeys | None
) -> PreparedSegment:
    state = segment.state
    stop_name, stop_pos = segment.stop if segment.stop is not None else ("", -1)
    continuity = Continuity.segment(segment.files[0], segment.start_pos)
    checked_to = Position("", -1)  # a transaction the scanner checked but left to the reader
    assembler = TransactionAssembler()
    items: list[Transaction | LoggedEvent | Incomplete | PreparedRun] = []
    builder = _RunBuilder(keys)
    done = Position(segment.files[0].name, segment.start_pos)  # everything before it is in items

    def close_run() -> None:
        nonlocal builder
        if builder.transactions:
            try:
                items.append(builder.build())
            except (pa.ArrowException, ValueError, TypeError, OverflowError):
                items.extend(builder.as_read())  # values Arrow refuses: the coordinator's way reports them
        builder = _RunBuilder(keys)

    def taken(outcome: bool | None) -> bool:
        if outcome is True and len(builder.transactions) >= run_length:
            close_run()
        return outcome is True

    def transaction(txn: Transaction) -> None:
        outcome = builder.add(txn)
        if outcome is False:
            close_run()
            outcome = builder.add(txn)
        if not taken(outcome):
            close_run()
            items.append(txn)

    def assembled(item: Transaction | LoggedEvent | Incomplete) -> None:
        nonlocal done
        if isinstance(item, Transaction):
            transaction(item)
            done = item.end
        else:
            close_run()
            items.append(item)
            if isinstance(item, LoggedEvent):
                done = Position(item.log_name, item.end_pos)

    def read(logged: LoggedEvent) -> None:
        for item in assembler.feed(logged):
            assembled(item)

    def scan(binlog: BinlogFile, pos: int, limit: int) -> int:
        """Transactions the compiled scanner reads from pos; where it stopped."""
        nonlocal done, checked_to
        name, data, context = binlog.name, binlog._data, state.context
        source = state.source_log_file or name
        checksum = context.checksum_alg == _CRC32
        lengths, mariadb = context.post_header_lengths, context.is_mariadb
        try:
            while True:
                scanned = scanner.scan_transaction(
                    data, pos, limit, checksum, lengths, mariadb, _TABLE_MAPS, _BEGINS
                )
                if scanned is None:
                    return pos
                end = scanned[0]
                if len(scanned) == 8:
                    gtid = None
                    continuity.scanned(name, source, data, pos, end, scanned[2], scanned[3])
                else:
                    gtid = _mysql_gtid_text(scanned[2], scanned[3])
                    continuity.scanned(name, source, data, pos, end, None, scanned[3], gtid)
                outcome = builder.add_scanned(scanned, name, pos, source, gtid)
                if outcome is False:
                    close_run()
                    outcome = builder.add_scanned(scanned, name, pos, source, gtid)
                if outcome is not True:
                    checked_to = Position(name, end)
                    return pos  # the reader takes it, and its decoding reports what is wrong
                if len(builder.transactions) >= run_length:
                    close_run()
                pos = end
        finally:
            done = Position(name, pos)  # everything before pos is in items

    try:
        for index, path in enumerate(segment.files):
            with BinlogFile(path) as binlog:
                pos = segment.start_pos if index == 0 else 4
                limit = stop_pos if binlog.name == stop_name else binlog.size
                data, walked = binlog._data, str(binlog.path)
                while True:
                    # the scanner reads with the file's format: only once the reader has walked
                    # the file from its start (its FORMAT_DESCRIPTION)
                    if scanner is not None and assembler.idle and state.read_file == walked:
                        pos = scan(binlog, pos, limit)
                    reader = binlog.events(state, start=pos, resume=state.read_file == walked)
                    try:
                        for logged in reader:
                            if logged.pos == stop_pos and logged.log_name == stop_name:
                                break
                            if logged.log_name != checked_to.log_name or logged.pos >= checked_to.pos:
                                continuity.event(logged)
                            read(logged)
                            pos = logged.end_pos
                            if (
                                scanner is not None
                                and assembler.idle
                                and pos + 5 <= limit
                                and data[pos + 4] in _SCANNED_GTIDS
                            ):
                                break  # back to the scanner
                        else:
                            break  # the end of this file
                    finally:
                        reader.close()  # type: ignore[attr-defined]
                    if pos == stop_pos and binlog.name == stop_name:
                        close_run()
                        return PreparedSegment(segment.number, items, continuity=continuity)
    except RelayLogGap as gap:
        close_run()
        # the segment's start is still checked against the one before: that gap would come first
        return PreparedSegment(
            segment.number, items, continuity=continuity, gap=(gap.file, gap.pos, gap.detail)
        )
    except BinlogError:
        close_run()
        return PreparedSegment(segment.number, items, done, continuity)
    close_run()
    return PreparedSegment(segment.number, items, continuity=continuity)
