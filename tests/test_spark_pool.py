"""The Spark worker pool gives exactly the tables the thread pool gives (and the source had)."""

from __future__ import annotations

import threading

import pytest

from engine.applier.parallel import ParallelOptions
from engine.errors import RelaydeckError
from engine.generate import generate
from engine.relaylog.index import read_index
from engine.relaylog.stream import stream_events
from engine.replay import ChannelRun, ChannelSpec, RunSettings, pool_preparer
from engine.slave.database import Slave
from engine.slave.schema import Catalog
from engine.spark.decode import LocalRowDecoder, SparkRowDecoder, StartingSparkDecoder
from engine.transactions import Transaction, TransactionAssembler

from .spark_fixture import spark  # noqa: F401
from .test_replay_oracle import assert_tables_equal, expected_tables
from .test_replica_server import M1, M2


def run_channel(slave_path, spec: ChannelSpec, options: ParallelOptions, preparer):  # type: ignore[no-untyped-def]
    slave = Slave(slave_path)
    try:
        run = ChannelRun(slave, None, spec, RunSettings(parallel=options, preparer=preparer))
        run.start()
        run.join()
    finally:
        slave.close()
    assert run.outcome.error is None, run.outcome.error
    return run


class CountingDecoder(SparkRowDecoder):
    """The Spark decoder, counting what it was given (to know the pool was really used)."""

    prepared = 0

    def prepare(self, transactions, catalog):  # type: ignore[no-untyped-def]
        CountingDecoder.prepared += len(transactions)
        return super().prepare(transactions, catalog)


@pytest.mark.parametrize("kind", ["writeset", "logical_clock"])
def test_the_captured_channels_through_the_spark_pool(spark, tmp_path, kind):  # noqa: F811
    slave_path = tmp_path / "slave.duckdb"
    CountingDecoder.prepared = 0
    options = ParallelOptions(workers=2, parallel_type=kind, pool="spark")
    for name, index in (("m1", M1), ("m2", M2)):
        run_channel(slave_path, ChannelSpec(name, index), options, CountingDecoder(spark))
    assert CountingDecoder.prepared > 2000
    assert_tables_equal(slave_path, expected_tables())


def test_a_generated_workload_is_identical_with_threads_and_spark(spark, tmp_path):  # noqa: F811
    summary = generate("mixed", 2, tmp_path / "gen", size_mb=2)
    spec = ChannelSpec("", summary.index_file)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "gen" / "expected").glob("*/*.csv"))}
    threads = ParallelOptions(workers=3)
    run_channel(tmp_path / "threads.duckdb", spec, threads, None)
    run_channel(
        tmp_path / "spark.duckdb", spec, ParallelOptions(workers=3, pool="spark"), SparkRowDecoder(spark)
    )
    assert_tables_equal(tmp_path / "threads.duckdb", expected)
    assert_tables_equal(tmp_path / "spark.duckdb", expected)


def test_the_pool_option_builds_the_spark_decoder_only_for_spark(spark):  # noqa: F811
    assert pool_preparer(ParallelOptions(workers=2)) is None
    preparer = pool_preparer(ParallelOptions(workers=2, pool="spark"))
    assert isinstance(preparer, StartingSparkDecoder)
    assert preparer.wait_started(120)
    assert isinstance(preparer.spark, SparkRowDecoder)


def _capture_transactions(count: int) -> list[Transaction]:
    assembler = TransactionAssembler()
    found: list[Transaction] = []
    for logged in stream_events(read_index(M1)):
        found.extend(t for t in assembler.feed(logged) if isinstance(t, Transaction))
        if len(found) >= count:
            break
    return found[:count]


def test_until_spark_has_started_the_transactions_are_prepared_here():
    # Spark's start takes seconds: the applier does not wait for it (no JVM is started here)
    release = threading.Event()
    started = threading.Event()

    class Session:  # stands for the SparkSession, which the decoder only keeps until it prepares
        pass

    def start():  # type: ignore[no-untyped-def]
        started.set()
        release.wait(30)
        return Session()

    preparer = StartingSparkDecoder(start)
    assert started.wait(30)
    transactions = _capture_transactions(60)
    catalog = Catalog()
    assert preparer.prepare(transactions, catalog) == LocalRowDecoder().prepare(transactions, catalog)
    assert preparer.spark is None
    release.set()
    assert preparer.wait_started(30)
    assert isinstance(preparer.spark, SparkRowDecoder)


def test_an_error_starting_spark_is_raised_by_the_next_prepare():
    def start():  # type: ignore[no-untyped-def]
        raise RelaydeckError("Spark could not start")

    preparer = StartingSparkDecoder(start)
    assert preparer.wait_started(30)
    with pytest.raises(RelaydeckError, match="could not start"):
        preparer.prepare([], Catalog())


def test_a_replay_takes_analyzes_schedule(spark, tmp_path, monkeypatch):  # noqa: F811
    import io

    import engine.applier.parallel as parallel
    from console.cli import main

    schedule = tmp_path / "schedule.json"
    out = io.StringIO()
    assert main(["analyze", "--channel", f"m2={M2}", "--schedule-out", str(schedule)], out=out) == 0

    def no_writesets(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the coordinator computed a writeset although it was given a schedule")

    monkeypatch.setattr(parallel, "transaction_writeset", no_writesets)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    argv = ["replay", "--slave", str(slave), "--repository", str(repo), "--channel", f"m2={M2}"]
    assert main([*argv, "--workers", "2", "--schedule", str(schedule)], out=io.StringIO()) == 0
    expected = {k: p for k, p in expected_tables().items() if k[0] == "shop"}
    assert_tables_equal(slave, expected)
    # from a slave that already holds the channel's transactions, a schedule no longer fits
    assert main([*argv, "--workers", "2", "--schedule", str(schedule)], out=io.StringIO()) == 1
