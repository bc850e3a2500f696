"""Row events applied set-based: the net change of a batch, per table, in three statements.

DuckDB costs about half a millisecond per statement whatever its size, so a row-at-a-time applier
tops out near two thousand rows a second. Instead every row change of a batch (one transaction
or many consecutive ones) is collected per table, in order, into one Arrow table of operations:
deletes of before-image keys and upserts of after images, numbered by their position in the
stream. Then, per table:

1. ``DELETE … USING`` every key the batch touched, returning the keys it found;
2. a check that the batch could have happened on this slave (MySQL's error 1062 for a key that
   already exists, 1032 for a row that is not there), against each key's first operation: the
   keys found are exactly those whose first operation needs the row (the caller rolls back when
   it fails);
3. ``INSERT … SELECT`` of each touched key's last image, when that image is an upsert.

Each key's first and last operation are picked out by Arrow and numpy (reduce_by_key) before
DuckDB sees the batch. The result is exactly what row-by-row application gives (updates that
change the key, deletes, re-inserts of a deleted key, several changes of one row), because only
the last image of each key survives and every touched key starts from "deleted". Tables without
a primary key, and partial images (binlog_row_image=MINIMAL/NOBLOB), are applied row by row:
MySQL matches those on the before image, which has no set-based equivalent when duplicate rows
exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binlog.columns import ColumnInfo, InvalidTemporal, RowImages
from ..binlog.constants import ColumnType, RowsKind
from ..errors import RelaydeckError
from .arrow_inputs import ArrowInputs
from .identifiers import quote_ident
from .names import duckdb_schema
from .schema import MysqlColumn, MysqlTable

_WRITE, _DELETE = RowsKind.WRITE, RowsKind.DELETE
# Up to this many keys, the keys a DELETE found come back as rows rather than as Arrow
SMALL_RESULT_ROWS = 256


class ApplyError(RelaydeckError):
    """A row change this slave cannot take; errno follows MySQL's numbering."""

    def __init__(self, errno: int, message: str) -> None:
        self.errno = errno
        self.message = message
        super().__init__(f"Error {errno}: {message}")


ER_DUP_ENTRY = 1062
ER_KEY_NOT_FOUND = 1032
ER_NO_SUCH_TABLE = 1146
ER_BAD_TABLE = 1051
ER_TRUNCATED_WRONG_VALUE_FOR_FIELD = 1366
ER_UNKNOWN_ERROR = 1105


class InvalidString(ApplyError):
    """A string whose logged bytes are not valid in its column's character set (MySQL's error 1366).

    MySQL stores such bytes; DuckDB's VARCHAR holds only valid UTF-8, and storing anything else
    (a replacement character, an escape) would make the copy differ from the source without a
    word, so the channel stops on it instead. The decoders keep each undecodable byte as a lone
    surrogate (surrogateescape), which is how it is recognised and shown here.
    """

    def __init__(self, schema: str, table: str, column: str, index: int, value: str) -> None:
        self.schema, self.table, self.column, self.index, self.value = schema, table, column, index, value
        super().__init__(
            ER_TRUNCATED_WRONG_VALUE_FOR_FIELD,
            f"Incorrect string value: '{shown_invalid_bytes(value)}' for column `{schema}`.`{table}`.`{column}`",
        )


