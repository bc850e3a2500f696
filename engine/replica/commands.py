"""The replication statements a DBA types (CHANGE REPLICATION SOURCE, START/STOP/RESET REPLICA, SHOW ...,
SET), parsed into frozen dataclasses.

Both MySQL's old words (MASTER, SLAVE) and the 8.0.22+ ones (SOURCE, REPLICA) are accepted; option and
variable names come out in the new words so the executor only knows one spelling. Lexical rules are
MySQL's: case-insensitive keywords, quoted strings with backslash escapes, backticked identifiers and the
three comment styles. Errors are MySQL's: 1064 with the text near the failure for bad syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from lark import Discard, Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from .errors import ER_BAD_SLAVE_UNTIL_COND, ER_WRONG_ARGUMENTS, CommandError, parse_error

__all__ = [
    "COMMAND_TYPES",
    "Assignment",
    "ChangeSource",
    "Command",
    "ResetReplica",
    "SetVariables",
    "ShowRelaylogEvents",
    "ShowReplicaStatus",
    "StartReplica",
    "StopReplica",
    "UntilClause",
    "Value",
    "parse_statement",
]

# Positions, offsets and limits are MySQL ulonglongs; values in SET/CHANGE are at most that wide too.
_UNSIGNED_MAX = 2**64 - 1
_SIGNED_MIN = -(2**63)

_VALUE_KINDS = ("int", "decimal", "string", "word", "default")


@dataclass(frozen=True, slots=True)
class Value:
    """The right-hand side of an option or variable assignment, as typed."""

    kind: str  # "int", "decimal", "string", "word" (unquoted identifier, upper-cased) or "default"
    text: str

    def __post_init__(self) -> None:
        if self.kind not in _VALUE_KINDS:
            raise ValueError(f"unknown value kind {self.kind!r}")

    def as_int(self) -> int:
        if self.kind != "int":
            raise CommandError(
                ER_WRONG_ARGUMENTS, f"Incorrect arguments: expected an integer, got {self.kind} '{self.text}'"
            )
        return int(self.text)

    def as_text(self) -> str:
        """The text of any kind: a string unescaped, a word upper-cased, an int's digits, 'DEFAULT'."""
        return self.text


@dataclass(frozen=True, slots=True)
class UntilClause:
    kind: str  # "SQL_BEFORE_GTIDS", "SQL_AFTER_GTIDS", "RELAY_LOG", "SOURCE_LOG" or "SQL_AFTER_MTS_GAPS"
    gtids: str | None = None  # verbatim: the executor parses the GTID set
    log_file: str | None = None
    log_pos: int | None = None


@dataclass(frozen=True, slots=True)
class ChangeSource:
    options: tuple[tuple[str, Value], ...]  # canonical upper-case names in the new words, in typed order
    channel: str | None


@dataclass(frozen=True, slots=True)
class StartReplica:
    threads: tuple[str, ...]  # "SQL_THREAD" / "IO_THREAD"; empty means both
    until: UntilClause | None
    channel: str | None


@dataclass(frozen=True, slots=True)
class StopReplica:
    threads: tuple[str, ...]
    channel: str | None


@dataclass(frozen=True, slots=True)
class ResetReplica:
    all: bool
    channel: str | None


@dataclass(frozen=True, slots=True)
class ShowReplicaStatus:
    channel: str | None


@dataclass(frozen=True, slots=True)
class ShowRelaylogEvents:
    log_name: str | None
    pos: int | None
    offset: int
    limit: int | None
    channel: str | None


@dataclass(frozen=True, slots=True)
class Assignment:
    scope: str  # "GLOBAL", "SESSION" or "PERSIST"
    name: str  # lower case, in the new words
    value: Value


@dataclass(frozen=True, slots=True)
class SetVariables:
    assignments: tuple[Assignment, ...]


