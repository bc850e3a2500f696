"""The parser of the replication statements a DBA types: old and new words, MySQL's lexical rules and errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.replica.commands import (
    COMMAND_TYPES,
    Assignment,
    ChangeSource,
    ResetReplica,
    SetVariables,
    ShowRelaylogEvents,
    ShowReplicaStatus,
    StartReplica,
    StopReplica,
    UntilClause,
    Value,
    parse_statement,
)
from engine.replica.errors import (
    ER_BAD_SLAVE_UNTIL_COND,
    ER_PARSE_ERROR,
    ER_WRONG_ARGUMENTS,
    CommandError,
)


def parse_error_of(text: str) -> CommandError:
    with pytest.raises(CommandError) as caught:
        parse_statement(text)
    return caught.value


def near_text(error: CommandError) -> str:
    """The quoted part of MySQL's "... near '<text>' at line 1"."""
    assert error.errno == ER_PARSE_ERROR
    prefix = "to use near '"
    start = error.message.index(prefix) + len(prefix)
    return error.message[start : error.message.rindex("' at line 1")]


# --- CHANGE REPLICATION SOURCE / CHANGE MASTER ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "CHANGE MASTER TO MASTER_HOST='db1', MASTER_PORT=3306, MASTER_LOG_FILE='bin.000002', MASTER_LOG_POS=4",
        "change replication source to source_host='db1', source_port=3306, "
        "source_log_file='bin.000002', source_log_pos=4",
        "Change Master To master_host = 'db1' , Source_Port = 3306, MASTER_log_file='bin.000002', "
        "master_LOG_pos=4",
    ],
)
def test_change_source_in_old_and_new_words_gives_the_same_options(text: str) -> None:
    assert parse_statement(text) == ChangeSource(
        options=(
            ("SOURCE_HOST", Value("string", "db1")),
            ("SOURCE_PORT", Value("int", "3306")),
            ("SOURCE_LOG_FILE", Value("string", "bin.000002")),
            ("SOURCE_LOG_POS", Value("int", "4")),
        ),
        channel=None,
    )


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("MASTER_DELAY", "SOURCE_DELAY"),
        ("master_user", "SOURCE_USER"),
        ("MASTER_AUTO_POSITION", "SOURCE_AUTO_POSITION"),
        ("MASTER_SSL_CA", "SOURCE_SSL_CA"),
        ("GET_MASTER_PUBLIC_KEY", "GET_SOURCE_PUBLIC_KEY"),
        ("SLAVE_PARALLEL_WORKERS", "REPLICA_PARALLEL_WORKERS"),
        ("RELAY_LOG_FILE", "RELAY_LOG_FILE"),
        ("`master_retry_count`", "SOURCE_RETRY_COUNT"),
        # Only whole words change: a name merely containing "master" is left alone.
        ("MASTERFUL", "MASTERFUL"),
    ],
)
def test_change_source_option_names_are_upper_case_in_the_new_words(typed: str, canonical: str) -> None:
    command = parse_statement(f"CHANGE MASTER TO {typed} = 1")
    assert isinstance(command, ChangeSource)
    assert command.options == ((canonical, Value("int", "1")),)


def test_change_source_values_of_every_kind_keep_their_order() -> None:
    command = parse_statement(
        'CHANGE REPLICATION SOURCE TO SOURCE_DELAY = -30, SOURCE_HOST = "h\'1", '
        "SOURCE_AUTO_POSITION = on, SOURCE_CONNECT_RETRY = DEFAULT"
    )
    assert isinstance(command, ChangeSource)
    assert command.options == (
        ("SOURCE_DELAY", Value("int", "-30")),
        ("SOURCE_HOST", Value("string", "h'1")),
        ("SOURCE_AUTO_POSITION", Value("word", "ON")),
        ("SOURCE_CONNECT_RETRY", Value("default", "DEFAULT")),
    )


@pytest.mark.parametrize(
    "text",
    [
        "CHANGE MASTER TO MASTER_HOST='a', MASTER_PORT=1, MASTER_HOST='b'",
        # The old and the new spelling of one option are the same option.
        "CHANGE REPLICATION SOURCE TO MASTER_HOST='a', SOURCE_HOST='b'",
    ],
)
def test_change_source_option_given_twice_is_refused(text: str) -> None:
    error = parse_error_of(text)
    assert error.errno == ER_WRONG_ARGUMENTS
    assert error.message == "Option SOURCE_HOST given twice"


