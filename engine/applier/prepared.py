"""What the preparing stage hands the applier, and how a worker takes its part of it.

A segment comes back as a PreparedSegment: its runs of row-only transactions (PreparedRun: each
transaction's record, its row changes per table as Arrow operations, its writeset) among the
items it holds as read. prepare.py makes them, in a worker process or a Spark task;
prepared_arrow.py carries them as Arrow from a Spark task; the multi-threaded applier's workers
apply any transactions of a run they were given (sliced_tables, for_slave).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binlog.columns import ColumnInfo
from ..binlog.reader import LoggedEvent
from ..gtids import GtidBatch
from ..relaylog.continuity import Continuity
from ..slave.rowapply import for_target
from ..slave.schema import MysqlTable
from ..transactions import Incomplete, Position, Transaction, TransactionRecord, record_from_fields


@dataclass(slots=True)
class TableOps:
    """One table's operations in a run: seq, op, must, c0…cN (see RowApplier._ops_table)."""

    schema: str
    table: str
    columns: tuple[ColumnInfo, ...]
    ops: pa.Table
    rows: int
    _seq: Any = field(default=None, repr=False, compare=False)  # seq as numpy, once looked up

    def seq_array(self) -> Any:
        """seq as a numpy array (ascending: operations are numbered in log order)."""
        if self._seq is None:
            self._seq = self.ops.column(0).to_numpy()
        return self._seq


@dataclass(frozen=True, slots=True, eq=False)
class RunWritesets:
    """Each transaction's writeset in a prepared run: the distinct hashes of its rows' keys.

    Held flat, not as a tuple per transaction: a run of 8,192 transactions crosses from a
    preparing process to the applier as three arrays (out of band, through /dev/shm) instead of
    thousands of tuples pickled and unpickled one by one, and the coordinator turns it into lists
    once per run."""

    hashes: np.ndarray  # uint64: transaction 0's, then transaction 1's, …
    ends: np.ndarray  # int64: transaction i's are hashes[ends[i - 1]:ends[i]] (from 0 for i = 0)
    usable: np.ndarray  # bool: False where it has no writeset (a table without a key, no rows)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index: int) -> tuple[int, ...] | None:
        if not self.usable[index]:
            return None
        start = int(self.ends[index - 1]) if index else 0
        return tuple(self.hashes[start : int(self.ends[index])].tolist())

    def __iter__(self) -> Iterator[tuple[int, ...] | None]:
        return (self[index] for index in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunWritesets) and list(self) == list(other)

    def as_lists(self) -> tuple[list[int], list[int], list[bool]]:
        """(hashes, ends, usable) as Python lists: what the coordinator reads a run's writesets from."""
        return self.hashes.tolist(), self.ends.tolist(), self.usable.tolist()


@dataclass(slots=True)
class PreparedRun:
    """Consecutive row-only transactions of a segment, their row changes collected per table."""

    transactions: list[TransactionRecord]
    tables: list[TableOps]
    row_changes: int
    operations: int  # its operations are numbered (seq) 0 … operations - 1, across its tables
    gtids: GtidBatch
    # seq of each transaction's first operation: transaction i holds op_starts[i] … op_starts[i+1] - 1
    op_starts: list[int]
    # each transaction's writeset (the hashes of its rows' keys), when the task was given the keys;
    # none for a transaction on a table with no key or one the keys did not know
    writesets: RunWritesets | None = None
    writeset_version: int | None = None  # the version of the keys they were hashed with

    def __getstate__(self) -> tuple[Any, ...]:
        # Handed from a worker process to the applier column-wise: pickling thousands of named
        # tuples one by one measured two thirds of the cost of handing a segment over.
        t = self.transactions
        columns = (
            [x.gtid for x in t],
            [x.start.log_name for x in t],
            [x.start.pos for x in t],
            [x.end.log_name for x in t],
            [x.end.pos for x in t],
            [x.source_log_file for x in t],
            [x.source_end_pos for x in t],
            [x.timestamp for x in t],
            [x.original_commit_timestamp for x in t],
            [x.size for x in t],
            [x.row_events for x in t],
            [x.last_committed for x in t],
            [x.sequence_number for x in t],
            [x.commit_id for x in t],
            [x.databases for x in t],
        )
        return (columns, *(getattr(self, name) for name in _RUN_STATE))

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        columns, *rest = state
        for name, value in zip(_RUN_STATE, rest, strict=True):
            setattr(self, name, value)
        gtid, start_file, start_pos, end_file, end_pos, *rest = columns
        starts = map(Position, start_file, start_pos)
        ends = map(Position, end_file, end_pos)
        fields = zip(gtid, starts, ends, *rest, strict=True)
        self.transactions = list(map(record_from_fields, fields))

    @property
    def start(self) -> Position:
        return self.transactions[0].start

    @property
    def end(self) -> Position:
        return self.transactions[-1].end


