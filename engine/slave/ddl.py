"""DDL from a MySQL/MariaDB replication stream -> DuckDB statements plus the slave's new catalog.

Parse -> model -> realize:

1. *Parse.* Statements are tokenized with sqlglot's MySQL tokenizer. sqlglot parses most MySQL DDL
   itself (measured: CREATE/DROP DATABASE, CREATE TABLE with inline keys/FOREIGN KEY/CHECK and the
   common table options, CREATE TABLE ... LIKE / ... SELECT, DROP TABLE, TRUNCATE, CREATE/DROP
   INDEX, and the ALTER TABLE clauses ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ALTER COLUMN ...
   DEFAULT, ADD/DROP PRIMARY KEY/INDEX/UNIQUE/FOREIGN KEY, RENAME TO, ENGINE=, FORCE,
   ALGORITHM=/LOCK=). Where it cannot, a small named pre-transform rewrites the clause on the
   token level (never a regex over the text) into a form it parses; see "Pre-transforms" below.
   Only RENAME TABLE, which sqlglot keeps as an opaque command, is read from tokens entirely.
2. *Model.* The syntax tree updates a copy of the `Catalog`; ALTER clauses apply in order to a
   draft of the table that also remembers where each column's values come from.
3. *Realize.* DuckDB statements are derived from the old and new models.

Decisions:

- Tables hold MySQL's columns in MySQL's order, nothing else: no PRIMARY KEY/UNIQUE/NOT NULL/
  DEFAULT/CHECK/FOREIGN KEY constraints and no indexes. The source already enforced all of them
  (a replica applies row images the source accepted); DuckDB would check them again on every row
  and its ART indexes make bulk upserts and updates of key columns slow (an UPDATE is a delete plus
  an insert under a unique index). The model keeps every key, which the applier needs to match rows.
- Indexes (CREATE INDEX, KEY, FULLTEXT, SPATIAL) are model-only for the same reason; the applier
  applies row changes in batches with joins, which do not use ART indexes.
- Temporary tables are model-only (plan kind 'temporary', no statements): in ROW format the
  source never logs row events for them, so nothing ever reads them on the slave. They live in the
  catalog apart from base tables and shadow them for DDL, as in MySQL.
- Views, triggers, routines, events, users, grants and maintenance statements (ANALYZE, OPTIMIZE,
  REPAIR, FLUSH, ...) change no table data on a replica that applies row events: plan kind
  'ignored' with the reason. View names are remembered so that RENAME TABLE and DROP VIEW of them
  stay consistent; their SQL is not translated (MySQL's view SQL is not portable to DuckDB without
  validation, and nothing on the slave needs it).
- Column order changes (FIRST/AFTER), and any ALTER whose column changes DuckDB's in-place
  ALTER TABLE cannot express, rebuild the table: CREATE a new table in MySQL's column order,
  INSERT ... SELECT with value conversions, DROP the old one, RENAME the new one - all in the
  caller's transaction. Other ALTERs use DuckDB's ALTER TABLE in place.
- Rows that exist when a column is added get what MySQL gives them: the DEFAULT, MySQL's implicit
  default for NOT NULL columns without one (0, '', the first ENUM member; zero dates become NULL,
  as DuckDB has no zero date), the generated expression (transpiled by sqlglot, checked against
  DuckDB before use), or AUTO_INCREMENT numbers in clustered-index order (PRIMARY KEY, else the
  first UNIQUE NOT NULL key, else insertion order). CURRENT_TIMESTAMP is the event's timestamp
  when the caller passes it.
- CREATE TABLE ... SELECT: in ROW format the source logs it as a plain CREATE TABLE listing every
  column, followed by row events. A statement-format CREATE ... SELECT is translated only when
  every selected column is also declared in the statement (their types come from the declaration);
  otherwise the column types are unknown and the statement is untranslatable.
- Identifiers are always quoted (`quote_ident`); names are data. DuckDB compares identifiers
  case-insensitively, so two MySQL tables (or databases) whose names differ only in case cannot
  both exist on the slave: that raises UntranslatableStatement rather than mixing them up.
- sql_mode ANSI_QUOTES is assumed off ("..." is a string) and versioned comments (/*!50100 ...*/)
  are always executed, as every server that can be a source executes them.

Pre-transforms (each a named function below; measured against sqlglot 30 with dialect 'mysql'):

- `unwrap_executable_comments`: /*! ... */, /*!NNNNN ... */ and MariaDB's /*M!NNNNNN ... */ hold
  SQL MySQL executes (sysbench writes /*! ENGINE = innodb */, servers log
  DROP /*!40005 TEMPORARY */ TABLE); sqlglot drops them as comments.
- `canonical_column_definition`: type synonyms sqlglot misreads or rejects (INT8 read as TINYINT,
  REAL as FLOAT, LONG as BIGINT, BOOL as BOOLEAN; INT3, MIDDLEINT, LONG VARCHAR, LONG VARBINARY,
  NATIONAL CHAR/VARCHAR, CHAR VARYING, CHAR(n) BYTE, SERIAL, FLOAT UNSIGNED rejected) and column
  attributes it rejects (VISIBLE, PERSISTENT, SERIAL DEFAULT VALUE, COLUMN_FORMAT, STORAGE,
  ENGINE_ATTRIBUTE, SECONDARY_ENGINE_ATTRIBUTE, SRID, REF_SYSTEM_ID, COMPRESSED,
  WITHOUT SYSTEM VERSIONING). Spatial and MariaDB type names it does not know (POINT, POLYGON,
  INET6, ...) are read as named types by enabling user-defined types in the dialect.
  WITH SYSTEM VERSIONING is refused: MariaDB then adds hidden columns that row events carry.
- `canonical_key_definition`: every index definition as `KIND name (columns)`, options dropped:
  sqlglot rejects PRIMARY KEY USING BTREE (a), MariaDB's IGNORED and ADD INDEX IF NOT EXISTS
  (lifted out), and one canonical shape keeps the model builder simple.
- `table_options`: CREATE TABLE options are read for CHARSET/COLLATE and dropped; sqlglot rejects
  some (CHECKSUM=, TABLESPACE, UNION=, PARTITION BY KEY/HASH ... PARTITIONS n, partition lists
  with MAXVALUE), and partitioning changes no data. CREATE/ALTER DATABASE options are read the
  same way (sqlglot rejects READ ONLY and every ALTER DATABASE).
- `alter_clauses`: ALTER TABLE is split into its clauses: ONLINE/IGNORE/WAIT n/NOWAIT are dropped,
  ADD [COLUMN] (a ..., b ...) becomes one ADD COLUMN per column, RENAME AS becomes RENAME TO,
  IF [NOT] EXISTS after MODIFY/CHANGE/ADD INDEX is lifted out, trailing partition options are cut,
  and clauses sqlglot rejects but that change no data (CONVERT TO CHARACTER SET, table options,
  ENABLE/DISABLE KEYS, partition maintenance, ...) are read from tokens or ignored.
- `canonical_create_index`: CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX ... as
  `CREATE [UNIQUE] INDEX name ON table (columns)` (sqlglot rejects FULLTEXT/SPATIAL, USING and
  trailing ALGORITHM=/LOCK=, and reads prefix lengths as function calls);
  `strip_wait_and_algorithm` drops WAIT/NOWAIT/ALGORITHM=/LOCK= from DROP TABLE/DROP INDEX.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from .database import sandbox_config
from .identifiers import quote_ident
from .names import duckdb_schema
from .schema import (
    Catalog,
    MysqlColumn,
    MysqlDatabase,
    MysqlForeignKey,
    MysqlTable,
    TableKey,
    same_column_name,
)
from .types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    SPATIAL_TYPES,
    TEXT_TYPES,
    ConversionError,
    convert_expression,
    duckdb_type,
    round_fraction,
)
from .untranslatable import UntranslatableStatement
from .untranslatable import abbreviate as _abbreviate

# ---------------------------------------------------------------------------------------------
# Results and errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DdlPlan:
    """DuckDB statements to run in order (in the caller's transaction) and the catalog after them.

    kind: create_database, alter_database, drop_database, create_table, drop_table, rename_table,
    alter_table, truncate_table, create_index, drop_index, temporary (temporary tables: model
    only) or ignored (nothing to do; `reason` says why). `tables` lists the (database, table) keys
    whose model changed, old and new names both, so the caller can drop what it cached about them.
    """

    statements: list[str]
    catalog: Catalog
    kind: str
    reason: str | None = None
    tables: tuple[TableKey, ...] = ()


def _quote_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _Fail(Exception):
    """Raised inside the translation; becomes UntranslatableStatement naming the statement."""


# ---------------------------------------------------------------------------------------------
# sqlglot dialect and tokens
# ---------------------------------------------------------------------------------------------


class _MySQL(MySQL):
    """sqlglot's MySQL dialect reading unknown type names (POINT, INET6, ...) as named types.

    Without this, sqlglot fails on every spatial type but GEOMETRY and on MariaDB's INET4/INET6;
    the model turns the names it knows into MySQL types and rejects the rest.
    """

    SUPPORTS_USER_DEFINED_TYPES = True


_DIALECT = _MySQL()

# Tokens whose text is a value or a quoted name, never a keyword.
_NOT_WORDS = frozenset(
    {
        TokenType.STRING,
        TokenType.IDENTIFIER,
        TokenType.NATIONAL_STRING,
        TokenType.HEX_STRING,
        TokenType.BIT_STRING,
        TokenType.BYTE_STRING,
        TokenType.RAW_STRING,
        TokenType.HEREDOC_STRING,
        TokenType.UNICODE_STRING,
        TokenType.NUMBER,
    }
)


def _tokenize(sql: str) -> list[Token]:
    try:
        return _DIALECT.tokenize(sql)
    except SqlglotError as exc:
        raise _Fail(f"cannot tokenize: {_first_line(exc)}") from None


def _shifted(tok: Token, offset: int) -> Token:
    return Token(
        tok.token_type, tok.text, tok.line, tok.col, tok.start + offset, tok.end + offset, tok.comments
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _is_wordlike(text: str) -> bool:
    return bool(text) and all(ch.isalnum() or ch in "_$" for ch in text)


class _Tokens:
    """sqlglot's tokens of one SQL text, with the original text of any run of them."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        tokens = _tokenize(sql)
        if tokens and tokens[0].token_type in _DIALECT.tokenizer_class.COMMANDS:
            # After a command keyword (RENAME, ...) sqlglot keeps the rest as one opaque string.
            offset = tokens[0].end + 1
            rest = [_shifted(t, offset) for t in _tokenize(sql[offset:])]
            tokens = [tokens[0], *rest]
        while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
            tokens.pop()
        self.tokens = [part for tok in tokens for part in self._single_words(tok)]

    def _single_words(self, tok: Token) -> list[Token]:
        """sqlglot merges some keyword pairs into one token (PRIMARY KEY, ORDER BY, CHAR VARYING);
        they are split back into one token per word, with their own positions in the text."""
        if tok.token_type in _NOT_WORDS or " " not in tok.text:
            return [tok]
        parts: list[Token] = []
        k, end = tok.start, tok.end + 1
        while k < end:
            if self.sql[k].isspace():
                k += 1
                continue
            stop = k
            while stop < end and not self.sql[stop].isspace():
                stop += 1
            parts.append(Token(TokenType.VAR, self.sql[k:stop], tok.line, tok.col, k, stop - 1))
            k = stop
        return parts

    def __len__(self) -> int:
        return len(self.tokens)

    def word(self, i: int) -> str:
        """The upper-cased keyword/bare word at i, or '' (quoted names and literals are not words)."""
        if 0 <= i < len(self.tokens):
            tok = self.tokens[i]
            if tok.token_type not in _NOT_WORDS and _is_wordlike(tok.text) and not tok.text[0].isdigit():
                return tok.text.upper()
        return ""

    def words(self, i: int, *expected: str) -> bool:
        return all(self.word(i + k) == w for k, w in enumerate(expected))

    def kind(self, i: int) -> TokenType | None:
        return self.tokens[i].token_type if 0 <= i < len(self.tokens) else None

    def text(self, i: int, j: int) -> str:
        """The original text of tokens i..j-1 (comments between them included)."""
        if i >= j:
            return ""
        return self.sql[self.tokens[i].start : self.tokens[j - 1].end + 1]

    def close(self, i: int) -> int:
        """Index of the parenthesis closing the one at i."""
        depth = 0
        for k in range(i, len(self.tokens)):
            kind = self.tokens[k].token_type
            if kind == TokenType.L_PAREN:
                depth += 1
            elif kind == TokenType.R_PAREN:
                depth -= 1
                if depth == 0:
                    return k
        raise _Fail("unbalanced parentheses")

    def skip_group(self, i: int) -> int:
        """The index after the token at i, or after its parenthesized group if it opens one."""
        return self.close(i) + 1 if self.kind(i) == TokenType.L_PAREN else i + 1

    def split(self, i: int, j: int) -> list[tuple[int, int]]:
        """The comma-separated parts of tokens i..j-1 (commas inside parentheses do not split)."""
        parts: list[tuple[int, int]] = []
        start = k = i
        while k < j:
            if self.kind(k) == TokenType.L_PAREN:
                k = self.close(k) + 1
                continue
            if self.kind(k) == TokenType.COMMA:
                parts.append((start, k))
                start = k + 1
            k += 1
        if start < j:
            parts.append((start, j))
        return parts

    def find_word(self, i: int, j: int, *words: str) -> int:
        """Index of the first of `words` outside parentheses in i..j-1, or j."""
        k = i
        while k < j:
            if self.kind(k) == TokenType.L_PAREN:
                k = self.close(k) + 1
                continue
            if self.word(k) in words:
                return k
            k += 1
        return j

    def name(self, i: int) -> str:
        """The identifier at i: a quoted name (unescaped) or a bare word."""
        if 0 <= i < len(self.tokens):
            tok = self.tokens[i]
            if tok.token_type == TokenType.IDENTIFIER or (
                tok.token_type not in _NOT_WORDS and _is_wordlike(tok.text)
            ):
                return tok.text
        raise _Fail(f"expected a name at {self._where(i)}")

    def qualified_name(self, i: int) -> tuple[str | None, str, int]:
        """`db`.`name` or `name` at i: (db or None, name, index after it)."""
        first = self.name(i)
        if self.kind(i + 1) == TokenType.DOT:
            return first, self.name(i + 2), i + 3
        return None, first, i + 1

    def rebuild(self, i: int, j: int, changes: dict[int, str | None]) -> str:
        """Tokens i..j-1 with some replaced (str) or dropped (None); untouched runs keep their text."""
        pieces: list[str] = []
        run_start: int | None = None
        for k in range(i, j):
            if k in changes:
                if run_start is not None:
                    pieces.append(self.text(run_start, k))
                    run_start = None
                if changes[k] is not None:
                    pieces.append(changes[k])  # type: ignore[arg-type]
            elif run_start is None:
                run_start = k
        if run_start is not None:
            pieces.append(self.text(run_start, j))
        return " ".join(p for p in pieces if p)

    def _where(self, i: int) -> str:
        if 0 <= i < len(self.tokens):
            return f"{self.tokens[i].text!r}"
        return "the end of the statement"


def _parse(sql: str, what: str) -> exp.Expression:
    try:
        tree = sqlglot.parse_one(sql, read=_DIALECT)
    except SqlglotError as exc:
        raise _Fail(f"sqlglot cannot parse {what}: {_first_line(exc)}") from None
    if isinstance(tree, exp.Command):
        raise _Fail(f"sqlglot cannot parse {what}")
    return tree


# ---------------------------------------------------------------------------------------------
# Pre-transforms (token level)
# ---------------------------------------------------------------------------------------------


def unwrap_executable_comments(sql: str) -> str:
    """Replace /*! body */, /*!NNNNN body */ and /*M!NNNNNN body */ by body.

    sqlglot's tokenizer locates the tokens; the gaps between them hold only whitespace and
    comments, and only there are comments looked for, so text inside strings is never touched.
    """
    tokens = _tokenize(sql)
    bounds = [0] + [x for tok in tokens for x in (tok.start, tok.end + 1)] + [len(sql)]
    pieces: list[str] = []
    copied = 0
    for gap_start, gap_end in zip(bounds[::2], bounds[1::2], strict=True):
        k = gap_start
        while k < gap_end:
            if sql.startswith("/*", k):
                end = sql.find("*/", k + 2, gap_end)
                if end < 0:
                    break
                body = sql[k + 2 : end]
                marker = 1 if body.startswith("!") else 2 if body.startswith("M!") else 0
                if marker:
                    body = body[marker:].lstrip("0123456789")
                    pieces.append(sql[copied:k])
                    pieces.append(f" {body} ")
                    copied = end + 2
                k = end + 2
            elif sql.startswith("--", k) or sql[k] == "#":
                newline = sql.find("\n", k, gap_end)
                k = gap_end if newline < 0 else newline + 1
            else:
                k += 1
    pieces.append(sql[copied:])
    return "".join(pieces)


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
class _ColumnNotes:
    """What a pre-transform had to take out of column definitions for sqlglot to parse them."""

    unsigned_floats: set[str] = field(default_factory=set)  # casefolded names of FLOAT ... UNSIGNED


def canonical_column_definition(tk: _Tokens, i: int, j: int, notes: _ColumnNotes) -> str:
    """Column definition tokens i..j-1 (name first) rewritten into what sqlglot parses."""
    changes: dict[int, str | None] = {}
    column_name = tk.name(i)
    k = i + 1
    type_word = tk.word(k)
    for words, replacement in _TYPE_SYNONYMS:
        if tk.words(k, *words):
            changes[k] = replacement
            for extra in range(1, len(words)):
                changes[k + extra] = None
            type_word = replacement.split("(")[0].split()[0]
            k += len(words)
            break
    else:
        k += 1
    if tk.kind(k) == TokenType.L_PAREN:
        k = tk.close(k) + 1
    while k < j:
        word = tk.word(k)
        nxt = k + 1
        if tk.kind(k) == TokenType.L_PAREN:
            nxt = tk.close(k) + 1
        elif word in ("AFTER", "DEFAULT", "COLLATE", "CHARSET"):
            nxt = tk.skip_group(k + 1)  # the name or value that follows is not an attribute
        elif word == "UNSIGNED" and type_word == "FLOAT":
            # sqlglot has no unsigned FLOAT; the model gets it from the notes instead.
            notes.unsigned_floats.add(column_name.casefold())
            changes[k] = None
        elif word == "BYTE" and type_word in ("CHAR", "CHARACTER"):
            changes[i + 1] = "BINARY"  # CHAR(n) BYTE is BINARY(n)
            changes[k] = None
        elif word in _DROPPED_COLUMN_ATTRIBUTES:
            span = _DROPPED_COLUMN_ATTRIBUTES[word]
            if span and tk.kind(k + 1) == TokenType.EQ:
                span += 1
            for d in range(span + 1):
                changes[k + d] = None
            nxt = k + span + 1
        elif word == "COMPRESSED":  # MariaDB: COMPRESSED[=method]
            changes[k] = None
            if tk.kind(k + 1) == TokenType.EQ:
                changes[k + 1] = changes[k + 2] = None
                nxt = k + 3
        elif word == "WITH" and tk.words(k + 1, "SYSTEM", "VERSIONING"):
            raise _Fail("system-versioned tables are not supported")
        elif word == "WITHOUT" and tk.words(k + 1, "SYSTEM", "VERSIONING"):
            changes[k] = changes[k + 1] = changes[k + 2] = None
            nxt = k + 3
        elif word == "PERSISTENT":  # MariaDB's word for STORED
            changes[k] = "STORED"
        elif word == "SERIAL" and tk.words(k + 1, "DEFAULT", "VALUE"):
            changes[k] = "NOT NULL AUTO_INCREMENT UNIQUE"
            changes[k + 1] = changes[k + 2] = None
            nxt = k + 3
        k = nxt
    return tk.rebuild(i, j, changes)


_KEY_WORDS = frozenset({"PRIMARY", "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL"})


@dataclass(frozen=True)
class _KeyDefinition:
    text: str  # canonical, e.g. 'UNIQUE KEY `uk` (`a`, `b`)'
    if_not_exists: bool


def _is_key_definition(tk: _Tokens, i: int) -> bool:
    if tk.word(i) in _KEY_WORDS:
        return True
    if tk.word(i) == "CONSTRAINT":
        k = i + 1 if tk.word(i + 1) in ("PRIMARY", "UNIQUE") else i + 2
        return tk.word(k) in ("PRIMARY", "UNIQUE")
    return False


def canonical_key_definition(tk: _Tokens, i: int, j: int) -> _KeyDefinition:
    """An index definition (tokens i..j-1) as `KIND [name] (columns)`, options dropped."""
    symbol: str | None = None
    if tk.word(i) == "CONSTRAINT":
        i += 1
        if tk.word(i) not in ("PRIMARY", "UNIQUE"):
            symbol = tk.text(i, i + 1)
            i += 1
    first = tk.word(i)
    if first == "PRIMARY" and tk.word(i + 1) == "KEY":
        kind, i = "PRIMARY KEY", i + 2
    elif first in ("UNIQUE", "FULLTEXT", "SPATIAL"):
        kind, i = f"{first} KEY", i + 1
        if tk.word(i) in ("KEY", "INDEX"):
            i += 1
    elif first in ("KEY", "INDEX"):
        kind, i = "KEY", i + 1
    else:
        raise _Fail("expected an index definition")
    if_not_exists = tk.words(i, "IF", "NOT", "EXISTS")
    if if_not_exists:
        i += 3
    name: str | None = None
    while i < j and tk.kind(i) != TokenType.L_PAREN:
        if tk.word(i) == "USING":
            i += 2
        elif name is None:
            name = tk.text(i, i + 1)
            i += 1
        else:
            raise _Fail(f"unexpected {tk.text(i, i + 1)!r} in an index definition")
    if i >= j:
        raise _Fail("index definition without columns")
    parts = _key_part_list(tk, i)
    if name is None and symbol is not None and kind != "PRIMARY KEY":
        name = symbol  # MySQL names a UNIQUE after its CONSTRAINT symbol when it has no name
    head = kind if kind == "PRIMARY KEY" or name is None else f"{kind} {name}"
    return _KeyDefinition(f"{head} ({', '.join(parts)})", if_not_exists)


def _key_part_list(tk: _Tokens, i: int) -> list[str]:
    """The key parts of the parenthesized list at i: a column (prefix length and ASC/DESC
    dropped: the model keeps the column) or, for MySQL 8 functional key parts, (expression)."""
    parts = []
    for start, _end in tk.split(i + 1, tk.close(i)):
        if tk.kind(start) == TokenType.L_PAREN:
            parts.append(tk.text(start, tk.close(start) + 1))
        else:
            tk.name(start)
            parts.append(tk.text(start, start + 1))
    return parts


@dataclass(frozen=True)
class _Options:
    """The charset facts of a table or database option list (everything else is ignored)."""

    charset: str | None = None
    collation: str | None = None


def table_options(tk: _Tokens, i: int, j: int) -> _Options:
    """Read [DEFAULT] CHARACTER SET/CHARSET [=] x and [DEFAULT] COLLATE [=] y from options i..j-1."""
    charset = collation = None
    k = i
    while k < j:
        if tk.kind(k) == TokenType.L_PAREN:
            k = tk.close(k) + 1
            continue
        target = None
        if tk.words(k, "WITH", "SYSTEM", "VERSIONING"):
            # MariaDB adds hidden ROW_START/ROW_END columns that row events carry.
            raise _Fail("system-versioned tables are not supported")
        if tk.words(k, "CHARACTER", "SET"):
            target, k = "charset", k + 2
        elif tk.word(k) == "CHARSET":
            target, k = "charset", k + 1
        elif tk.word(k) == "COLLATE":
            target, k = "collation", k + 1
        else:
            k += 1
            continue
        if tk.kind(k) == TokenType.EQ:
            k += 1
        value = _option_value(tk, k)
        if target == "charset":
            charset = value
        else:
            collation = value
        k += 1
    return _Options(charset, collation)


def _option_value(tk: _Tokens, k: int) -> str:
    if 0 <= k < len(tk) and tk.kind(k) in (TokenType.STRING, TokenType.IDENTIFIER):
        value = tk.tokens[k].text
    elif tk.word(k) or (0 <= k < len(tk) and _is_wordlike(tk.tokens[k].text)):
        value = tk.tokens[k].text
    else:
        raise _Fail("expected a character set or collation name")
    if not _is_wordlike(value):
        raise _Fail(f"{value!r} is not a character set or collation name")
    return value.lower()


def strip_wait_and_algorithm(tk: _Tokens, i: int, j: int) -> str:
    """Tokens i..j-1 without WAIT n / NOWAIT / ALGORITHM [=] x / LOCK [=] x (sqlglot rejects them)."""
    changes: dict[int, str | None] = {}
    k = i
    while k < j:
        word = tk.word(k)
        if word == "NOWAIT":
            changes[k] = None
        elif word == "WAIT" and tk.kind(k + 1) == TokenType.NUMBER:
            changes[k] = changes[k + 1] = None
            k += 1
        elif word in ("ALGORITHM", "LOCK") and k > i:
            span = 2 if tk.kind(k + 1) == TokenType.EQ else 1
            for d in range(span + 1):
                changes[k + d] = None
            k += span
        k += 1
    return tk.rebuild(i, j, changes)


@dataclass(frozen=True)
class _CreateIndex:
    text: str  # canonical CREATE [UNIQUE] INDEX name ON table (columns)
    if_not_exists: bool
    or_replace: bool


def canonical_create_index(tk: _Tokens) -> _CreateIndex:
    """CREATE [OR REPLACE] [ONLINE|OFFLINE] [UNIQUE|FULLTEXT|SPATIAL] INDEX [IF NOT EXISTS] name
    [USING type] ON table (key parts) [options] [ALGORITHM/LOCK] as sqlglot parses it."""
    k = 1
    or_replace = tk.words(k, "OR", "REPLACE")
    if or_replace:
        k += 2
    if tk.word(k) in ("ONLINE", "OFFLINE"):
        k += 1
    unique = tk.word(k) == "UNIQUE"
    if tk.word(k) in ("UNIQUE", "FULLTEXT", "SPATIAL"):
        k += 1
    if tk.word(k) != "INDEX":
        raise _Fail("expected INDEX")
    k += 1
    if_not_exists = tk.words(k, "IF", "NOT", "EXISTS")
    if if_not_exists:
        k += 3
    name = tk.text(k, k + 1)
    tk.name(k)
    k += 1
    if tk.word(k) == "USING":
        k += 2
    if tk.word(k) != "ON":
        raise _Fail("expected ON after the index name")
    _, _, after_table = tk.qualified_name(k + 1)
    table = tk.text(k + 1, after_table)
    if tk.kind(after_table) != TokenType.L_PAREN:
        raise _Fail("expected the indexed columns")
    columns = ", ".join(_key_part_list(tk, after_table))
    text = f"CREATE {'UNIQUE ' if unique else ''}INDEX {name} ON {table} ({columns})"
    return _CreateIndex(text, if_not_exists, or_replace)


# ---------------------------------------------------------------------------------------------
# ALTER TABLE clauses
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Clause:
    """One ALTER TABLE clause: a sqlglot action, or facts read from tokens."""

    action: exp.Expression | None = None
    if_exists: bool = False  # MODIFY/CHANGE/DROP ... IF EXISTS, ADD ... IF NOT EXISTS (MariaDB)
    options: _Options | None = None  # [DEFAULT] CHARSET/COLLATE
    convert: _Options | None = None  # CONVERT TO CHARACTER SET
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


def _clause_rule(tk: _Tokens, i: int, rules: dict[tuple[str, ...], str]) -> str | None:
    for words, reason in rules.items():
        if tk.words(i, *words):
            return reason
    return None


def alter_clauses(tk: _Tokens, i: int, j: int, notes: _ColumnNotes) -> list[_Clause]:
    """ALTER TABLE specification tokens i..j-1 -> clauses, each parsed on its own."""
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
    clauses: list[_Clause] = []
    for start, stop in tk.split(i, end):
        clauses.extend(_alter_clause(tk, start, stop, notes))
    if end < j:
        clauses.append(_Clause(ignored="partitioning changes no data"))
    return clauses


def _alter_clause(tk: _Tokens, i: int, j: int, notes: _ColumnNotes) -> list[_Clause]:
    reason = _clause_rule(tk, i, _UNTRANSLATABLE_CLAUSES)
    if reason is not None:
        raise _Fail(reason)
    reason = _clause_rule(tk, i, _IGNORED_CLAUSES)
    if reason is not None:
        return [_Clause(ignored=reason)]
    first = tk.word(i)
    if tk.words(i, "CONVERT", "TO"):
        k = i + 2
        if tk.word(k) in ("CHARACTER", "CHARSET"):
            return [_Clause(convert=table_options(tk, k, j))]
        raise _Fail("expected CONVERT TO CHARACTER SET")
    if first in _TABLE_OPTION_WORDS:
        return [_Clause(options=table_options(tk, i, j))]
    if first == "RENAME" and tk.word(i + 1) in ("INDEX", "KEY"):
        if tk.word(i + 3) != "TO":
            raise _Fail("expected RENAME INDEX a TO b")
        return [_Clause(rename_index=(tk.name(i + 2), tk.name(i + 4)))]
    if tk.words(i, "RENAME", "COLUMN"):
        return [_Clause(action=_alter_action(tk.text(i, j)))]
    if first == "RENAME":
        k = i + 1
        if tk.word(k) in ("TO", "AS"):
            k += 1
        return [_Clause(action=_alter_action(f"RENAME TO {tk.text(k, j)}"))]
    if first == "ADD":
        return _add_clauses(tk, i + 1, j, notes)
    if first in ("MODIFY", "CHANGE"):
        k = i + 1
        if tk.word(k) == "COLUMN":
            k += 1
        if_exists = tk.words(k, "IF", "EXISTS")
        if if_exists:
            k += 2
        name_tokens = 2 if first == "CHANGE" else 1
        definition = canonical_column_definition(tk, k + name_tokens - 1, j, notes)
        prefix = f"{first} COLUMN {tk.text(k, k + 1)}" if first == "CHANGE" else f"{first} COLUMN"
        return [_Clause(action=_alter_action(f"{prefix} {definition}"), if_exists=if_exists)]
    if first == "DROP":
        k = i + 1
        target = tk.word(k)
        if target in ("INDEX", "KEY", "COLUMN", "FOREIGN", "CONSTRAINT"):
            k += 2 if target == "FOREIGN" else 1
        if_exists = tk.words(k, "IF", "EXISTS")
        changes: dict[int, str | None] = {k: None, k + 1: None} if if_exists else {}
        return [_Clause(action=_alter_action(tk.rebuild(i, j, changes)), if_exists=if_exists)]
    if first == "ALTER":
        return [_Clause(action=_alter_action(tk.text(i, j)))]
    raise _Fail(f"unsupported ALTER TABLE clause {_abbreviate(tk.text(i, j), 60)!r}")


def _add_clauses(tk: _Tokens, k: int, j: int, notes: _ColumnNotes) -> list[_Clause]:
    """ADD ...: a column, a parenthesized list of columns, a key, or a foreign key."""
    explicit_column = tk.word(k) == "COLUMN"
    if explicit_column:
        k += 1
    if_not_exists = tk.words(k, "IF", "NOT", "EXISTS")
    if if_not_exists:
        k += 3
    if not explicit_column and _is_key_definition(tk, k):
        key = canonical_key_definition(tk, k, j)
        return [
            _Clause(action=_alter_action(f"ADD {key.text}"), if_exists=if_not_exists or key.if_not_exists)
        ]
    if not explicit_column and (tk.word(k) in ("CONSTRAINT", "FOREIGN")):
        return [_Clause(action=_alter_action(f"ADD {tk.text(k, j)}"))]
    if tk.kind(k) == TokenType.L_PAREN and tk.close(k) == j - 1:
        # ADD [COLUMN] (a INT, b INT, [KEY ...]): one clause per element
        clauses: list[_Clause] = []
        for start, stop in tk.split(k + 1, j - 1):
            if _is_key_definition(tk, start):
                key = canonical_key_definition(tk, start, stop)
                clauses.append(_Clause(action=_alter_action(f"ADD {key.text}")))
            else:
                column = canonical_column_definition(tk, start, stop, notes)
                clauses.append(_Clause(action=_alter_action(f"ADD COLUMN {column}"), if_exists=if_not_exists))
        return clauses
    column = canonical_column_definition(tk, k, j, notes)
    return [_Clause(action=_alter_action(f"ADD COLUMN {column}"), if_exists=if_not_exists)]


def _alter_action(clause: str) -> exp.Expression:
    tree = _parse(f"ALTER TABLE _t {clause}", f"ALTER TABLE clause {_abbreviate(clause, 60)!r}")
    actions = tree.args.get("actions") or []
    if not isinstance(tree, exp.Alter) or len(actions) != 1:
        raise _Fail(f"unsupported ALTER TABLE clause {_abbreviate(clause, 60)!r}")
    return actions[0]


# ---------------------------------------------------------------------------------------------
# Model: sqlglot trees -> MySQL column and key facts
# ---------------------------------------------------------------------------------------------

_T = exp.DataType.Type
_BASE_OF_TYPE: dict[exp.DataType.Type, str] = {
    _T.TINYINT: "tinyint",
    _T.UTINYINT: "tinyint",
    _T.SMALLINT: "smallint",
    _T.USMALLINT: "smallint",
    _T.MEDIUMINT: "mediumint",
    _T.UMEDIUMINT: "mediumint",
    _T.INT: "int",
    _T.UINT: "int",
    _T.BIGINT: "bigint",
    _T.UBIGINT: "bigint",
    _T.DECIMAL: "decimal",
    _T.UDECIMAL: "decimal",
    _T.FLOAT: "float",
    _T.DOUBLE: "double",
    _T.UDOUBLE: "double",
    _T.BIT: "bit",
    _T.DATE: "date",
    _T.DATETIME: "datetime",
    _T.TIMESTAMP: "timestamp",
    _T.TIMESTAMPTZ: "timestamp",  # sqlglot's MySQL dialect reads TIMESTAMP as TIMESTAMPTZ
    _T.TIME: "time",
    _T.YEAR: "year",
    _T.CHAR: "char",
    _T.NCHAR: "char",
    _T.VARCHAR: "varchar",
    _T.NVARCHAR: "varchar",
    _T.TINYTEXT: "tinytext",
    _T.TEXT: "text",
    _T.MEDIUMTEXT: "mediumtext",
    _T.LONGTEXT: "longtext",
    _T.BINARY: "binary",
    _T.VARBINARY: "varbinary",
    _T.TINYBLOB: "tinyblob",
    _T.BLOB: "blob",
    _T.MEDIUMBLOB: "mediumblob",
    _T.LONGBLOB: "longblob",
    _T.JSON: "json",
    _T.ENUM: "enum",
    _T.SET: "set",
    _T.GEOMETRY: "geometry",
    _T.VECTOR: "vector",
    _T.UUID: "uuid",
}
_UNSIGNED_TYPES = frozenset(
    {_T.UTINYINT, _T.USMALLINT, _T.UMEDIUMINT, _T.UINT, _T.UBIGINT, _T.UDECIMAL, _T.UDOUBLE}
)
_NAMED_TYPES = {name: name for name in SPATIAL_TYPES} | {
    "geomcollection": "geometrycollection",
    "inet4": "inet4",
    "inet6": "inet6",
    "uuid": "uuid",
}
_TEMPORAL_WITH_FSP = frozenset({"datetime", "timestamp", "time"})
_BINARY_OF_TEXT = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}
_TEXTUAL = TEXT_TYPES | {"enum", "set"}
# Bytes per character, for TEXT(n), which MySQL sizes in bytes.
_CHARSET_MAXLEN = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "ucs2": 2}
_SIZED_FAMILIES = {
    "text": ("tinytext", "text", "mediumtext", "longtext"),
    "blob": ("tinyblob", "blob", "mediumblob", "longblob"),
}


