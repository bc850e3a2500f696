"""The bundled example (generated once, fed at a steady pace), and how the console finds its replica:
in-process from a configuration, or attached to the one already serving that repository."""

from __future__ import annotations

import asyncio
import io
import time
from dataclasses import replace

import pytest

from console.app import ConsoleApp
from console.cli import main
from console.session import open_config, open_example
from engine.relaylog.index import read_index
from engine.replica import example
from engine.replica.control import RemoteReplica, connect
from engine.replica.server import ReplicaServer

from .conftest import MULTISOURCE
from .test_console_pilot import until

M2 = MULTISOURCE / "relay" / "relay-bin-m2.index"


@pytest.fixture
def small_example(monkeypatch):
    """The example's channels with small workloads, and a count of what was generated."""
    monkeypatch.setattr(
        example, "EXAMPLE_CHANNELS", tuple(replace(c, size_mb=0.3) for c in example.EXAMPLE_CHANNELS)
    )
    generated: list[str] = []
    real = example.generate

    def counting(workload, *args, **kwargs):  # type: ignore[no-untyped-def]
        generated.append(workload)
        return real(workload, *args, **kwargs)

    monkeypatch.setattr(example, "generate", counting)
    return generated


def test_the_example_is_generated_once_and_every_run_starts_from_an_empty_slave(tmp_path, small_example):
    first = example.prepare_example(tmp_path)
    assert sorted(small_example) == ["multidb", "oltp"]
    assert [c.channel for c in first.config.channels] == ["oltp", "bank", "m1", "m2"]
    indexes = {c.channel: dict(c.options)["RELAY_LOG_INDEX"].text for c in first.config.channels}
    assert indexes["oltp"].startswith(str(tmp_path / "live" / "oltp"))  # followed while it grows
    assert indexes["m2"] == str(M2)
    (tmp_path / example.SLAVE).write_text("a slave of a previous run")
    (tmp_path / "live" / "oltp").mkdir(parents=True)
    (tmp_path / "live" / "oltp" / "relay-bin.000001").write_text("half fed")
    example.prepare_example(tmp_path)
    assert len(small_example) == 2  # kept from the first run
    assert not (tmp_path / example.SLAVE).exists() and not (tmp_path / "live").exists()


def test_the_feeder_appends_at_a_steady_pace_until_the_copies_are_whole(tmp_path, small_example):
    prepared = example.prepare_example(tmp_path, feed_seconds=2.0)
    feeder = prepared.feeder
    feeder.start()
    time.sleep(0.4)
    assert 0 < feeder.fed_bytes < feeder.total_bytes  # paced, not copied at once
    deadline = time.monotonic() + 30
    while not feeder.done and time.monotonic() < deadline:
        time.sleep(0.1)
    feeder.stop()
    assert feeder.fed_bytes == feeder.total_bytes
    for channel in ("oltp", "bank"):
        source = read_index(
            next((tmp_path / "generated").glob(f"*{'multidb' if channel == 'bank' else 'oltp'}*/*.index"))
        )
        live = read_index(next((tmp_path / "live" / channel).glob("*.index")))
        assert [p.name for p in live.files] == [p.name for p in source.files]
        assert all(a.read_bytes() == b.read_bytes() for a, b in zip(live.files, source.files, strict=True))


def test_the_console_s_feed_goes_on_long_after_its_busy_start():
    """Half the bytes in the first FEED_SECONDS, then a trickle: still feeding half an hour in."""
    feeder = example.RelayLogFeeder([], example.FEED_SECONDS, trickle_seconds=example.TRICKLE_SECONDS)
    busy_end = feeder.share_at(example.FEED_SECONDS)
    assert busy_end == pytest.approx(example.FIRST_SHARE)
    shares = [
        feeder.share_at(t) for t in range(0, int(example.FEED_SECONDS + example.TRICKLE_SECONDS) + 60, 30)
    ]
    assert shares == sorted(shares) and shares[-1] == 1.0
    later = example.FEED_SECONDS + example.TRICKLE_SECONDS / 2
    assert busy_end < feeder.share_at(later) < feeder.share_at(later + 60) < 1.0
    # the busy start feeds faster than the trickle
    assert feeder.share_at(10) / 10 > (feeder.share_at(later + 10) - feeder.share_at(later)) / 10
    whole = example.RelayLogFeeder([], 30.0)
    assert whole.share_at(15) == 0.5 and whole.share_at(30) == 1.0


def test_a_stopped_feeder_writes_nothing_more(tmp_path, small_example):
    feeder = example.prepare_example(tmp_path, feed_seconds=30.0).feeder
    feeder.start()
    time.sleep(0.3)
    feeder.stop()
    fed = feeder.fed_bytes
    time.sleep(0.3)
    assert 0 < fed == feeder.fed_bytes < feeder.total_bytes


def test_with_no_configuration_the_console_runs_the_example_and_its_channels_move(tmp_path, small_example):
    session = open_example(tmp_path / "work", out=io.StringIO(), feed_seconds=3.0)

    async def scenario() -> None:
        app = ConsoleApp(session.replica, source=session.description)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.channel_names() == ["bank", "m1", "m2", "oltp"], "four channels")

            def moved() -> bool:
                views = {c.name: c for c in app.snapshot.channels}
                return all(
                    views[n].transactions > 0 and views[n].state == "running" for n in ("bank", "oltp")
                )

            await until(pilot, moved, "the generated channels applied what was fed")

    try:
        assert isinstance(session.replica, ReplicaServer)
        assert connect(session.replica.repository.path) is not None  # others can attach meanwhile
        asyncio.run(scenario())
    finally:
        session.close()


def test_a_configuration_runs_in_process_unless_a_server_already_serves_its_repository(tmp_path):
    config = tmp_path / "replica.toml"
    config.write_text(
        'slave = "data/slave.duckdb"\nrepository = "data/repository.sqlite"\n'
        f'[channels.m2]\nrelay_log_index = "{M2}"\n'
    )
    serving = open_config(config)
    try:
        assert isinstance(serving.replica, ReplicaServer)
        assert serving.replica.run_of("m2") is not None  # configured and STARTed as serve does
        attached = open_config(config)
        try:
            assert isinstance(attached.replica, RemoteReplica)
            assert "attached" in attached.description
            assert [c.name for c in attached.replica.snapshot().channels] == ["", "m2"]
        finally:
            attached.close()
    finally:
        serving.close()
    assert connect(tmp_path / "data" / "repository.sqlite") is None  # closing stopped serving


def test_console_arguments_are_checked_before_anything_starts(tmp_path, capsys):
    assert main(["console", "--lag-warn", "40", "--lag-crit", "30"]) == 1
    assert "--lag-warn/--lag-crit" in capsys.readouterr().err
    assert main(["console", "--repository", str(tmp_path / "nope.sqlite")]) == 1
    assert "repository does not exist" in capsys.readouterr().err
