"""The console's parts that hold no widget: completion, history, thresholds, paging, plotting,
what changed between snapshots, following a recovery, the statements the keys send."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from console.completion import complete
from console.plot import bars, columns, nice_ceiling
from console.recovery_follow import GRACE_S, RecoveryFollow
from console.recovery_view import bitmap_rows
from console.relaylog_pages import Pager, PageStart, next_file_name
from console.statement_history import StatementHistory
from console.statements import (
    for_channel,
    is_destructive,
    recover,
    relaylog_events,
    start_thread,
    stop_thread,
)
from console.thresholds import CRIT, OK, UNKNOWN, WARN, LagThresholds
from console.transitions import changes
from engine.api import ChannelView, ReceiverView, Snapshot
from engine.replica.commands import ShowRelaylogEvents, StartReplica, StopReplica, parse_statement

CHANNELS = ["m1", "m2", "oltp"]


def channel(name: str, state: str = "running", error: str = "") -> ChannelView:
    return ChannelView(name, state, "", "", "", "", 0, 0.0, None, 0, 0, 0.0, error)


# -- completion -----------------------------------------------------------------------------------


def test_a_unique_keyword_is_completed_with_a_space():
    assert complete("SHOW RELAYL", CHANNELS).text == "SHOW RELAYLOG "


def test_several_keywords_complete_as_far_as_they_agree_and_are_all_offered():
    completion = complete("START REPLICA UNTIL sql_a", CHANNELS)
    assert set(completion.candidates) == {"SQL_AFTER_GTIDS", "SQL_AFTER_MTS_GAPS"}
    assert completion.text == "START REPLICA UNTIL SQL_AFTER_"
    assert complete("sta", CHANNELS).text == "sta"  # START and STATUS agree on nothing more


def test_after_for_channel_the_quoted_channel_names_are_offered():
    completion = complete("STOP REPLICA FOR CHANNEL ", CHANNELS)
    assert completion.candidates == ("'m1'", "'m2'", "'oltp'")
    assert complete("STOP REPLICA FOR CHANNEL o", CHANNELS).text == "STOP REPLICA FOR CHANNEL 'oltp' "
    assert complete("STOP REPLICA FOR CHANNEL 'm", CHANNELS).text == "STOP REPLICA FOR CHANNEL 'm"


def test_a_channel_name_with_a_quote_is_completed_as_a_valid_string():
    completion = complete("START REPLICA FOR CHANNEL ", ["it's"])
    assert completion.text == "START REPLICA FOR CHANNEL 'it''s' "


def test_after_set_global_the_variables_are_offered():
    completion = complete("SET GLOBAL replica_parallel_", CHANNELS)
    assert set(completion.candidates) == {"REPLICA_PARALLEL_TYPE", "REPLICA_PARALLEL_WORKERS"}
    assert complete("SET GLOBAL sql_rep", CHANNELS).text == "SET GLOBAL SQL_REPLICA_SKIP_COUNTER "
    assert "REPLICA_CHECKPOINT_GROUP" in complete("SET GLOBAL replica_parallel_workers = 4, ", []).candidates


def test_in_change_replication_source_the_options_are_offered():
    line = "CHANGE REPLICATION SOURCE TO RELAY_LOG_I"
    assert complete(line, CHANNELS).text == "CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX "
    assert "SOURCE_HOST" in complete("CHANGE REPLICATION SOURCE TO RELAY_LOG = 'x', ", []).candidates


def test_a_word_nothing_starts_with_is_left_alone():
    completion = complete("START REPLICA ZZZ", CHANNELS)
    assert completion == type(completion)("START REPLICA ZZZ", ())


# -- history --------------------------------------------------------------------------------------


def test_history_goes_back_and_forth_and_gives_back_the_draft():
    history = StatementHistory()
    for statement in ("SHOW REPLICA STATUS", "START REPLICA", "START REPLICA", "STOP REPLICA"):
        history.record(statement)
    assert history.entries == ["SHOW REPLICA STATUS", "START REPLICA", "STOP REPLICA"]  # repeats once
    assert history.older("draft") == "STOP REPLICA"
    assert history.older("STOP REPLICA") == "START REPLICA"
    assert history.older("START REPLICA") == "SHOW REPLICA STATUS"
    assert history.older("SHOW REPLICA STATUS") == "SHOW REPLICA STATUS"  # the oldest stays
    assert history.newer() == "START REPLICA"
    assert history.newer() == "STOP REPLICA"
    assert history.newer() == "draft"


def test_history_keeps_the_newest_entries_up_to_its_limit():
    history = StatementHistory(limit=2)
    for number in range(5):
        history.record(f"SET GLOBAL replica_parallel_workers = {number}")
    assert history.entries == [f"SET GLOBAL replica_parallel_workers = {n}" for n in (3, 4)]


# -- lag thresholds -------------------------------------------------------------------------------


def test_lag_levels_turn_at_the_thresholds():
    thresholds = LagThresholds(5, 30)
    assert [thresholds.level(s) for s in (None, 0, 4.9, 5, 29.9, 30, 3600)] == [
        UNKNOWN,
        OK,
        OK,
        WARN,
        WARN,
        CRIT,
        CRIT,
    ]


def test_thresholds_in_the_wrong_order_are_refused():
    with pytest.raises(ValueError):
        LagThresholds(40, 30)


# -- relay-log pages ------------------------------------------------------------------------------


def rows(log_name: str, *positions: int) -> list[tuple[object, ...]]:
    return [(log_name, pos, "Query", 1, pos + 10, "") for pos in positions]


def test_a_page_shows_page_size_rows_and_the_extra_one_is_where_the_next_starts():
    pager = Pager(page_size=3)
    shown = pager.accept(rows("relay-bin.000002", 4, 120, 300, 480))
    assert [r[1] for r in shown] == [4, 120, 300]
    assert pager.forward() == PageStart("relay-bin.000002", 480)


def test_after_the_last_page_of_a_file_comes_the_next_file():
    pager = Pager(page_size=3)
    pager.accept(rows("relay-bin.000009", 4, 120))
    assert pager.forward() == PageStart("relay-bin.000010", None)


def test_going_back_returns_the_pages_in_reverse_order():
    pager = Pager(page_size=3)
    first, second = PageStart(None, None), PageStart("relay-bin.000001", 480)
    pager.moved_to(second)
    pager.moved_to(PageStart("relay-bin.000001", 900))
    assert (pager.number, pager.back(), pager.back(), pager.back()) == (3, second, first, None)


def test_next_relay_log_names_keep_their_width():
    assert next_file_name("relay-bin-m2.000002") == "relay-bin-m2.000003"
    assert next_file_name("relay-bin.999999") == "relay-bin.1000000"
    assert next_file_name("relay-bin") is None


# -- plots ----------------------------------------------------------------------------------------


def test_plot_scales_end_on_round_numbers_at_or_above_the_largest_value():
    assert [nice_ceiling(v) for v in (0, 0.7, 1, 412.7, 509, 4100, 95)] == [1, 0.8, 1, 500, 600, 5000, 100]


def test_each_plot_column_holds_the_largest_value_of_its_time_slice():
    points = [(100.0, 1.0), (100.5, 3.0), (103.0, 2.0), (104.0, 7.0)]  # ages 4, 3.5, 1 and 0 s
    assert columns(points, now=104.0, width=4, step_s=2.0) == [None, 1.0, 3.0, 7.0]
    assert columns([(90.0, 5.0), (105.0, 5.0)], now=104.0, width=4, step_s=2.0) == [None] * 4


def test_bars_grow_from_the_bottom_in_eighths():
    assert bars([0.0, 1.0, 2.0, None], height=2, top=2.0) == ["  █ ", " ██ "]
    assert bars([0.25], height=1, top=1.0) == ["▂"]


# -- recovery -------------------------------------------------------------------------------------


def test_bitmaps_are_drawn_as_rows_of_squares_spaced_by_byte():
    assert bitmap_rows("1" * 8 + "01", per_row=16) == ["■■■■■■■■ □■"]
    assert bitmap_rows("1" * 20, per_row=16) == ["■■■■■■■■ ■■■■■■■■", "■■■■"]


def test_recovery_is_followed_until_the_channel_stops_again():
    follow = RecoveryFollow("bank", started_at=1000.0)
    assert follow.observe(channel("bank", "stopped"), 1000.2) == (False, "recovery starting …")
    finished, _ = follow.observe(channel("bank", "recovering"), 1000.4)
    assert not finished
    finished, text = follow.observe(channel("bank", "stopped"), 1000.6)
    assert finished and text == "recovery of bank finished (stopped)"


def test_a_recovery_too_quick_to_be_seen_running_ends_after_the_grace_time():
    follow = RecoveryFollow("bank", started_at=1000.0)
    follow.start_returned(1000.5)
    assert not follow.observe(channel("bank", "stopped"), 1000.5 + GRACE_S / 2)[0]
    finished, text = follow.observe(channel("bank", "error", "Error 1062: dup"), 1000.5 + GRACE_S)
    assert finished and text == "recovery of bank ended with Error 1062: dup"


def test_a_start_slower_than_the_grace_time_is_still_waited_for():
    # on a loaded machine the START itself can take longer than the grace time: a stopped
    # channel before it returned is the state before the recovery, not after it
    follow = RecoveryFollow("bank", started_at=1000.0)
    assert not follow.observe(channel("bank", "stopped"), 1000.0 + 5 * GRACE_S)[0]
    follow.start_returned(1000.0 + 6 * GRACE_S)
    assert not follow.observe(channel("bank", "stopped"), 1000.0 + 6.5 * GRACE_S)[0]
    assert follow.observe(channel("bank", "stopped"), 1000.0 + 7 * GRACE_S)[0]


# -- what changed between snapshots ---------------------------------------------------------------


def test_state_changes_errors_and_channels_coming_and_going_are_reported():
    before = Snapshot(1.0, (channel("m1"), channel("m2"), channel("old")))
    after = Snapshot(
        2.0, (channel("m1"), channel("m2", "error", "Error 1062: dup"), channel("new", "stopped"))
    )
    assert changes(before, after) == [
        ("error", "channel m2: Error 1062: dup"),
        ("error", "channel m2: running → error"),
        ("note", "channel new appeared (stopped)"),
        ("note", "channel old was removed"),
    ]
    assert changes(None, after) == [] and changes(after, after) == []


def test_the_io_thread_s_state_changes_and_errors_are_reported_apart():
    def receiving(state: str, error: str = "") -> ChannelView:
        return replace(channel("live"), receiver=ReceiverView(state, "", "", "", error, ""))

    refused = "Error 1045: Access denied for user 'repl'"
    steps = [receiving("running"), receiving("connecting", refused), receiving("error", refused)]
    found = [changes(Snapshot(1.0, (a,)), Snapshot(2.0, (b,))) for a, b in itertools.pairwise(steps)]
    assert found == [
        [
            ("error", f"channel live IO thread: {refused}"),
            ("note", "channel live IO thread: running → connecting"),
        ],
        [("error", "channel live IO thread: connecting → error")],  # the same error is not repeated
    ]
    # a channel that gains a receiver (CHANGE … SOURCE_USER) says so; one without never mentions it
    assert changes(Snapshot(1.0, (channel("live"),)), Snapshot(2.0, (steps[0],))) == [
        ("note", "channel live IO thread: none → running")
    ]


# -- the statements keys send ---------------------------------------------------------------------


def test_the_statements_keys_send_parse_as_the_engine_reads_them():
    assert for_channel("it's") == " FOR CHANNEL 'it''s'"
    for statement, kind, thread in (
        (start_thread("IO_THREAD", "it's"), StartReplica, "IO_THREAD"),
        (stop_thread("SQL_THREAD", "it's"), StopReplica, "SQL_THREAD"),
    ):
        command = parse_statement(statement)
        assert isinstance(command, kind) and command.threads == (thread,) and command.channel == "it's"
    assert parse_statement(recover("it's")).channel == "it's"
    start = parse_statement(recover("bank"))
    assert isinstance(start, StartReplica) and start.until.kind == "SQL_AFTER_MTS_GAPS"
    events = parse_statement(relaylog_events("m2", "relay-bin-m2.000002", 17419, 51))
    assert isinstance(events, ShowRelaylogEvents)
    assert (events.log_name, events.pos, events.limit, events.channel) == (
        "relay-bin-m2.000002",
        17419,
        51,
        "m2",
    )


def test_only_reset_counts_as_destructive():
    assert is_destructive("  reset replica for channel 'm1'") and is_destructive("RESET;")
    assert (
        not is_destructive("RESETX") and not is_destructive("SHOW REPLICA STATUS") and not is_destructive("")
    )
