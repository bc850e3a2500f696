"""The README's screenshots: the console over the bundled example running for real.

One tour of the example, shortened: its feed lasts 25 s instead of 90 (well beyond the few seconds
until a worker is seen busy) and the workers' plot waits for 3 s of history instead of 60. Then what
the pictures show is checked against the example's own files: the channels its repository lists
and the positions it recorded, and the events of the relay logs it applied.
"""

from __future__ import annotations

import html
import io
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from console.example_screenshots import CHANNEL, ROWS_EVENTS, SHOTS, Pacing, Taken, take
from engine.binlog.reader import read_file_events
from engine.errors import RelaydeckError
from engine.replica import example
from engine.repository import Repository

_TEXT = re.compile(
    r'<text [^>]*x="([\d.]+)"[^>]*textLength="([\d.]+)"[^>]*clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>'
    r"([^<]*)</text>"
)


def screen_lines(svg: Path) -> list[str]:
    """The terminal's lines as the SVG draws them: each run of text at its column."""
    runs = [
        (int(line), float(x), float(length), html.unescape(text).replace("\xa0", " "))
        for x, length, line, text in _TEXT.findall(svg.read_text())
    ]
    cell = min(length / len(text) for _, _, length, text in runs if text)
    lines: dict[int, str] = defaultdict(str)
    for line, x, _, text in runs:
        column = round(x / cell)
        lines[line] = lines[line].ljust(column)[:column] + text
    return [lines[n].rstrip() for n in sorted(lines)]


def events_by_start(relay_file: Path) -> dict[int, tuple[str, int]]:
    """Start position → (event type, end position) of each whole event of a relay-log file."""
    events = {}
    try:
        for logged in read_file_events(relay_file):
            events[logged.pos] = (logged.event_type, logged.end_pos)
    except RelaydeckError:  # the feeder stopped inside the file's last event: the rest is whole
        pass
    return events


@pytest.fixture(scope="module")
def tour(tmp_path_factory) -> tuple[dict[str, dict[str, Any]], dict[str, Taken]]:
    """The tour's screenshots, and each channel's relay_log_info as the example's repository kept it."""
    folder = tmp_path_factory.mktemp("screenshots")
    work = folder / "relaydeck-example"
    taken = take(folder / "out", work, Pacing(feed_seconds=25, plot_seconds=3, timeout_s=60), io.StringIO())
    with Repository(work / example.REPOSITORY) as repository:
        infos = {name: repository.relay_log_info(name) for name in repository.channels() if name}
    return infos, {t.shot.name: t for t in taken}


def test_every_screenshot_is_taken_over_the_example_and_none_says_demo(tour):
    _, taken = tour
    assert list(taken) == [s.name for s in SHOTS]
    for shot in taken.values():
        title = screen_lines(shot.path)[0]
        assert "in-process: bundled example in relaydeck-example" in title, title
        assert f"channel {CHANNEL}" in title
        text = "\n".join(screen_lines(shot.path)).lower()
        assert "demo" not in text and "frozen" not in text and "made-up" not in text


def test_the_channels_view_shows_the_repositorys_channels_at_real_positions(tour):
    infos, taken = tour
    assert {c.name for c in example.EXAMPLE_CHANNELS} < set(infos)  # and the capture's channels
    shot = taken["channels"]
    lines = screen_lines(shot.path)
    rows: dict[str, str] = {}  # the table's row of each channel (the first line naming it)
    for line in lines:
        if line.split() and line.split()[0] in infos:
            rows.setdefault(line.split()[0], line)
    assert set(rows) == set(infos)
    shown = {c.name: c for c in shot.snapshot.channels}
    for name, info in infos.items():
        assert shown[name].relay_read in rows[name]  # the Relay read column
        if name not in {c.name for c in example.EXAMPLE_CHANNELS}:  # captured: applied whole at once
            assert shown[name].relay_applied == f"{info['Relay_log_name']}:{info['Relay_log_pos']}"
    # the followed channel, caught while a worker applies: its applied position ends an event
    oltp = shot.channel
    assert oltp.state == "running" and oltp.workers_busy > 0 and oltp.transactions > 0
    assert any(
        re.fullmatch(rf"\s*relay applied\s+{re.escape(oltp.relay_applied)}\s*", line) for line in lines
    )
    relay_file, _, pos = oltp.relay_applied.rpartition(":")
    ends = {end for _, end in events_by_start(relay_dir(infos[CHANNEL]) / relay_file).values()}
    assert int(pos) in ends


def test_the_workers_view_shows_a_worker_applying(tour):
    _, taken = tour
    shot = taken["workers"]
    text = "\n".join(screen_lines(shot.path))
    assert f"workers of {CHANNEL}" in text and "applying" in text and "throughput" in text
    assert any(w.state == "applying" for w in shot.snapshot.workers[CHANNEL])


def test_the_relay_log_browser_decodes_a_real_rows_event(tour):
    infos, taken = tour
    lines = screen_lines(taken["relaylog"].path)
    rows_title = next(line for line in lines if line.strip().startswith("rows of"))
    match = re.search(r"rows of (\w+) at ([\w.-]+):(\d+)", rows_title)
    assert match is not None, rows_title
    event_type, relay_file, pos = match.groups()
    assert event_type in ROWS_EVENTS
    assert events_by_start(relay_dir(infos[CHANNEL]) / relay_file)[int(pos)][0] == event_type


def test_the_statement_the_kill_and_the_recovery_picture(tour):
    _, taken = tour
    status = "\n".join(screen_lines(taken["command-result"].path))
    assert f"> SHOW REPLICA STATUS FOR CHANNEL '{CHANNEL}'" in status and "1 row in set" in status
    shown = taken["command-result"].channel
    assert re.search(r"Replica_SQL_Running\s+Yes", status) and re.search(r"Source_Port\s+\d+", status)
    assert shown.state == "running"
    assert f"Kill channel {CHANNEL}?" in "\n".join(screen_lines(taken["kill-confirmation"].path))
    killed = taken["recovery"].channel
    assert killed.state == "stopped"
    recovery = "\n".join(screen_lines(taken["recovery"].path))
    assert re.search(
        rf"low-water mark\s+#{killed.transactions:,} at relay log {killed.relay_applied}", recovery
    )
    log = "\n".join(screen_lines(taken["log"].path))
    assert f"> kill channel {CHANNEL}" in log and f"START REPLICA FOR CHANNEL '{CHANNEL}'" in log
    assert f"channel {CHANNEL}: running → stopped" in log and f"channel {CHANNEL}: stopped → running" in log


def relay_dir(info: dict[str, Any]) -> Path:
    return Path(info["Relay_log_index"]).parent