def is_invalid_string(value: object) -> bool:
    """A decoded string holding bytes its character set does not allow (kept as lone surrogates)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown_invalid_bytes(value: str, limit: int = 8) -> str:
    """The bytes from the first invalid one, as MySQL shows them: \\xHH, printable ASCII as is."""
    start = next((i for i, c in enumerate(value) if 0xD800 <= ord(c) <= 0xDFFF), 0)
    raw = bytearray()
    for char in value[start:]:
        code = ord(char)
        raw += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else char.encode("utf-8", "surrogatepass")
        if len(raw) > limit:
            break
    shown = "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x27 else f"\\x{b:02X}" for b in raw[:limit])
    return shown + ("..." if len(raw) > limit else "")


def column_array(
    values: list[Any], convert: Converter, arrow_type: pa.DataType, table: MysqlTable, index: int
) -> pa.Array:
    """One column's values as the Arrow array the slave takes; a value it cannot take is an apply
    error naming the table and the column, never a bare Arrow or codec error."""
    if convert is not None:
        values = convert(values)
    try:
        return pa.array(values, type=arrow_type)
    except UnicodeEncodeError:
        bad = next((v for v in values if is_invalid_string(v)), "")
        raise InvalidString(table.schema, table.name, table.columns[index].name, index, bad) from None
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
        raise ApplyError(
            ER_UNKNOWN_ERROR,
            f"Column `{table.schema}`.`{table.name}`.`{table.columns[index].name}` cannot hold a value "
            f"logged for it as {arrow_type}: {str(exc).splitlines()[0]}",
        ) from None


@contextmanager
def row_event_errors(table: MysqlTable) -> Iterator[None]:
    """DuckDB refusing a table's row changes (a slave table changed by hand, say) as an apply error
    naming the table; a conflict between writers stays itself: the parallel applier retries it."""
    try:
        yield
    except duckdb.TransactionException:
        raise
    except duckdb.Error as exc:
        raise ApplyError(
            ER_UNKNOWN_ERROR,
            f"Could not execute row event on table {table.schema}.{table.name}; DuckDB: {str(exc).splitlines()[0]}",
        ) from None


def table_ref(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


def slave_table_ref(table: MysqlTable, catalog: str | None = None) -> str:
    """The DuckDB name of a replicated table (its database mapped by names.duckdb_schema), in
    `catalog` when given (a database named like the slave file is otherwise ambiguous)."""
    ref = table_ref(duckdb_schema(table.schema), table.name)
    return ref if catalog is None else f"{quote_ident(catalog)}.{ref}"


def _is_text_target(column: MysqlColumn) -> bool:
    base = column.base_type.lower()
    if column.binary:
        return False
    return base in {
        "char",
        "varchar",
        "tinytext",
        "text",
        "mediumtext",
        "longtext",
        "enum",
        "set",
        "json",
    }


Converter = Callable[[list[Any]], list[Any]] | None


def value_converter(info: ColumnInfo) -> tuple[Converter, pa.DataType]:
    """The conversion the logged column alone decides (a process without the catalog can do it)."""
    arrow_type = info.arrow_type()
    if pa.types.is_decimal(arrow_type) and arrow_type.precision > 38:
        return (lambda values: [None if v is None else f"{v:f}" for v in values]), pa.string()
    if arrow_type in (pa.date32(), pa.timestamp("us"), pa.timestamp("us", tz="UTC")):
        # MySQL zero dates have no DuckDB value; they become NULL (documented in the README).
        return (lambda values: [None if isinstance(v, InvalidTemporal) else v for v in values]), arrow_type
    return None, arrow_type


def target_converter(info: ColumnInfo, target: MysqlColumn) -> tuple[Converter, pa.DataType] | None:
    """The conversion the slave's definition decides, where there is one: ENUM/SET numbers to their
    names, strings logged without a charset to text. Never together with value_converter's."""
    arrow_type = info.arrow_type()
    if (
        info.type_code in (ColumnType.ENUM, ColumnType.SET)
        and info.enum_values is None
        and info.set_values is None
        and target.elements
    ):
        names = target.elements  # the table map did not log the strings: the slave's definition has them
        if info.type_code == ColumnType.ENUM:
            return (
                lambda values: [
                    None if v is None else (names[v - 1] if 0 < v <= len(names) else "") for v in values
                ],
                pa.string(),
            )
        return (
            lambda values: [
                None if v is None else ",".join(n for i, n in enumerate(names) if v >> i & 1) for v in values
            ],
            pa.string(),
        )
    if (pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)) and _is_text_target(target):
        # Strings logged without charset metadata arrive as bytes; the slave column is text.
        return (
            lambda values: [None if v is None else v.decode("utf-8", "replace") for v in values],
            pa.large_string(),
        )
    return None


def column_converter(info: ColumnInfo, target: MysqlColumn) -> tuple[Converter, pa.DataType]:
    """How decoded values of a column become an Arrow array the slave column takes without loss."""
    return target_converter(info, target) or value_converter(info)


def for_target(array: pa.Array, info: ColumnInfo, table: MysqlTable, index: int) -> pa.Array:
    """A column built with value_converter, converted for the slave's definition of it."""
    conversion = target_converter(info, table.columns[index])
    if conversion is None:
        return array
    convert, arrow_type = conversion
    return column_array(
        array.to_pylist(), convert, arrow_type, table, index
    )  # rare: ENUM numbers, charset-less text