@dataclass(frozen=True)
class _TypeFacts:
    base: str
    unsigned: bool = False
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    elements: tuple[str, ...] = ()


def _int_param(node: exp.Expression) -> int:
    value = node.this if isinstance(node, exp.DataTypeParam) else node
    try:
        return int(value.name if isinstance(value, exp.Expression) else value)
    except (TypeError, ValueError):
        raise _Fail(f"expected a number in a column type, got {node.sql(dialect=_DIALECT)!r}") from None


def _type_facts(datatype: exp.DataType, charset: str | None) -> _TypeFacts:
    """sqlglot's DataType -> MySQL's normalized type facts (MySQL's own normalizations applied)."""
    kind = datatype.this
    params = list(datatype.expressions)
    if kind == _T.USERDEFINED:
        name = str(datatype.args.get("kind") or "").lower()
        if name not in _NAMED_TYPES:
            raise _Fail(f"unsupported column type {name or datatype.sql(dialect=_DIALECT)!r}")
        return _TypeFacts(_NAMED_TYPES[name])
    if kind == _T.BOOLEAN:
        return _TypeFacts("tinyint", length=1)
    base = _BASE_OF_TYPE.get(kind)
    if base is None:
        raise _Fail(f"unsupported column type {datatype.sql(dialect=_DIALECT)!r}")
    unsigned = kind in _UNSIGNED_TYPES
    numbers = [_int_param(p) for p in params] if base not in ("enum", "set") else []
    if base in INTEGER_TYPES:
        # Display widths mean nothing to values; TINYINT(1) is kept because it marks booleans.
        width = numbers[0] if numbers else None
        return _TypeFacts(base, unsigned, length=1 if base == "tinyint" and width == 1 else None)
    if base == "decimal":
        precision = numbers[0] if numbers else 10
        return _TypeFacts(base, unsigned, precision=precision, scale=numbers[1] if len(numbers) > 1 else 0)
    if base in ("float", "double"):
        if base == "float" and len(numbers) == 1:
            return _TypeFacts(
                "double" if numbers[0] > 24 else "float", unsigned
            )  # FLOAT(p): p > 24 is DOUBLE
        if len(numbers) == 2:
            return _TypeFacts(base, unsigned, precision=numbers[0], scale=numbers[1])
        return _TypeFacts(base, unsigned)
    if base == "bit":
        return _TypeFacts(base, length=numbers[0] if numbers else 1)
    if base in _TEMPORAL_WITH_FSP:
        return _TypeFacts(base, fsp=numbers[0] if numbers else 0)
    if base in ("char", "binary"):
        return _TypeFacts(base, length=numbers[0] if numbers else 1)
    if base in ("varchar", "varbinary"):
        if not numbers:
            raise _Fail(f"{base.upper()} needs a length")
        return _TypeFacts(base, length=numbers[0])
    if base in ("text", "blob") and numbers:
        # TEXT(n)/BLOB(n): MySQL picks the smallest type holding n characters/bytes.
        size = numbers[0] * (_CHARSET_MAXLEN.get(charset or "", 1) if base == "text" else 1)
        family = _SIZED_FAMILIES[base]
        index = 0 if size < 2**8 else 1 if size < 2**16 else 2 if size < 2**24 else 3
        return _TypeFacts(family[index])
    if base in ("enum", "set"):
        elements = tuple(p.this if isinstance(p, exp.Literal) else p.sql(dialect=_DIALECT) for p in params)
        return _TypeFacts(base, elements=elements)
    if base == "vector":
        return _TypeFacts(base, length=numbers[0] if numbers else 2048)
    return _TypeFacts(base)