# --- START / STOP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["SLAVE", "REPLICA", "slave", "Replica"])
def test_start_and_stop_accept_both_words(word: str) -> None:
    assert parse_statement(f"START {word}") == StartReplica(threads=(), until=None, channel=None)
    assert parse_statement(f"STOP {word}") == StopReplica(threads=(), channel=None)


@pytest.mark.parametrize(
    ("typed", "threads"),
    [
        ("SQL_THREAD", ("SQL_THREAD",)),
        ("io_thread", ("IO_THREAD",)),
        ("IO_THREAD, SQL_THREAD", ("IO_THREAD", "SQL_THREAD")),
        # RELAY_THREAD is MySQL's other name for the receiver thread.
        ("RELAY_THREAD", ("IO_THREAD",)),
        ("SQL_THREAD, sql_thread", ("SQL_THREAD",)),
    ],
)
def test_thread_types_are_canonical(typed: str, threads: tuple[str, ...]) -> None:
    start = parse_statement(f"START REPLICA {typed} FOR CHANNEL 'c'")
    stop = parse_statement(f"STOP SLAVE {typed}")
    assert start == StartReplica(threads=threads, until=None, channel="c")
    assert stop == StopReplica(threads=threads, channel=None)


@pytest.mark.parametrize(
    ("typed", "until"),
    [
        (
            "SQL_BEFORE_GTIDS = '3E11FA47-71CA-11E1-9E33-C80AA9429562:11-56'",
            UntilClause("SQL_BEFORE_GTIDS", gtids="3E11FA47-71CA-11E1-9E33-C80AA9429562:11-56"),
        ),
        # Kept verbatim, odd spacing and all: the executor parses the set.
        ("sql_after_gtids='a:1 ,  b:2'", UntilClause("SQL_AFTER_GTIDS", gtids="a:1 ,  b:2")),
        (
            "RELAY_LOG_FILE = 'relay.000003', RELAY_LOG_POS = 1234",
            UntilClause("RELAY_LOG", log_file="relay.000003", log_pos=1234),
        ),
        (
            "SOURCE_LOG_FILE = 'bin.000007', SOURCE_LOG_POS = 4",
            UntilClause("SOURCE_LOG", log_file="bin.000007", log_pos=4),
        ),
        (
            "MASTER_LOG_FILE = 'bin.000007', MASTER_LOG_POS = 4",
            UntilClause("SOURCE_LOG", log_file="bin.000007", log_pos=4),
        ),
        # MySQL takes the two conditions in either order.
        (
            "MASTER_LOG_POS = 4, SOURCE_LOG_FILE = 'bin.000007'",
            UntilClause("SOURCE_LOG", log_file="bin.000007", log_pos=4),
        ),
        ("SQL_AFTER_MTS_GAPS", UntilClause("SQL_AFTER_MTS_GAPS")),
    ],
)
def test_each_until_form(typed: str, until: UntilClause) -> None:
    assert parse_statement(f"START SLAVE SQL_THREAD UNTIL {typed}") == StartReplica(
        threads=("SQL_THREAD",), until=until, channel=None
    )


@pytest.mark.parametrize(
    "typed",
    [
        "RELAY_LOG_FILE = 'r.000001'",
        "SOURCE_LOG_POS = 4",
        "RELAY_LOG_FILE = 'r.000001', SOURCE_LOG_POS = 4",
        "SQL_BEFORE_GTIDS = 'a:1', SQL_AFTER_GTIDS = 'a:2'",
        "SQL_AFTER_MTS_GAPS, RELAY_LOG_POS = 4",
        "RELAY_LOG_FILE = 'a', RELAY_LOG_FILE = 'b'",
    ],
)
def test_until_combinations_mysql_refuses(typed: str) -> None:
    assert parse_error_of(f"START SLAVE UNTIL {typed}").errno == ER_BAD_SLAVE_UNTIL_COND


def test_connection_options_after_until_are_accepted_and_dropped() -> None:
    command = parse_statement(
        "START REPLICA UNTIL SQL_AFTER_MTS_GAPS USER='repl' PASSWORD='secret' "
        "DEFAULT_AUTH='caching_sha2_password' PLUGIN_DIR='/usr/lib/plugin' FOR CHANNEL 'm2'"
    )
    assert command == StartReplica(threads=(), until=UntilClause("SQL_AFTER_MTS_GAPS"), channel="m2")


