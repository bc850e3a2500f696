"""Partitioned tables: the source's partition list kept in the model, and DROP / TRUNCATE PARTITION
as the DELETE of the rows the partitions held.

MySQL logs `ALTER TABLE … DROP PARTITION p` and `TRUNCATE PARTITION p` as statements, with no row
events: a replica drops the rows itself. The slave has no partitions (DuckDB needs none for an
analytical copy), so the model keeps each table's RANGE or LIST definition as the source declared
it (CREATE TABLE … PARTITION BY, ALTER … PARTITION BY / ADD / REORGANIZE / DROP / REMOVE
PARTITIONING), and the rows of a partition are the ones its bounds select, placed as MySQL places
them:

- RANGE [COLUMNS]: partition i holds what is below its bound and not below the bound of the one
  before; tuples compare column by column; NULL sorts below every value, so it is in the first;
- LIST [COLUMNS]: what its list names, NULL where NULL is listed; MariaDB's DEFAULT partition
  holds what no other list names.

The DELETE is written in MySQL's SQL and translated as a replicated statement is
(slave/statements.py), so the partitioning expression (YEAR(d), TO_DAYS(d), …) means on the slave
what it meant on the source, and one the slave cannot compute is refused, not guessed.
HASH and KEY partitions place rows by MySQL's hash functions, and COLUMNS partitions over CHAR,
VARCHAR or BINARY by MySQL's string comparison (the column's collation: case, accents, trailing
spaces), neither of which the slave reproduces: DROP / TRUNCATE PARTITION of them is refused
(TRUNCATE PARTITION ALL empties the table under any method). A table the catalog holds without
its partitioning (created by a version that did not keep it) is refused too, saying so.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot.tokens import TokenType

from ..guard import RefusedStatement
from ..schema import MysqlPartition, MysqlPartitioning, MysqlTable
from ..statements import SessionContext, StatementTranslator
from ..untranslatable import UntranslatableStatement
from .plan import DdlPlan
from .tokens import Tokens, TranslationError
from .translation import Translation

MAXVALUE = "MAXVALUE"
_BOUNDED = ("RANGE", "LIST")
# ALTER TABLE clauses that change the partition list (the clause is the whole ALTER on MySQL)
MAINTENANCE = ("ADD", "DROP", "TRUNCATE", "REORGANIZE", "COALESCE")


def partition_by_at(tk: Tokens, i: int, j: int) -> int:
    """Where PARTITION BY starts among tokens i..j-1, outside parentheses; j when it does not."""
    return _words_at(tk, i, j, "PARTITION", "BY")


def removes_partitioning(tk: Tokens, i: int, j: int) -> bool:
    """Whether tokens i..j-1 say REMOVE PARTITIONING, outside parentheses."""
    return _words_at(tk, i, j, "REMOVE", "PARTITIONING") < j


def _words_at(tk: Tokens, i: int, j: int, *words: str) -> int:
    k = tk.find_word(i, j, words[0])
    while k < j and not tk.words(k, *words):
        k = tk.find_word(k + 1, j, words[0])
    return k


def partitioning_at(tk: Tokens, k: int, j: int) -> MysqlPartitioning:
    """PARTITION BY [LINEAR] method [COLUMNS] (…) [PARTITIONS n] [SUBPARTITION BY …] [(definitions)]
    at tokens k..j-1."""
    k += 2
    linear = tk.word(k) == "LINEAR"
    k += linear
    method = tk.word(k)
    if method not in ("RANGE", "LIST", "HASH", "KEY", "SYSTEM_TIME"):
        raise TranslationError(f"unknown partitioning method {tk.text(k, k + 1)!r}")
    k += 1
    columns = tk.word(k) == "COLUMNS"
    k += columns
    if method == "KEY" and tk.word(k) == "ALGORITHM":
        k += 3  # ALGORITHM = 1|2
    expression = ""
    if tk.kind(k) == TokenType.L_PAREN:
        close = tk.close(k)
        expression = tk.text(k + 1, close)
        k = close + 1
    partitions: tuple[MysqlPartition, ...] = ()
    while k < j:
        if tk.kind(k) == TokenType.L_PAREN:
            close = tk.close(k)
            if tk.word(k + 1) == "PARTITION":
                partitions = definitions(tk, k + 1, close)
            k = close + 1
            continue
        k += 1
    return MysqlPartitioning(f"LINEAR {method}" if linear else method, columns, expression, partitions)


def definitions(tk: Tokens, i: int, j: int) -> tuple[MysqlPartition, ...]:
    """The partition definitions at tokens i..j-1 (inside their parentheses)."""
    return tuple(_definition(tk, start, stop) for start, stop in tk.split(i, j))


def _definition(tk: Tokens, i: int, j: int) -> MysqlPartition:
    if tk.word(i) != "PARTITION":
        raise TranslationError(f"expected a partition definition, not {tk.text(i, j)[:60]!r}")
    name = tk.name(i + 1)
    k = i + 2
    if tk.words(k, "VALUES", "LESS", "THAN"):
        k += 3
        if tk.word(k) == MAXVALUE:
            return MysqlPartition(name, ((MAXVALUE,),))
        return MysqlPartition(name, (_items(tk, k),))
    if tk.words(k, "VALUES", "IN"):
        k += 2
        close = tk.close(k)
        values = []
        for start, stop in tk.split(k + 1, close):
            if tk.kind(start) == TokenType.L_PAREN and tk.close(start) == stop - 1:
                values.append(_items(tk, start))  # LIST COLUMNS of several columns: a tuple
            else:
                values.append((tk.text(start, stop),))
        return MysqlPartition(name, tuple(values))
    if tk.word(k) == "DEFAULT":
        return MysqlPartition(name, None)
    return MysqlPartition(name, ())  # HASH / KEY


def _items(tk: Tokens, open_paren: int) -> tuple[str, ...]:
    close = tk.close(open_paren)
    return tuple(tk.text(start, stop) for start, stop in tk.split(open_paren + 1, close))


def alter_partitions(t: Translation, tk: Tokens, k: int, table: MysqlTable, temporary: bool) -> DdlPlan:
    """ALTER TABLE … ADD / DROP / TRUNCATE / REORGANIZE / COALESCE PARTITION at token k."""
    verb = tk.word(k)
    if tk.word(k + 1) != "PARTITION":
        raise TranslationError(f"expected {verb} PARTITION")
    rest = (k + 2, len(tk))
    partitioning = table.partitioning
    if verb == "TRUNCATE" and tk.words(rest[0], "ALL") and rest[1] == rest[0] + 1:
        return _deleting(t, table, temporary, None, "TRUE")
    if verb in ("DROP", "TRUNCATE"):
        names = [tk.name(start) for start, _ in tk.split(*rest)]
        what = f"{verb} PARTITION"
        bounded = _bounded(table, what)
        _check_keys_compare_alike(bounded, table, what)
        dropped = [_position(bounded, name, table) for name in names]
        where = " OR ".join(f"({_holds(bounded, i)})" for i in sorted(set(dropped)))
        kept = bounded.partitions
        if verb == "DROP":
            kept = tuple(p for i, p in enumerate(kept) if i not in dropped)
            if not kept:
                raise TranslationError("DROP PARTITION cannot drop every partition (MySQL's error 1508)")
        return _deleting(t, table, temporary, replace(bounded, partitions=kept), where)
    if partitioning is None:
        return _changed(t, table, temporary, None, f"{verb} PARTITION of a table not known to be partitioned")
    if verb == "COALESCE" or partitioning.method not in _BOUNDED:
        return _changed(t, table, temporary, partitioning, "partitioning changes no data")
    if verb == "ADD":
        if tk.kind(rest[0]) != TokenType.L_PAREN:
            raise TranslationError("expected ADD PARTITION (definitions)")
        added = definitions(tk, rest[0] + 1, tk.close(rest[0]))
        new = replace(partitioning, partitions=partitioning.partitions + added)
        return _changed(t, table, temporary, new, "partitioning changes no data")
    # REORGANIZE PARTITION p1, p2 INTO (definitions): the run p1..p2 replaced where it stood
    into = tk.find_word(rest[0], rest[1], "INTO")
    if into == rest[1] or tk.kind(into + 1) != TokenType.L_PAREN:
        raise TranslationError("expected REORGANIZE PARTITION names INTO (definitions)")
    positions = sorted(_position(partitioning, tk.name(start), table) for start, _ in tk.split(rest[0], into))
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise TranslationError("REORGANIZE PARTITION needs adjacent partitions (MySQL's error 1519)")
    new_parts = definitions(tk, into + 2, tk.close(into + 1))
    listed = partitioning.partitions
    new = replace(partitioning, partitions=listed[: positions[0]] + new_parts + listed[positions[-1] + 1 :])
    return _changed(t, table, temporary, new, "partitioning changes no data")


def _bounded(table: MysqlTable, what: str) -> MysqlPartitioning:
    partitioning = table.partitioning
    if partitioning is None:
        raise TranslationError(
            f"{what}: the catalog holds no partitioning of `{table.schema}`.`{table.name}` (a table created "
            "before relaydeck kept partition definitions), so the rows to delete are unknown"
        )
    if partitioning.method not in _BOUNDED:
        how = (
            "by MySQL's hash functions"
            if "HASH" in partitioning.method or "KEY" in partitioning.method
            else "by time"
        )
        raise TranslationError(
            f"{what}: {partitioning.method} partitions place rows {how}, which the slave does not reproduce"
        )
    return partitioning


def _check_keys_compare_alike(partitioning: MysqlPartitioning, table: MysqlTable, what: str) -> None:
    """COLUMNS partitioning over CHAR / VARCHAR places rows by the column's collation (case- and
    often accent-insensitive, trailing spaces ignored) and BINARY pads its bytes; the slave
    compares neither way, so which rows such a partition held is not certain: refused."""
    if not partitioning.columns:
        return  # RANGE / LIST on an integer expression
    for key in _keys(partitioning):
        name = key.strip().strip("`").replace("``", "`")
        position = table.column_index(name)
        column = table.columns[position] if position is not None else None
        if column is not None and column.base_type in ("char", "varchar", "binary"):
            raise TranslationError(
                f"{what}: partitioning column `{column.name}` ({column.mysql_type}) places rows by MySQL's "
                "string comparison, which the slave does not reproduce"
            )


def _position(partitioning: MysqlPartitioning, name: str, table: MysqlTable) -> int:
    for i, partition in enumerate(partitioning.partitions):
        if partition.name.lower() == name.lower():
            return i
    raise TranslationError(
        f"`{table.schema}`.`{table.name}` has no partition `{name}` (a subpartition cannot be dropped "
        "or truncated on its own here)"
    )


def _holds(partitioning: MysqlPartitioning, i: int) -> str:
    """MySQL SQL true exactly for the rows partition i holds (never NULL)."""
    keys = _keys(partitioning)
    partitions = partitioning.partitions
    values = partitions[i].values
    if partitioning.method == "RANGE":
        assert values is not None
        below = _below(keys, values[0])
        if i > 0:
            previous = partitions[i - 1].values
            assert previous is not None
            below = f"({below}) AND NOT ({_below(keys, previous[0])})"
        return f"COALESCE({below}, FALSE)"
    if values is None:  # DEFAULT: what no other list names
        others = [f"({_holds(partitioning, k)})" for k, p in enumerate(partitions) if p.values is not None]
        return f"NOT ({' OR '.join(others)})" if others else "TRUE"
    named = [_equals(keys, value) for value in values]
    return f"COALESCE({' OR '.join(named)}, FALSE)" if named else "FALSE"


def _keys(partitioning: MysqlPartitioning) -> list[str]:
    """What each bound's values are compared with: the columns, or the one expression."""
    if partitioning.columns:
        tk = Tokens(partitioning.expression)
        return [tk.text(start, stop) for start, stop in tk.split(0, len(tk))]
    return [f"({partitioning.expression})"]