# what a PreparedRun hands over as it is, beside its transactions' columns
_RUN_STATE = ("tables", "row_changes", "operations", "gtids", "op_starts", "writesets", "writeset_version")


@dataclass(slots=True)
class PreparedSegment:
    number: int
    items: list[Transaction | LoggedEvent | Incomplete | PreparedRun]
    # Reading stopped on bad input: everything before this position is in `items`; the
    # coordinator reads on from here itself, which reports the error where it is.
    resume_at: Position | None = None
    # The segment's continuity check: what its start must follow, and its state at the end
    continuity: Continuity | None = None
    gap: tuple[str, int | None, str] | None = None  # a discontinuity inside it: file, position, why


def for_slave(ops: TableOps, table: MysqlTable) -> pa.Table:
    """A run's operations on one table with its columns converted for the slave's definitions."""
    data = ops.ops
    arrays = data.columns[:3]
    for i, info in enumerate(ops.columns):
        arrays.append(for_target(data.column(3 + i), info, table, i))
    return pa.Table.from_arrays(arrays, names=data.column_names)


def concatenated_ranges(lows: Any, highs: Any) -> Any:
    """The indices low … high - 1 of every (low, high), one range after another, without a numpy
    call per range: under DATABASE a worker's part of a run is hundreds of short pieces (the
    run's transactions alternate between databases), and one arange per piece per table held
    the interpreter lock long enough to slow the other workers. None when every range is empty."""
    lengths = highs - lows  # an empty range repeats nothing below
    total = int(lengths.sum())
    if total == 0:
        return None
    # each index is its range's low plus its place within the range: the place is its place in
    # the output less where the range starts in the output
    starts_in_output = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(lows - starts_in_output, lengths)


def sliced_tables(parts: Sequence[tuple[PreparedRun, int, int]]) -> list[TableOps]:
    """The operations of transactions first … end - 1 of each (run, first, end), per table, in
    one order across them: what a worker applies in one DuckDB transaction. The scheduler may
    give a worker any transactions of a run, not only whole runs; consecutive parts of one run
    are taken from each of its tables at once (one take per table, not one slice per part:
    measured 12.7 s of a 11.9 s replay in slicing when workers held one or two transactions of a
    run each).

    Why one table of operations per table: the applier's cost is mostly per statement, not per
    row, so everything a batch holds for a table goes in the same few statements."""
    groups: dict[tuple[str, str], list[TableOps]] = {}
    base = 0  # seq of each run moved past the runs before it in the batch
    i = 0
    while i < len(parts):
        run = parts[i][0]
        j = i + 1
        while j < len(parts) and parts[j][0] is run:
            j += 1
        pieces = parts[i:j]
        i = j
        count = len(run.transactions)
        whole = len(pieces) == 1 and pieces[0][1] == 0 and pieces[0][2] == count
        if not whole:
            starts = np.fromiter((run.op_starts[f] for _, f, _ in pieces), np.int64, len(pieces))
            ends = np.fromiter(
                (run.op_starts[e] if e < count else run.operations for _, _, e in pieces),
                np.int64,
                len(pieces),
            )
        for ops in run.tables:
            data, rows = ops.ops, ops.rows
            if not whole:
                seq = ops.seq_array()
                lows, highs = np.searchsorted(seq, starts), np.searchsorted(seq, ends)
                if len(pieces) == 1:
                    if lows[0] == highs[0]:
                        continue
                    data = data.slice(int(lows[0]), int(highs[0] - lows[0]))
                else:
                    taken = concatenated_ranges(lows, highs)
                    if taken is None:
                        continue
                    data = data.take(taken)
                rows = data.num_rows - data.column(2).null_count  # an UPDATE is two operations
            if base:
                data = data.set_column(0, "seq", pc.add(data.column(0), pa.scalar(base, pa.int64())))
            group = groups.setdefault((ops.schema, ops.table), [])
            if group and group[0].columns != ops.columns:
                raise ValueError(f"{ops.schema}.{ops.table} was logged with other columns in between")
            group.append(TableOps(ops.schema, ops.table, ops.columns, data, rows))
        base += run.operations
    return [
        group[0]
        if len(group) == 1
        else TableOps(
            group[0].schema,
            group[0].table,
            group[0].columns,
            pa.concat_tables([g.ops for g in group]),
            sum(g.rows for g in group),
        )
        for group in groups.values()
    ]
