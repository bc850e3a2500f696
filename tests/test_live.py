"""Channels that keep running while their relay logs grow, and `relaydeck serve` as a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.generate import generate
from engine.relaylog.index import read_index
from engine.replica.server import ReplicaServer

from .conftest import MULTISOURCE, ROOT
from .test_replay_oracle import assert_tables_equal, expected_tables

RELAY = MULTISOURCE / "relay"
M1_DBS = {"sbtest1", "sbtest2", "sbtest3"}
CHUNK = 7919  # prime: chunks end inside events and inside event headers


def feed(source_index: Path, target: Path, pause: float = 0.001, stop: threading.Event | None = None) -> None:
    """Copy a relay log the way a receiver writes it: appended in chunks, each file entered in
    the index once its first bytes are written."""
    target.mkdir(parents=True, exist_ok=True)
    index = target / source_index.name
    for path in read_index(source_index).files:
        data = path.read_bytes()
        out = target / path.name
        with open(out, "wb") as fh:
            for start in range(0, len(data), CHUNK):
                fh.write(data[start : start + CHUNK])
                fh.flush()
                if start == 0:
                    with open(index, "a") as ix:
                        ix.write(f"./{path.name}\n")
                if stop is not None and stop.is_set():
                    return
                time.sleep(pause)


def wait_for_end(replica: ReplicaServer, channel: str, index: Path, timeout: float) -> None:
    """Until the channel has applied through the last byte of the last file."""
    deadline = time.monotonic() + timeout
    last = read_index(index).files[-1]
    while time.monotonic() < deadline:
        run = replica.run_of(channel)
        assert run is not None and run.outcome.error is None, run.outcome.error if run else None
        progress = replica.slave.progress(channel)
        if (
            progress
            and progress.relay_log_file == last.name
            and progress.relay_log_pos == last.stat().st_size
        ):
            return
        time.sleep(0.1)
    pytest.fail(f"channel {channel!r} did not reach the end of {last}")


@pytest.mark.parametrize("workers", [0, 3])
def test_a_channel_fed_while_it_runs_ends_with_exactly_the_expected_tables(tmp_path, workers):
    live = tmp_path / "live"
    live.mkdir()
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        replica.execute(f"SET GLOBAL replica_parallel_workers = {workers}")
        index = live / "relay-bin-m1.index"
        # started before the relay log exists: it waits for the index to appear
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{index}' FOR CHANNEL 'm1'")
        replica.execute("START REPLICA FOR CHANNEL 'm1'")
        feeder = threading.Thread(target=feed, args=(RELAY / "relay-bin-m1.index", live))
        feeder.start()
        feeder.join()
        wait_for_end(replica, "m1", index, timeout=240)
        assert replica.running("m1")  # caught up, still following
        replica.execute("STOP REPLICA FOR CHANNEL 'm1'")
        assert replica.run_of("m1").outcome.stats.stopped_by == "STOP"
    finally:
        replica.close()
    expected = {k: p for k, p in expected_tables().items() if k[0] in M1_DBS}
    assert_tables_equal(tmp_path / "slave.duckdb", expected, schemas=M1_DBS)


def test_a_torn_tail_is_waited_for_not_reported(tmp_path):
    """The last event cut in half stays 'not arrived yet' for as long as it takes."""
    live = tmp_path / "live"
    live.mkdir()
    source = read_index(RELAY / "relay-bin-m2.index").files
    for path in source[:-1]:
        (live / path.name).write_bytes(path.read_bytes())
    last = source[-1].read_bytes()
    (live / source[-1].name).write_bytes(last[: len(last) - 7])
    (live / "relay-bin-m2.index").write_text("".join(f"./{p.name}\n" for p in source))
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=True)
    try:
        replica.execute(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{live / 'relay-bin-m2.index'}'")
        replica.execute("START REPLICA")
        time.sleep(3)
        assert replica.running("")
        (status,) = replica.status("")
        assert status.last_error_number == 0
        with open(live / source[-1].name, "ab") as fh:
            fh.write(last[len(last) - 7 :])
        wait_for_end(replica, "", live / "relay-bin-m2.index", timeout=120)
    finally:
        replica.close()
    expected = {k: p for k, p in expected_tables().items() if k[0] == "shop"}
    assert_tables_equal(tmp_path / "slave.duckdb", expected, schemas={"shop"})


# -- relaydeck serve ----------------------------------------------------------------------------


def relaydeck(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_serve(config: Path, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "serve", str(config), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()  # type: ignore[union-attr]
    assert line.startswith("relaydeck serve: pid"), line + process.stderr.read()  # type: ignore[union-attr]
    return process


def write_config(tmp_path: Path, index: Path, workers: int = 0) -> Path:
    config = tmp_path / "relaydeck.toml"
    config.write_text(
        f"""
slave = "data/slave.duckdb"
repository = "data/repository.sqlite"

