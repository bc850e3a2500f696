"""No silent loss: relay logs that lost events, transactions or files stop the channel with error
1594 at the last whole transaction; after the input is repaired a rerun gives the exact tables.

Every case damages a copy of the bundled MariaDB capture's m1 channel. What the damage should
cost (the transaction cut off, the last whole one before it) is worked out here from the event
headers, independently of relaydeck's reader.
"""

from __future__ import annotations

import functools
import shutil
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

from engine.errors import BinlogError, RelayIndexError, RelayLogGap
from engine.relaylog.continuity import Continuity, checked
from engine.relaylog.follow import CAUGHT_UP, follow_events
from engine.relaylog.index import RelayLogSet, read_index
from engine.relaylog.stream import stream_events

from .binlog_frames import HEADER, RawEvent, raw_events, with_crc
from .conftest import MULTISOURCE, ROOT, replay_argv
from .test_replay_errors import status_of
from .test_replay_oracle import M1_SCHEMAS, assert_tables_equal, expected_tables

RELAY = MULTISOURCE / "relay"
MARIADB_GTID, XID, IGNORABLE = 162, 16, 0x80
TRUNCATED_FILE, TRUNCATED_SIZE = "relay-bin-m1.000010", 591_304  # the case
APPLIERS = {
    "single": [],
    "threads": ["--workers", "2"],
    "processes": ["--workers", "2", "--pool", "processes"],
}


def copy_m1(folder: Path) -> Path:
    folder.mkdir()
    for path in RELAY.glob("relay-bin-m1.*"):
        shutil.copyfile(path, folder / path.name)
    return folder / "relay-bin-m1.index"


def whole_events(data: bytes) -> list[RawEvent]:
    return raw_events(data)[0]


def gtid_seq(data: bytes, pos: int) -> int:
    return struct.unpack_from("<Q", data, pos + 19)[0]


