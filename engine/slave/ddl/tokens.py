"""sqlglot's MySQL dialect and tokens, the error a translation raises, and SQL text helpers.

Pre-transforms work on sqlglot's tokens, never on the text with regexes: `Tokens` keeps each
token's place in the original text, so a rewrite copies untouched runs verbatim and replaces or
drops only the tokens it means to.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType


class TranslationError(Exception):
    """Raised inside the translation; becomes UntranslatableStatement naming the statement."""


def quote_string(text: str) -> str:
    """A SQL string literal (DuckDB's and MySQL's without backslash escapes).

    >>> quote_string("it's")
    "'it''s'"
    """
    return "'" + text.replace("'", "''") + "'"


class _MySQL(MySQL):
    """sqlglot's MySQL dialect reading unknown type names (POINT, INET6, ...) as named types.

    Without this, sqlglot fails on every spatial type but GEOMETRY and on MariaDB's INET4/INET6;
    the model turns the names it knows into MySQL types and rejects the rest.
    """

    SUPPORTS_USER_DEFINED_TYPES = True


DIALECT = _MySQL()

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


def tokenize(sql: str) -> list[Token]:
    try:
        return DIALECT.tokenize(sql)
    except SqlglotError as exc:
        raise TranslationError(f"cannot tokenize: {first_line(exc)}") from None


def _shifted(tok: Token, offset: int) -> Token:
    return Token(
        tok.token_type, tok.text, tok.line, tok.col, tok.start + offset, tok.end + offset, tok.comments
    )


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def is_wordlike(text: str) -> bool:
    return bool(text) and all(ch.isalnum() or ch in "_$" for ch in text)


class Tokens:
    """sqlglot's tokens of one SQL text, with the original text of any run of them.

    >>> tk = Tokens("ALTER TABLE `t` ADD PRIMARY KEY (a, b);")
    >>> tk.word(0), tk.name(2), tk.words(4, "PRIMARY", "KEY"), tk.close(6)
    ('ALTER', 't', True, 10)
    >>> tk.rebuild(0, len(tk), {3: "DROP", 6: None, 7: None, 8: None, 9: None, 10: None})
    'ALTER TABLE `t` DROP PRIMARY KEY'
    """

    def __init__(self, sql: str) -> None:
        self.sql = sql
        tokens = tokenize(sql)
        if tokens and tokens[0].token_type in DIALECT.tokenizer_class.COMMANDS:
            # After a command keyword (RENAME, ...) sqlglot keeps the rest as one opaque string.
            offset = tokens[0].end + 1
            rest = [_shifted(t, offset) for t in tokenize(sql[offset:])]
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
            if tok.token_type not in _NOT_WORDS and is_wordlike(tok.text) and not tok.text[0].isdigit():
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
        raise TranslationError("unbalanced parentheses")

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
                tok.token_type not in _NOT_WORDS and is_wordlike(tok.text)
            ):
                return tok.text
        raise TranslationError(f"expected a name at {self._where(i)}")

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


def parse(sql: str, what: str) -> exp.Expression:
    """sqlglot's tree of one statement; TranslationError naming `what` when sqlglot cannot read it."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError as exc:
        raise TranslationError(f"sqlglot cannot parse {what}: {first_line(exc)}") from None
    if isinstance(tree, exp.Command):
        raise TranslationError(f"sqlglot cannot parse {what}")
    return tree