def arrow_column(values: list[Any], info: ColumnInfo, table: MysqlTable, index: int) -> pa.Array:
    """Decoded values -> an Arrow array the slave column takes without loss."""
    convert, arrow_type = column_converter(info, table.columns[index])
    return column_array(values, convert, arrow_type, table, index)


@dataclass
class _TablePending:
    """One table's queued row operations, column-wise across every rows event of the batch.

    op 1 = upsert, 0 = delete; must 1 = the key must exist before the batch, 0 = must not, None =
    an update's new image (if that is a key's first operation the key changed: must not exist).
    Within a batch a table's definition cannot change (DDL commits alone), so the first event's
    column conversions hold for all.
    """

    table: MysqlTable
    key_positions: tuple[int, ...]
    converters: list[tuple[Converter, pa.DataType]]
    seq: list[int] = field(default_factory=list)
    op: list[int] = field(default_factory=list)
    must: list[int | None] = field(default_factory=list)
    values: list[list[Any]] = field(default_factory=list)
    rows: int = 0


def operations_table(
    seq: Sequence[int], op: Sequence[int], must: Sequence[int | None] | pa.Array, values: list[pa.Array]
) -> pa.Table:
    """A table's row operations as apply_ops takes them: seq (their order in the relay log), op (0
    delete, 1 upsert), must (1: the row must exist, 0: it must not, null: either: an UPDATE's new
    image) and c0…cN, the columns' values. The one builder of that layout, for the rows the
    applier decodes itself and for those the preparing stage prepares."""
    must_array = must if isinstance(must, pa.Array) else pa.array(must, type=pa.int8())
    arrays = [pa.array(seq, type=pa.int64()), pa.array(op, type=pa.int8()), must_array]
    names = ["seq", "op", "must", *(f"c{i}" for i in range(len(values)))]
    return pa.Table.from_arrays([*arrays, *values], names=names)


def queue_images(pending: Any, images: RowImages, seq: int) -> int:
    """Queue a full-image rows event's operations, numbered from `seq`, on `pending` (a
    _TablePending); the next number."""
    n = images.count
    kind = images.kind
    if kind is _WRITE:
        RowApplier._queue(pending, images.after, seq, n, 1, 1, 0)
        return seq + n
    if kind is _DELETE:
        RowApplier._queue(pending, images.before, seq, n, 1, 0, 1)
        return seq + n
    # before and after images interleave: delete of the old key, then upsert of the new one
    RowApplier._queue(pending, images.before, seq, n, 2, 0, 1)
    RowApplier._queue(pending, images.after, seq + 1, n, 2, 1, None)
    return seq + 2 * n


def key_codes(columns: list[pa.Array]) -> tuple[np.ndarray, int]:
    """A code per row that two rows share exactly when they hold equal values in every column
    (NULL equal to NULL), and a bound the codes stay below (not every code below it is used).

    Each column is hash-encoded by Arrow and the codes of the next column folded in; when the
    folded codes could outgrow a few per row they are encoded again, so the bound stays near
    the row count however many columns. Arrow's hash aggregation (Table.group_by) and join did
    this before, through pyarrow.acero. Measured against them (reduction and found-key mask
    together): the same on 50,000 operations; on batches of 1 to 1,000 operations, which a
    channel following its source commits, 0.6-0.7 of their time on one-column keys and
    0.24-0.3 on two-column keys, whose join was planned anew each time. And pyarrow.acero
    imports pandas: every command that loaded the applier paid 0.15-0.2 s for it at its start."""
    codes: np.ndarray = np.zeros(0, np.int64)
    bound = 0
    for i, column in enumerate(columns):
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        values = encoded.indices.to_numpy(zero_copy_only=False)  # int32
        width = len(encoded.dictionary)
        if i == 0:
            codes, bound = values, width
            continue
        codes = codes.astype(np.int64) * width + values
        bound *= width
        if bound > 4 * len(codes) + 64:
            folded = pc.dictionary_encode(pa.array(codes))
            codes = folded.indices.to_numpy(zero_copy_only=False)
            bound = len(folded.dictionary)
    return codes, bound


