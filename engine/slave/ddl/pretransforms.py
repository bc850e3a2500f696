"""Pre-transforms: MySQL DDL sqlglot cannot parse, rewritten on the token level into a form it does.

Each is a named function over `Tokens` (never a regex over the text); measured against sqlglot 30
with dialect 'mysql':

- `unwrap_executable_comments`: /*! ... */, /*!NNNNN ... */ and MariaDB's /*M!NNNNNN ... */ hold
  SQL MySQL executes (sysbench writes /*! ENGINE = innodb */, servers log
  DROP /*!40005 TEMPORARY */ TABLE); sqlglot drops them as comments.
- `column_rewrites.canonical_column_definition`: type synonyms and column attributes sqlglot
  misreads or rejects (see there).
- `canonical_key_definition`: every index definition as `KIND name (columns)`, options dropped:
  sqlglot rejects PRIMARY KEY USING BTREE (a), MariaDB's IGNORED and ADD INDEX IF NOT EXISTS
  (lifted out), and one canonical shape keeps the model builder simple.
- `table_options`: CREATE TABLE options are read for CHARSET/COLLATE and dropped; sqlglot rejects
  some (CHECKSUM=, TABLESPACE, UNION=, PARTITION BY KEY/HASH ... PARTITIONS n, partition lists
  with MAXVALUE), and partitioning changes no data. CREATE/ALTER DATABASE options are read the
  same way (sqlglot rejects READ ONLY and every ALTER DATABASE).
- `canonical_create_table`: CREATE TABLE with its elements canonical (the two above), its options
  cut and read, and ... [AS] SELECT kept.
- `canonical_create_index`: CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX ... as
  `CREATE [UNIQUE] INDEX name ON table (columns)` (sqlglot rejects FULLTEXT/SPATIAL, USING and
  trailing ALGORITHM=/LOCK=, and reads prefix lengths as function calls);
  `strip_wait_and_algorithm` drops WAIT/NOWAIT/ALGORITHM=/LOCK= from DROP TABLE/DROP INDEX.
- ALTER TABLE is split into clauses by `split_alter.alter_clauses`, which uses the ones above.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import TokenType

from .column_rewrites import ColumnNotes, canonical_column_definition
from .tokens import Tokens, TranslationError, is_wordlike, tokenize


def unwrap_executable_comments(sql: str) -> str:
    """Replace /*! body */, /*!NNNNN body */ and /*M!NNNNNN body */ by body.

    sqlglot's tokenizer locates the tokens; the gaps between them hold only whitespace and
    comments, and only there are comments looked for, so text inside strings is never touched.

    >>> unwrap_executable_comments("DROP /*!40005 TEMPORARY */ TABLE t")
    'DROP   TEMPORARY   TABLE t'
    >>> unwrap_executable_comments("CREATE TABLE t (a INT) COMMENT '/*!x */'")
    "CREATE TABLE t (a INT) COMMENT '/*!x */'"
    """
    tokens = tokenize(sql)
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


_KEY_WORDS = frozenset({"PRIMARY", "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL"})


@dataclass(frozen=True)
class KeyDefinition:
    text: str  # canonical, e.g. 'UNIQUE KEY `uk` (`a`, `b`)'
    if_not_exists: bool


def is_key_definition(tk: Tokens, i: int) -> bool:
    if tk.word(i) in _KEY_WORDS:
        return True
    if tk.word(i) == "CONSTRAINT":
        k = i + 1 if tk.word(i + 1) in ("PRIMARY", "UNIQUE") else i + 2
        return tk.word(k) in ("PRIMARY", "UNIQUE")
    return False


def canonical_key_definition(tk: Tokens, i: int, j: int) -> KeyDefinition:
    """An index definition (tokens i..j-1) as `KIND [name] (columns)`, options dropped.

    >>> tk = Tokens("UNIQUE INDEX uk USING BTREE (a(10), b DESC) COMMENT 'x'")
    >>> canonical_key_definition(tk, 0, len(tk)).text
    'UNIQUE KEY uk (a, b)'
    >>> tk = Tokens("CONSTRAINT c UNIQUE (a)")
    >>> canonical_key_definition(tk, 0, len(tk)).text
    'UNIQUE KEY c (a)'
    """
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
        raise TranslationError("expected an index definition")
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
            raise TranslationError(f"unexpected {tk.text(i, i + 1)!r} in an index definition")
    if i >= j:
        raise TranslationError("index definition without columns")
    parts = _key_part_list(tk, i)
    if name is None and symbol is not None and kind != "PRIMARY KEY":
        name = symbol  # MySQL names a UNIQUE after its CONSTRAINT symbol when it has no name
    head = kind if kind == "PRIMARY KEY" or name is None else f"{kind} {name}"
    return KeyDefinition(f"{head} ({', '.join(parts)})", if_not_exists)


def _key_part_list(tk: Tokens, i: int) -> list[str]:
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
class CharsetOptions:
    """The charset facts of a table or database option list (everything else is ignored)."""

    charset: str | None = None
    collation: str | None = None


def table_options(tk: Tokens, i: int, j: int) -> CharsetOptions:
    """Read [DEFAULT] CHARACTER SET/CHARSET [=] x and [DEFAULT] COLLATE [=] y from options i..j-1.

    >>> tk = Tokens("ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_bin")
    >>> table_options(tk, 0, len(tk))
    CharsetOptions(charset='utf8mb4', collation='utf8mb4_bin')
    """
    charset = collation = None
    k = i
    while k < j:
        if tk.kind(k) == TokenType.L_PAREN:
            k = tk.close(k) + 1
            continue
        target = None
        if tk.words(k, "WITH", "SYSTEM", "VERSIONING"):
            # MariaDB adds hidden ROW_START/ROW_END columns that row events carry.
            raise TranslationError("system-versioned tables are not supported")
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
    return CharsetOptions(charset, collation)


def _option_value(tk: Tokens, k: int) -> str:
    if 0 <= k < len(tk) and tk.kind(k) in (TokenType.STRING, TokenType.IDENTIFIER):
        value = tk.tokens[k].text
    elif tk.word(k) or (0 <= k < len(tk) and is_wordlike(tk.tokens[k].text)):
        value = tk.tokens[k].text
    else:
        raise TranslationError("expected a character set or collation name")
    if not is_wordlike(value):
        raise TranslationError(f"{value!r} is not a character set or collation name")
    return value.lower()


def strip_wait_and_algorithm(tk: Tokens, i: int, j: int) -> str:
    """Tokens i..j-1 without WAIT n / NOWAIT / ALGORITHM [=] x / LOCK [=] x (sqlglot rejects them).

    >>> tk = Tokens("DROP TABLE t WAIT 5 ALGORITHM=INPLACE")
    >>> strip_wait_and_algorithm(tk, 0, len(tk))
    'DROP TABLE t'
    """
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
class CreateIndex:
    text: str  # canonical CREATE [UNIQUE] INDEX name ON table (columns)
    if_not_exists: bool
    or_replace: bool


def canonical_create_index(tk: Tokens) -> CreateIndex:
    """CREATE [OR REPLACE] [ONLINE|OFFLINE] [UNIQUE|FULLTEXT|SPATIAL] INDEX [IF NOT EXISTS] name
    [USING type] ON table (key parts) [options] [ALGORITHM/LOCK] as sqlglot parses it.

    >>> canonical_create_index(Tokens("CREATE FULLTEXT INDEX IF NOT EXISTS ft ON db.t (body(20)) LOCK=NONE"))
    CreateIndex(text='CREATE INDEX ft ON db.t (body)', if_not_exists=True, or_replace=False)
    """
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
        raise TranslationError("expected INDEX")
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
        raise TranslationError("expected ON after the index name")
    _, _, after_table = tk.qualified_name(k + 1)
    table = tk.text(k + 1, after_table)
    if tk.kind(after_table) != TokenType.L_PAREN:
        raise TranslationError("expected the indexed columns")
    columns = ", ".join(_key_part_list(tk, after_table))
    text = f"CREATE {'UNIQUE ' if unique else ''}INDEX {name} ON {table} ({columns})"
    return CreateIndex(text, if_not_exists, or_replace)


@dataclass(frozen=True)
class CreateTable:
    text: (
        str  # what sqlglot parses: CREATE ... TABLE name [(canonical elements)] [AS query], or the LIKE form
    )
    options: CharsetOptions
    like: bool  # CREATE TABLE name LIKE other (the text is the statement as written)


def canonical_create_table(tk: Tokens, notes: ColumnNotes) -> CreateTable:
    """CREATE TABLE as sqlglot parses it: elements canonical, table options read and cut.

    >>> create = canonical_create_table(Tokens("CREATE TABLE t (a INT8, KEY (a) USING BTREE) ENGINE=InnoDB"), ColumnNotes())
    >>> create.text
    'CREATE TABLE t (a BIGINT, KEY (a))'
    """
    head_end = tk.find_word(0, len(tk), "TABLE") + 1
    if tk.words(head_end, "IF", "NOT", "EXISTS"):
        head_end += 3
    _, _, k = tk.qualified_name(head_end)
    head = tk.text(0, k)
    like_at = k + 1 if tk.kind(k) == TokenType.L_PAREN and tk.word(k + 1) == "LIKE" else k
    if tk.word(like_at) == "LIKE":
        return CreateTable(tk.text(0, len(tk)), CharsetOptions(), like=True)
    elements: list[str] = []
    if (
        tk.kind(k) == TokenType.L_PAREN
        and tk.word(k + 1) not in ("SELECT", "WITH")
        and tk.kind(k + 1) != TokenType.L_PAREN
    ):
        close = tk.close(k)
        for start, stop in tk.split(k + 1, close):
            elements.extend(_canonical_element(tk, start, stop, notes))
        k = close + 1
    query_at = _query_start(tk, k)
    options = table_options(tk, k, query_at)
    query = ""
    if query_at < len(tk):
        q = query_at + (1 if tk.word(query_at) in ("AS", "IGNORE", "REPLACE") else 0)
        if tk.word(q) == "AS":
            q += 1
        query = tk.text(q, len(tk))
    canonical = head + (f" ({', '.join(elements)})" if elements else "") + (f" AS {query}" if query else "")
    return CreateTable(canonical, options, like=False)


def _canonical_element(tk: Tokens, start: int, stop: int, notes: ColumnNotes) -> list[str]:
    first = tk.word(start)
    if is_key_definition(tk, start):
        return [canonical_key_definition(tk, start, stop).text]
    if first in ("CONSTRAINT", "FOREIGN", "CHECK"):
        return [tk.text(start, stop)]
    if first == "PERIOD" and tk.word(start + 1) == "FOR":
        return []  # MariaDB application-time period: not modeled
    return [canonical_column_definition(tk, start, stop, notes)]


def _query_start(tk: Tokens, k: int) -> int:
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
