"""`relaydeck events` never writes a log's terminal escape sequences or hidden characters raw:
statements, names and values show them escaped (\\x1b, \\u202e) in text, as \\u escapes in JSON,
and the JSON still holds the exact values."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from console.cli import main
from engine.binlog.constants import EventType
from engine.render import json_visible, quoted, visible

from .relay_logs import RelayLogBuilder, table_of

CLEAR_SCREEN = "\x1b[2J"
SET_TITLE = "\x1b]0;pwned\x07"
CSI_8BIT = "\x9b31m"
RTL_OVERRIDE = "\u202e"
ZERO_WIDTH = "\u200b"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u200b", "\x7f")

HOSTILE_DB = f"db{CLEAR_SCREEN}"
HOSTILE_TABLE = f"t{RTL_OVERRIDE}xt"
HOSTILE_COLUMN = f"c{CSI_8BIT}"
HOSTILE_VALUES = (f"title{SET_TITLE}", f"abc{RTL_OVERRIDE}fed{ZERO_WIDTH}", "del\x7fhere\ttab")
STATEMENT = f"INSERT INTO t VALUES ('{CLEAR_SCREEN}red\x1b[31m', '{RTL_OVERRIDE}')"


def write_hostile_relay_log(folder: Path) -> Path:
    """A statement with escape sequences, and a rows event whose names and values hold them."""
    log = RelayLogBuilder(folder, source=9)
    log.statement(STATEMENT, "shop")
    table = table_of(HOSTILE_DB, HOSTILE_TABLE, HOSTILE_COLUMN, "VARCHAR(64)")
    log.rows(table, EventType.WRITE_ROWS, list(enumerate(HOSTILE_VALUES, start=1)))
    return log.close()


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory) -> Path:
    return write_hostile_relay_log(tmp_path_factory.mktemp("hostile"))


def events_output(*argv: str) -> str:
    out = io.StringIO()
    assert main(["events", *argv], out=out) == 0
    return out.getvalue()


def test_events_shows_escape_sequences_in_statements_escaped(hostile_index):
    text = events_output(str(hostile_index))
    assert not any(c in text for c in RAW)
    assert "INSERT INTO t VALUES ('\\x1b[2Jred\\x1b[31m', '\\u202e')" in text


def test_events_rows_shows_hostile_names_and_values_escaped(hostile_index):
    text = events_output("--rows", str(hostile_index))
    assert not any(c in text for c in RAW)
    assert "### INSERT `db\\x1b[2J`.`t\\u202ext` " in text
    assert "(id=1, c\\x9b31m='title\\x1b]0;pwned\\x07')" in text
    assert "(id=2, c\\x9b31m='abc\\u202efed\\u200b')" in text
    assert "(id=3, c\\x9b31m='del\\x7fhere\\x09tab')" in text  # a tab as mysqlbinlog -v writes it


def test_events_json_escapes_hidden_characters_and_keeps_the_values(hostile_index):
    text = events_output("--json", "--rows", str(hostile_index))
    assert not any(c in text for c in RAW)
    records = [json.loads(line) for line in text.splitlines()]
    assert any(r["info"] == f"use `shop`; {STATEMENT}" for r in records)
    rows = next(r["rows"] for r in records if r.get("rows"))
    assert [row["after"][HOSTILE_COLUMN] for row in rows] == list(HOSTILE_VALUES)


def test_a_backslash_in_a_value_stays_distinct_from_an_escaped_character():
    assert quoted("\\x1b") == "'\\\\x1b'"
    assert quoted("\x1b") == "'\\x1b'"


@pytest.mark.parametrize("text", ["plain", "é日本 nbsp\xa0", "", "tab\t", "\U000e0001tag", "\x85\u2066"])
def test_json_visible_is_the_same_json_value(text):
    document = json.dumps({"v": text}, ensure_ascii=False)
    shown = json_visible(document)
    assert json.loads(shown) == {"v": text}
    assert visible(text) == text or not any(c in shown for c in "\x85\u2066\U000e0001")


def test_printable_text_is_unchanged():
    for text in ("SELECT 'a' FROM t", "réplica 主库", "nbsp\xa0"):
        assert visible(text) == text
        assert json_visible(json.dumps(text, ensure_ascii=False)) == json.dumps(text, ensure_ascii=False)


def test_sql_show_relaylog_events_shows_escape_sequences_escaped(hostile_index, tmp_path):
    base = ["sql", "--repository", str(tmp_path / "r.sqlite"), "--slave", str(tmp_path / "s.duckdb")]
    out = io.StringIO()
    change = f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{hostile_index}' FOR CHANNEL 'c1'"
    assert main([*base, change], out=out) == 0
    for extra in ([], ["--json"]):
        out = io.StringIO()
        assert (
            main([*base, *extra, "SHOW RELAYLOG EVENTS IN 'relay-bin.000002' FOR CHANNEL 'c1'"], out=out) == 0
        )
        text = out.getvalue()
        assert "INSERT INTO t VALUES" in text and not any(c in text for c in RAW)


def test_the_analyze_report_shows_keys_and_tables_from_the_log_escaped():
    from console.cli.analyze import write_report

    document = {
        "workers": [1],
        "seconds": {},
        "channels": {
            "m1": {
                "transactions": 2,
                "run_alone": 0,
                "skipped_repeated_gtids": 0,
                "total_weight": 4,
                "schedulers": {
                    "writeset": {"critical_path": 2, "parallelism": 1.0, "ideal_speedup": {"1": 1.0}}
                },
                "hot_keys": [
                    {"transactions": 2, "waits": 1, "key": f"shop.t PRIMARY ('{SET_TITLE}')", "hash": 7}
                ],
                "hot_tables": [
                    {"transactions": 2, "rows_events": 2, "table": f"{HOSTILE_DB}.{HOSTILE_TABLE}"}
                ],
                "ddl_errors": [f"ALTER TABLE {HOSTILE_TABLE}: unknown"],
                "stopped_by": f"end of {RTL_OVERRIDE}log",
            }
        },
    }
    out = io.StringIO()
    write_report(document, out)
    text = out.getvalue()
    assert not any(c in text for c in RAW)
    assert "shop.t PRIMARY ('\\x1b]0;pwned\\x07')" in text and "db\\x1b[2J.t\\u202ext" in text