def test_until_position_must_not_be_negative() -> None:
    error = parse_error_of("START SLAVE UNTIL RELAY_LOG_FILE='r', RELAY_LOG_POS=-4")
    assert near_text(error) == "-4"


# --- RESET / SHOW ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["SLAVE", "REPLICA"])
def test_reset_with_and_without_all(word: str) -> None:
    assert parse_statement(f"RESET {word}") == ResetReplica(all=False, channel=None)
    assert parse_statement(f"reset {word.lower()} all for channel 'x'") == ResetReplica(all=True, channel="x")


@pytest.mark.parametrize("word", ["SLAVE", "REPLICA"])
def test_show_replica_status(word: str) -> None:
    assert parse_statement(f"SHOW {word} STATUS") == ShowReplicaStatus(channel=None)
    assert parse_statement(f"show {word} status for channel 'M1'") == ShowReplicaStatus(channel="M1")


@pytest.mark.parametrize(
    ("clauses", "expected"),
    [
        ("", ShowRelaylogEvents(None, None, 0, None, None)),
        ("IN 'relay.000002'", ShowRelaylogEvents("relay.000002", None, 0, None, None)),
        ("FROM 120", ShowRelaylogEvents(None, 120, 0, None, None)),
        ("LIMIT 10", ShowRelaylogEvents(None, None, 0, 10, None)),
        ("LIMIT 5, 10", ShowRelaylogEvents(None, None, 5, 10, None)),
        ("LIMIT 10 OFFSET 5", ShowRelaylogEvents(None, None, 5, 10, None)),
        (
            "in 'relay.000002' from 4 limit 0, 3 for channel 'group_replication_applier'",
            ShowRelaylogEvents("relay.000002", 4, 0, 3, "group_replication_applier"),
        ),
    ],
)
def test_show_relaylog_events(clauses: str, expected: ShowRelaylogEvents) -> None:
    assert parse_statement(f"SHOW RELAYLOG EVENTS {clauses}") == expected


@pytest.mark.parametrize(
    ("clauses", "near"),
    [
        ("LIMIT -1", "-1"),
        ("FROM -4", "-4"),
        ("LIMIT 1, -2", "-2"),
        # The clauses come in MySQL's fixed order.
        ("FROM 4 IN 'relay.000001'", "IN 'relay.000001'"),
        ("LIMIT", ""),
    ],
)
def test_show_relaylog_events_syntax_errors(clauses: str, near: str) -> None:
    assert near_text(parse_error_of(f"SHOW RELAYLOG EVENTS {clauses}")) == near


def test_position_beyond_an_unsigned_64_bit_number_is_refused() -> None:
    assert parse_statement("SHOW RELAYLOG EVENTS FROM 18446744073709551615").pos == 2**64 - 1
    error = parse_error_of("SHOW RELAYLOG EVENTS FROM 18446744073709551616")
    assert error.errno == ER_WRONG_ARGUMENTS
    assert "18446744073709551616" in error.message


# --- FOR CHANNEL ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "channel"),
    [
        ("'M1'", "M1"),
        ("'m1'", "m1"),
        ("''", ""),
        ('"Source-2"', "Source-2"),
        ("'it''s'", "it's"),
        (r"'it\'s'", "it's"),
        (r"'back\\slash'", "back\\slash"),
        (r"'tab\there'", "tab\there"),
        ("`quoted``tick`", "quoted`tick"),
        ("Bare_Name", "Bare_Name"),
    ],
)
def test_channel_name_is_kept_exactly_as_quoted(typed: str, channel: str) -> None:
    assert parse_statement(f"STOP REPLICA FOR CHANNEL {typed}") == StopReplica(threads=(), channel=channel)


# --- SET ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "scope"),
    [
        ("SET GLOBAL replica_parallel_workers = 4", "GLOBAL"),
        ("SET @@GLOBAL.replica_parallel_workers = 4", "GLOBAL"),
        ("set @@global.replica_parallel_workers := 4", "GLOBAL"),
        ("SET PERSIST replica_parallel_workers = 4", "PERSIST"),
        ("SET @@PERSIST.replica_parallel_workers = 4", "PERSIST"),
        ("SET SESSION replica_parallel_workers = 4", "SESSION"),
        ("SET LOCAL replica_parallel_workers = 4", "SESSION"),
        ("SET @@SESSION.replica_parallel_workers = 4", "SESSION"),
        ("SET @@replica_parallel_workers = 4", "SESSION"),
        ("SET replica_parallel_workers = 4", "SESSION"),
    ],
)
def test_set_scope_of_each_form(typed: str, scope: str) -> None:
    assert parse_statement(typed) == SetVariables(
        (Assignment(scope, "replica_parallel_workers", Value("int", "4")),)
    )