def replay(slave: Path, index: Path, *options: str) -> subprocess.CompletedProcess[str]:
    repo = slave.with_suffix(".sqlite")
    command = replay_argv(slave, repo, f"m1={index}", *options)
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def rerun_exactly(
    slave: Path, index: Path, *options: str, restored: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The channel replayed again, after the relay file `restored` is copied back as captured: it
    ends without error and the slave's tables are the source's."""
    if restored is not None:
        shutil.copyfile(RELAY / restored, index.parent / restored)
    rerun = replay(slave, index, *options)
    assert rerun.returncode == 0, rerun.stderr
    assert_tables_equal(slave, expected_tables(schemas=M1_SCHEMAS), M1_SCHEMAS)
    return rerun


def channel_status(slave: Path) -> dict[str, object]:
    """SHOW REPLICA STATUS of channel m1, from the slave's repository (`relaydeck status --json`)."""
    return status_of(slave.with_suffix(".sqlite"), "m1")


def run_events(index: Path) -> subprocess.CompletedProcess[str]:
    """`relaydeck events` in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "console.cli", "events", str(index)], cwd=ROOT, capture_output=True, text=True
    )


def assert_stopped_with_1594(
    run: subprocess.CompletedProcess[str], slave: Path, last_seq: int, *named: str
) -> str:
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr, run.stderr
    line = run.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "Error 1594" in line and "Relay log read failure" in line, line
    for text in named:
        assert text in line, f"{text!r} not in {line!r}"
    status = channel_status(slave)
    assert status["last_error_number"] == 1594
    assert all(text in str(status["last_error_message"]) for text in named)
    # nothing past the last whole transaction before the gap
    assert status["executed_gtid_set"] == f"1-1-{last_seq}"
    return line


# ---------------------------------------------------------------------------
# A middle file cut short (the case)
# ---------------------------------------------------------------------------


def cut_transaction_seq() -> int:
    """The transaction the cut falls in: the last GTID that starts before it."""
    data = (RELAY / TRUNCATED_FILE).read_bytes()
    starts = [ev.pos for ev in whole_events(data) if ev.type_code == MARIADB_GTID and ev.pos < TRUNCATED_SIZE]
    return gtid_seq(data, starts[-1])


@pytest.mark.parametrize("applier", list(APPLIERS))
def test_a_truncated_middle_file_stops_at_the_last_whole_transaction_and_a_repaired_rerun_is_exact(
    tmp_path: Path, applier: str
) -> None:
    index = copy_m1(tmp_path / "relay")
    damaged = index.parent / TRUNCATED_FILE
    with open(damaged, "r+b") as fh:
        fh.truncate(TRUNCATED_SIZE)
    cut = cut_transaction_seq()
    assert cut == 1325  # as the issue describes it
    slave = tmp_path / "slave.duckdb"
    run = replay(slave, index, *APPLIERS[applier])
    # the next event from the source is the source's Rotate at the top of the next relay file
    assert_stopped_with_1594(
        run, slave, cut - 1, "relay-bin-m1.000011:256", "expected master-bin.000005:", "1-1-1325"
    )
    rerun_exactly(slave, index, *APPLIERS[applier], restored=TRUNCATED_FILE)
    assert channel_status(slave)["executed_gtid_set"] == "1-1-2145"


@pytest.mark.parametrize("applier", list(APPLIERS))
def test_a_corrupt_format_description_inside_a_file_stops_every_applier_before_it(
    tmp_path: Path, applier: str
) -> None:
    # The source's FORMAT_DESCRIPTION copied after the relay file's own fails its check: whoever
    # plans segments meets it walking the file's headers before every cut, and each segment's
    # reader walks the file itself instead, so every applier stops where the single one does.
    index = copy_m1(tmp_path / "relay")
    damaged = index.parent / "relay-bin-m1.000010"
    data = bytearray(damaged.read_bytes())
    formats = [e for e in whole_events(bytes(data)) if e.type_code == 15]
    copied = formats[1]
    data[copied.pos + copied.size - 8] ^= 0x10
    damaged.write_bytes(bytes(data))
    before = [
        gtid_seq(raw, e.pos)
        for path in read_index(index).files
        if path.name < damaged.name
        for raw in [path.read_bytes()]
        for e in whole_events(raw)
        if e.type_code == MARIADB_GTID
    ][-1]
    slave = tmp_path / "slave.duckdb"
    run = replay(slave, index, *APPLIERS[applier])
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"relaydeck: relay-bin-m1.000010 at position {copied.pos}: Format_desc event fails its CRC32 check (corrupt data)"
    ]
    status = channel_status(slave)
    assert status["last_error_number"] == 1594
    assert status["executed_gtid_set"] == f"1-1-{before}"
    rerun_exactly(slave, index, *APPLIERS[applier], restored=damaged.name)


def test_events_reports_the_same_gap(tmp_path: Path) -> None:
    index = copy_m1(tmp_path / "relay")
    with open(index.parent / TRUNCATED_FILE, "r+b") as fh:
        fh.truncate(TRUNCATED_SIZE)
    run = run_events(index)
    assert run.returncode != 0
    assert run.stderr.startswith("relaydeck: relay-bin-m1.000011 at position 256: Relay log read failure: ")
    assert "master-bin.000005" in run.stderr and len(run.stderr.splitlines()) == 1
    # everything before the gap was listed
    assert run.stdout.splitlines()[-1].startswith("relay-bin-m1.000011\t4\tFormat_desc")


def test_the_skip_counter_lets_the_gap_past_and_says_so(tmp_path: Path) -> None:
    index = copy_m1(tmp_path / "relay")
    with open(index.parent / TRUNCATED_FILE, "r+b") as fh:
        fh.truncate(TRUNCATED_SIZE)
    slave = tmp_path / "slave.duckdb"
    assert replay(slave, index).returncode != 0
    accepted = replay(slave, index, "--skip-counter", "1")
    assert accepted.returncode == 0, accepted.stderr
    assert "1 relay-log gap(s) let past by the skip counter" in accepted.stdout
    status = channel_status(slave)
    assert status["last_error_number"] == 0 and status["executed_gtid_set"] == "1-1-2145"
    # the transactions the cut took are lost (the DBA accepted that); every other one is applied
    original = (RELAY / TRUNCATED_FILE).read_bytes()
    cut = cut_transaction_seq()
    lost = [gtid_seq(original, ev.pos) for ev in whole_events(original) if ev.type_code == MARIADB_GTID]
    lost = [seq for seq in lost if seq >= cut]
    assert f" {2145 - (cut - 1) - len(lost)} transactions applied" in accepted.stdout, accepted.stdout


def run_sql(repo: Path, slave: Path, statement: str) -> subprocess.CompletedProcess[str]:
    """`relaydeck sql` in its own process, as a DBA runs it."""
    command = [sys.executable, "-m", "console.cli", "sql", "--repository", str(repo), "--slave", str(slave)]
    return subprocess.run([*command, statement], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_skipping_through_statements_uses_the_same_counter(tmp_path: Path) -> None:
    index = copy_m1(tmp_path / "relay")
    with open(index.parent / TRUNCATED_FILE, "r+b") as fh:
        fh.truncate(TRUNCATED_SIZE)
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "slave.sqlite"

    sql = functools.partial(run_sql, repo, slave)

    changed = sql(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{index}' FOR CHANNEL 'm1'")
    assert changed.returncode == 0, changed.stderr
    sql("START REPLICA FOR CHANNEL 'm1'")
    assert channel_status(slave)["last_error_number"] == 1594
    assert sql("SET GLOBAL sql_replica_skip_counter = 1").returncode == 0
    sql("START REPLICA FOR CHANNEL 'm1'")
    status = channel_status(slave)
    assert status["last_error_number"] == 0, status["last_error_message"]
    assert status["executed_gtid_set"] == "1-1-2145"


# ---------------------------------------------------------------------------
# Files missing from the index, or out of order
# ---------------------------------------------------------------------------


def test_a_file_missing_from_the_index_is_an_error_and_the_repaired_index_replays_exactly(
    tmp_path: Path,
) -> None:
    index = copy_m1(tmp_path / "relay")
    original = index.read_text()
    index.write_text("".join(line + "\n" for line in original.splitlines() if "000012" not in line))
    (index.parent / "relay-bin-m1.000012").unlink()
    slave = tmp_path / "slave.duckdb"
    run = replay(slave, index)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "relay-bin-m1.000012 is missing from the index" in run.stderr, run.stderr
    with pytest.raises(RelayIndexError):
        read_index(index)
    index.write_text(original)
    rerun_exactly(slave, index, restored="relay-bin-m1.000012")


def test_an_index_naming_files_out_of_order_is_an_error(tmp_path: Path) -> None:
    index = copy_m1(tmp_path / "relay")
    lines = index.read_text().splitlines()
    lines[11], lines[12] = lines[12], lines[11]
    index.write_text("\n".join(lines) + "\n")
    with pytest.raises(RelayIndexError, match="out of order"):
        read_index(index)
    run = run_events(index)
    assert run.returncode != 0 and "out of order" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("damage", ["missing_file", "files_out_of_order"])
def test_a_damaged_index_stops_the_channel_where_it_stood_and_the_repaired_index_replays_exactly(
    tmp_path: Path, damage: str
) -> None:
    index = copy_m1(tmp_path / "relay")
    slave = tmp_path / "slave.duckdb"
    assert replay(slave, index, "--until-gtid", "1-1-500").returncode == 0
    original = index.read_text()
    lines = original.splitlines()
    if damage == "missing_file":
        lines = [line for line in lines if "000012" not in line]
        (index.parent / "relay-bin-m1.000012").unlink()
        expected_error = "relay-bin-m1.000012 is missing from the index"
    else:
        lines[11], lines[12] = lines[12], lines[11]
        expected_error = "out of order"
    index.write_text("".join(line + "\n" for line in lines))
    run = replay(slave, index)
    assert run.returncode != 0 and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert expected_error in run.stderr, run.stderr
    assert channel_status(slave)["executed_gtid_set"] == "1-1-500"  # nothing applied past where it stood
    index.write_text(original)
    rerun_exactly(slave, index, restored="relay-bin-m1.000012" if damage == "missing_file" else None)


def test_a_relay_file_other_than_the_one_its_predecessor_rotates_to_is_a_gap() -> None:
    # Without an index (files given one by one) the numbering is not checked: the relay log's own
    # Rotate at the end of each file is what names the file that comes next.
    files = tuple(
        RELAY / name for name in ("relay-bin-m1.000001", "relay-bin-m1.000002", "relay-bin-m1.000004")
    )
    with pytest.raises(RelayLogGap, match="relay-bin-m1.000002 ends with a Rotate to relay-bin-m1.000003"):
        for _ in checked(stream_events(RelayLogSet(None, files)), Continuity()):
            pass


# ---------------------------------------------------------------------------
# A damaged GTID, a missing XID
# ---------------------------------------------------------------------------


def middle_gtid(data: bytes) -> RawEvent:
    gtids = [ev for ev in whole_events(data) if ev.type_code == MARIADB_GTID]
    return gtids[len(gtids) // 2]


@pytest.mark.parametrize("applier", ["single", "processes"])
def test_a_gtid_with_a_damaged_sequence_number_is_a_gap_not_later_transactions_already_applied(
    tmp_path: Path, applier: str
) -> None:
    index = copy_m1(tmp_path / "relay")
    damaged = index.parent / "relay-bin-m1.000006"
    data = bytearray(damaged.read_bytes())
    gtid = middle_gtid(bytes(data))
    pos = gtid.pos
    seq = gtid_seq(bytes(data), pos)
    struct.pack_into("<Q", data, pos + 19, seq + 1181)
    with_crc(data, gtid)
    damaged.write_bytes(bytes(data))
    slave = tmp_path / "slave.duckdb"
    run = replay(slave, index, *APPLIERS[applier])
    assert_stopped_with_1594(run, slave, seq - 1, f"relay-bin-m1.000006:{pos}", f"1-1-{seq + 1181}", f"{seq}")
    rerun = rerun_exactly(slave, index, *APPLIERS[applier], restored="relay-bin-m1.000006")
    assert "(0 already applied)" in rerun.stdout


@pytest.mark.parametrize("applier", ["single", "threads"])
def test_a_transaction_whose_xid_is_missing_is_not_dropped_silently(tmp_path: Path, applier: str) -> None:
    index = copy_m1(tmp_path / "relay")
    damaged = index.parent / "relay-bin-m1.000008"
    data = bytearray(damaged.read_bytes())
    events = whole_events(bytes(data))
    xids = [i for i, ev in enumerate(events) if ev.type_code == XID]
    at = xids[len(xids) // 2]
    xid = events[at]
    # the XID becomes an event of a type nobody knows, flagged ignorable: positions stay whole
    data[xid.pos + 4] = 99
    struct.pack_into("<H", data, xid.pos + 17, IGNORABLE)
    with_crc(data, xid)
    damaged.write_bytes(bytes(data))
    opening = max(ev.pos for ev in events[:at] if ev.type_code == MARIADB_GTID)
    seq = gtid_seq(bytes(data), opening)
    next_gtid = next(ev.pos for ev in events[at:] if ev.type_code == MARIADB_GTID)
    slave = tmp_path / "slave.duckdb"
    run = replay(slave, index, *APPLIERS[applier])
    line = assert_stopped_with_1594(run, slave, seq - 1, f"relay-bin-m1.000008:{next_gtid}", f"1-1-{seq}")
    assert "no COMMIT or XID" in line
    rerun_exactly(slave, index, *APPLIERS[applier], restored="relay-bin-m1.000008")


# ---------------------------------------------------------------------------
# What must stay legitimate
# ---------------------------------------------------------------------------


def test_a_transaction_fetched_again_from_its_start_after_a_reconnect_is_not_a_gap(tmp_path: Path) -> None:
    # The receiver lost its connection inside a transaction: the relay file ends there, and the
    # next one starts with the receiver's artificial Rotate back to the transaction's start, the
    # source's format description, and the whole transaction again.
    data = (RELAY / "relay-bin-m1.000008").read_bytes()
    events = whole_events(data)
    gtids = [i for i, ev in enumerate(events) if ev.type_code == MARIADB_GTID]
    g = gtids[len(gtids) // 2]
    gtid = events[g]
    cut = events[g + 2].pos  # after the GTID and its first table map
    first = data[:cut]
    fde = events[0]
    # the second file: the replica's FDE, an artificial Rotate to the transaction's start, the
    # source's FDE as a reconnect sends it (log_pos 0), then the rest of the original file
    rotate_body = struct.pack("<Q", gtid.log_pos - gtid.size) + b"master-bin.000004"
    rotate = HEADER.pack(0, 4, 1, 19 + len(rotate_body) + 4, 0, 0x20) + rotate_body
    rotate += struct.pack("<I", zlib.crc32(rotate))
    source_fde = bytearray(data[events[2].pos : events[2].end])
    assert source_fde[4] == 15
    struct.pack_into("<I", source_fde, 13, 0)
    with_crc(source_fde, RawEvent(0, len(source_fde), source_fde[4], 0))
    second = data[:4] + data[fde.pos : fde.end] + rotate + bytes(source_fde) + data[gtid.pos :]
    folder = tmp_path / "relay"
    folder.mkdir()
    (folder / "relay-bin-m1.000001").write_bytes(first)
    (folder / "relay-bin-m1.000002").write_bytes(second)
    index = folder / "relay-bin-m1.index"
    index.write_text("./relay-bin-m1.000001\n./relay-bin-m1.000002\n")
    read = list(checked(stream_events(read_index(index)), Continuity()))
    assert read[-1].log_name == "relay-bin-m1.000002"
    # without the reconnect, the same transaction again is a gap: the first one is cut off
    (folder / "relay-bin-m1.000002").write_bytes(data[:4] + data[fde.pos : fde.end] + data[gtid.pos :])
    with pytest.raises(RelayLogGap, match="is cut off|no COMMIT or XID"):
        for _ in checked(stream_events(read_index(index)), Continuity()):
            pass


def test_following_a_file_that_is_replaced_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "relay"
    folder.mkdir()
    for name in ("relay-bin-m2.000001", "relay-bin-m2.000002"):
        shutil.copyfile(RELAY / name, folder / name)
    index = folder / "relay-bin-m2.index"
    index.write_text("./relay-bin-m2.000001\n./relay-bin-m2.000002\n")
    stop = threading.Event()
    watchdog = threading.Timer(30, stop.set)
    watchdog.start()
    follower = follow_events(index, stop=stop, poll_s=0.1)
    try:
        for item in follower:
            if item is CAUGHT_UP:
                break
        replacement = folder / "replacement"
        shutil.copyfile(RELAY / "relay-bin-m2.000002", replacement)
        with open(replacement, "ab") as fh:
            fh.write(b"\0" * 10)
        replacement.replace(folder / "relay-bin-m2.000002")
        with pytest.raises(BinlogError, match="replaced while being read"):
            for _ in follower:
                pass
    finally:
        watchdog.cancel()
        stop.set()


def test_a_relay_log_that_starts_after_what_the_channel_applied_is_a_gap(tmp_path: Path) -> None:
    # The channel applied up to 1-1-500; after RESET REPLICA it is pointed at relay logs that
    # begin much later (the files before were purged): the transactions between are missing.
    index = copy_m1(tmp_path / "relay")
    later = tmp_path / "later"
    later.mkdir()
    names = [p.name for p in read_index(index).files][9:]
    for name in names:
        shutil.copyfile(RELAY / name, later / name)
    (later / "relay-bin-m1.index").write_text("".join(f"./{name}\n" for name in names))
    first_gtid = next(
        gtid_seq(data, ev.pos)
        for data in [(RELAY / names[0]).read_bytes(), (RELAY / names[1]).read_bytes()]
        for ev in whole_events(data)
        if ev.type_code == MARIADB_GTID
    )
    slave, repo = tmp_path / "slave.duckdb", tmp_path / "slave.sqlite"

    sql = functools.partial(run_sql, repo, slave)

    assert sql(f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{index}' FOR CHANNEL 'm1'").returncode == 0
    started = sql("START REPLICA UNTIL SQL_AFTER_GTIDS = '1-1-500' FOR CHANNEL 'm1'")
    assert started.returncode == 0, started.stderr
    assert channel_status(slave)["executed_gtid_set"] == "1-1-500"
    assert sql("RESET REPLICA FOR CHANNEL 'm1'").returncode == 0
    assert (
        sql(
            f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{later / 'relay-bin-m1.index'}' FOR CHANNEL 'm1'"
        ).returncode
        == 0
    )
    sql("START REPLICA FOR CHANNEL 'm1'")
    status = channel_status(slave)
    assert status["last_error_number"] == 1594
    assert f"GTID 1-1-{first_gtid} follows 500 in domain 1" in str(status["last_error_message"])
    assert status["executed_gtid_set"] == "1-1-500"


# ---------------------------------------------------------------------------
# The check's parts
# ---------------------------------------------------------------------------


def damaged_seq_copy(folder: Path, name: str, pos: int, add: int) -> Path:
    """m1 copied into folder with the GTID event at (name, pos) numbered `add` further."""
    index = copy_m1(folder)
    path = folder / name
    data = bytearray(path.read_bytes())
    gtid = next(ev for ev in whole_events(bytes(data)) if ev.pos == pos)
    assert gtid.type_code == MARIADB_GTID
    struct.pack_into("<Q", data, pos + 19, gtid_seq(bytes(data), pos) + add)
    with_crc(data, gtid)
    path.write_bytes(bytes(data))
    return index


def test_a_gap_at_a_segment_boundary_is_found_by_chaining_the_segments(tmp_path: Path) -> None:
    from engine.applier.prepare import prepare_segment
    from engine.relaylog.segments import plan_segments

    segments = list(plan_segments(read_index(RELAY / "relay-bin-m1.index"), None, 4, 100))
    boundary = segments[7]
    index = damaged_seq_copy(tmp_path / "relay", boundary.files[0].name, boundary.start_pos, 1181)
    segments = list(plan_segments(read_index(index), None, 4, 100))
    assert (segments[7].files[0].name, segments[7].start_pos) == (boundary.files[0].name, boundary.start_pos)
    chain = Continuity()
    for segment in segments[:7]:
        prepared = prepare_segment(segment, 1000)
        assert prepared.gap is None
        chain = chain.follows(prepared.continuity.entry, prepared.continuity)
    # The damaged GTID opens segment 7: its worker cannot judge it (the GTID after it going back
    # is what the worker finds), the segment before it can, at the GTID's own position.
    prepared = prepare_segment(segments[7], 1000)
    assert prepared.gap is not None and prepared.gap[1] > boundary.start_pos
    with pytest.raises(RelayLogGap, match="follows") as info:
        chain.follows(prepared.continuity.entry, prepared.continuity)
    assert (info.value.file, info.value.pos) == (boundary.files[0].name, boundary.start_pos)


def test_the_undamaged_capture_chained_by_segments_has_no_gap() -> None:
    from engine.applier.prepare import prepare_segment
    from engine.relaylog.segments import plan_segments

    for channel in ("m1", "m2"):
        chain = Continuity()
        for segment in plan_segments(read_index(RELAY / f"relay-bin-{channel}.index"), None, 4, 50):
            prepared = prepare_segment(segment, 1000)
            assert prepared.gap is None and prepared.continuity is not None
            chain = chain.follows(prepared.continuity.entry, prepared.continuity)


def _source_positions_moved(events: list, first: int, by: int, writer: int) -> list:
    """The events with the source positions (log_pos) of events[first] and every later event of
    the same source binlog moved by `by` bytes, as if events that long were before events[first]
    (`writer`: the server id of the relay files' own events, which have no source position)."""
    moved = list(events)
    source = events[first].source_log_file
    for i in range(first, len(events)):
        logged = events[i]
        if logged.source_log_file != source:
            break
        if logged.header.log_pos and not logged.artificial and logged.header.server_id != writer:
            moved[i] = logged._replace(header=logged.header._replace(log_pos=logged.header.log_pos + by))
    return moved


def test_a_table_map_after_a_left_out_annotation_follows_and_one_overlapping_the_event_before_is_a_gap() -> (
    None
):
    # A MariaDB replica relays no Annotate_rows unless asked: every table map of the capture
    # starts past the end of the GTID before it, and the check lets that past. A table map that
    # starts inside the event before it is still a gap.
    from engine.binlog.events import TableMap

    events = list(stream_events(read_index(RELAY / "relay-bin-m2.index")))
    maps = [i for i, logged in enumerate(events) if type(logged.event) is TableMap]
    assert len(maps) > 100
    first = maps[len(maps) // 2]
    assert events[first].header.log_pos - events[first].header.event_size > events[first - 1].header.log_pos
    writer = events[0].header.server_id  # the relay file's own FORMAT_DESCRIPTION

    continuity = Continuity()
    moved = _source_positions_moved(events, first, 57, writer)
    for _ in checked(moved, continuity):
        pass  # 57 more bytes left out before the table map: no gap, and everything after follows
    last = [e for e in moved if e.header.log_pos and e.header.server_id != writer and not e.artificial][-1]
    assert continuity.expected == last.header.log_pos

    left_out = (
        events[first].header.log_pos - events[first].header.event_size - events[first - 1].header.log_pos
    )
    overlapping = _source_positions_moved(events, first, -left_out - 25, writer)
    with pytest.raises(RelayLogGap) as info:
        for _ in checked(overlapping, Continuity()):
            pass
    assert (info.value.file, info.value.pos) == (events[first].log_name, events[first].pos)


def test_letting_a_gap_past_starts_the_check_afresh_at_the_next_transaction(tmp_path: Path) -> None:
    index = copy_m1(tmp_path / "relay")
    with open(index.parent / TRUNCATED_FILE, "r+b") as fh:
        fh.truncate(TRUNCATED_SIZE)
    continuity = Continuity(accept=lambda: True)
    events = list(checked(stream_events(read_index(index)), continuity))
    assert continuity.accepted == 1  # one gap, and everything after it follows on
    assert events[-1].log_name == "relay-bin-m1.000014"
    # a damaged sequence number is two discontinuities: the jump, and the way back after it
    data = (RELAY / "relay-bin-m1.000006").read_bytes()
    pos = middle_gtid(data).pos
    damaged = damaged_seq_copy(tmp_path / "seq", "relay-bin-m1.000006", pos, 1181)
    continuity = Continuity(accept=lambda: True)
    for _ in checked(stream_events(read_index(damaged)), continuity):
        pass
    assert continuity.accepted == 2


def _public_logs() -> list[Path]:
    from .conftest import PUBLIC

    return sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name != "README.md")


def test_no_bundled_log_reads_as_a_gap() -> None:
    # The check must not cry wolf: real MariaDB and MySQL relay logs and binlogs (damaged public
    # files end in their own errors, which are not gaps).
    sets = [read_index(RELAY / f"relay-bin-{channel}.index") for channel in ("m1", "m2")]
    sets += [RelayLogSet(None, (path,)) for path in _public_logs()]
    for logs in sets:
        try:
            for _ in checked(stream_events(logs), Continuity()):
                pass
        except RelayLogGap:
            raise
        except BinlogError:
            pass


@pytest.mark.parametrize("workload", ["oltp", "ddl", "large", "statement", "temporary", "mixed"])
def test_no_generated_relay_log_reads_as_a_gap(workload: str, tmp_path: Path) -> None:
    from engine.generate import generate

    summary = generate(workload, 3, tmp_path / "relay", size_mb=2)
    assert len(read_index(summary.index_file).files) > 2  # source and relay rotations included
    for _ in checked(stream_events(read_index(summary.index_file)), Continuity()):
        pass