[variables]
replica_parallel_workers = {workers}
replica_parallel_type = "LOGICAL_CLOCK"

[channels.feed]
relay_log_index = "{index}"
source_host = "127.0.0.1"
source_port = 3407
"""
    )
    return config


def test_serve_follows_answers_statements_from_another_process_and_stops_on_sigterm(tmp_path):
    live = tmp_path / "live"
    live.mkdir()
    config = write_config(tmp_path, live / "relay-bin-m1.index")
    repo = str(tmp_path / "data" / "repository.sqlite")
    serve = start_serve(config)
    try:
        feed(RELAY / "relay-bin-m1.index", live)
        # status from another process while it runs
        deadline = time.monotonic() + 240
        last = read_index(live / "relay-bin-m1.index").files[-1]
        while True:
            status = relaydeck("status", "--repository", repo, "--json")
            assert status.returncode == 0, status.stderr
            (feed_status,) = [s for s in json.loads(status.stdout) if s["channel_name"] == "feed"]
            if (
                feed_status["relay_log_file"] == last.name
                and feed_status["relay_log_pos"] == last.stat().st_size
            ):
                break
            assert time.monotonic() < deadline, feed_status
            time.sleep(0.5)
        assert feed_status["service_state"] == "ON"
        assert feed_status["replica_sql_running"] == "Yes"
        # statements through the server's socket
        again = relaydeck("sql", "--repository", repo, "START REPLICA FOR CHANNEL 'feed'")
        assert again.returncode == 0
        assert "3083" in again.stderr and "already running" in again.stderr
        missing = relaydeck("sql", "--repository", repo, "STOP REPLICA FOR CHANNEL 'nope'")
        assert missing.returncode == 1
        assert "ERROR 3074" in missing.stderr and "'nope' does not exist" in missing.stderr
        shown = relaydeck("sql", "--repository", repo, "--json", "SHOW REPLICA STATUS FOR CHANNEL 'feed'")
        result = json.loads(shown.stdout)
        row = dict(zip(result["columns"], result["rows"][0], strict=True))
        assert row["Replica_SQL_Running"] == "Yes"
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(120) == 0, serve.stderr.read()  # type: ignore[union-attr]
    finally:
        if serve.poll() is None:
            serve.kill()
    after = json.loads(relaydeck("status", "--repository", repo, "--json").stdout)
    (feed_status,) = [s for s in after if s["channel_name"] == "feed"]
    assert feed_status["service_state"] == "OFF"
    assert feed_status["last_error_number"] == 0
    expected = {k: p for k, p in expected_tables().items() if k[0] in M1_DBS}
    assert_tables_equal(tmp_path / "data" / "slave.duckdb", expected, schemas=M1_DBS)


def test_serve_killed_mid_apply_recovers_on_the_next_start(tmp_path):
    from engine.repository import Repository

    summary = generate("oltp", 11, tmp_path / "gen", size_mb=20)
    config = write_config(tmp_path, summary.index_file, workers=4)
    serve = start_serve(config)
    repo = tmp_path / "data" / "repository.sqlite"
    applied = 0
    deadline = time.monotonic() + 120
    with Repository(repo) as repository:
        # kill at the first commit seen: a start commits small batches first (then larger ones)
        while time.monotonic() < deadline and applied == 0:
            statuses = [s for s in repository.status("feed")]
            applied = statuses[0].transactions_applied if statuses else 0
            time.sleep(0.05)
    os.kill(serve.pid, signal.SIGKILL)
    serve.wait(30)
    assert 0 < applied < summary.transactions, "killed too late to test anything"
    again = start_serve(config, "--no-follow")
    assert again.wait(300) == 0, again.stderr.read()  # type: ignore[union-attr]
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "gen" / "expected").glob("*/*.csv"))}
    assert_tables_equal(tmp_path / "data" / "slave.duckdb", expected)


def test_replay_follow_stops_cleanly_on_sigterm(tmp_path):
    live = tmp_path / "live"
    feed(RELAY / "relay-bin-m2.index", live, pause=0)
    repo = tmp_path / "repo.sqlite"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "console.cli",
            "replay",
            "--follow",
            "--slave",
            str(tmp_path / "slave.duckdb"),
            "--repository",
            str(repo),
            "--channel",
            f"m2={live / 'relay-bin-m2.index'}",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        last = read_index(live / "relay-bin-m2.index").files[-1]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if repo.exists():
                rows = json.loads(relaydeck("status", "--repository", str(repo), "--json").stdout or "[]")
                m2 = [r for r in rows if r["channel_name"] == "m2"]
                if m2 and m2[0]["relay_log_pos"] == last.stat().st_size:
                    break
            time.sleep(0.3)
        assert process.poll() is None  # caught up and still following
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "stopped by STOP" in out
    expected = {k: p for k, p in expected_tables().items() if k[0] == "shop"}
    assert_tables_equal(tmp_path / "slave.duckdb", expected, schemas={"shop"})
