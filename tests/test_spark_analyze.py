"""`relaydeck analyze`: its WRITESET dependencies are the coordinator's, and what it reports holds."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from console.cli import analyze as analyze_cli
from engine.applier.executor import is_structural
from engine.binlog.columns import decode_rows_event
from engine.binlog.events import RowsEvent, TableMap
from engine.errors import RelaydeckError
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.replay import ChannelSpec, Replay
from engine.scheduling.rowkeys import transaction_writeset
from engine.scheduling.writeset import DEFAULT_HISTORY_SIZE, WritesetHistory, writeset_hash
from engine.slave.database import Slave
from engine.spark.analyze import (
    CatalogTimeline,
    analyze,
    critical_path,
    database_critical_path,
    read_channel,
    scan_window,
    writeset_dependencies,
)
from engine.transactions import Transaction, assemble

from .spark_fixture import FIXTURE_INDEX, coordinator_dependencies, generated_index, spark  # noqa: F401

# Small enough that the fixture's and the generated logs' histories overflow many times.
SMALL_HISTORY = 40


def _transactions(index) -> list[Transaction]:
    return [t for t in assemble(stream_events(read_index(index))) if isinstance(t, Transaction)]


def _history_dependencies(index, catalog, history_size: int) -> list[int]:
    """The coordinator's WRITESET loop (ParallelApplier._schedule) over a log whose DDL all comes
    first, so that the catalog the log leaves behind is the one every transaction is hashed with."""
    history = WritesetHistory(history_size)
    afters = []
    for ordinal, txn in enumerate(_transactions(index), start=1):
        alone = is_structural(txn)
        hashes = None if alone else transaction_writeset(txn, catalog)[0]
        after = history.dependency(ordinal, hashes, commit_parent=ordinal - 1)
        afters.append(ordinal - 1 if alone else after)
    return afters


def _replayed_catalog(index, tmp_path):
    Replay(tmp_path / "slave.duckdb", None, [ChannelSpec("", index)]).run()
    slave = Slave(tmp_path / "slave.duckdb")
    try:
        return slave.catalog
    finally:
        slave.close()


@pytest.fixture(scope="module")
def fixture_analysis(spark):  # noqa: F811
    channels = [("m1", FIXTURE_INDEX["m1"]), ("m2", FIXTURE_INDEX["m2"])]
    return analyze(spark, channels, workers=(1, 2, 4, 8, 16), top=5)


def test_fixture_dependencies_equal_the_thread_coordinators(fixture_analysis):
    for channel in ("m1", "m2"):
        want = coordinator_dependencies(FIXTURE_INDEX[channel], DEFAULT_HISTORY_SIZE)
        assert fixture_analysis.schedule[channel] == list(want), channel
    # m1 alters tables mid-log: its transactions were hashed with the catalog of their time
    assert fixture_analysis.channels["m1"]["catalog_versions"] > 5
    assert fixture_analysis.channels["m1"]["ddl_errors"] == []


def test_fixture_dependencies_with_window_resets_equal_the_thread_coordinators(spark):  # noqa: F811
    index = FIXTURE_INDEX["m1"]
    want = coordinator_dependencies(index, SMALL_HISTORY)
    # the small history changes the answer: the comparison covers the window resets
    assert want != coordinator_dependencies(index, DEFAULT_HISTORY_SIZE)
    assert writeset_dependencies(spark, index, history_size=SMALL_HISTORY) == list(want)


def test_mysql_log_with_ddl_mid_way_depends_as_the_thread_coordinator(spark):  # noqa: F811
    # MySQL 8.0 format, tables created, altered and dropped between the row changes
    index = generated_index("mixed")
    assert writeset_dependencies(spark, index) == list(coordinator_dependencies(index, DEFAULT_HISTORY_SIZE))


@pytest.fixture(scope="module")
def generated_catalogs(tmp_path_factory):
    """The catalog each generated log leaves in a slave (their DDL all comes first)."""
    return {w: _replayed_catalog(generated_index(w), tmp_path_factory.mktemp(w)) for w in ("oltp", "hot")}


@pytest.mark.parametrize("history_size", [DEFAULT_HISTORY_SIZE, SMALL_HISTORY])
def test_generated_dependencies_equal_the_coordinators_loop(spark, generated_catalogs, history_size):  # noqa: F811
    workloads = ("oltp", "hot")
    want = {
        w: _history_dependencies(generated_index(w), generated_catalogs[w], history_size) for w in workloads
    }
    analysis = analyze(spark, [(w, generated_index(w)) for w in workloads], history_size=history_size)
    for workload in workloads:
        assert analysis.schedule[workload] == want[workload], workload
    if history_size == SMALL_HISTORY:
        assert "overflow_rescan_s" in analysis.timings  # the exact rescan of overflowing windows ran
        unbounded = _history_dependencies(generated_index("oltp"), generated_catalogs["oltp"], 10**9)
        assert want["oltp"] != unbounded
    else:
        # hot rows chain the transactions; random rows hardly ever meet
        oltp, hot = (analysis.channels[w]["schedulers"]["writeset"]["parallelism"] for w in workloads)
        assert hot < oltp


def test_profile_of_the_fixture(fixture_analysis):
    document = json.loads(json.dumps(fixture_analysis.to_dict()))  # JSON-serialisable as it is
    m1, m2 = document["channels"]["m1"], document["channels"]["m2"]
    assert (m1["transactions"], m2["transactions"]) == (2145, 303)  # the fixture's README
    assert m1["run_alone"] == 25 and m2["run_alone"] == 4  # its DDL-flagged transactions
    for channel in (m1, m2):
        total = channel["total_weight"]
        for kind, profile in channel["schedulers"].items():
            assert 0 < profile["critical_path"] <= total, kind
            assert profile["ideal_speedup"]["1"] == 1.0
            assert profile["ideal_speedup"]["16"] == round(min(16, total / profile["critical_path"]), 3)
    # MariaDB logged hardly any group commits: the logical clock finds almost nothing
    assert m2["schedulers"]["logical_clock"]["critical_path"] == m2["total_weight"]
    assert m1["schedulers"]["writeset"]["parallelism"] > m1["schedulers"]["logical_clock"]["parallelism"]
    # channel m2 writes only the shop database
    assert {t["table"].split(".")[0] for t in m2["hot_tables"]} == {"shop"}
    counts = [t["transactions"] for t in m1["hot_tables"]]
    assert counts == sorted(counts, reverse=True) and len(counts) == 5


def test_hot_keys_are_named_and_counted(fixture_analysis):
    hot = fixture_analysis.channels["m1"]["hot_keys"]
    assert len(hot) == 5
    assert [k["transactions"] for k in hot] == sorted((k["transactions"] for k in hot), reverse=True)
    top = hot[0]
    assert top["key"] is not None and top["key"].endswith(".PRIMARY")
    # Independently: some row of that table has a primary key that hashes to it, and exactly
    # `transactions` transactions write a row with that key.
    schema, table, _ = top["key"].split(".")
    wanted = int(top["hash"], 16)
    writers = set()
    for ordinal, txn in enumerate(_transactions(FIXTURE_INDEX["m1"]), start=1):
        maps = {}
        for logged in txn.events:
            event = logged.event
            if isinstance(event, TableMap):
                maps[event.table_id] = event
            elif isinstance(event, RowsEvent) and (
                maps[event.table_id].schema,
                maps[event.table_id].table,
            ) == (
                schema,
                table,
            ):
                images = decode_rows_event(event, maps[event.table_id])
                for image in (images.before, images.after):
                    if image and any(
                        writeset_hash(schema, table, "PRIMARY", (v,)) == wanted for v in image[0]
                    ):
                        writers.add(ordinal)
    assert len(writers) == top["transactions"] and min(writers) == top["first_ordinal"]


def test_catalog_timeline_starts_from_a_given_catalog_and_follows_its_ddl():
    catalog = read_channel("m2", FIXTURE_INDEX["m2"]).catalogs[-1]  # shop: keys, JSON, BLOBs
    assert len(catalog) >= 3
    timeline = CatalogTimeline(catalog)
    try:
        assert timeline.versions == [catalog]
        # m1's first definitions on top of it: CREATE DATABASE sbtest1..3, then its first table
        structural = [t for t in _transactions(FIXTURE_INDEX["m1"]) if is_structural(t)][:4]
        for txn in structural:
            timeline.apply(txn)
        assert timeline.errors == [] and len(timeline.versions) == 5
        last = timeline.versions[-1]
        assert last.databases == catalog.databases | {"sbtest1", "sbtest2", "sbtest3"}
        new_tables = set(last) - set(catalog)
        assert len(new_tables) == 1 and next(iter(new_tables))[0].startswith("sbtest")
        assert all(last[key] == catalog[key] for key in catalog)
    finally:
        timeline.close()


def test_critical_paths_by_hand():
    # weights 2, 3, 4, 1: 2 after 1 (finishes at 5), 3 independent (4), 4 after 3 waits for every
    # ordinal up to 3, so for 2 as well: 5 + 1
    assert critical_path([0, 1, 0, 3], [2, 3, 4, 1]) == 6
    assert critical_path([0, 0, 0, 3], [2, 3, 4, 1]) == 5
    assert critical_path([0, 0, 0, 0], [2, 3, 4, 1]) == 4
    assert critical_path([0, 1, 2, 3], [1, 1, 1, 1]) == 4
    dbs = [frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"}), frozenset({"c"}), None]
    # a: 2, b: 3, a+b: 3 + 4 = 7, c: 1 -> longest 7; then None runs alone: 7 + 5
    assert database_critical_path(dbs, [False] * 5, [2, 3, 4, 1, 5]) == 12
    assert database_critical_path(dbs[:4], [False, False, False, True], [2, 3, 4, 1]) == 8


def test_scan_window_is_the_bounded_history():
    import pandas as pd

    # A window from 0, history of 3 keys: ordinals 1-3 write keys {a,b}, {c}, {a,d}.
    # 1: 0 held + 2 <= 3, holds a,b; 2: 2 + 1 <= 3, holds c; 3: 3 + 2 > 3 -> judged (a was by 1),
    # then a new window from 3; 4 writes {c}: its writer 2 is before the window: depends on 3.
    frame = pd.DataFrame(
        {
            "stream": ["s"] * 4,
            "window_start": [0] * 4,
            "ordinal": [1, 2, 3, 4],
            "key_count": [2, 1, 2, 1],
            "previous": [[-1, -1], [-1], [1, -1], [2]],
        }
    )
    history = WritesetHistory(3)
    want = [history.dependency(o, keys) for o, keys in enumerate([["a", "b"], ["c"], ["a", "d"], ["c"]], 1)]
    assert list(scan_window(frame, 3)["after"]) == want == [0, 0, 1, 3]


def _run_cli(argv: list[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="relaydeck")
    analyze_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    out = io.StringIO()
    return args.func(args, out), out.getvalue()


def test_cli_json_and_schedule_file(spark, tmp_path):  # noqa: F811
    schedule = tmp_path / "schedule.json"
    argv = ["analyze", "--channel", f"m2={FIXTURE_INDEX['m2']}", "--json", "--workers", "4,1"]
    code, output = _run_cli([*argv, "--top", "3", "--schedule-out", str(schedule)])
    assert code == 0
    document = json.loads(output)
    assert document["workers"] == [1, 4]
    profile = document["channels"]["m2"]
    assert list(profile["schedulers"]["writeset"]["ideal_speedup"]) == ["1", "4"]
    assert len(profile["hot_keys"]) == 3
    written = json.loads(schedule.read_text())
    assert written["parallel_type"] == "writeset" and written["history_size"] == DEFAULT_HISTORY_SIZE
    entry = written["channels"]["m2"]
    assert entry["transactions"] == 303
    assert entry["after"] == list(coordinator_dependencies(FIXTURE_INDEX["m2"], DEFAULT_HISTORY_SIZE))
    # the text report is made from the same document
    text = io.StringIO()
    analyze_cli.write_report(document, text)
    report = text.getvalue()
    assert "channel 'm2': 303 transactions" in report
    assert "writeset" in report and "hottest keys" in report and "shop." in report


def test_cli_reads_the_indexes_before_starting_spark(monkeypatch, tmp_path):
    import engine.spark.session as session

    monkeypatch.setattr(session, "spark_session", lambda *a: pytest.fail("Spark started"))
    with pytest.raises(RelaydeckError, match="index file does not exist"):
        _run_cli(["analyze", "--channel", f"x={tmp_path / 'missing.index'}"])
    with pytest.raises(RelaydeckError, match="named twice"):
        _run_cli(
            ["analyze", "--channel", f"a={FIXTURE_INDEX['m1']}", "--channel", f"A={FIXTURE_INDEX['m2']}"]
        )


@pytest.mark.parametrize("text", ["0,2", "two", ""])
def test_cli_refuses_bad_worker_counts(text):
    with pytest.raises(argparse.ArgumentTypeError):
        analyze_cli.worker_counts(text)