def _mysql_type_text(column: MysqlColumn) -> str:
    base = column.base_type
    if base == "decimal":
        text = f"decimal({column.precision},{column.scale})"
    elif base in ("float", "double") and column.precision is not None:
        text = f"{base}({column.precision},{column.scale})"
    elif base in ("bit", "char", "varchar", "binary", "varbinary", "vector") or (
        base == "tinyint" and column.length == 1
    ):
        text = f"{base}({column.length})"
    elif base in _TEMPORAL_WITH_FSP and column.fsp:
        text = f"{base}({column.fsp})"
    elif base in ("enum", "set"):
        text = f"{base}(" + ",".join(_quote_string(e) for e in column.elements) + ")"
    else:
        text = base
    return f"{text} unsigned" if column.unsigned else text


def _charset_of_collation(collation: str) -> str:
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def _name_of(node: exp.Expression) -> str:
    if isinstance(node, exp.Identifier):
        return node.this
    if isinstance(node, exp.Literal | exp.Var):
        return str(node.this)
    return node.name


_NOW_FUNCTIONS = frozenset({"NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP"})


def _now_fsp(node: exp.Expression) -> int | None:
    """If `node` is CURRENT_TIMESTAMP or a synonym: its precision (0 when none); else None."""
    if isinstance(node, exp.CurrentTimestamp | exp.Localtimestamp | exp.Localtime):
        arg = node.this
    elif isinstance(node, exp.Anonymous) and str(node.this).upper() in _NOW_FUNCTIONS:
        arg = node.expressions[0] if node.expressions else None
    else:
        return None
    return _int_param(arg) if arg is not None else 0