Command: TypeAlias = (
    ChangeSource
    | StartReplica
    | StopReplica
    | ResetReplica
    | ShowReplicaStatus
    | ShowRelaylogEvents
    | SetVariables
)
COMMAND_TYPES = (
    ChangeSource,
    StartReplica,
    StopReplica,
    ResetReplica,
    ShowReplicaStatus,
    ShowRelaylogEvents,
    SetVariables,
)

_KEYWORDS = (
    "ALL CHANGE CHANNEL DEFAULT DEFAULT_AUTH EVENTS FOR FROM GLOBAL IN IO_THREAD LIMIT LOCAL MASTER "
    "MASTER_LOG_FILE MASTER_LOG_POS OFFSET PASSWORD PERSIST PLUGIN_DIR RELAY_LOG_FILE RELAY_LOG_POS "
    "RELAY_THREAD RELAYLOG REPLICA REPLICATION RESET SESSION SET SHOW SLAVE SOURCE SOURCE_LOG_FILE "
    "SOURCE_LOG_POS SQL_AFTER_GTIDS SQL_AFTER_MTS_GAPS SQL_BEFORE_GTIDS SQL_THREAD START STATUS STOP TO "
    "UNTIL USER"
).split()

# Keywords are regex terminals that must end at a word boundary and outrank IDENT (priority 2): with lark's
# literal strings, "SOURCEX" would lex as SOURCE + X and the error would point at the wrong place. The
# contextual lexer only offers the keywords a state accepts, so e.g. an option named MASTER_LOG_FILE in
# CHANGE MASTER stays an identifier.
_KEYWORD_TERMINALS = "\n".join(f"_{word}.2: /{word.lower()}(?![\\w$])/i" for word in _KEYWORDS)

GRAMMAR = (
    r"""
start: _statement ";"?

_statement: change_source
          | start_replica
          | stop_replica
          | reset_replica
          | show_replica_status
          | show_relaylog_events
          | set_variables

_replica_word: _REPLICA | _SLAVE

change_source: _CHANGE (_REPLICATION _SOURCE | _MASTER) _TO source_option ("," source_option)* [channel]
source_option: name "=" value

start_replica: _START _replica_word [threads] [until] connection_option* [channel]
stop_replica: _STOP _replica_word [threads] [channel]
threads: thread ("," thread)*
thread: _SQL_THREAD                 -> sql_thread
      | (_IO_THREAD | _RELAY_THREAD) -> io_thread

until: _UNTIL until_item ("," until_item)*
until_item: _SQL_BEFORE_GTIDS "=" STRING                 -> until_before_gtids
          | _SQL_AFTER_GTIDS "=" STRING                  -> until_after_gtids
          | _SQL_AFTER_MTS_GAPS                          -> until_after_gaps
          | _RELAY_LOG_FILE "=" STRING                   -> until_relay_file
          | _RELAY_LOG_POS "=" UINT                      -> until_relay_pos
          | (_SOURCE_LOG_FILE | _MASTER_LOG_FILE) "=" STRING -> until_source_file
          | (_SOURCE_LOG_POS | _MASTER_LOG_POS) "=" UINT     -> until_source_pos
// Credentials for connecting to the source: nothing here connects, so they are read and dropped.
connection_option: (_USER | _PASSWORD | _DEFAULT_AUTH | _PLUGIN_DIR) "=" STRING

reset_replica: _RESET _replica_word [reset_all] [channel]
reset_all: _ALL

show_replica_status: _SHOW _replica_word _STATUS [channel]

show_relaylog_events: _SHOW _RELAYLOG _EVENTS [_IN STRING] [_FROM UINT] [limit] [channel]
limit: _LIMIT UINT                -> limit_count
     | _LIMIT UINT "," UINT       -> limit_offset_count
     | _LIMIT UINT _OFFSET UINT   -> limit_count_offset

set_variables: _SET assignment ("," assignment)*
assignment: scope name _assign value               -> keyword_scoped
          | "@@" scope "." name _assign value      -> qualified
          | "@@" name _assign value                -> unqualified_system
          | name _assign value                     -> bare
scope: _GLOBAL                -> global_scope
     | (_SESSION | _LOCAL)    -> session_scope
     | _PERSIST               -> persist_scope
_assign: "=" | ":="

channel: _FOR _CHANNEL (STRING | IDENT | QUOTED_IDENT)

name: IDENT | QUOTED_IDENT

value: STRING          -> string_value
     | DECIMAL         -> decimal_value
     | UINT            -> int_value
     | "-" UINT        -> negative_int_value
     | "+" UINT        -> int_value
     | IDENT           -> word_value
     | QUOTED_IDENT    -> word_value
     | _DEFAULT        -> default_value

STRING: /'(?:[^'\\]|\\[\s\S]|'')*'/ | /"(?:[^"\\]|\\[\s\S]|"")*"/
QUOTED_IDENT: /`(?:[^`]|``)+`/
IDENT: /(?![0-9])[\w$]+/
UINT: /[0-9]+/
DECIMAL.2: /[0-9]+\.[0-9]*|\.[0-9]+/

BLOCK_COMMENT: /\/\*[\s\S]*?\*\//
// MySQL needs whitespace (or the end) after "--", so "--1" is minus minus one, not a comment.
DASH_COMMENT: /--(?=\s|$)[^\n]*/
HASH_COMMENT: /#[^\n]*/
%ignore BLOCK_COMMENT
%ignore DASH_COMMENT
%ignore HASH_COMMENT
%ignore /\s+/
"""
    + _KEYWORD_TERMINALS
)

