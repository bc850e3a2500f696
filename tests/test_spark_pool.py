"""The Spark pool: the relay log prepared in Spark tasks gives exactly the tables the other
executors give (and the source had)."""

from __future__ import annotations

import pytest

from engine.applier.vocabulary import ParallelOptions
from engine.generate import generate
from engine.replay import ChannelRun, ChannelSpec, RunSettings
from engine.slave.database import Slave

from .spark_fixture import spark  # noqa: F401
from .test_replay_oracle import assert_tables_equal, expected_tables
from .test_replica_server import M1, M2


def run_channel(slave_path, spec: ChannelSpec, options: ParallelOptions):  # type: ignore[no-untyped-def]
    slave = Slave(slave_path)
    try:
        run = ChannelRun(slave, None, spec, RunSettings(parallel=options))
        run.start()
        run.join()
    finally:
        slave.close()
    assert run.outcome.error is None, run.outcome.error
    return run


@pytest.mark.parametrize("kind", ["writeset", "logical_clock"])
def test_the_captured_channels_through_the_spark_pool(spark, tmp_path, kind):  # noqa: F811
    slave_path = tmp_path / "slave.duckdb"
    options = ParallelOptions(workers=2, parallel_type=kind, pool="spark")
    prepared = 0
    for name, index in (("m1", M1), ("m2", M2)):
        prepared += run_channel(slave_path, ChannelSpec(name, index), options).outcome.stats.prepared_runs
    assert prepared > 0  # what was prepared was applied as prepared
    assert_tables_equal(slave_path, expected_tables())


def test_a_generated_workload_is_identical_with_threads_and_spark(spark, tmp_path):  # noqa: F811
    summary = generate("mixed", 4, tmp_path / "gen", size_mb=1.5)
    spec = ChannelSpec("", summary.index_file)
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "gen" / "expected").glob("*/*.csv"))}
    run_channel(tmp_path / "threads.duckdb", spec, ParallelOptions(workers=3, pool="threads"))
    run_channel(tmp_path / "spark.duckdb", spec, ParallelOptions(workers=3, pool="spark"))
    assert_tables_equal(tmp_path / "threads.duckdb", expected)
    assert_tables_equal(tmp_path / "spark.duckdb", expected)


def test_a_replay_takes_analyzes_schedule(spark, tmp_path, monkeypatch):  # noqa: F811
    import io

    import engine.applier.parallel_schedule as parallel
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