def _default_text(node: exp.Expression) -> str:
    """MySQL SQL text of a DEFAULT value; CURRENT_TIMESTAMP's synonyms are normalized."""
    fsp = _now_fsp(node)
    if fsp is not None:
        return f"CURRENT_TIMESTAMP({fsp})" if fsp else "CURRENT_TIMESTAMP"
    return node.sql(dialect=_DIALECT)


def _unparen(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Paren) else node


@dataclass(frozen=True)
class _TextDefaults:
    """Charset and collation text columns get when they name none (table's, else database's)."""

    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True)
class _ColumnDefinition:
    column: MysqlColumn
    primary_key: bool  # declared PRIMARY KEY (or KEY) on the column
    unique: bool  # declared UNIQUE on the column


def _column_definition(
    definition: exp.ColumnDef, defaults: _TextDefaults, notes: _ColumnNotes
) -> _ColumnDefinition:
    """A sqlglot ColumnDef -> the MySQL column it declares."""
    name = definition.name
    datatype = definition.args.get("kind")
    if not isinstance(datatype, exp.DataType):
        raise _Fail(f"column {name!r} has no type")
    nullable = True
    default: str | None = None
    auto_increment = on_update = zerofill = invisible = binary_collation = False
    primary = unique = False
    generated: str | None = None
    stored = False
    charset: str | None = None
    collation: str | None = None
    for constraint in definition.args.get("constraints") or []:
        kind = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else constraint
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = _default_text(kind.this)
        elif isinstance(kind, exp.OnUpdateColumnConstraint):
            if _now_fsp(kind.this) is None:
                raise _Fail(f"ON UPDATE {kind.this.sql(dialect=_DIALECT)} is not CURRENT_TIMESTAMP")
            on_update = True
        elif isinstance(kind, exp.AutoIncrementColumnConstraint):
            auto_increment = True
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            primary = True
        elif isinstance(kind, exp.UniqueColumnConstraint):
            unique = True
        elif isinstance(kind, exp.ComputedColumnConstraint):
            generated = _unparen(kind.this).sql(dialect=_DIALECT)
            stored = bool(kind.args.get("persisted"))
        elif isinstance(kind, exp.CharacterSetColumnConstraint):
            charset = _name_of(kind.this).lower()
        elif isinstance(kind, exp.CollateColumnConstraint):
            collation = _name_of(kind.this).lower()
        elif isinstance(kind, exp.ZeroFillColumnConstraint):
            zerofill = True
        elif isinstance(kind, exp.InvisibleColumnConstraint):
            invisible = True
        elif isinstance(kind, exp.BinaryColumnConstraint):
            binary_collation = True  # VARCHAR(n) BINARY: the charset's _bin collation
        elif isinstance(kind, exp.CommentColumnConstraint | exp.CheckColumnConstraint | exp.Reference):
            pass  # comments, CHECK and inline REFERENCES (which MySQL ignores) change no value
        else:
            raise _Fail(f"unsupported attribute {constraint.sql(dialect=_DIALECT)!r} on column {name!r}")

    if collation is not None and charset is None:
        charset = _charset_of_collation(collation)
    if charset is None and datatype.this in (_T.NCHAR, _T.NVARCHAR):
        charset = "utf8mb3"  # NATIONAL CHAR/VARCHAR
    if charset is None:
        charset, collation = defaults.charset, collation or defaults.collation
    facts = _type_facts(datatype, charset)
    base = facts.base
    if base in TEXT_TYPES and charset == "binary":
        base = _BINARY_OF_TEXT[base]  # CHARACTER SET binary makes byte strings
    if base in _TEXTUAL and charset != "binary":
        if binary_collation and charset is not None:
            collation = f"{charset}_bin"
    else:
        charset = collation = None
    column = MysqlColumn(
        name=name,
        mysql_type="",
        base_type=base,
        nullable=nullable and not primary,
        default=default,
        unsigned=facts.unsigned
        or zerofill
        or name.casefold() in notes.unsigned_floats,  # ZEROFILL implies UNSIGNED
        auto_increment=auto_increment,
        generated_expression=generated,
        generated_stored=stored,
        charset=charset,
        collation=collation,
        binary=base in BINARY_TYPES,
        on_update_current_timestamp=on_update,
        length=facts.length,
        precision=facts.precision,
        scale=facts.scale,
        fsp=facts.fsp,
        elements=facts.elements,
        zerofill=zerofill,
        invisible=invisible,
    )
    column = replace(column, mysql_type=_mysql_type_text(column))
    try:
        duckdb_type(column)
    except ConversionError as exc:
        raise _Fail(str(exc)) from None
    return _ColumnDefinition(column, primary, unique)


def _key_parts(items: Iterable[exp.Expression]) -> tuple[str, ...]:
    """Index key parts -> column names, or '(expr)' for MySQL 8 functional key parts."""
    parts: list[str] = []
    for item in items:
        node = item.this if isinstance(item, exp.Ordered) else item
        if isinstance(node, exp.Paren):
            parts.append("(" + node.this.sql(dialect=_DIALECT) + ")")
        elif isinstance(node, exp.ColumnPrefix):
            parts.append(_name_of(node.this))
        elif isinstance(node, exp.Identifier | exp.Column):
            parts.append(_name_of(node))
        else:
            raise _Fail(f"unsupported index key part {node.sql(dialect=_DIALECT)!r}")
    return tuple(parts)


@dataclass(frozen=True)
class _KeySpec:
    """A key declared by a table element or an ADD clause."""

    kind: str  # 'primary', 'unique', 'index', 'foreign'
    name: str | None
    columns: tuple[str, ...]
    reference: tuple[str | None, str, tuple[str, ...]] | None = None


def _key_spec(node: exp.Expression) -> _KeySpec | None:
    """A key from a table element / ADD CONSTRAINT node, or None for CHECK constraints."""
    symbol: str | None = None
    if isinstance(node, exp.Constraint):
        symbol = _name_of(node.this) if node.this is not None else None
        inner = node.expressions
        if len(inner) != 1:
            raise _Fail(f"unsupported constraint {node.sql(dialect=_DIALECT)!r}")
        node = inner[0]
    if isinstance(node, exp.PrimaryKey):
        return _KeySpec("primary", None, _key_parts(node.expressions))
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if not isinstance(schema, exp.Schema):
            raise _Fail("UNIQUE without columns")
        name = _name_of(schema.this) if schema.this is not None else symbol
        return _KeySpec("unique", name, _key_parts(schema.expressions))
    if isinstance(node, exp.IndexColumnConstraint):
        name = _name_of(node.this) if node.this is not None else None
        return _KeySpec("index", name, _key_parts(node.expressions))
    if isinstance(node, exp.ForeignKey):
        reference = node.args.get("reference")
        target = reference.this if isinstance(reference, exp.Reference) else None
        if not isinstance(target, exp.Schema) or not isinstance(target.this, exp.Table):
            raise _Fail("FOREIGN KEY without a referenced table")
        table = target.this
        name = symbol or (_name_of(node.this) if node.this is not None else None)
        ref = (table.db or None, table.name, _key_parts(target.expressions))
        return _KeySpec("foreign", name, _key_parts(node.expressions), ref)
    if isinstance(node, exp.CheckColumnConstraint | exp.Check):
        return None
    raise _Fail(f"unsupported table element {node.sql(dialect=_DIALECT)!r}")


# ---------------------------------------------------------------------------------------------
# Model: a table being changed
# ---------------------------------------------------------------------------------------------


@dataclass
class _Slot:
    """A column of the draft: its definition and where its values come from."""

    column: MysqlColumn
    source: str | None  # the old column whose values it keeps (converted), or None when new
    fill: str | None = None  # None, 'default', 'expression' (recompute) or 'sequence' (AUTO_INCREMENT)


@dataclass
class _Draft:
    """A mutable table model that ALTER clauses change one by one."""

    schema: str
    name: str
    slots: list[_Slot]
    primary_key: list[str]
    indexes: dict[str, tuple[str, ...]]
    unique: list[str]  # names of the UNIQUE entries of `indexes`
    foreign_keys: list[MysqlForeignKey]
    charset: str | None
    collation: str | None
    temporary: bool

    @classmethod
    def of(cls, table: MysqlTable) -> _Draft:
        return cls(
            schema=table.schema,
            name=table.name,
            slots=[_Slot(c, c.name) for c in table.columns],
            primary_key=list(table.primary_key),
            indexes=dict(table.indexes),
            unique=list(table.unique_key_names),
            foreign_keys=list(table.foreign_keys),
            charset=table.charset,
            collation=table.collation,
            temporary=table.temporary,
        )

    @classmethod
    def empty(cls, schema: str, name: str, options: _Options, temporary: bool) -> _Draft:
        return cls(schema, name, [], [], {}, [], [], options.charset, options.collation, temporary)

    def table(self) -> MysqlTable:
        if not self.slots:
            raise _Fail("a table needs at least one column")
        return MysqlTable(
            schema=self.schema,
            name=self.name,
            columns=tuple(s.column for s in self.slots),
            primary_key=tuple(self.primary_key),
            unique_keys=tuple(self.indexes[n] for n in self.unique),
            indexes=dict(self.indexes),
            temporary=self.temporary,
            unique_key_names=tuple(self.unique),
            foreign_keys=tuple(self.foreign_keys),
            charset=self.charset,
            collation=self.collation,
        )

    # -- columns -----------------------------------------------------------------------------

    def find(self, name: str) -> int | None:
        for i, slot in enumerate(self.slots):
            if same_column_name(slot.column.name, name):
                return i
        return None

    def require(self, name: str) -> int:
        i = self.find(name)
        if i is None:
            raise _Fail(f"table `{self.schema}`.`{self.name}` has no column `{name}`")
        return i

    def place(self, slot: _Slot, position: exp.Expression | None) -> None:
        """Insert a column FIRST, AFTER another, or at the end."""
        where = position.args.get("position") if isinstance(position, exp.ColumnPosition) else None
        if where is None:
            self.slots.append(slot)
        elif str(where).upper() == "FIRST":
            self.slots.insert(0, slot)
        else:
            self.slots.insert(self.require(_name_of(position.this)) + 1, slot)

    def rename_in_keys(self, old: str, new: str) -> None:
        def fix(columns: Iterable[str]) -> tuple[str, ...]:
            return tuple(new if same_column_name(c, old) else c for c in columns)

        self.primary_key = list(fix(self.primary_key))
        self.indexes = {n: fix(c) for n, c in self.indexes.items()}
        self.foreign_keys = [replace(fk, columns=fix(fk.columns)) for fk in self.foreign_keys]

    def remove_from_keys(self, name: str) -> None:
        """MySQL drops a removed column from every index, and an index left empty."""

        def keep(columns: Iterable[str]) -> tuple[str, ...]:
            return tuple(c for c in columns if not same_column_name(c, name))

        self.primary_key = list(keep(self.primary_key))
        indexes = {n: keep(c) for n, c in self.indexes.items()}
        self.indexes = {n: c for n, c in indexes.items() if c}
        self.unique = [n for n in self.unique if n in self.indexes]
        self.foreign_keys = [
            fk for fk in self.foreign_keys if not any(same_column_name(c, name) for c in fk.columns)
        ]

    # -- keys --------------------------------------------------------------------------------

    def _index_named(self, name: str) -> str | None:
        return next((n for n in self.indexes if n.casefold() == name.casefold()), None)

    def free_index_name(self, base: str) -> str:
        """MySQL's name for an unnamed key: its first column, then _2, _3, ..."""
        candidate, n = base, 2
        while self._index_named(candidate) is not None or candidate.upper() == "PRIMARY":
            candidate, n = f"{base}_{n}", n + 1
        return candidate

    def add_key(self, spec: _KeySpec, if_not_exists: bool = False) -> None:
        for column in spec.columns:
            if not column.startswith("("):
                self.require(column)
        if spec.kind == "primary":
            if self.primary_key:
                if if_not_exists:
                    return
                raise _Fail(f"table `{self.schema}`.`{self.name}` already has a primary key")
            self.primary_key = [self.slots[self.require(c)].column.name for c in spec.columns]
            for column in spec.columns:  # PRIMARY KEY columns are NOT NULL
                slot = self.slots[self.require(column)]
                slot.column = replace(slot.column, nullable=False)
            return
        if spec.kind == "foreign":
            assert spec.reference is not None
            ref_schema, ref_table, ref_columns = spec.reference
            number = len(self.foreign_keys) + 1
            name = spec.name or f"{self.name}_ibfk_{number}"
            self.foreign_keys.append(
                MysqlForeignKey(name, spec.columns, ref_schema or self.schema, ref_table, ref_columns)
            )
            covered = [self.primary_key] + list(self.indexes.values())
            if not any(
                tuple(c.casefold() for c in cols[: len(spec.columns)])
                == tuple(c.casefold() for c in spec.columns)
                for cols in covered
            ):
                # InnoDB creates an index for a foreign key that no index covers.
                self.indexes[self.free_index_name(spec.name or spec.columns[0])] = spec.columns
            return
        name = spec.name
        if name is not None and self._index_named(name) is not None:
            if if_not_exists:
                return
            raise _Fail(f"table `{self.schema}`.`{self.name}` already has an index `{name}`")
        if name is None:
            first = spec.columns[0]
            name = self.free_index_name(first.strip("()") if first.startswith("(") else first)
        self.indexes[name] = spec.columns
        if spec.kind == "unique":
            self.unique.append(name)

    def drop_key(self, name: str, if_exists: bool = False) -> None:
        if name.upper() == "PRIMARY":
            self.drop_primary_key()
            return
        found = self._index_named(name)
        if found is None:
            if if_exists:
                return
            raise _Fail(f"table `{self.schema}`.`{self.name}` has no index `{name}`")
        del self.indexes[found]
        self.unique = [n for n in self.unique if n != found]

    def drop_primary_key(self) -> None:
        if not self.primary_key:
            raise _Fail(f"table `{self.schema}`.`{self.name}` has no primary key")
        self.primary_key = []

    def drop_foreign_key(self, name: str, if_exists: bool = False) -> None:
        kept = [fk for fk in self.foreign_keys if fk.name.casefold() != name.casefold()]
        if len(kept) == len(self.foreign_keys) and not if_exists:
            raise _Fail(f"table `{self.schema}`.`{self.name}` has no foreign key `{name}`")
        self.foreign_keys = kept

    def rename_key(self, old: str, new: str) -> None:
        found = self._index_named(old)
        if found is None:
            raise _Fail(f"table `{self.schema}`.`{self.name}` has no index `{old}`")
        self.indexes = {(new if n == found else n): c for n, c in self.indexes.items()}
        self.unique = [new if n == found else n for n in self.unique]