def reduce_by_key(ops: pa.Table, keys: list[str]) -> pa.Table:
    """A batch's operations on one table (seq, op, must, c0…cN, numbered by seq in stream order)
    reduced to one row per touched key, in the same columns: the seq and must of the key's first
    operation, which decide MySQL's errors, and the op and values of its last, the end state.

    Done in Arrow and numpy rather than by window functions in DuckDB: measured, the set-based
    application of the MariaDB capture's batches took 5-38% less time (three runs, with Arrow's
    hash aggregation, which this matches on 50,000 operations and beats on small batches)."""
    n = ops.num_rows
    seq = ops.column("seq")
    if n > 1 and not pc.all(pc.less(seq.slice(0, n - 1), seq.slice(1))).as_py():
        # an update event queues its before images, then its after images: back to stream order
        ops = ops.take(pc.sort_indices(seq))
        seq = ops.column("seq")
    codes, bound = key_codes([ops.column(k).combine_chunks() for k in keys])
    rows = np.arange(n)  # now the row number orders a key's operations
    firsts = np.full(bound, n)
    np.minimum.at(firsts, codes, rows)
    lasts = np.full(bound, -1)
    np.maximum.at(lasts, codes, rows)
    if len(keys) > 1:
        used = lasts >= 0  # codes no row has
        firsts, lasts = firsts[used], lasts[used]
    reduced = ops.take(lasts)
    reduced = reduced.set_column(0, "seq", seq.take(firsts))
    return reduced.set_column(2, "must", ops.column("must").take(firsts))


def _found_mask(reduced: pa.Table, keys: list[str], found: pa.Table) -> pa.Array:
    """Which rows of `reduced` have their key among the `found` rows (the same key columns)."""
    try:
        return _arrow_found_mask(reduced, keys, found)
    except (pa.ArrowException, ValueError):
        return _python_found_mask(reduced, keys, found)  # key types Arrow cannot line up


def _arrow_found_mask(reduced: pa.Table, keys: list[str], found: pa.Table) -> pa.Array:
    if len(keys) == 1:
        column = reduced.column(keys[0])
        return pc.is_in(column, value_set=found.column(0).cast(column.type))
    # the reduced keys and the found ones coded together: a found key is a code they share
    columns = []
    for i, key in enumerate(keys):
        mine = reduced.column(key).combine_chunks()
        columns.append(pa.concat_arrays([mine, found.column(i).cast(mine.type).combine_chunks()]))
    codes, _ = key_codes(columns)
    m = reduced.num_rows
    return pc.is_in(pa.array(codes[:m]), value_set=pa.array(codes[m:]))


def _python_found_mask(reduced: pa.Table, keys: list[str], found: pa.Table) -> pa.Array:
    present = set(zip(*(found.column(i).to_pylist() for i in range(len(keys))), strict=True))
    touched = zip(*(reduced.column(k).to_pylist() for k in keys), strict=True)
    return pa.array([key in present for key in touched], type=pa.bool_())


class Statements:
    """apply_ops's statements on one table, over the batch's reduced operations (registered once).

    Its keys fall into three kinds, by the `must` of their first operation and the `op` of their
    last: kept (the row must be there and stays: updated in place), removed (must be there and
    goes: deleted) and new (must not be there: inserted where the batch leaves it present)."""

    KEPT = "o.must = 1 AND o.op = 1"
    REMOVED = "o.must = 1 AND o.op = 0"
    NEW = "o.must IS DISTINCT FROM 1"  # 0, or null: the key an update moved the row to
    EVERY = "TRUE"

    def __init__(
        self,
        inputs: ArrowInputs,
        table: MysqlTable,
        catalog: str | None,
        key_positions: tuple[int, ...],
        reduced: pa.Table,
    ) -> None:
        self.inputs = inputs
        self.table = table
        self.key_positions = key_positions
        self.target = slave_table_ref(table, catalog)
        key_names = [quote_ident(table.columns[i].name) for i in key_positions]
        self.key_list = ", ".join(f"t.{k}" for k in key_names)
        self.join = " AND ".join(f"t.{k} = o.c{i}" for k, i in zip(key_names, key_positions, strict=True))
        self.source = inputs.put(reduced)

    def update(self) -> str:
        """Every kept key set to its last values: the statement's count is the rows it found."""
        sets = ", ".join(
            f"{quote_ident(column.name)} = o.c{i}"
            for i, column in enumerate(self.table.columns)
            if i not in self.key_positions
        )
        return (
            f"UPDATE {self.target} AS t SET {sets} FROM {self.source} AS o WHERE {self.join} AND {self.KEPT}"
        )

    def delete(self, kind: str) -> str:
        return f"DELETE FROM {self.target} AS t USING {self.source} AS o WHERE {self.join} AND {kind}"

    def found(self, kind: str) -> str:
        """The keys of a kind the slave's table holds now."""
        return f"SELECT {self.key_list} FROM {self.target} AS t JOIN {self.source} AS o ON {self.join} WHERE {kind}"

    def count_found(self, kind: str) -> str:
        return f"SELECT count(*) FROM {self.target} AS t JOIN {self.source} AS o ON {self.join} WHERE {kind}"

    def insert(self, kind: str) -> str:
        columns = ", ".join(quote_ident(c.name) for c in self.table.columns)
        values = ", ".join(f"c{i}" for i in range(len(self.table.columns)))
        # In the order the keys first came, not sorted by key: the slave's tables keep no index a
        # sorted insert would help, and sorting a large batch cost 4-6% of the MariaDB capture's
        # replay under LOGICAL_CLOCK, where one worker applies the chain.
        return f"INSERT INTO {self.target} ({columns}) SELECT {values} FROM {self.source} AS o WHERE o.op = 1 AND {kind}"

    def close(self) -> None:
        self.inputs.release(self.source)


