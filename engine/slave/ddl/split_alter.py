"""ALTER TABLE split into clauses, each rewritten on the token level and parsed by sqlglot on its own.

ONLINE/IGNORE/WAIT n/NOWAIT are dropped, ADD [COLUMN] (a ..., b ...) becomes one ADD COLUMN per
column, RENAME AS becomes RENAME TO, IF [NOT] EXISTS after MODIFY/CHANGE/ADD INDEX is lifted out,
trailing partition options are cut, and clauses sqlglot rejects but that change no data (CONVERT
TO CHARACTER SET, table options, ENABLE/DISABLE KEYS, partition maintenance, ...) are read from
tokens or ignored. A clause is read by the reader its first word names (`_CLAUSE_READERS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import TokenType

from ..untranslatable import abbreviate
from .column_rewrites import ColumnNotes, canonical_column_definition
from .pretransforms import CharsetOptions, canonical_key_definition, is_key_definition, table_options
from .tokens import Tokens, TranslationError, parse


@dataclass(frozen=True)
class Clause:
    """One ALTER TABLE clause: a sqlglot action, or facts read from tokens."""

    action: exp.Expression | None = None
    if_exists: bool = False  # MODIFY/CHANGE/DROP ... IF EXISTS, ADD ... IF NOT EXISTS (MariaDB)
    options: CharsetOptions | None = None  # [DEFAULT] CHARSET/COLLATE
    convert: CharsetOptions | None = None  # CONVERT TO CHARACTER SET
    rename_index: tuple[str, str] | None = None
    ignored: str | None = None  # why the clause changes nothing on the slave


# First words of clauses that are table options (ALTER TABLE t ENGINE=InnoDB ROW_FORMAT=...).
_TABLE_OPTION_WORDS = frozenset(
    {
        "ENGINE",
        "AUTO_INCREMENT",
        "AVG_ROW_LENGTH",
        "CHECKSUM",
        "TABLE_CHECKSUM",
        "COMMENT",
        "COMPRESSION",
        "CONNECTION",
        "DATA",
        "INDEX",
        "DELAY_KEY_WRITE",
        "ENCRYPTION",
        "ENCRYPTION_KEY_ID",
        "ENCRYPTED",
        "INSERT_METHOD",
        "KEY_BLOCK_SIZE",
        "MAX_ROWS",
        "MIN_ROWS",
        "PACK_KEYS",
        "PASSWORD",
        "ROW_FORMAT",
        "STATS_AUTO_RECALC",
        "STATS_PERSISTENT",
        "STATS_SAMPLE_PAGES",
        "TABLESPACE",
        "UNION",
        "PAGE_CHECKSUM",
        "PAGE_COMPRESSED",
        "PAGE_COMPRESSION_LEVEL",
        "TRANSACTIONAL",
        "IETF_QUOTES",
        "ENGINE_ATTRIBUTE",
        "SECONDARY_ENGINE_ATTRIBUTE",
        "SECONDARY_ENGINE",
        "AUTOEXTEND_SIZE",
        "START",
        "DEFAULT",
        "CHARACTER",
        "CHARSET",
        "COLLATE",
        "STORAGE",
    }
)

# Clauses that change no table data, by first word (and second where it matters).
_IGNORED_CLAUSES: dict[tuple[str, ...], str] = {
    ("ALGORITHM",): "ALGORITHM= only chooses how the source alters the table",
    ("LOCK",): "LOCK= only chooses how the source alters the table",
    ("FORCE",): "FORCE rebuilds the table on the source without changing it",
    ("ORDER", "BY"): "ORDER BY only changes the physical order on the source",
    ("ENABLE", "KEYS"): "ENABLE KEYS concerns index maintenance",
    ("DISABLE", "KEYS"): "DISABLE KEYS concerns index maintenance",
    ("DISCARD", "TABLESPACE"): "DISCARD TABLESPACE changes no row the slave has",
    ("WITH", "VALIDATION"): "partition exchange validation option",
    ("WITHOUT", "VALIDATION"): "partition exchange validation option",
    ("ANALYZE", "PARTITION"): "partition maintenance",
    ("CHECK", "PARTITION"): "partition maintenance",
    ("OPTIMIZE", "PARTITION"): "partition maintenance",
    ("REBUILD", "PARTITION"): "partition maintenance",
    ("REPAIR", "PARTITION"): "partition maintenance",
    ("COALESCE", "PARTITION"): "partitioning changes no data",
    ("REORGANIZE", "PARTITION"): "partitioning changes no data",
    ("ADD", "PARTITION"): "partitioning changes no data",
    ("REMOVE", "PARTITIONING"): "partitioning changes no data",
    ("PARTITION", "BY"): "partitioning changes no data",
    ("UPGRADE", "PARTITIONING"): "partitioning changes no data",
    ("ALTER", "INDEX"): "index visibility is not modeled",
    ("ALTER", "KEY"): "index visibility is not modeled",
    ("ALTER", "CHECK"): "CHECK constraints are not enforced on the slave",
    ("ALTER", "CONSTRAINT"): "CHECK constraints are not enforced on the slave",
    ("ADD", "CHECK"): "CHECK constraints are not enforced on the slave",
    ("DROP", "CHECK"): "CHECK constraints are not enforced on the slave",
    ("ADD", "PERIOD", "FOR"): "application-time periods are not modeled",
    ("DROP", "PERIOD", "FOR"): "application-time periods are not modeled",
    ("SECONDARY_LOAD",): "secondary engine operation",
    ("SECONDARY_UNLOAD",): "secondary engine operation",
}

# Clauses that change data without row events: the slave cannot follow them.
_UNTRANSLATABLE_CLAUSES: dict[tuple[str, ...], str] = {
    ("DROP", "PARTITION"): "DROP PARTITION deletes rows without logging them",
    ("TRUNCATE", "PARTITION"): "TRUNCATE PARTITION deletes rows without logging them",
    ("EXCHANGE", "PARTITION"): "EXCHANGE PARTITION moves rows without logging them",
    ("IMPORT", "TABLESPACE"): "IMPORT TABLESPACE brings rows that were never logged",
    ("IMPORT", "PARTITION"): "IMPORT PARTITION brings rows that were never logged",
    ("DISCARD", "PARTITION"): "DISCARD PARTITION removes rows without logging them",
    ("CONVERT", "PARTITION"): "CONVERT PARTITION moves rows without logging them",
    ("CONVERT", "TABLE"): "CONVERT TABLE moves rows without logging them",
    ("ADD", "SYSTEM", "VERSIONING"): "system-versioned tables are not supported",
    ("DROP", "SYSTEM", "VERSIONING"): "system-versioned tables are not supported",
}


def _clause_rule(tk: Tokens, i: int, rules: dict[tuple[str, ...], str]) -> str | None:
    for words, reason in rules.items():
        if tk.words(i, *words):
            return reason
    return None


def alter_clauses(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """ALTER TABLE specification tokens i..j-1 -> clauses, each parsed on its own.

    >>> tk = Tokens("ADD (a INT, b INT), ENGINE=InnoDB, RENAME KEY i TO j PARTITION BY HASH(a)")
    >>> for clause in alter_clauses(tk, 0, len(tk), ColumnNotes()):
    ...     print(clause.action and clause.action.sql("mysql"), clause.rename_index, clause.ignored)
    a INT None None
    b INT None None
    None None None
    None ('i', 'j') None
    None None partitioning changes no data
    """
    end = j
    k = i
    while k < j:  # partition options close the statement without a comma
        if tk.kind(k) == TokenType.L_PAREN:
            k = tk.close(k) + 1
            continue
        if tk.words(k, "PARTITION", "BY") or tk.words(k, "REMOVE", "PARTITIONING"):
            if k > i and tk.kind(k - 1) != TokenType.COMMA:
                end = k
                break
        k += 1
    clauses: list[Clause] = []
    for start, stop in tk.split(i, end):
        clauses.extend(_alter_clause(tk, start, stop, notes))
    if end < j:
        clauses.append(Clause(ignored="partitioning changes no data"))
    return clauses


def _alter_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    reason = _clause_rule(tk, i, _UNTRANSLATABLE_CLAUSES)
    if reason is not None:
        raise TranslationError(reason)
    reason = _clause_rule(tk, i, _IGNORED_CLAUSES)
    if reason is not None:
        return [Clause(ignored=reason)]
    first = tk.word(i)
    if first in _TABLE_OPTION_WORDS:
        return [Clause(options=table_options(tk, i, j))]
    read = _CLAUSE_READERS.get(first)
    if read is None:
        raise _unsupported(tk, i, j)
    return read(tk, i, j, notes)


def _unsupported(tk: Tokens, i: int, j: int) -> TranslationError:
    return TranslationError(f"unsupported ALTER TABLE clause {abbreviate(tk.text(i, j), 60)!r}")


def _convert_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """CONVERT TO CHARACTER SET x [COLLATE y] (sqlglot rejects it)."""
    if not tk.words(i, "CONVERT", "TO"):
        raise _unsupported(tk, i, j)
    k = i + 2
    if tk.word(k) in ("CHARACTER", "CHARSET"):
        return [Clause(convert=table_options(tk, k, j))]
    raise TranslationError("expected CONVERT TO CHARACTER SET")


def _rename_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """RENAME INDEX/KEY a TO b (read from tokens), RENAME COLUMN, RENAME [TO|AS] name (as RENAME TO)."""
    if tk.word(i + 1) in ("INDEX", "KEY"):
        if tk.word(i + 3) != "TO":
            raise TranslationError("expected RENAME INDEX a TO b")
        return [Clause(rename_index=(tk.name(i + 2), tk.name(i + 4)))]
    if tk.words(i, "RENAME", "COLUMN"):
        return [Clause(action=_alter_action(tk.text(i, j)))]
    k = i + 1
    if tk.word(k) in ("TO", "AS"):
        k += 1
    return [Clause(action=_alter_action(f"RENAME TO {tk.text(k, j)}"))]


def _add_clauses(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """ADD ...: a column, a parenthesized list of columns, a key, or a foreign key."""
    k = i + 1
    explicit_column = tk.word(k) == "COLUMN"
    if explicit_column:
        k += 1
    if_not_exists = tk.words(k, "IF", "NOT", "EXISTS")
    if if_not_exists:
        k += 3
    if not explicit_column and is_key_definition(tk, k):
        key = canonical_key_definition(tk, k, j)
        return [Clause(action=_alter_action(f"ADD {key.text}"), if_exists=if_not_exists or key.if_not_exists)]
    if not explicit_column and (tk.word(k) in ("CONSTRAINT", "FOREIGN")):
        return [Clause(action=_alter_action(f"ADD {tk.text(k, j)}"))]
    if tk.kind(k) == TokenType.L_PAREN and tk.close(k) == j - 1:
        # ADD [COLUMN] (a INT, b INT, [KEY ...]): one clause per element
        clauses: list[Clause] = []
        for start, stop in tk.split(k + 1, j - 1):
            if is_key_definition(tk, start):
                key = canonical_key_definition(tk, start, stop)
                clauses.append(Clause(action=_alter_action(f"ADD {key.text}")))
            else:
                column = canonical_column_definition(tk, start, stop, notes)
                clauses.append(Clause(action=_alter_action(f"ADD COLUMN {column}"), if_exists=if_not_exists))
        return clauses
    column = canonical_column_definition(tk, k, j, notes)
    return [Clause(action=_alter_action(f"ADD COLUMN {column}"), if_exists=if_not_exists)]


def _modify_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """MODIFY [COLUMN] [IF EXISTS] a ... and CHANGE [COLUMN] [IF EXISTS] a b ..., IF EXISTS lifted out.

    >>> clause, = _modify_clause(Tokens("CHANGE COLUMN IF EXISTS a b INT8"), 0, 7, ColumnNotes())
    >>> clause.action.sql("mysql"), clause.if_exists
    ('CHANGE COLUMN a b BIGINT', True)
    """
    first = tk.word(i)
    k = i + 1
    if tk.word(k) == "COLUMN":
        k += 1
    if_exists = tk.words(k, "IF", "EXISTS")
    if if_exists:
        k += 2
    name_tokens = 2 if first == "CHANGE" else 1
    definition = canonical_column_definition(tk, k + name_tokens - 1, j, notes)
    prefix = f"{first} COLUMN {tk.text(k, k + 1)}" if first == "CHANGE" else f"{first} COLUMN"
    return [Clause(action=_alter_action(f"{prefix} {definition}"), if_exists=if_exists)]


def _drop_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """DROP [COLUMN|INDEX|KEY|FOREIGN KEY|CONSTRAINT] [IF EXISTS] name, IF EXISTS lifted out."""
    k = i + 1
    target = tk.word(k)
    if target in ("INDEX", "KEY", "COLUMN", "FOREIGN", "CONSTRAINT"):
        k += 2 if target == "FOREIGN" else 1
    if_exists = tk.words(k, "IF", "EXISTS")
    changes: dict[int, str | None] = {k: None, k + 1: None} if if_exists else {}
    return [Clause(action=_alter_action(tk.rebuild(i, j, changes)), if_exists=if_exists)]


def _alter_column_clause(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> list[Clause]:
    """ALTER [COLUMN] a SET DEFAULT/DROP DEFAULT/SET VISIBLE..., as sqlglot parses it."""
    return [Clause(action=_alter_action(tk.text(i, j)))]


_CLAUSE_READERS: dict[str, Callable[[Tokens, int, int, ColumnNotes], list[Clause]]] = {
    "CONVERT": _convert_clause,
    "RENAME": _rename_clause,
    "ADD": _add_clauses,
    "MODIFY": _modify_clause,
    "CHANGE": _modify_clause,
    "DROP": _drop_clause,
    "ALTER": _alter_column_clause,
}


def _alter_action(clause: str) -> exp.Expression:
    tree = parse(f"ALTER TABLE _t {clause}", f"ALTER TABLE clause {abbreviate(clause, 60)!r}")
    actions = tree.args.get("actions") or []
    if not isinstance(tree, exp.Alter) or len(actions) != 1:
        raise TranslationError(f"unsupported ALTER TABLE clause {abbreviate(clause, 60)!r}")
    return actions[0]