def _apply_definition(draft: _Draft, definition: _ColumnDefinition) -> None:
    """Keys a column declares inline (PRIMARY KEY, UNIQUE)."""
    name = definition.column.name
    if definition.primary_key:
        draft.add_key(_KeySpec("primary", None, (name,)))
    if definition.unique:
        draft.add_key(_KeySpec("unique", None, (name,)))


def _new_column_fill(column: MysqlColumn) -> str:
    """How rows that exist when a column is added get their value."""
    if column.generated_expression is not None:
        return "expression"
    if column.auto_increment:
        return "sequence"
    if column.default is not None and column.default.startswith("("):
        return "expression"
    return "default"


# ---------------------------------------------------------------------------------------------
# Realize helpers: values for existing rows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Constant:
    kind: str  # 'null', 'string', 'number', 'bytes'
    value: str | bytes | None = None


def _constant(node: exp.Expression) -> _Constant:
    """A DEFAULT literal as a value; expressions are not constants."""
    if isinstance(node, exp.Null):
        return _Constant("null")
    if isinstance(node, exp.Literal):
        return _Constant("string" if node.is_string else "number", str(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _Constant("number", "-" + str(node.this.this))
    if isinstance(node, exp.Boolean):
        return _Constant("number", "1" if node.this else "0")
    if isinstance(node, exp.BitString):
        return _Constant("number", str(int(str(node.this) or "0", 2)))
    if isinstance(node, exp.HexString):
        digits = str(node.this)
        return _Constant("bytes", bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits))
    if isinstance(node, exp.National):
        return _Constant("string", str(node.this))
    if isinstance(node, exp.Introducer):
        inner = _constant(node.expression)
        if str(node.this).lower() == "_binary" and inner.kind == "string":
            return _Constant("bytes", str(inner.value).encode())
        return inner
    if isinstance(node, exp.Concat) and all(
        isinstance(e, exp.Literal) and e.is_string for e in node.expressions
    ):
        return _Constant("string", "".join(str(e.this) for e in node.expressions))
    raise _Fail(f"DEFAULT {node.sql(dialect=_DIALECT)} is not a constant")


def _is_zero_date(text: str) -> bool:
    return text.strip().startswith(("0000-00-00", "00000000"))


def _time_literal(number: str) -> str:
    """MySQL's numeric TIME ([-]HHMMSS[.ffffff]) as an INTERVAL."""
    value = Decimal(number)
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole = int(value)
    micros = int((value - whole) * 1_000_000)
    hh, mm, ss = whole // 10000, whole // 100 % 100, whole % 100
    return f"CAST('{sign}{hh}:{mm:02d}:{ss:02d}.{micros:06d}' AS INTERVAL)"


# ---------------------------------------------------------------------------------------------
# The translator
# ---------------------------------------------------------------------------------------------

# Objects whose DDL changes no table data on a replica applying row events.
_IGNORED_OBJECTS: dict[str, str] = {
    "VIEW": "views hold no data; the slave stores base tables only",
    "TRIGGER": "triggers run on the source; their effects arrive as row events",
    "PROCEDURE": "stored routines run on the source; their effects arrive as row events",
    "FUNCTION": "stored routines run on the source; their effects arrive as row events",
    "PACKAGE": "stored routines run on the source; their effects arrive as row events",
    "EVENT": "scheduled events run on the source; their effects arrive as row events",
    "USER": "accounts do not exist on the slave",
    "ROLE": "accounts do not exist on the slave",
    "SERVER": "federated server definitions do not exist on the slave",
    "TABLESPACE": "tablespaces do not exist on the slave",
    "LOGFILE": "NDB log file groups do not exist on the slave",
    "SPATIAL": "spatial reference systems do not exist on the slave",
    "RESOURCE": "resource groups do not exist on the slave",
    "INSTANCE": "instance administration changes no table data",
    "SYNONYM": "synonyms hold no data",
}
_IGNORED_STATEMENTS: dict[str, str] = {
    "GRANT": "privileges do not exist on the slave",
    "REVOKE": "privileges do not exist on the slave",
    "FLUSH": "FLUSH changes no table data",
    "ANALYZE": "ANALYZE TABLE changes no table data",
    "OPTIMIZE": "OPTIMIZE TABLE changes no table data",
    "REPAIR": "REPAIR TABLE changes no table data",
    "CHECK": "CHECK TABLE changes no table data",
    "CHECKSUM": "CHECKSUM TABLE changes no table data",
    "SET": "SET (passwords, roles, variables) changes no table data",
    "INSTALL": "plugins and components do not exist on the slave",
    "UNINSTALL": "plugins and components do not exist on the slave",
    "RESET": "RESET changes no table data",
    "PURGE": "PURGE changes no table data",
    "CACHE": "key caches do not exist on the slave",
    "DO": "DO changes no table data",
    "USE": "USE only sets the default database, which the event carries",
    "LOCK": "table locks are the source's business",
    "UNLOCK": "table locks are the source's business",
    "SHOW": "SHOW changes nothing",
    "DEALLOCATE": "prepared statements are the source's business",
    "PREPARE": "prepared statements are the source's business",
    "HELP": "HELP changes nothing",
    "KILL": "KILL changes no table data",
    "SHUTDOWN": "SHUTDOWN changes no table data",
    "BINLOG": "BINLOG statements replay row events, which the applier reads itself",
}
_TRANSACTION_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "START", "XA"})
_DML = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "LOAD",
        "CALL",
        "SELECT",
        "WITH",
        "HANDLER",
        "VALUES",
        "TABLE",
        "EXECUTE",
    }
)
_CREATE_OBJECTS = frozenset({"DATABASE", "SCHEMA", "TABLE", "INDEX", "SEQUENCE", *_IGNORED_OBJECTS})


class DdlTranslator:
    """Translates replicated DDL into DuckDB statements and the catalog after them.

    duckdb_catalog: qualify every name as "catalog"."schema"."table" (needed when a MySQL database
    has the name of an attached DuckDB database, which DuckDB would otherwise find ambiguous).
    time_zone: the source session's time zone, used where MySQL converts between DATETIME and
    TIMESTAMP values during DDL (DEFAULTs, type changes).
    """

    def __init__(self, *, duckdb_catalog: str | None = None, time_zone: str = "UTC") -> None:
        self.duckdb_catalog = duckdb_catalog
        self.time_zone = time_zone

    def translate(
        self,
        sql: str,
        default_db: str | None,
        catalog: Catalog,
        *,
        timestamp: float | None = None,
    ) -> DdlPlan:
        """Plan one statement. `catalog` is not changed; the plan carries the new catalog.

        timestamp: the event's time (seconds since the epoch, as the source's SET TIMESTAMP), which
        MySQL uses for CURRENT_TIMESTAMP defaults of added columns; without it the DuckDB
        transaction's start time is used.
        """
        try:
            return _Translation(self, sql, default_db, catalog.copy(), timestamp).run()
        except _Fail as exc:
            raise UntranslatableStatement(sql, str(exc)) from None


