"""Column definitions rewritten on the token level into what sqlglot parses (a pre-transform).

`canonical_column_definition` rewrites type synonyms sqlglot misreads or rejects (INT8 read as
TINYINT, REAL as FLOAT, LONG as BIGINT, BOOL as BOOLEAN; INT3, MIDDLEINT, LONG VARCHAR, LONG
VARBINARY, NATIONAL CHAR/VARCHAR, CHAR VARYING, CHAR(n) BYTE, SERIAL, FLOAT UNSIGNED rejected) and
column attributes it rejects (VISIBLE, PERSISTENT, SERIAL DEFAULT VALUE, COLUMN_FORMAT, STORAGE,
ENGINE_ATTRIBUTE, SECONDARY_ENGINE_ATTRIBUTE, SRID, REF_SYSTEM_ID, COMPRESSED, WITHOUT SYSTEM
VERSIONING). Spatial and MariaDB type names it does not know (POINT, POLYGON, INET6, ...) are read
as named types by enabling user-defined types in the dialect. WITH SYSTEM VERSIONING is refused:
MariaDB then adds hidden columns that row events carry.

Measured against sqlglot 30 with dialect 'mysql'. The type synonym is replaced first
(`_type_synonym`), then each attribute by the named rewrite its first word selects
(`_ATTRIBUTE_REWRITES`); what a rewrite had to take out for sqlglot that the model still needs
(FLOAT UNSIGNED) is kept in `ColumnNotes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot.tokens import TokenType

from .tokens import Tokens, TranslationError

# Type synonyms: (words, replacement). sqlglot reads INT8 as TINYINT, REAL as FLOAT and LONG as
# BIGINT, and rejects the rest; MySQL's meanings are on the right.
_TYPE_SYNONYMS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("LONG", "VARBINARY"), "MEDIUMBLOB"),
    (("LONG", "CHAR", "VARYING"), "MEDIUMTEXT"),
    (("LONG", "CHARACTER", "VARYING"), "MEDIUMTEXT"),
    (("LONG", "VARCHAR"), "MEDIUMTEXT"),
    (("LONG",), "MEDIUMTEXT"),
    (("NATIONAL", "CHAR", "VARYING"), "NVARCHAR"),
    (("NATIONAL", "CHARACTER", "VARYING"), "NVARCHAR"),
    (("NATIONAL", "VARCHAR"), "NVARCHAR"),
    (("NATIONAL", "CHAR"), "NCHAR"),
    (("NATIONAL", "CHARACTER"), "NCHAR"),
    (("NCHAR", "VARCHAR"), "NVARCHAR"),
    (("NCHAR", "VARYING"), "NVARCHAR"),
    (("CHAR", "VARYING"), "VARCHAR"),
    (("CHARACTER", "VARYING"), "VARCHAR"),
    (("INT1",), "TINYINT"),
    (("INT2",), "SMALLINT"),
    (("INT3",), "MEDIUMINT"),
    (("MIDDLEINT",), "MEDIUMINT"),
    (("INT4",), "INT"),
    (("INT8",), "BIGINT"),
    (("FLOAT4",), "FLOAT"),
    (("FLOAT8",), "DOUBLE"),
    (("REAL",), "DOUBLE"),  # REAL is DOUBLE unless sql_mode REAL_AS_FLOAT
    (("BOOL",), "TINYINT(1)"),
    (("BOOLEAN",), "TINYINT(1)"),
    (("SERIAL",), "BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE"),
)

# Column attributes sqlglot rejects and that mean nothing on the slave: word -> tokens it spans
# after itself (an optional '=' is skipped too).
_DROPPED_COLUMN_ATTRIBUTES: dict[str, int] = {
    "VISIBLE": 0,
    "ENGINE_ATTRIBUTE": 1,
    "SECONDARY_ENGINE_ATTRIBUTE": 1,
    "COLUMN_FORMAT": 1,
    "STORAGE": 1,
    "SRID": 1,
    "REF_SYSTEM_ID": 1,
}


@dataclass
class ColumnNotes:
    """What a pre-transform had to take out of column definitions for sqlglot to parse them."""

    unsigned_floats: set[str] = field(default_factory=set)  # casefolded names of FLOAT ... UNSIGNED


def canonical_column_definition(tk: Tokens, i: int, j: int, notes: ColumnNotes) -> str:
    """Column definition tokens i..j-1 (name first) rewritten into what sqlglot parses: the type
    synonym replaced, then each attribute by the rewrite its first word names.

    >>> tk = Tokens("id INT8 UNSIGNED VISIBLE COLUMN_FORMAT DYNAMIC")
    >>> canonical_column_definition(tk, 0, len(tk), ColumnNotes())
    'id BIGINT UNSIGNED'
    >>> notes = ColumnNotes()
    >>> tk = Tokens("f FLOAT UNSIGNED NOT NULL")
    >>> canonical_column_definition(tk, 0, len(tk), notes), notes.unsigned_floats
    ('f FLOAT NOT NULL', {'f'})
    >>> tk = Tokens("c CHAR(3) BYTE PERSISTENT COMPRESSED=zlib")
    >>> canonical_column_definition(tk, 0, len(tk), notes)
    'c BINARY (3) STORED'
    """
    column = _ColumnRewrite(tk, tk.name(i), i + 1, tk.word(i + 1), notes)
    k = _type_synonym(column, i + 1)
    if tk.kind(k) == TokenType.L_PAREN:
        k = tk.close(k) + 1
    while k < j:
        if tk.kind(k) == TokenType.L_PAREN:
            k = tk.close(k) + 1
            continue
        rewrite = _ATTRIBUTE_REWRITES.get(tk.word(k))
        k = rewrite(column, k) if rewrite is not None else k + 1
    return tk.rebuild(i, j, column.changes)


@dataclass
class _ColumnRewrite:
    """A column definition being rewritten: the tokens to replace (str) or drop (None)."""

    tk: Tokens
    name: str
    type_at: int
    type_word: str
    notes: ColumnNotes
    changes: dict[int, str | None] = field(default_factory=dict)

    def drop(self, k: int, count: int = 1) -> int:
        """Drop `count` tokens from k; the index after them."""
        for d in range(count):
            self.changes[k + d] = None
        return k + count


def _type_synonym(column: _ColumnRewrite, k: int) -> int:
    """A type synonym at k replaced by MySQL's meaning of it; the index after the type's words."""
    for words, replacement in _TYPE_SYNONYMS:
        if column.tk.words(k, *words):
            column.changes[k] = replacement
            column.drop(k + 1, len(words) - 1)
            column.type_word = replacement.split("(")[0].split()[0]
            return k + len(words)
    return k + 1


def _value_follows(column: _ColumnRewrite, k: int) -> int:
    """AFTER/DEFAULT/COLLATE/CHARSET: the name or value that follows is not an attribute."""
    return column.tk.skip_group(k + 1)


def _unsigned_float(column: _ColumnRewrite, k: int) -> int:
    """FLOAT UNSIGNED: sqlglot has no unsigned FLOAT; the model gets it from the notes instead."""
    if column.type_word == "FLOAT":
        column.notes.unsigned_floats.add(column.name.casefold())
        column.drop(k)
    return k + 1


def _char_byte(column: _ColumnRewrite, k: int) -> int:
    """CHAR(n) BYTE is BINARY(n)."""
    if column.type_word in ("CHAR", "CHARACTER"):
        column.changes[column.type_at] = "BINARY"
        column.drop(k)
    return k + 1


def _dropped_attribute(column: _ColumnRewrite, k: int) -> int:
    """An attribute that means nothing on the slave, with the tokens it spans (and an optional '=')."""
    span = _DROPPED_COLUMN_ATTRIBUTES[column.tk.word(k)]
    if span and column.tk.kind(k + 1) == TokenType.EQ:
        span += 1
    return column.drop(k, span + 1)


def _compressed(column: _ColumnRewrite, k: int) -> int:
    """MariaDB's COMPRESSED[=method]."""
    return column.drop(k, 3 if column.tk.kind(k + 1) == TokenType.EQ else 1)