def _below(keys: list[str], bound: tuple[str, ...]) -> str:
    """keys < bound as MySQL orders partition keys: column by column, NULL below every value and
    MAXVALUE above every one."""
    if len(bound) != len(keys):
        raise TranslationError(
            f"a partition bound of {len(bound)} values for {len(keys)} partitioning columns"
        )
    terms: list[str] = []
    equal: list[str] = []
    for key, value in zip(keys, bound, strict=True):
        if value.strip().upper() == MAXVALUE:
            terms.append(" AND ".join(equal) or "TRUE")  # whatever this column holds is below
            break
        terms.append(" AND ".join([*equal, f"({key} IS NULL OR {key} < {value})"]))
        equal.append(f"{key} = {value}")
    return " OR ".join(f"({term})" for term in terms)


def _equals(keys: list[str], value: tuple[str, ...]) -> str:
    if len(value) != len(keys):
        raise TranslationError(
            f"a partition value of {len(value)} parts for {len(keys)} partitioning columns"
        )
    parts = [
        f"{key} IS NULL" if item.strip().upper() == "NULL" else f"{key} = {item}"
        for key, item in zip(keys, value, strict=True)
    ]
    return "(" + " AND ".join(parts) + ")"


def _deleting(
    t: Translation, table: MysqlTable, temporary: bool, new: MysqlPartitioning | None, where: str
) -> DdlPlan:
    """The rows `where` selects deleted (a MySQL condition), the partition list then `new`
    (None: unchanged)."""
    changed = table if new is None else replace(table, partitioning=new)
    if temporary:
        t.catalog.set_temporary(changed)
        return t.plan("temporary", "temporary tables are kept in the model only")
    quoted = ".".join("`" + name.replace("`", "``") + "`" for name in table.key)
    try:
        statements = StatementTranslator().translate(
            f"DELETE FROM {quoted} WHERE {where}", SessionContext(default_db=table.schema), t.catalog
        )
    except RefusedStatement:
        raise  # outside what a MySQL statement may do: refused as the statement would be
    except UntranslatableStatement as exc:
        raise TranslationError(
            f"the rows of the partition cannot be selected on the slave: {exc.reason}"
        ) from None
    t.catalog[table.key] = changed
    t.touched.append(table.key)
    t.statements.extend(statements)
    return t.plan("alter_table")


def _changed(
    t: Translation, table: MysqlTable, temporary: bool, new: MysqlPartitioning | None, reason: str
) -> DdlPlan:
    changed = replace(table, partitioning=new)
    if temporary:
        t.catalog.set_temporary(changed)
    else:
        t.catalog[table.key] = changed
        t.touched.append(table.key)
    return t.plan("alter_table", reason)