_PARSER = Lark(GRAMMAR, parser="lalr", lexer="contextual", maybe_placeholders=True)

# MySQL's escapes; any other backslashed character stands for itself, except \% and \_ which keep the
# backslash (they exist for LIKE patterns).
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _unquote_string(token: str) -> str:
    quote = token[0]

    def unescape(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped is None:  # a doubled quote
            return quote
        return _ESCAPES.get(escaped, escaped)

    return re.sub(r"\\([\s\S])|" + quote * 2, unescape, token[1:-1])


def _name_text(token: Token) -> str:
    if token.type == "QUOTED_IDENT":
        return token[1:-1].replace("``", "`")
    if token.type == "STRING":
        return _unquote_string(token)
    return str(token)


_NEW_WORDS = {"master": "source", "slave": "replica"}


def _in_new_words(lower_name: str) -> str:
    """Whole underscore-delimited words only: sql_slave_skip_counter changes, "mastery" would not."""
    return "_".join(_NEW_WORDS.get(word, word) for word in lower_name.split("_"))


def _checked_int(digits: str, low: int, high: int, what: str) -> int:
    # Length first: int() of thousands of digits is slow, and refused beyond Python's digit limit.
    if len(digits.lstrip("-+").lstrip("0")) > len(str(_UNSIGNED_MAX)):
        number = None
    else:
        number = int(digits)
    if number is None or not low <= number <= high:
        raise CommandError(
            ER_WRONG_ARGUMENTS, f"Incorrect arguments to {what}: {digits[:40]} is out of range"
        )
    return number


def _unsigned(token: Token, what: str) -> int:
    return _checked_int(str(token), 0, _UNSIGNED_MAX, what)


class _PendingAssignment(NamedTuple):
    scope: str | None  # None: whatever the latest scope keyword says
    sets_scope: bool  # GLOBAL/SESSION/PERSIST written as a keyword carries to later bare assignments
    name: str
    value: Value


def _bad_until() -> CommandError:
    return CommandError(
        ER_BAD_SLAVE_UNTIL_COND, "Incorrect parameter or combination of parameters for START SLAVE UNTIL"
    )


@v_args(inline=True)
class _ToCommand(Transformer):
    def start(self, command: Command) -> Command:
        return command

    # --- pieces -------------------------------------------------------------------------------------

    def channel(self, token: Token) -> str:
        return _name_text(token)

    def name(self, token: Token) -> str:
        return _name_text(token)

    def string_value(self, token: Token) -> Value:
        return Value("string", _unquote_string(token))

    def int_value(self, token: Token) -> Value:
        return Value("int", str(_checked_int(str(token), _SIGNED_MIN, _UNSIGNED_MAX, "an integer value")))

    def negative_int_value(self, token: Token) -> Value:
        return Value("int", str(_checked_int("-" + token, _SIGNED_MIN, _UNSIGNED_MAX, "an integer value")))

    def decimal_value(self, token: Token) -> Value:
        if len(token) > 40:
            raise CommandError(ER_WRONG_ARGUMENTS, f"Incorrect arguments to a decimal value: {token[:40]}")
        return Value("decimal", str(token))

    def word_value(self, token: Token) -> Value:
        return Value("word", _name_text(token).upper())

    def default_value(self) -> Value:
        return Value("default", "DEFAULT")

    # --- CHANGE REPLICATION SOURCE ------------------------------------------------------------------

    def source_option(self, name: str, value: Value) -> tuple[str, Value]:
        return _in_new_words(name.lower()).upper(), value

    def change_source(self, *items: tuple[str, Value] | str | None) -> ChangeSource:
        *options, channel = items
        seen: set[str] = set()
        for option_name, _ in options:
            if option_name in seen:
                raise CommandError(ER_WRONG_ARGUMENTS, f"Option {option_name} given twice")
            seen.add(option_name)
        return ChangeSource(tuple(options), channel)

    # --- START / STOP -------------------------------------------------------------------------------

    def sql_thread(self) -> str:
        return "SQL_THREAD"

    def io_thread(self) -> str:
        return "IO_THREAD"

    def threads(self, *names: str) -> tuple[str, ...]:
        # MySQL keeps a set of threads, so naming one twice is harmless; dict keeps the typed order.
        return tuple(dict.fromkeys(names))

    def until_before_gtids(self, token: Token) -> tuple[str, object]:
        return "SQL_BEFORE_GTIDS", _unquote_string(token)

    def until_after_gtids(self, token: Token) -> tuple[str, object]:
        return "SQL_AFTER_GTIDS", _unquote_string(token)

    def until_after_gaps(self) -> tuple[str, object]:
        return "SQL_AFTER_MTS_GAPS", None

    def until_relay_file(self, token: Token) -> tuple[str, object]:
        return "RELAY_LOG_FILE", _unquote_string(token)

    def until_relay_pos(self, token: Token) -> tuple[str, object]:
        return "RELAY_LOG_POS", _unsigned(token, "RELAY_LOG_POS")

    def until_source_file(self, token: Token) -> tuple[str, object]:
        return "SOURCE_LOG_FILE", _unquote_string(token)

    def until_source_pos(self, token: Token) -> tuple[str, object]:
        return "SOURCE_LOG_POS", _unsigned(token, "SOURCE_LOG_POS")

    def until(self, *items: tuple[str, object]) -> UntilClause:
        # The grammar takes any list of conditions, as MySQL's does; which combinations make sense is
        # checked here so a bad one gets MySQL's own error rather than a syntax error.
        given = dict(items)
        if len(given) != len(items):
            raise _bad_until()
        if len(items) == 1:
            kind, argument = items[0]
            if kind in ("SQL_BEFORE_GTIDS", "SQL_AFTER_GTIDS"):
                return UntilClause(kind, gtids=str(argument))
            if kind == "SQL_AFTER_MTS_GAPS":
                return UntilClause(kind)
        if len(items) == 2:
            for family in ("RELAY", "SOURCE"):
                file_key, pos_key = f"{family}_LOG_FILE", f"{family}_LOG_POS"
                if given.keys() == {file_key, pos_key}:
                    log_pos = given[pos_key]
                    assert isinstance(log_pos, int)
                    return UntilClause(f"{family}_LOG", log_file=str(given[file_key]), log_pos=log_pos)
        raise _bad_until()

    def connection_option(self, _credential: Token) -> object:
        return Discard

    def start_replica(
        self, threads: tuple[str, ...] | None, until: UntilClause | None, channel: str | None
    ) -> StartReplica:
        return StartReplica(threads or (), until, channel)

    def stop_replica(self, threads: tuple[str, ...] | None, channel: str | None) -> StopReplica:
        return StopReplica(threads or (), channel)

    # --- RESET / SHOW -------------------------------------------------------------------------------

    def reset_all(self) -> bool:
        return True

    def reset_replica(self, reset_all: bool | None, channel: str | None) -> ResetReplica:
        return ResetReplica(bool(reset_all), channel)

    def show_replica_status(self, channel: str | None) -> ShowReplicaStatus:
        return ShowReplicaStatus(channel)

    def limit_count(self, count: Token) -> tuple[int, int]:
        return 0, _unsigned(count, "LIMIT")

    def limit_offset_count(self, offset: Token, count: Token) -> tuple[int, int]:
        return _unsigned(offset, "LIMIT"), _unsigned(count, "LIMIT")

    def limit_count_offset(self, count: Token, offset: Token) -> tuple[int, int]:
        return _unsigned(offset, "OFFSET"), _unsigned(count, "LIMIT")

    def show_relaylog_events(
        self,
        log_name: Token | None,
        pos: Token | None,
        limit: tuple[int, int] | None,
        channel: str | None,
    ) -> ShowRelaylogEvents:
        offset, count = limit if limit is not None else (0, None)
        return ShowRelaylogEvents(
            log_name=None if log_name is None else _unquote_string(log_name),
            pos=None if pos is None else _unsigned(pos, "FROM"),
            offset=offset,
            limit=count,
            channel=channel,
        )

    # --- SET ----------------------------------------------------------------------------------------

    def global_scope(self) -> str:
        return "GLOBAL"

    def session_scope(self) -> str:
        return "SESSION"

    def persist_scope(self) -> str:
        return "PERSIST"

    def keyword_scoped(self, scope: str, name: str, value: Value) -> _PendingAssignment:
        return _PendingAssignment(scope, True, name, value)

    def qualified(self, scope: str, name: str, value: Value) -> _PendingAssignment:
        return _PendingAssignment(scope, False, name, value)

    def unqualified_system(self, name: str, value: Value) -> _PendingAssignment:
        # @@name means the session value, whatever scope keyword came earlier in the statement.
        return _PendingAssignment("SESSION", False, name, value)

    def bare(self, name: str, value: Value) -> _PendingAssignment:
        return _PendingAssignment(None, False, name, value)

    def set_variables(self, *pending: _PendingAssignment) -> SetVariables:
        carried_scope = "SESSION"
        assignments = []
        for item in pending:
            if item.sets_scope:
                assert item.scope is not None
                carried_scope = item.scope
            scope = item.scope or carried_scope
            assignments.append(Assignment(scope, _in_new_words(item.name.lower()), item.value))
        return SetVariables(tuple(assignments))


_TRANSFORMER = _ToCommand()


def _near(text: str, error: UnexpectedInput) -> str:
    """The input from the token the parser choked on, as MySQL quotes it; empty when input ran out."""
    if isinstance(error, UnexpectedToken):
        if error.token.type == "$END":
            return ""
        return text[error.token.start_pos :]
    if isinstance(error, UnexpectedCharacters):
        return text[error.pos_in_stream :]
    return ""


def parse_statement(text: str) -> Command:
    """One replication statement as typed at the prompt; CommandError (1064 for syntax) when it is not."""
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as error:
        raise parse_error(_near(text, error)) from None
    try:
        return _TRANSFORMER.transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, CommandError):
            raise error.orig_exc from None
        raise