def _with_system_versioning(column: _ColumnRewrite, k: int) -> int:
    if column.tk.words(k + 1, "SYSTEM", "VERSIONING"):
        raise TranslationError("system-versioned tables are not supported")
    return k + 1


def _without_system_versioning(column: _ColumnRewrite, k: int) -> int:
    if column.tk.words(k + 1, "SYSTEM", "VERSIONING"):
        return column.drop(k, 3)
    return k + 1


def _persistent(column: _ColumnRewrite, k: int) -> int:
    """MariaDB's word for STORED."""
    column.changes[k] = "STORED"
    return k + 1


def _serial_default_value(column: _ColumnRewrite, k: int) -> int:
    """SERIAL DEFAULT VALUE: NOT NULL AUTO_INCREMENT UNIQUE."""
    if column.tk.words(k + 1, "DEFAULT", "VALUE"):
        column.changes[k] = "NOT NULL AUTO_INCREMENT UNIQUE"
        return column.drop(k + 1, 2)
    return k + 1


# Column attribute rewrites by first word; any other word is kept.
_ATTRIBUTE_REWRITES: dict[str, Callable[[_ColumnRewrite, int], int]] = {
    "AFTER": _value_follows,
    "DEFAULT": _value_follows,
    "COLLATE": _value_follows,
    "CHARSET": _value_follows,
    "UNSIGNED": _unsigned_float,
    "BYTE": _char_byte,
    **dict.fromkeys(_DROPPED_COLUMN_ATTRIBUTES, _dropped_attribute),
    "COMPRESSED": _compressed,
    "WITH": _with_system_versioning,
    "WITHOUT": _without_system_versioning,
    "PERSISTENT": _persistent,
    "SERIAL": _serial_default_value,
}