def test_set_scope_keyword_carries_to_later_bare_assignments_only() -> None:
    command = parse_statement(
        "SET GLOBAL a = 1, b = 2, @@c = 3, @@SESSION.d = 4, e = 5, PERSIST f = 6, g = 7, SESSION h = 8, i = 9"
    )
    assert isinstance(command, SetVariables)
    assert [(item.name, item.scope) for item in command.assignments] == [
        ("a", "GLOBAL"),
        ("b", "GLOBAL"),
        ("c", "SESSION"),  # @@name is the session value whatever came before
        ("d", "SESSION"),
        ("e", "GLOBAL"),  # an @@SESSION. prefix does not change the carried scope
        ("f", "PERSIST"),
        ("g", "PERSIST"),
        ("h", "SESSION"),
        ("i", "SESSION"),
    ]


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("sql_slave_skip_counter", "sql_replica_skip_counter"),
        ("SLAVE_PARALLEL_WORKERS", "replica_parallel_workers"),
        ("slave_parallel_type", "replica_parallel_type"),
        ("Slave_Preserve_Commit_Order", "replica_preserve_commit_order"),
        ("log_slave_updates", "log_replica_updates"),
        ("rpl_semi_sync_master_enabled", "rpl_semi_sync_source_enabled"),
        ("`Binlog_Format`", "binlog_format"),
        ("slaves_allowed", "slaves_allowed"),
    ],
)
def test_set_variable_names_are_lower_case_in_the_new_words(typed: str, canonical: str) -> None:
    command = parse_statement(f"SET GLOBAL {typed} = 1")
    assert isinstance(command, SetVariables)
    assert command.assignments[0].name == canonical


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ("8", Value("int", "8")),
        ("-8", Value("int", "-8")),
        ("+8", Value("int", "8")),
        ("007", Value("int", "7")),
        ("LOGICAL_CLOCK", Value("word", "LOGICAL_CLOCK")),
        ("on", Value("word", "ON")),
        ("True", Value("word", "TRUE")),
        ("DEFAULT", Value("default", "DEFAULT")),
        ("default_word", Value("word", "DEFAULT_WORD")),
        ("'LOGICAL_CLOCK'", Value("string", "LOGICAL_CLOCK")),
        (r"'a\nb\0c\\d\"e'", Value("string", 'a\nb\0c\\d"e')),
        ('"say ""hi"""', Value("string", 'say "hi"')),
    ],
)
def test_set_values(typed: str, value: Value) -> None:
    command = parse_statement(f"SET SESSION x = {typed}")
    assert isinstance(command, SetVariables)
    assert command.assignments[0].value == value


def test_set_signed_values_outside_64_bits_are_refused() -> None:
    assert parse_statement("SET x = -9223372036854775808").assignments[0].value.as_int() == -(2**63)
    assert parse_error_of("SET x = -9223372036854775809").errno == ER_WRONG_ARGUMENTS
    assert parse_error_of("SET x = " + "9" * 5000).errno == ER_WRONG_ARGUMENTS


def test_value_as_int_and_as_text() -> None:
    assert Value("int", "-12").as_int() == -12
    assert Value("word", "ON").as_text() == "ON"
    assert Value("string", "relay.000001").as_text() == "relay.000001"
    with pytest.raises(CommandError) as caught:
        Value("string", "12").as_int()
    assert caught.value.errno == ER_WRONG_ARGUMENTS


# --- lexical rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "STOP SLAVE;",
        "  STOP\n\tSLAVE  ;  ",
        "/* before */ STOP /* inside */ SLAVE /* after */",
        "STOP SLAVE -- trailing comment",
        "STOP -- a comment that ends with the line\nSLAVE",
        "STOP SLAVE # hash comment",
        "# leading\nSTOP SLAVE;\n-- after the semicolon\n",
        "/* multi\nline */STOP/**/SLAVE",
    ],
)
def test_comments_whitespace_and_one_trailing_semicolon_are_ignored(text: str) -> None:
    assert parse_statement(text) == StopReplica(threads=(), channel=None)