class RowApplier:
    """Collects row changes of a batch per table and applies their net effect set-based."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        strict: bool = True,
        catalog: str | None = None,
        inputs: ArrowInputs | None = None,
    ) -> None:
        """catalog: the DuckDB catalog the tables are named in (Slave.duckdb_catalog); inputs: the
        connection's (Slave.arrow_inputs, which learns of its rollbacks), or the applier's own, for a
        caller that rolls back only by dropping the applier with the transaction."""
        self.con = con
        self.inputs = inputs if inputs is not None else ArrowInputs(con)
        self.strict = strict
        self.catalog = catalog
        self._pending: dict[tuple[str, str], _TablePending] = {}
        self._seq = 0
        self.rows_applied = 0

    def add(self, images: RowImages, table: MysqlTable) -> None:
        """Queue one decoded rows event against its slave table definition."""
        columns = images.columns
        if len(columns) != len(table.columns):
            raise ApplyError(
                1677,
                f"Column count of {images.table_map.schema}.{images.table_map.table} in the relay log "
                f"({len(columns)}) differs from the slave's table ({len(table.columns)})",
            )
        key = (table.schema, table.name)
        full = self._full_images(images)
        if not table.primary_key or not full:
            self.flush_table(key)
            with row_event_errors(table):
                self._apply_row_by_row(images, table)
            return
        pending = self._pending.get(key)
        if pending is None:
            positions = self.key_positions(table)
            converters = [
                column_converter(info, col) for info, col in zip(columns, table.columns, strict=True)
            ]
            pending = self._pending[key] = _TablePending(
                table, positions, converters, values=[[] for _ in table.columns]
            )
        self._seq = queue_images(pending, images, self._seq)
        pending.rows += images.count

    @staticmethod
    def _queue(
        pending: _TablePending,
        image: dict[int, list[Any]] | None,
        first_seq: int,
        n: int,
        step: int,
        op: int,
        must: int | None,
    ) -> None:
        # A full image holds every column, in column order (the decoders build it that way).
        assert image is not None
        if n == 1:  # the usual rows event: one row
            pending.seq.append(first_seq)
            pending.op.append(op)
            pending.must.append(must)
            for column, values in zip(pending.values, image.values(), strict=True):
                column.append(values[0])
            return
        pending.seq.extend(range(first_seq, first_seq + n * step, step))
        pending.op.extend([op] * n)
        pending.must.extend([must] * n)
        for column, values in zip(pending.values, image.values(), strict=True):
            column.extend(values)

    def pending_rows(self) -> int:
        return sum(p.rows for p in self._pending.values())

    def flush(self) -> None:
        for key in list(self._pending):
            self.flush_table(key)

    def discard(self) -> None:
        self._pending.clear()

    def flush_table(self, key: tuple[str, str]) -> None:
        pending = self._pending.pop(key, None)
        if pending is None or not pending.seq:
            return
        self.apply_ops(pending.table, pending.key_positions, self._ops_table(pending), pending.rows)

    def apply_ops(self, table: MysqlTable, key_positions: tuple[int, ...], ops: pa.Table, rows: int) -> None:
        """Apply one table's operations (seq, op, must, c0…cN, as _ops_table builds them), whoever
        collected them: this applier, or a worker process of the process pool.

        Kept keys (see Statements) are updated in place, removed ones deleted, new ones inserted.
        In place, DuckDB rewrites only the values where deleting and inserting appends whole rows
        and marks the old ones deleted: measured on sysbench-shaped tables of 10,000 rows, 3,000
        keys a table, a batch committed in 0.63-0.67 of the time, and the file stopped growing between
        checkpoints. MySQL's errors 1032 and 1062 are decided by counts where they can be (the
        keys of `reduced` are distinct): the rows the UPDATE found, the new keys the table already
        holds (none); which keys, only when a count is off. Without strict checks every key is
        deleted and inserted again: a row the batch updates is there afterwards even where it was
        missing."""
        keys = [f"c{i}" for i in key_positions]
        reduced = reduce_by_key(ops, keys)
        statements = Statements(self.inputs, table, self.catalog, key_positions, reduced)
        try:
            with row_event_errors(table):
                if not self.strict:
                    self.con.execute(statements.delete(Statements.EVERY))
                    self.con.execute(statements.insert(Statements.EVERY))
                else:
                    self._apply_checked(statements, reduced, keys, table)
        finally:
            statements.close()
        self.rows_applied += rows

    def _apply_checked(
        self, statements: Statements, reduced: pa.Table, keys: list[str], table: MysqlTable
    ) -> None:
        """apply_ops with MySQL's checks: every key of each kind found as its first operation needs."""
        must_exist = pc.fill_null(pc.equal(reduced.column("must"), 1), False)
        present = pc.equal(reduced.column("op"), 1)
        kept = pc.and_(must_exist, present)
        removed = pc.and_(must_exist, pc.invert(present))
        kept_count, removed_count = pc.sum(kept).as_py() or 0, pc.sum(removed).as_py() or 0
        new_count = reduced.num_rows - kept_count - removed_count
        checked: list[tuple[pa.Table, pa.Table]] = []

        def which(mask: pa.Array, kind: str) -> None:  # a count was off: the keys that decide the error
            part = reduced.filter(mask)
            checked.append((part, self._found_keys(statements.found(kind), part, keys)))

        if kept_count:
            if len(keys) < len(table.columns):
                (found,) = self.con.execute(statements.update()).fetchone()  # type: ignore[misc]
            else:  # nothing but the key: the row is what it was
                (found,) = self.con.execute(statements.count_found(Statements.KEPT)).fetchone()  # type: ignore[misc]
            if found != kept_count:  # a row missing, or a key held twice by a slave that diverged
                which(kept, Statements.KEPT)
        if removed_count:
            part = reduced.filter(removed)
            delete = f"{statements.delete(Statements.REMOVED)} RETURNING {statements.key_list}"
            checked.append((part, self._found_keys(delete, part, keys)))
        if new_count:
            (found,) = self.con.execute(statements.count_found(Statements.NEW)).fetchone()  # type: ignore[misc]
            if found:
                which(pc.invert(must_exist), Statements.NEW)
        self._check(checked, keys, table)
        if new_count:
            self.con.execute(statements.insert(Statements.NEW))

    def _found_keys(self, statement_returning: str, reduced: pa.Table, keys: list[str]) -> pa.Table:
        """The keys a DELETE … RETURNING or a SELECT found, in the columns `keys` of `reduced`.

        A small batch's come back as rows: through a relation's Arrow result the DELETE and the
        INSERT after it took 2.8-4.2 ms for 13 keys, as rows 1.4-1.9 ms (two rounds of 400), a
        millisecond or more saved per table at every commit of a channel that follows its
        source."""
        if reduced.num_rows > SMALL_RESULT_ROWS:
            return self.con.sql(statement_returning).to_arrow_table()
        rows = self.con.execute(statement_returning).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(keys)
        try:
            arrays = [
                pa.array(values, type=reduced.column(k).type) for values, k in zip(columns, keys, strict=True)
            ]
        except (pa.ArrowException, TypeError, ValueError):
            arrays = [pa.array(values) for values in columns]  # _found_mask compares them as Python values
        return pa.Table.from_arrays(arrays, names=keys)

    def key_positions(self, table: MysqlTable) -> tuple[int, ...]:
        return tuple(self._position(table, name) for name in table.primary_key)

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _full_images(images: RowImages) -> bool:
        width = len(images.columns)
        before, after = images.before, images.after
        return (before is None or len(before) == width) and (after is None or len(after) == width)

    @staticmethod
    def _position(table: MysqlTable, name: str) -> int:
        lowered = name.lower()
        for i, column in enumerate(table.columns):
            if column.name.lower() == lowered:
                return i
        raise ApplyError(1072, f"Key column '{name}' doesn't exist in table {table.schema}.{table.name}")

    @staticmethod
    def _ops_table(pending: _TablePending) -> pa.Table:
        table = pending.table
        columns = [
            column_array(values, convert, arrow_type, table, i)
            for i, (values, (convert, arrow_type)) in enumerate(
                zip(pending.values, pending.converters, strict=True)
            )
        ]
        return operations_table(pending.seq, pending.op, pending.must, columns)

    @staticmethod
    def _check(checked: list[tuple[pa.Table, pa.Table]], keys: list[str], table: MysqlTable) -> None:
        """MySQL's errors 1062/1032, decided by each key's first operation in the batch: a key
        whose first operation needs its row (must = 1) was found, no other key was. `checked`:
        parts of the batch's reduced operations, each with the keys found for it. The first
        offending operation in stream order, over all the parts, is the one reported."""
        offending = []
        for reduced, found in checked:
            needed = pc.fill_null(pc.equal(reduced.column("must"), 1), False)
            wrong = pc.not_equal(_found_mask(reduced, keys, found), needed)
            if pc.any(wrong).as_py():
                offending.append(reduced.filter(wrong))
        if not offending:
            return
        wrong = pa.concat_tables(offending)
        row = wrong.take(pc.sort_indices(wrong.column("seq"))[:1]).to_pylist()[0]
        key_text = "-".join(str(row[k]) for k in keys)
        where = f"{table.schema}.{table.name}"
        if row["must"] == 1:
            raise ApplyError(
                ER_KEY_NOT_FOUND,
                f"Could not execute row event on table {where}; Can't find record in '{table.name}' (key {key_text})",
            )
        raise ApplyError(
            ER_DUP_ENTRY,
            f"Could not execute row event on table {where}; Duplicate entry '{key_text}' for key 'PRIMARY'",
        )

    def _apply_row_by_row(self, images: RowImages, table: MysqlTable) -> None:
        """MySQL's own way for tables without a key and for partial images: match the before image."""
        target = slave_table_ref(table, self.catalog)
        names = [c.name for c in table.columns]
        rows = images.rows()
        infos = images.columns
        for before, after in rows:
            if before is not None:
                before_vals = self._by_position(before, infos, table)
                conds = " AND ".join(f"{quote_ident(names[i])} IS NOT DISTINCT FROM ?" for i in before_vals)
                found = self.con.execute(
                    f"SELECT rowid FROM {target} WHERE {conds} LIMIT 1", list(before_vals.values())
                ).fetchall()
                found = found[0] if found else None
                if found is None:
                    raise ApplyError(
                        ER_KEY_NOT_FOUND,
                        f"Could not execute row event on table {table.schema}.{table.name}; Can't find record in '{table.name}'",
                    )
                if after is None:
                    self.con.execute(f"DELETE FROM {target} WHERE rowid = ?", [found[0]])
                else:
                    after_vals = self._by_position(after, infos, table)
                    sets = ", ".join(f"{quote_ident(names[i])} = ?" for i in after_vals)
                    self.con.execute(
                        f"UPDATE {target} SET {sets} WHERE rowid = ?", [*after_vals.values(), found[0]]
                    )
            elif after is not None:
                after_vals = self._by_position(after, infos, table)
                cols = ", ".join(quote_ident(names[i]) for i in after_vals)
                marks = ", ".join("?" for _ in after_vals)
                self.con.execute(f"INSERT INTO {target} ({cols}) VALUES ({marks})", list(after_vals.values()))
            self.rows_applied += 1

    @staticmethod
    def _by_position(
        image: dict[str, Any], infos: tuple[ColumnInfo, ...], table: MysqlTable
    ) -> dict[int, Any]:
        by_name = {info.name: info for info in infos}
        out: dict[int, Any] = {}
        for name, value in image.items():
            info = by_name[name]
            out[info.index] = _scalar(value, info, table, info.index)
        return out


def _scalar(value: Any, info: ColumnInfo, table: MysqlTable, index: int) -> Any:
    """One value for a parameterised statement, converted as arrow_column converts columns."""
    return None if value is None else arrow_column([value], info, table, index)[0].as_py()