class _Translation:
    """One statement being translated: the working catalog and the statements produced."""

    def __init__(
        self,
        translator: DdlTranslator,
        sql: str,
        default_db: str | None,
        catalog: Catalog,
        timestamp: float | None,
    ) -> None:
        self.translator = translator
        self.sql = sql
        self.default_db = default_db
        self.catalog = catalog
        self.timestamp = timestamp
        self.statements: list[str] = []
        self.touched: list[TableKey] = []
        self.notes = _ColumnNotes()

    # -- entry -------------------------------------------------------------------------------

    def run(self) -> DdlPlan:
        tk = _Tokens(unwrap_executable_comments(self.sql))
        if not len(tk):
            return self.ignored("empty statement")
        first = tk.word(0)
        if first in _TRANSACTION_CONTROL:
            return self.ignored("transaction control is handled by the applier")
        if first in _DML:
            raise _Fail("not DDL: statement-based DML must be applied by the applier, not translated")
        if first in _IGNORED_STATEMENTS:
            return self.ignored(_IGNORED_STATEMENTS[first])
        if first == "CREATE":
            return self.create(tk)
        if first == "DROP":
            return self.drop(tk)
        if first == "ALTER":
            return self.alter(tk)
        if first == "RENAME":
            if tk.word(1) in ("TABLE", "TABLES"):
                return self.rename_tables(tk)
            return self.ignored("accounts do not exist on the slave")
        if first == "TRUNCATE":
            return self.truncate(tk)
        raise _Fail(f"unknown statement {first or tk.text(0, 1)!r}")

    def plan(self, kind: str, reason: str | None = None) -> DdlPlan:
        touched = tuple(dict.fromkeys(self.touched))
        return DdlPlan(list(self.statements), self.catalog, kind, reason, touched)

    def ignored(self, reason: str) -> DdlPlan:
        return DdlPlan([], self.catalog, "ignored", reason, tuple(dict.fromkeys(self.touched)))

    # -- names -------------------------------------------------------------------------------

    def new_name(self, name: str) -> str:
        """A database/table name as the source stores it (lower-cased with lower_case_table_names=1)."""
        return name.lower() if self.catalog.lower_case_table_names == 1 else name

    def database_of(self, db: str | None) -> str:
        if db:
            return self.new_name(db)
        if self.default_db is None:
            raise _Fail("the table is not qualified and the event names no default database")
        return self.new_name(self.default_db)

    def key_of(self, table: exp.Table) -> TableKey:
        return self.database_of(table.db or None), self.new_name(table.name)

    def qualified(self, schema: str, name: str) -> str:
        schema = duckdb_schema(schema)
        parts = (
            [schema, name]
            if self.translator.duckdb_catalog is None
            else [
                self.translator.duckdb_catalog,
                schema,
                name,
            ]
        )
        return ".".join(quote_ident(p) for p in parts)

    def quoted_schema(self, schema: str) -> str:
        schema = duckdb_schema(schema)
        if self.translator.duckdb_catalog is None:
            return quote_ident(schema)
        return f"{quote_ident(self.translator.duckdb_catalog)}.{quote_ident(schema)}"

    def check_table_name(self, schema: str, name: str, moving: TableKey | None = None) -> None:
        """DuckDB compares names case-insensitively: refuse a name another table has in another case."""
        for table in self.catalog.tables_in(schema):
            if table.key == moving:
                continue
            if table.name.casefold() == name.casefold():
                raise _Fail(
                    f"table `{schema}`.`{name}` would be the same DuckDB table as `{table.schema}`.`{table.name}` "
                    "(DuckDB names are case-insensitive)"
                )

    def require_database(self, schema: str) -> None:
        if self.catalog.database(schema) is None:
            raise _Fail(f"database `{schema}` is not in the catalog")

    def check_database_name(self, name: str) -> None:
        for other in self.catalog.databases:
            if other.casefold() == name.casefold() and self.catalog.fold(other) != self.catalog.fold(name):
                raise _Fail(
                    f"database `{name}` would be the same DuckDB schema as `{other}` (DuckDB names are case-insensitive)"
                )

    def text_defaults(self, schema: str, options: _Options) -> _TextDefaults:
        database = self.catalog.database(schema)
        charset = options.charset or (options.collation and _charset_of_collation(options.collation))
        if charset:
            return _TextDefaults(charset, options.collation)
        if database is not None:
            return _TextDefaults(database.charset, database.collation)
        return _TextDefaults()

    # -- CREATE ------------------------------------------------------------------------------

    def create(self, tk: _Tokens) -> DdlPlan:
        k = 1
        while k < min(len(tk), 40) and tk.word(k) not in _CREATE_OBJECTS:
            k += 1
        target = tk.word(k)
        if target == "SPATIAL" and tk.word(k + 1) in ("INDEX", "KEY"):
            target = "INDEX"  # CREATE SPATIAL INDEX, not CREATE SPATIAL REFERENCE SYSTEM
        if target in ("DATABASE", "SCHEMA"):
            return self.create_database(tk, k + 1)
        if target == "TABLE":
            return self.create_table(tk)
        if target == "INDEX":
            return self.create_index(tk)
        if target == "SEQUENCE":
            raise _Fail("MariaDB sequences are not supported")
        if target == "VIEW":
            self.remember_view(tk, k + 1)
        if target in _IGNORED_OBJECTS:
            return self.ignored(_IGNORED_OBJECTS[target])
        raise _Fail("unknown CREATE statement")

    def remember_view(self, tk: _Tokens, k: int) -> None:
        """Note a view's name (RENAME TABLE and DROP VIEW may name it later)."""
        if tk.words(k, "IF", "NOT", "EXISTS"):
            k += 3
        schema, name, _ = tk.qualified_name(k)
        if schema is not None or self.default_db is not None:
            self.catalog.add_view(self.database_of(schema), self.new_name(name))

    def create_database(self, tk: _Tokens, k: int) -> DdlPlan:
        if_not_exists = tk.words(k, "IF", "NOT", "EXISTS")
        if if_not_exists:
            k += 3
        name = self.new_name(tk.name(k))
        options = table_options(tk, k + 1, len(tk))
        if self.catalog.database(name) is not None:
            if if_not_exists:
                return self.ignored(f"database `{name}` exists (IF NOT EXISTS)")
            raise _Fail(f"database `{name}` already exists in the catalog")
        self.check_database_name(name)
        collation = options.collation
        charset = options.charset or (collation and _charset_of_collation(collation)) or None
        self.catalog.add_database(MysqlDatabase(name, charset, collation))
        self.statements.append(f"CREATE SCHEMA IF NOT EXISTS {self.quoted_schema(name)}")
        return self.plan("create_database")

    def create_table(self, tk: _Tokens) -> DdlPlan:
        head_end = tk.find_word(0, len(tk), "TABLE") + 1
        if tk.words(head_end, "IF", "NOT", "EXISTS"):
            head_end += 3
        _, _, k = tk.qualified_name(head_end)
        head = tk.text(0, k)
        like_at = k + 1 if tk.kind(k) == TokenType.L_PAREN and tk.word(k + 1) == "LIKE" else k
        if tk.word(like_at) == "LIKE":
            tree = _parse(tk.text(0, len(tk)), "CREATE TABLE ... LIKE")
            return self.create_table_like(tree)
        elements: list[str] = []
        if (
            tk.kind(k) == TokenType.L_PAREN
            and tk.word(k + 1) not in ("SELECT", "WITH")
            and tk.kind(k + 1) != TokenType.L_PAREN
        ):
            close = tk.close(k)
            for start, stop in tk.split(k + 1, close):
                elements.extend(self.canonical_element(tk, start, stop))
            k = close + 1
        query_at = self.query_start(tk, k)
        options = table_options(tk, k, query_at)
        query = ""
        if query_at < len(tk):
            q = query_at + (1 if tk.word(query_at) in ("AS", "IGNORE", "REPLACE") else 0)
            if tk.word(q) == "AS":
                q += 1
            query = tk.text(q, len(tk))
        canonical = (
            head + (f" ({', '.join(elements)})" if elements else "") + (f" AS {query}" if query else "")
        )
        tree = _parse(canonical, "CREATE TABLE")
        if not isinstance(tree, exp.Create):
            raise _Fail("expected CREATE TABLE")
        return self.create_table_from(tree, options)

    def canonical_element(self, tk: _Tokens, start: int, stop: int) -> list[str]:
        first = tk.word(start)
        if _is_key_definition(tk, start):
            return [canonical_key_definition(tk, start, stop).text]
        if first in ("CONSTRAINT", "FOREIGN", "CHECK"):
            return [tk.text(start, stop)]
        if first == "PERIOD" and tk.word(start + 1) == "FOR":
            return []  # MariaDB application-time period: not modeled
        return [canonical_column_definition(tk, start, stop, self.notes)]

    @staticmethod
    def query_start(tk: _Tokens, k: int) -> int:
        """Where the SELECT of CREATE TABLE ... [AS] SELECT starts (len(tk) when there is none)."""
        while k < len(tk):
            word = tk.word(k)
            if tk.kind(k) == TokenType.L_PAREN:
                if tk.word(k + 1) in ("SELECT", "WITH"):
                    return k
                k = tk.close(k) + 1
                continue
            if word in ("SELECT", "AS", "TABLE", "VALUES") or (word == "WITH" and tk.word(k + 1) != "SYSTEM"):
                return k
            if word in ("IGNORE", "REPLACE") and (
                tk.word(k + 1) in ("SELECT", "AS", "WITH") or tk.kind(k + 1) == TokenType.L_PAREN
            ):
                return k
            k += 1
        return k

    def existing_for_create(
        self, schema: str, name: str, tree: exp.Create, temporary: bool
    ) -> DdlPlan | None:
        """Handle an existing table of that name: None to go on creating, or the plan to return."""
        if temporary:
            exists = self.catalog.get_temporary(schema, name) is not None
        else:
            exists = (schema, name) in self.catalog or self.catalog.has_view(schema, name)
        if not exists:
            return None
        if tree.args.get("replace"):
            if temporary:
                self.catalog.remove_temporary(schema, name)
            elif self.catalog.has_view(schema, name):
                self.catalog.remove_view(schema, name)
            else:
                self.drop_base_table(schema, name)
            return None
        if tree.args.get("exists"):
            return self.ignored(f"table `{schema}`.`{name}` exists (IF NOT EXISTS)")
        raise _Fail(f"table `{schema}`.`{name}` already exists in the catalog")

    def create_table_from(self, tree: exp.Create, options: _Options) -> DdlPlan:
        schema_node = tree.this
        table_node = schema_node.this if isinstance(schema_node, exp.Schema) else schema_node
        if not isinstance(table_node, exp.Table):
            raise _Fail("expected a table name")
        schema, name = self.key_of(table_node)
        temporary = _is_temporary(tree)
        early = self.existing_for_create(schema, name, tree, temporary)
        if early is not None:
            return early
        defaults = self.text_defaults(schema, options)
        draft = _Draft.empty(schema, name, _Options(defaults.charset, defaults.collation), temporary)
        keys: list[_KeySpec] = []
        for element in schema_node.expressions if isinstance(schema_node, exp.Schema) else []:
            if isinstance(element, exp.ColumnDef):
                definition = _column_definition(element, defaults, self.notes)
                if draft.find(definition.column.name) is not None:
                    raise _Fail(f"duplicate column `{definition.column.name}`")
                draft.slots.append(_Slot(definition.column, None))
                if definition.primary_key:
                    keys.append(_KeySpec("primary", None, (definition.column.name,)))
                if definition.unique:
                    keys.append(_KeySpec("unique", None, (definition.column.name,)))
            else:
                spec = _key_spec(element)
                if spec is not None:
                    keys.append(spec)
        query = tree.expression
        if query is not None:
            self.check_create_select(draft, query)
        # Keys after all columns (a table-level key may name a column declared after it), foreign
        # keys last (InnoDB adds an index for one only if no other key covers its columns).
        for spec in sorted(keys, key=lambda s: s.kind == "foreign"):
            draft.add_key(spec)
        return self.finish_create(draft.table())

    def check_create_select(self, draft: _Draft, query: exp.Expression) -> None:
        """CREATE TABLE ... SELECT: only selected columns the statement also declares are supported."""
        if not isinstance(query, exp.Query):
            raise _Fail("CREATE TABLE ... AS needs a query")
        for projection in query.selects:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                raise _Fail("CREATE TABLE ... SELECT *: the selected columns' types are unknown to the slave")
            name = projection.alias_or_name
            if not name or draft.find(name) is None:
                raise _Fail(
                    f"CREATE TABLE ... SELECT: column `{name}` comes from the query, whose types the slave "
                    "cannot know (in ROW format the source logs the full column list instead)"
                )

    def create_table_like(self, tree: exp.Expression) -> DdlPlan:
        if not isinstance(tree, exp.Create):
            raise _Fail("expected CREATE TABLE ... LIKE")
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        like = tree.find(exp.LikeProperty)
        if not isinstance(target, exp.Table) or like is None or not isinstance(like.this, exp.Table):
            raise _Fail("expected CREATE TABLE name LIKE other")
        schema, name = self.key_of(target)
        src_schema, src_name = self.key_of(like.this)
        source = self.catalog.resolve(src_schema, src_name)
        if source is None:
            raise _Fail(f"table `{src_schema}`.`{src_name}` is not in the catalog")
        temporary = _is_temporary(tree)
        early = self.existing_for_create(schema, name, tree, temporary)
        if early is not None:
            return early
        # LIKE copies columns and indexes but not foreign keys, nor temporariness.
        table = replace(source, schema=schema, name=name, temporary=temporary, foreign_keys=())
        return self.finish_create(table)

    def finish_create(self, table: MysqlTable) -> DdlPlan:
        if table.temporary:
            self.catalog.set_temporary(table)
            return self.plan("temporary", "temporary tables are kept in the model only")
        self.require_database(table.schema)
        self.check_table_name(table.schema, table.name)
        self.catalog[table.key] = table
        self.touched.append(table.key)
        self.statements.append(self.create_sql(table.schema, table.name, table))
        return self.plan("create_table")

    def create_sql(self, schema: str, name: str, table: MysqlTable) -> str:
        columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in table.columns)
        return f"CREATE TABLE {self.qualified(schema, name)} ({columns})"

    def create_index(self, tk: _Tokens) -> DdlPlan:
        index = canonical_create_index(tk)
        tree = _parse(index.text, "CREATE INDEX")
        node = tree.this
        if not isinstance(node, exp.Index) or not isinstance(node.args.get("table"), exp.Table):
            raise _Fail("expected CREATE INDEX name ON table")
        key = self.key_of(node.args["table"])
        table, temporary = self.table_for_ddl(*key)
        params = node.args.get("params")
        columns = _key_parts((params.args.get("columns") or []) if params is not None else [])
        draft = _Draft.of(table)
        name = _name_of(node.this)
        if index.or_replace:
            draft.drop_key(name, if_exists=True)
        kind = "unique" if tree.args.get("unique") else "index"
        draft.add_key(_KeySpec(kind, name, columns), if_not_exists=index.if_not_exists)
        self.store(draft.table(), key)
        return self.plan("temporary" if temporary else "create_index", "indexes are kept in the model only")

    # -- DROP --------------------------------------------------------------------------------

    def drop(self, tk: _Tokens) -> DdlPlan:
        k = 1
        if tk.word(k) == "TEMPORARY":
            k += 1
        target = tk.word(k)
        if target in ("DATABASE", "SCHEMA"):
            return self.drop_database(tk, k + 1)
        if target in ("TABLE", "TABLES"):
            tree = _parse(strip_wait_and_algorithm(tk, 0, len(tk)), "DROP TABLE")
            return self.drop_tables(tree)
        if target == "INDEX":
            tree = _parse(strip_wait_and_algorithm(tk, 0, len(tk)), "DROP INDEX")
            return self.drop_index(tree)
        if target == "VIEW":
            k += 1
            if tk.words(k, "IF", "EXISTS"):
                k += 2
            for start, _stop in tk.split(k, tk.find_word(k, len(tk), "RESTRICT", "CASCADE")):
                schema, name, _ = tk.qualified_name(start)
                if schema is not None or self.default_db is not None:
                    self.catalog.remove_view(self.database_of(schema), self.new_name(name))
            return self.ignored(_IGNORED_OBJECTS["VIEW"])
        if target == "SEQUENCE":
            raise _Fail("MariaDB sequences are not supported")
        if target in _IGNORED_OBJECTS:
            return self.ignored(_IGNORED_OBJECTS[target])
        if target in ("PREPARE",):
            return self.ignored(_IGNORED_STATEMENTS["PREPARE"])
        raise _Fail("unknown DROP statement")

    def drop_database(self, tk: _Tokens, k: int) -> DdlPlan:
        if_exists = tk.words(k, "IF", "EXISTS")
        if if_exists:
            k += 2
        name = self.new_name(tk.name(k))
        if self.catalog.database(name) is None:
            if if_exists:
                return self.ignored(f"database `{name}` does not exist (IF EXISTS)")
            raise _Fail(f"database `{name}` is not in the catalog")
        self.touched.extend(t.key for t in self.catalog.tables_in(name))
        self.catalog.remove_database(name)
        # One part: DuckDB finds "catalog"."schema" ambiguous in DROP SCHEMA whenever a schema is
        # named like the catalog, and a one-part name is a schema of the current catalog.
        self.statements.append(f"DROP SCHEMA IF EXISTS {quote_ident(duckdb_schema(name))} CASCADE")
        return self.plan("drop_database")

    def drop_tables(self, tree: exp.Expression) -> DdlPlan:
        if not isinstance(tree, exp.Drop):
            raise _Fail("expected DROP TABLE")
        temporary_only = bool(tree.args.get("temporary"))
        if_exists = bool(tree.args.get("exists"))
        dropped_base = False
        for node in _drop_targets(tree):
            if not isinstance(node, exp.Table):
                raise _Fail("expected table names")
            schema, name = self.key_of(node)
            if self.catalog.get_temporary(schema, name) is not None:
                self.catalog.remove_temporary(schema, name)  # a temporary table shadows a base table
            elif temporary_only or (schema, name) not in self.catalog:
                if not if_exists and not temporary_only:
                    raise _Fail(f"table `{schema}`.`{name}` is not in the catalog")
            else:
                self.drop_base_table(schema, name)
                dropped_base = True
        if dropped_base:
            return self.plan("drop_table")
        return self.plan("temporary", "no base table dropped (temporary or absent tables only)")

    def drop_base_table(self, schema: str, name: str) -> None:
        del self.catalog[(schema, name)]
        self.touched.append((schema, name))
        self.statements.append(f"DROP TABLE IF EXISTS {self.qualified(schema, name)}")

    def drop_index(self, tree: exp.Expression) -> DdlPlan:
        on = tree.args.get("cluster") if isinstance(tree, exp.Drop) else None
        targets = _drop_targets(tree) if isinstance(tree, exp.Drop) else []
        if not isinstance(on, exp.OnProperty) or not isinstance(on.this, exp.Table) or len(targets) != 1:
            raise _Fail("expected DROP INDEX name ON table")
        key = self.key_of(on.this)
        table, temporary = self.table_for_ddl(*key)
        draft = _Draft.of(table)
        draft.drop_key(targets[0].name, if_exists=bool(tree.args.get("exists")))
        self.store(draft.table(), key)
        return self.plan("temporary" if temporary else "drop_index", "indexes are kept in the model only")

    # -- RENAME / TRUNCATE -------------------------------------------------------------------

    def rename_tables(self, tk: _Tokens) -> DdlPlan:
        """RENAME TABLE a TO b [, c TO d]: sqlglot keeps it as an opaque command, so tokens are read."""
        k = 2
        if tk.words(k, "IF", "EXISTS"):
            raise _Fail("RENAME TABLE IF EXISTS is not supported")
        end = tk.find_word(k, len(tk), "WAIT", "NOWAIT")
        moved: set[str] = set()
        for start, stop in tk.split(k, end):
            src_db, src_name, after = tk.qualified_name(start)
            if tk.word(after) != "TO":
                raise _Fail("expected RENAME TABLE a TO b")
            dst_db, dst_name, after = tk.qualified_name(after + 1)
            if after != stop:
                raise _Fail("expected RENAME TABLE a TO b")
            source = (self.database_of(src_db), self.new_name(src_name))
            target = (self.database_of(dst_db), self.new_name(dst_name))
            moved.add(self.rename_one(source, target))
        if "table" in moved:
            return self.plan("rename_table")
        if "temporary" in moved:
            return self.plan("temporary", "temporary tables are kept in the model only")
        return self.ignored(_IGNORED_OBJECTS["VIEW"])

    def rename_one(self, source: TableKey, target: TableKey) -> str:
        """Rename one table, view or temporary table; says which it was."""
        temporary = self.catalog.get_temporary(*source)
        if temporary is not None:
            self.catalog.remove_temporary(*source)
            self.catalog.set_temporary(temporary.renamed(*target))
            return "temporary"
        if self.catalog.has_view(*source):
            self.catalog.remove_view(*source)
            self.catalog.add_view(*target)
            return "view"
        table = self.catalog.get(source)
        if table is None:
            raise _Fail(f"table `{source[0]}`.`{source[1]}` is not in the catalog")
        if target in self.catalog or self.catalog.has_view(*target):
            raise _Fail(f"table `{target[0]}`.`{target[1]}` already exists in the catalog")
        self.require_database(target[0])
        self.check_table_name(*target, moving=source)
        del self.catalog[source]
        moved = table.renamed(*target)
        self.catalog[target] = moved
        self.touched.extend([source, target])
        self.statements.extend(self.move_sql(table, moved))
        return "table"

    def move_sql(self, old: MysqlTable, new: MysqlTable) -> list[str]:
        """DuckDB statements giving a table a new name, possibly in another schema."""
        if old.key == new.key:
            return []
        src = self.qualified(*old.key)
        if old.schema == new.schema:
            return [f"ALTER TABLE {src} RENAME TO {quote_ident(new.name)}"]
        # DuckDB cannot move a table to another schema: copy it there.
        return [
            self.create_sql(new.schema, new.name, new),
            f"INSERT INTO {self.qualified(*new.key)} SELECT * FROM {src}",
            f"DROP TABLE {src}",
        ]

    def free_table_name(self, schema: str, name: str) -> str:
        taken = {t.name.casefold() for t in self.catalog.tables_in(schema)}
        candidate, n = f"{name}__relaydeck_rebuild", 2
        while candidate.casefold() in taken:
            candidate, n = f"{name}__relaydeck_rebuild_{n}", n + 1
        return candidate

    def truncate(self, tk: _Tokens) -> DdlPlan:
        tree = _parse(tk.text(0, len(tk)), "TRUNCATE")
        if not isinstance(tree, exp.TruncateTable) or len(tree.expressions) != 1:
            raise _Fail("expected TRUNCATE [TABLE] name")
        key = self.key_of(tree.expressions[0])
        table, temporary = self.table_for_ddl(*key)
        if temporary:
            return self.plan("temporary", "temporary tables are kept in the model only")
        self.touched.append(key)
        self.statements.append(f"DELETE FROM {self.qualified(*key)}")
        return self.plan("truncate_table")

    # -- ALTER -------------------------------------------------------------------------------

    def alter(self, tk: _Tokens) -> DdlPlan:
        k = 1
        while tk.word(k) in ("ONLINE", "OFFLINE", "IGNORE"):
            k += 1
        target = tk.word(k)
        if target in ("DATABASE", "SCHEMA"):
            return self.alter_database(tk, k + 1)
        if target == "TABLE":
            return self.alter_table(tk, k + 1)
        if target == "SEQUENCE":
            raise _Fail("MariaDB sequences are not supported")
        if target == "VIEW" or tk.find_word(k, min(len(tk), 40), "VIEW") < min(len(tk), 40):
            return self.ignored(_IGNORED_OBJECTS["VIEW"])
        if target in _IGNORED_OBJECTS:
            return self.ignored(_IGNORED_OBJECTS[target])
        raise _Fail("unknown ALTER statement")

    def alter_database(self, tk: _Tokens, k: int) -> DdlPlan:
        option_words = {"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ENCRYPTION", "READ", "COMMENT"}
        if k < len(tk) and tk.word(k) not in option_words:
            name, k = self.new_name(tk.name(k)), k + 1
        else:
            name = self.database_of(None)
        if tk.word(k) == "UPGRADE":
            return self.ignored("ALTER DATABASE ... UPGRADE DATA DIRECTORY NAME changes no table data")
        database = self.catalog.database(name)
        if database is None:
            raise _Fail(f"database `{name}` is not in the catalog")
        options = table_options(tk, k, len(tk))
        if options.charset or options.collation:
            charset = options.charset or (options.collation and _charset_of_collation(options.collation))
            collation = options.collation if options.collation or not options.charset else None
            self.catalog.add_database(MysqlDatabase(database.name, charset, collation))
        return self.plan("alter_database", "database defaults are kept in the model only")

    def alter_table(self, tk: _Tokens, k: int) -> DdlPlan:
        if_exists = tk.words(k, "IF", "EXISTS")
        if if_exists:
            k += 2
        db, name, k = tk.qualified_name(k)
        if tk.word(k) == "NOWAIT":
            k += 1
        elif tk.word(k) == "WAIT" and tk.kind(k + 1) == TokenType.NUMBER:
            k += 2
        key = (self.database_of(db), self.new_name(name))
        if self.catalog.resolve(*key) is None and if_exists:
            return self.ignored(f"table `{key[0]}`.`{key[1]}` does not exist (IF EXISTS)")
        table, temporary = self.table_for_ddl(*key)
        clauses = alter_clauses(tk, k, len(tk), self.notes)
        draft = _Draft.of(table)
        for clause in clauses:
            self.apply_clause(draft, clause)
        new = draft.table()
        if temporary:
            if new.key != table.key:
                self.catalog.remove_temporary(*table.key)
            self.catalog.set_temporary(new)
            return self.plan("temporary", "temporary tables are kept in the model only")
        if new.key != table.key:
            if new.key in self.catalog or self.catalog.has_view(*new.key):
                raise _Fail(f"table `{new.schema}`.`{new.name}` already exists in the catalog")
            self.require_database(new.schema)
            self.check_table_name(new.schema, new.name, moving=table.key)
            del self.catalog[table.key]
        self.catalog[new.key] = new
        self.touched.extend([table.key, new.key])
        self.statements.extend(self.realize_alter(table, draft, new))
        return self.plan("alter_table")

    def table_for_ddl(self, schema: str, name: str) -> tuple[MysqlTable, bool]:
        """The table DDL acts on (temporary tables first) and whether it is temporary."""
        temporary = self.catalog.get_temporary(schema, name)
        if temporary is not None:
            return temporary, True
        table = self.catalog.get((schema, name))
        if table is None:
            raise _Fail(f"table `{schema}`.`{name}` is not in the catalog")
        return table, False

    def store(self, table: MysqlTable, key: TableKey) -> None:
        if table.temporary:
            self.catalog.set_temporary(table)
        else:
            self.catalog[key] = table
            self.touched.append(key)

    def apply_clause(self, draft: _Draft, clause: _Clause) -> None:
        """One ALTER TABLE clause applied to the draft, as MySQL applies them: in order."""
        if clause.ignored is not None:
            return
        if clause.options is not None:
            if clause.options.charset or clause.options.collation:
                draft.charset = clause.options.charset or _charset_of_collation(
                    clause.options.collation or ""
                )
                draft.collation = clause.options.collation
            return
        if clause.convert is not None:
            self.convert_charset(draft, clause.convert)
            return
        if clause.rename_index is not None:
            draft.rename_key(*clause.rename_index)
            return
        action = clause.action
        defaults = _TextDefaults(draft.charset, draft.collation)
        if isinstance(action, exp.ColumnDef):
            definition = _column_definition(action, defaults, self.notes)
            if draft.find(definition.column.name) is not None:
                if clause.if_exists or action.args.get("exists"):
                    return
                raise _Fail(f"column `{definition.column.name}` already exists")
            slot = _Slot(definition.column, None, _new_column_fill(definition.column))
            draft.place(slot, action.args.get("position"))
            _apply_definition(draft, definition)
        elif isinstance(action, exp.ModifyColumn):
            self.modify_column(draft, action, defaults, clause.if_exists)
        elif isinstance(action, exp.Drop):
            self.drop_in_alter(draft, action, clause.if_exists)
        elif isinstance(action, exp.DropPrimaryKey):
            draft.drop_primary_key()
        elif isinstance(action, exp.RenameColumn):
            old, new = _name_of(action.this), _name_of(action.args["to"])
            i = draft.require(old)
            if draft.find(new) not in (None, i):
                raise _Fail(f"column `{new}` already exists")
            draft.slots[i].column = replace(draft.slots[i].column, name=new)
            draft.rename_in_keys(old, new)
        elif isinstance(action, exp.AlterColumn):
            self.alter_column(draft, action)
        elif isinstance(action, exp.AddConstraint):
            for node in action.expressions:
                spec = _key_spec(node)
                if spec is not None:
                    draft.add_key(spec, if_not_exists=clause.if_exists)
        elif isinstance(action, exp.AlterRename):
            target = action.this
            if not isinstance(target, exp.Table):
                raise _Fail("expected RENAME TO name")
            draft.schema, draft.name = self.database_of(target.db or draft.schema), self.new_name(target.name)
        elif isinstance(action, exp.RenameIndex):
            draft.rename_key(_name_of(action.this), _name_of(action.args["to"]))
        elif isinstance(action, exp.ForceProperty):
            return
        else:
            raise _Fail(f"unsupported ALTER TABLE clause {action.sql(dialect=_DIALECT)!r}")

    def modify_column(
        self, draft: _Draft, action: exp.ModifyColumn, defaults: _TextDefaults, if_exists: bool
    ) -> None:
        """MODIFY/CHANGE: a full new definition (attributes not restated are gone, as in MySQL)."""
        definition_node = action.this
        if not isinstance(definition_node, exp.ColumnDef):
            raise _Fail("expected a column definition")
        rename_from = action.args.get("rename_from")
        old_name = _name_of(rename_from) if rename_from is not None else definition_node.name
        i = draft.find(old_name)
        if i is None:
            if if_exists:
                return
            raise _Fail(f"table `{draft.schema}`.`{draft.name}` has no column `{old_name}`")
        definition = _column_definition(definition_node, defaults, self.notes)
        new = definition.column
        if draft.find(new.name) not in (None, i):
            raise _Fail(f"column `{new.name}` already exists")
        slot = draft.slots.pop(i)
        old = slot.column
        if slot.source is None:  # added earlier in the same statement: filled as the new definition says
            fill: str | None = _new_column_fill(new)
        elif new.generated_expression is not None and new.generated_expression != old.generated_expression:
            fill = "expression"
        else:
            fill = slot.fill
        moved = _Slot(new, slot.source, fill)
        position = definition_node.args.get("position")
        if position is None:
            draft.slots.insert(i, moved)  # without FIRST/AFTER the column keeps its place
        else:
            draft.place(moved, position)
        if old.name != new.name:
            draft.rename_in_keys(old.name, new.name)
        if any(same_column_name(new.name, c) for c in draft.primary_key):
            j = draft.require(new.name)
            draft.slots[j].column = replace(draft.slots[j].column, nullable=False)
        _apply_definition(draft, definition)

    def drop_in_alter(self, draft: _Draft, action: exp.Drop, if_exists: bool) -> None:
        kind = str(action.args.get("kind") or "").upper()
        names = [_name_of(t) for t in _drop_targets(action)]
        for name in names:
            if kind == "COLUMN":
                i = draft.find(name)
                if i is None:
                    if if_exists or action.args.get("exists"):
                        continue
                    raise _Fail(f"table `{draft.schema}`.`{draft.name}` has no column `{name}`")
                draft.slots.pop(i)
                draft.remove_from_keys(name)
            elif kind == "INDEX":
                draft.drop_key(name, if_exists=if_exists or bool(action.args.get("exists")))
            elif kind == "FOREIGN KEY":
                draft.drop_foreign_key(name, if_exists=if_exists)
            elif kind == "CONSTRAINT":
                # MySQL 8 DROP CONSTRAINT: a foreign key, a UNIQUE key, or a CHECK (not modeled).
                if any(fk.name.casefold() == name.casefold() for fk in draft.foreign_keys):
                    draft.drop_foreign_key(name)
                elif name.upper() == "PRIMARY":
                    draft.drop_primary_key()
                else:
                    draft.drop_key(name, if_exists=True)
            elif kind == "CHECK":
                continue
            else:
                raise _Fail(f"unsupported ALTER TABLE DROP {kind}")

    def alter_column(self, draft: _Draft, action: exp.AlterColumn) -> None:
        i = draft.require(_name_of(action.this))
        column = draft.slots[i].column
        if action.args.get("drop"):
            column = replace(column, default=None)
        elif action.args.get("default") is not None:
            column = replace(column, default=_default_text(action.args["default"]))
        elif action.args.get("visible") is not None:
            column = replace(column, invisible=str(action.args["visible"]).upper() == "INVISIBLE")
        else:
            raise _Fail(f"unsupported ALTER COLUMN {action.sql(dialect=_DIALECT)!r}")
        draft.slots[i].column = column

    def convert_charset(self, draft: _Draft, options: _Options) -> None:
        """CONVERT TO CHARACTER SET: every text column and the table default get it."""
        charset = options.charset or (options.collation and _charset_of_collation(options.collation))
        if not charset:
            raise _Fail("CONVERT TO CHARACTER SET without a character set")
        collation = options.collation
        for slot in draft.slots:
            column = slot.column
            if column.base_type not in _TEXTUAL:
                continue
            if charset == "binary" and column.base_type in TEXT_TYPES:
                base = _BINARY_OF_TEXT[column.base_type]
                column = replace(column, base_type=base, charset=None, collation=None, binary=True)
            elif charset != "binary":
                column = replace(column, charset=charset, collation=collation)
            slot.column = replace(column, mysql_type=_mysql_type_text(column))
        draft.charset, draft.collation = (None, None) if charset == "binary" else (charset, collation)

    # -- realize ALTER -----------------------------------------------------------------------

    def realize_alter(self, old: MysqlTable, draft: _Draft, new: MysqlTable) -> list[str]:
        slots = draft.slots
        old_positions = [old.column_index(s.source) for s in slots if s.source is not None]
        survivors = len(old_positions)
        in_order = old_positions == sorted(old_positions) and all(
            s.source is not None for s in slots[:survivors]
        )
        needs_sequence = any(s.fill == "sequence" for s in slots)
        dropped = [
            c
            for c in old.columns
            if not any(s.source is not None and same_column_name(s.source, c.name) for s in slots)
        ]
        renames = [
            (s.source, s.column.name) for s in slots if s.source is not None and s.source != s.column.name
        ]
        if in_order and not needs_sequence and survivors > 0 and self.renames_are_safe(old, dropped, renames):
            statements = self.alter_in_place(old, slots, dropped, renames)
            statements.extend(self.move_sql(old, new))
        else:
            statements = self.rebuild(old, slots, new)
        statements.extend(self.recompute(slots, new))
        return statements

    @staticmethod
    def renames_are_safe(
        old: MysqlTable, dropped: list[MysqlColumn], renames: list[tuple[str | None, str]]
    ) -> bool:
        """Renames done one by one must never hit a name still present (swaps need a rebuild)."""
        present = {c.name.casefold() for c in old.columns} - {c.name.casefold() for c in dropped}
        for source, target in renames:
            assert source is not None
            present.discard(source.casefold())
            if target.casefold() in present:
                return False
            present.add(target.casefold())
        return True

    def alter_in_place(
        self,
        old: MysqlTable,
        slots: list[_Slot],
        dropped: list[MysqlColumn],
        renames: list[tuple[str | None, str]],
    ) -> list[str]:
        table = self.qualified(*old.key)
        statements = [f"ALTER TABLE {table} DROP COLUMN {quote_ident(c.name)}" for c in dropped]
        statements.extend(
            f"ALTER TABLE {table} RENAME COLUMN {quote_ident(s)} TO {quote_ident(t)}" for s, t in renames if s
        )
        for slot in slots:
            if slot.source is None:
                continue
            before = old.column(slot.source)
            assert before is not None
            converted = self.convert(quote_ident(slot.column.name), before, slot.column)
            if converted != quote_ident(slot.column.name) or duckdb_type(before) != duckdb_type(slot.column):
                statements.append(
                    f"ALTER TABLE {table} ALTER COLUMN {quote_ident(slot.column.name)} "
                    f"SET DATA TYPE {duckdb_type(slot.column)} USING {converted}"
                )
        for slot in slots:
            if slot.source is not None:
                continue
            column = slot.column
            statement = f"ALTER TABLE {table} ADD COLUMN {quote_ident(column.name)} {duckdb_type(column)}"
            value = self.fill_value(column) if slot.fill == "default" else "NULL"
            if value == "NULL":
                statements.append(statement)
            else:
                # DuckDB fills existing rows from the DEFAULT; the slave keeps no defaults after that.
                statements.append(f"{statement} DEFAULT {value}")
                statements.append(f"ALTER TABLE {table} ALTER COLUMN {quote_ident(column.name)} DROP DEFAULT")
        return statements

    def rebuild(self, old: MysqlTable, slots: list[_Slot], new: MysqlTable) -> list[str]:
        """CREATE the new shape, INSERT ... SELECT converted values, DROP the old, RENAME the new."""
        moving_elsewhere = new.schema != old.schema or new.name.casefold() != old.name.casefold()
        build_name = new.name if moving_elsewhere else self.free_table_name(new.schema, new.name)
        values = []
        for slot in slots:
            if slot.source is not None:
                before = old.column(slot.source)
                assert before is not None
                values.append(self.convert(quote_ident(before.name), before, slot.column))
            elif slot.fill == "sequence":
                order = ", ".join(quote_ident(c) for c in _clustered_key(old)) or "rowid"
                values.append(f"CAST(row_number() OVER (ORDER BY {order}) AS {duckdb_type(slot.column)})")
            elif slot.fill == "default":
                values.append(self.fill_value(slot.column))
            else:
                values.append("NULL")  # computed afterwards from the new columns
        src = self.qualified(*old.key)
        statements = [
            self.create_sql(new.schema, build_name, new),
            f"INSERT INTO {self.qualified(new.schema, build_name)} SELECT {', '.join(values)} FROM {src}",
            f"DROP TABLE {src}",
        ]
        if not moving_elsewhere:
            statements.append(
                f"ALTER TABLE {self.qualified(new.schema, build_name)} RENAME TO {quote_ident(new.name)}"
            )
        return statements

    def recompute(self, slots: list[_Slot], new: MysqlTable) -> list[str]:
        """Generated columns and expression DEFAULTs, computed from the final columns, in column order."""
        wanted = [s.column for s in slots if s.fill == "expression"]
        if not wanted:
            return []
        expressions = {c.name: self.column_expression(c) for c in wanted}
        _check_expressions(new, expressions)
        table = self.qualified(*new.key)
        return [
            f"UPDATE {table} SET {quote_ident(name)} = CAST(({sql}) AS {duckdb_type(new.column(name))})"  # type: ignore[arg-type]
            for name, sql in expressions.items()
        ]

    def column_expression(self, column: MysqlColumn) -> str:
        mysql_sql = column.generated_expression
        if mysql_sql is None:
            assert column.default is not None
            mysql_sql = column.default
        try:
            tree = sqlglot.parse_one(mysql_sql, read=_DIALECT)
        except SqlglotError as exc:
            raise _Fail(
                f"cannot translate expression {mysql_sql!r} of column `{column.name}`: {_first_line(exc)}"
            ) from None
        # Loaded here: the guard builds on this module's error type.
        from .guard import check_statement

        # A generated column or DEFAULT expression reads no table at all.
        check_statement(self.sql, tree, frozenset())
        try:
            return tree.sql(dialect="duckdb", identify=True)
        except SqlglotError as exc:
            raise _Fail(
                f"cannot translate expression {mysql_sql!r} of column `{column.name}`: {_first_line(exc)}"
            ) from None

    def convert(self, value: str, old: MysqlColumn, new: MysqlColumn) -> str:
        try:
            return convert_expression(value, old, new, time_zone=self.translator.time_zone)
        except ConversionError as exc:
            raise _Fail(f"column `{new.name}`: {exc}") from None

    # -- values for existing rows ------------------------------------------------------------

    def now_sql(self, column: MysqlColumn) -> str:
        """CURRENT_TIMESTAMP(fsp) as a value of the column: the event's time, else the transaction's."""
        fsp = column.fsp or 0
        if self.timestamp is not None:
            micros = round(self.timestamp * 1_000_000)
            unit = 10 ** (6 - fsp)
            micros = (micros + unit // 2) // unit * unit  # MySQL rounds to the column's precision
            instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
            now = f"CAST('{instant.isoformat(sep=' ')}' AS TIMESTAMPTZ)"
        else:
            now = round_fraction("current_timestamp", "TIMESTAMPTZ", fsp) if fsp < 6 else "current_timestamp"
        zone = _quote_string(self.translator.time_zone)
        base = column.base_type
        if base == "timestamp":
            return now
        if base == "datetime":
            return f"timezone({zone}, {now})"  # the wall clock in the source session's zone
        if base == "date":
            return f"CAST(timezone({zone}, {now}) AS DATE)"
        raise _Fail(f"CURRENT_TIMESTAMP default on {column.mysql_type} column `{column.name}`")

    def fill_value(self, column: MysqlColumn) -> str:
        """DuckDB SQL for the value MySQL gives rows that exist when `column` is added."""
        if column.default is None:
            return "NULL" if column.nullable else _implicit_default(column)
        node = _parse(column.default, f"DEFAULT {column.default}")
        if _now_fsp(node) is not None:
            return self.now_sql(column)
        if isinstance(node, exp.CurrentDate):
            return self.now_sql(replace(column, base_type="date"))
        return self.literal(column, _constant(node))

    def literal(self, column: MysqlColumn, value: _Constant) -> str:
        """A constant as a value of the column's DuckDB type, converted as MySQL converts it."""
        if value.kind == "null":
            return "NULL"
        target = duckdb_type(column)
        base = column.base_type
        raw = value.value
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if base == "bit":
            if value.kind == "number":
                number = int(Decimal(text).to_integral_value())
            else:
                number = int.from_bytes(raw if isinstance(raw, bytes) else text.encode(), "big")
            return f"CAST({number} AS UBIGINT)"
        if target == "BLOB":
            data = raw if isinstance(raw, bytes) else text.encode()
            return f"from_hex('{data.hex()}')"
        if base == "enum" and value.kind == "number":
            index = int(Decimal(text))
            return _quote_string(column.elements[index - 1] if 0 < index <= len(column.elements) else "")
        if base in ("date", "datetime", "timestamp"):
            if _is_zero_date(text):
                return "NULL"  # DuckDB has no zero date
            if base == "timestamp":
                cast = f"CAST({_quote_string(text)} AS TIMESTAMP)"
                return f"timezone({_quote_string(self.translator.time_zone)}, {cast})"
            return f"CAST({_quote_string(text)} AS {target})"
        if base == "time":
            return (
                _time_literal(text) if value.kind == "number" else f"CAST({_quote_string(text)} AS INTERVAL)"
            )
        if base == "decimal" and target == "VARCHAR":
            try:
                exact = Decimal(text).quantize(Decimal(1).scaleb(-(column.scale or 0)))
            except InvalidOperation:
                raise _Fail(f"DEFAULT {text!r} is not a number") from None
            return _quote_string(format(exact, "f"))
        if target == "VARCHAR":
            return _quote_string(text)
        return f"CAST({_quote_string(text)} AS {target})"


def _drop_targets(node: exp.Expression) -> list[exp.Expression]:
    """What a sqlglot DROP names (tables, columns, indexes)."""
    return list(node.args.get("tables") or node.expressions)


def _is_temporary(tree: exp.Expression) -> bool:
    return tree.find(exp.TemporaryProperty) is not None


def _clustered_key(table: MysqlTable) -> tuple[str, ...]:
    """InnoDB's row order: PRIMARY KEY, else the first UNIQUE key of NOT NULL columns, else none."""
    if table.primary_key:
        return table.primary_key
    for columns in table.unique_keys:
        cols = [table.column(c) for c in columns]
        if all(c is not None and not c.nullable for c in cols):
            return columns
    return ()


def _implicit_default(column: MysqlColumn) -> str:
    """MySQL's value for NOT NULL columns without DEFAULT (zero dates become NULL: DuckDB has none)."""
    base = column.base_type
    target = duckdb_type(column)
    if base in ("date", "datetime", "timestamp") or base in SPATIAL_TYPES or base == "vector":
        return "NULL"
    if base == "time":
        return "to_microseconds(0)"
    if base == "enum":
        return _quote_string(column.elements[0] if column.elements else "")
    if base == "json":
        return f"CAST('null' AS {target})"
    if base == "uuid":
        return "CAST('00000000-0000-0000-0000-000000000000' AS UUID)"
    if base == "inet4":
        return "'0.0.0.0'"
    if base == "inet6":
        return "'::'"
    if base == "decimal" and target == "VARCHAR":
        return _quote_string(format(Decimal(0).quantize(Decimal(1).scaleb(-(column.scale or 0))), "f"))
    if target == "BLOB":
        return "from_hex('')"
    if target == "VARCHAR":
        return "''"
    return f"CAST(0 AS {target})"


def _check_expressions(table: MysqlTable, expressions: dict[str, str]) -> None:
    """Bind each transpiled expression against an empty copy of the table, so a function DuckDB
    lacks fails here (naming the statement) rather than in the caller's transaction."""
    columns = ", ".join(f"{quote_ident(c.name)} {duckdb_type(c)}" for c in table.columns)
    with duckdb.connect(config=sandbox_config()) as scratch:
        scratch.execute(f"CREATE TABLE t ({columns})")
        for name, sql in expressions.items():
            column = table.column(name)
            assert column is not None
            try:
                scratch.execute(f"SELECT CAST(({sql}) AS {duckdb_type(column)}) FROM t").fetchall()
            except duckdb.Error as exc:
                raise _Fail(
                    f"expression of column `{name}` does not work in DuckDB ({sql}): {_first_line(exc)}"
                ) from None


__all__ = [
    "DdlPlan",
    "DdlTranslator",
    "UntranslatableStatement",
    "alter_clauses",
    "canonical_column_definition",
    "canonical_create_index",
    "canonical_key_definition",
    "quote_ident",
    "strip_wait_and_algorithm",
    "table_options",
    "unwrap_executable_comments",
]