# --- syntax errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "near"),
    [
        ("SELECT 1", "SELECT 1"),
        ("START TRANSACTION", "TRANSACTION"),
        ("", ""),
        ("   -- only a comment", ""),
        ("STOP SLAVE;;", ";"),
        ("STOP SLAVE; STOP SLAVE", "STOP SLAVE"),
        ("STOP SLAVES", "SLAVES"),
        ("CHANGE REPLICATION SOURCEX TO SOURCE_HOST='h'", "SOURCEX TO SOURCE_HOST='h'"),
        ("CHANGE MASTER TO", ""),
        ("CHANGE MASTER TO MASTER_HOST 'h'", "'h'"),
        ("CHANGE MASTER TO MASTER_HOST = 'unterminated", "'unterminated"),
        ("START SLAVE FOR CHANNEL", ""),
        ("START SLAVE UNTIL", ""),
        ("RESET SLAVE EVERYTHING", "EVERYTHING"),
        ("SET x = 1.5.5", ".5"),  # a decimal is a value (SOURCE_HEARTBEAT_PERIOD = 0.5), two dots are not
        ("SET @user_var = 1", "@user_var = 1"),
        # "--" needs whitespace after it to start a comment, as in MySQL.
        ("STOP SLAVE --1", "--1"),
        ("STOP SLAVE /* never closed", "/* never closed"),
    ],
)
def test_syntax_error_is_1064_quoting_the_text_near_it(text: str, near: str) -> None:
    assert near_text(parse_error_of(text)) == near


def test_near_text_is_cut_to_80_characters() -> None:
    tail = "X" * 200
    assert near_text(parse_error_of(f"STOP SLAVE {tail}")) == tail[:80]


# --- properties -----------------------------------------------------------------------------------------


def quote_for_mysql(name: str, double_quotes: bool) -> str:
    r"""Escape the two characters that must be: the backslash, and the quote (as \' or by doubling)."""
    escaped = name.replace("\\", "\\\\")
    escaped = escaped.replace("'", "''") if double_quotes else escaped.replace("'", "\\'")
    return f"'{escaped}'"


@settings(max_examples=300)
@given(name=st.text(max_size=64), double_quotes=st.booleans(), upper=st.booleans())
def test_any_channel_name_survives_quoting_and_parsing(name: str, double_quotes: bool, upper: bool) -> None:
    keywords = "RESET REPLICA ALL FOR CHANNEL" if upper else "reset replica all for channel"
    command = parse_statement(f"{keywords} {quote_for_mysql(name, double_quotes)}")
    assert command == ResetReplica(all=True, channel=name)


@settings(max_examples=300)
@given(value=st.text(max_size=64))
def test_any_string_value_survives_quoting_and_parsing(value: str) -> None:
    command = parse_statement(f"SET GLOBAL x = {quote_for_mysql(value, double_quotes=False)}")
    assert command == SetVariables((Assignment("GLOBAL", "x", Value("string", value)),))


STATEMENT_PIECES = [
    "START", "STOP", "RESET", "SHOW", "CHANGE", "SET", "SLAVE", "REPLICA", "MASTER", "SOURCE", "REPLICATION",
    "TO", "UNTIL", "FOR", "CHANNEL", "ALL", "STATUS", "RELAYLOG", "EVENTS", "IN", "FROM", "LIMIT", "OFFSET",
    "GLOBAL", "PERSIST", "@@", ".", ",", "=", ":=", ";", "-", "1", "99999999999999999999999", "'x'", '"y"',
    "`z`", "SQL_THREAD", "SQL_BEFORE_GTIDS", "RELAY_LOG_FILE", "RELAY_LOG_POS", "SQL_AFTER_MTS_GAPS",
    "MASTER_HOST", "DEFAULT", "/*", "*/", "-- ", "#", "\n", "'", "\\",
]  # fmt: skip


@settings(max_examples=500)
@given(text=st.one_of(st.text(), st.lists(st.sampled_from(STATEMENT_PIECES), max_size=14).map(" ".join)))
def test_any_text_parses_or_raises_command_error(text: str) -> None:
    try:
        command = parse_statement(text)
    except CommandError as error:
        assert error.errno in (ER_PARSE_ERROR, ER_WRONG_ARGUMENTS, ER_BAD_SLAVE_UNTIL_COND)
    else:
        assert isinstance(command, COMMAND_TYPES)
