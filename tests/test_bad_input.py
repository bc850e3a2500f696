"""Bad input ends in one clear line naming the file and offset, and a non-zero exit code.

Every case starts from a real relay/binary log (copied into tmp_path, never edited in place),
damages it in one deliberate way, and runs `relaydeck events` in a subprocess, because only a
real process shows what the user sees: the exit code, every line of stderr (a traceback is a
failure), a hang (the subprocess timeout fails the test) and memory (an address-space limit kills
a process that allocates what a corrupt length claims).

Expected offsets are worked out here, with an independent walk over the event headers, not taken
from relaydeck's own output.
"""

from __future__ import annotations

import io
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.binlog.reader import BinlogFile
from engine.errors import ChecksumMismatch, RelayIndexError, TruncatedEvent, UnknownEvent
from engine.relaylog.index import read_index

from .binlog_frames import HEADER_LEN, RawEvent, raw_events, with_crc

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
RELAY = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"
PUBLIC = ROOT / "fixtures" / "public-binlogs"
M2_FIRST, M2_SECOND = RELAY / "relay-bin-m2.000001", RELAY / "relay-bin-m2.000002"

MAGIC = b"\xfebin"
CUT_TO = 20_000  # the MariaDB relay log is cut to ~20 KB (at an event boundary): plenty of event kinds
TIMEOUT = 60  # seconds; a hang fails the test instead of the suite
MEMORY_LIMIT = 1 << 30  # 1 GiB of address space: a 0x7fffffff-byte allocation cannot fit

QUERY, ROTATE, XID, TABLE_MAP, WRITE_ROWS_V1, MARIADB_GTID = 2, 4, 16, 19, 23, 162
IGNORABLE_FLAG = 0x80
UNKNOWN_TYPE = 99


# ---------------------------------------------------------------------------
# An independent look at the framing, to say where damage is
# ---------------------------------------------------------------------------


def cut_at_boundary(data: bytes, limit: int) -> bytes:
    """The longest prefix of whole events no longer than `limit` bytes."""
    end = 4
    for ev in raw_events(data)[0]:
        if ev.end > limit:
            break
        end = ev.end
    return data[:end]


# ---------------------------------------------------------------------------
# Running the command and checking the contract
# ---------------------------------------------------------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_events(*args: str | Path, env: dict[str, str] | None = None) -> Run:
    """`relaydeck events ARGS` in a fresh process under a 1 GiB address-space limit."""
    proc = subprocess.run(
        [PYTHON, "-m", "console.cli", "events", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        timeout=TIMEOUT,
        preexec_fn=_limit_memory,
        env={**os.environ, **(env or {})},
    )
    # Bytes, decoded leniently: the test must report what came out, not trip over it.
    return Run(
        proc.returncode,
        proc.stdout.decode("utf-8", "backslashreplace"),
        proc.stderr.decode("utf-8", "backslashreplace"),
    )


def assert_one_line_error(run: Run, file: str | Path, pos: int | None) -> str:
    """The contract: non-zero exit, exactly one stderr line `relaydeck: <file> at position <pos>: …`."""
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode != 0, f"exit code 0 for bad input; stderr={run.stderr!r}"
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and run.stderr.endswith("\n"), f"not one line: {run.stderr!r}"
    line = lines[0]
    assert line.startswith("relaydeck: "), line
    assert Path(file).name in line, f"{Path(file).name} not named in {line!r}"
    if pos is not None:
        # The colon keeps "at position 40" from matching "at position 400".
        assert f" at position {pos}: " in line, f"expected position {pos} in {line!r}"
    return line


def assert_clean_success(run: Run) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""


# ---------------------------------------------------------------------------
# Fixture copies
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def m2_bytes() -> bytes:
    """MariaDB 10.11 relay log with CRC32 checksums, cut to ~20 KB of whole events."""
    return cut_at_boundary(M2_SECOND.read_bytes(), CUT_TO)


@pytest.fixture(scope="module")
def m2_events(m2_bytes: bytes) -> list[RawEvent]:
    events, stop = raw_events(m2_bytes)
    assert stop == len(m2_bytes), "the undamaged copy must frame cleanly"
    return events


def first_of(events: list[RawEvent], type_code: int) -> RawEvent:
    return next(ev for ev in events if ev.type_code == type_code)


def pick(events: list[RawEvent], which: str) -> RawEvent:
    """Events named by role, so parameter ids read as a specification."""
    if which == "format_description":
        return events[0]
    if which == "last":
        return events[-1]
    return first_of(
        events, {"query": QUERY, "table_map": TABLE_MAP, "rows": WRITE_ROWS_V1, "xid": XID}[which]
    )


def write(tmp_path: Path, data: bytes | bytearray, name: str = "relay-bin-m2.000002") -> Path:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return path


def test_the_undamaged_copy_decodes_cleanly(tmp_path: Path, m2_bytes: bytes) -> None:
    # The control for everything below: the copy itself is good input, so any error is the damage.
    assert_clean_success(run_events(write(tmp_path, m2_bytes)))


def test_the_memory_limit_would_catch_an_allocation_of_a_claimed_size() -> None:
    # The limit used by run_events must really stop a 0x7fffffff-byte allocation, or the
    # "memory stays small" assertions below would prove nothing.
    proc = subprocess.run(
        [PYTHON, "-c", "bytearray(0x7fffffff)"],
        capture_output=True,
        timeout=TIMEOUT,
        preexec_fn=_limit_memory,
    )
    assert proc.returncode != 0
    assert b"MemoryError" in proc.stderr


# ---------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------


CUTS = {
    "mid_header": lambda ev: ev.pos + 7,
    "mid_body": lambda ev: ev.pos + ev.size // 2,
    "mid_checksum": lambda ev: ev.end - 2,
}


@pytest.mark.parametrize("which", ["format_description", "query", "table_map", "rows", "last"])
@pytest.mark.parametrize("cut", list(CUTS))
def test_truncated_file_is_an_error_at_the_cut_event(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], which: str, cut: str
) -> None:
    ev = pick(m2_events, which)
    path = write(tmp_path, m2_bytes[: CUTS[cut](ev)])
    assert_one_line_error(run_events(path), path, ev.pos)
    # The typed error says the same, in process.
    with pytest.raises(TruncatedEvent) as info, BinlogFile(path) as binlog:
        for _ in binlog.events():
            pass
    assert (info.value.file, info.value.pos) == (path.name, ev.pos)


def test_a_file_cut_at_an_event_boundary_is_valid(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent]
) -> None:
    # The counterpart of the truncation cases: a shorter file of whole events is not damage (a
    # relay log is read while it grows), so the errors above come from the cut, not the copy.
    ev = pick(m2_events, "rows")
    run = run_events(write(tmp_path, m2_bytes[: ev.end]))
    assert_clean_success(run)
    assert f"\t{ev.pos}\t" in run.stdout  # the last whole event is listed


def test_a_file_truncated_in_the_middle_of_an_index_names_that_file(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent]
) -> None:
    # The second file of an index is the damaged one: the line must name it, not the index.
    shutil.copy(M2_FIRST, tmp_path / M2_FIRST.name)
    ev = pick(m2_events, "xid")
    damaged = write(tmp_path, m2_bytes[: ev.pos + 10])
    index = tmp_path / "relay-bin-m2.index"
    index.write_text(f"./{M2_FIRST.name}\n./{damaged.name}\n")
    line = assert_one_line_error(run_events(index), damaged, ev.pos)
    assert "relay-bin-m2.000001" not in line


# ---------------------------------------------------------------------------
# Flipped bits
# ---------------------------------------------------------------------------


FLIPS = {
    "timestamp": lambda ev: ev.pos + 1,  # in the common header, not a framing field
    "body_start": lambda ev: ev.pos + HEADER_LEN,
    "body_middle": lambda ev: ev.pos + HEADER_LEN + (ev.size - HEADER_LEN - 4) // 2,
    "checksum": lambda ev: ev.end - 3,
}


@pytest.mark.parametrize("which", ["query", "table_map", "rows", "xid", "last"])
@pytest.mark.parametrize("where", list(FLIPS))
def test_flipped_bit_is_a_checksum_error_at_the_event(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], which: str, where: str
) -> None:
    ev = pick(m2_events, which)
    data = bytearray(m2_bytes)
    data[FLIPS[where](ev)] ^= 0x10
    path = write(tmp_path, data)
    line = assert_one_line_error(run_events(path), path, ev.pos)
    assert re.search(r"CRC32|checksum", line, re.IGNORECASE), line
    with pytest.raises(ChecksumMismatch) as info, BinlogFile(path) as binlog:
        for _ in binlog.events():
            pass
    assert (info.value.file, info.value.pos) == (path.name, ev.pos)


# ---------------------------------------------------------------------------
# Lengths that lie
# ---------------------------------------------------------------------------


def _size_past_end(ev: RawEvent, file_size: int) -> int:
    return file_size - ev.pos + 1


SIZES = {
    "one_past_the_end": _size_past_end,
    "0x7fffffff": lambda ev, n: 0x7FFFFFFF,
    "0xffffffff": lambda ev, n: 0xFFFFFFFF,
    "zero": lambda ev, n: 0,
    "below_the_header": lambda ev, n: HEADER_LEN - 1,
    "no_room_for_the_checksum": lambda ev, n: HEADER_LEN,
    "one_byte_short": lambda ev, n: ev.size - 1,
    "one_byte_long": lambda ev, n: ev.size + 1,
}


@pytest.mark.parametrize("which", ["format_description", "query", "rows", "last"])
@pytest.mark.parametrize("size", list(SIZES))
def test_bad_event_length_is_an_error_at_that_event_without_allocating_it(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], which: str, size: str
) -> None:
    ev = pick(m2_events, which)
    data = bytearray(m2_bytes)
    struct.pack_into("<I", data, ev.pos + 9, SIZES[size](ev, len(data)))
    path = write(tmp_path, data)
    # run_events runs under a 1 GiB address-space limit: allocating what the length claims
    # would end in a MemoryError traceback, not this line.
    assert_one_line_error(run_events(path), path, ev.pos)


@pytest.mark.parametrize("size", [0x7FFFFFFF, 0xFFFFFFFF])
def test_huge_event_length_without_checksums_is_a_truncation_error(tmp_path: Path, size: int) -> None:
    # No CRC32 to catch it: only the length check stands between the claim and an allocation.
    original = (PUBLIC / "bcj" / "mysql-bin.checksum-none").read_bytes()
    events, _ = raw_events(original)
    ev = events[len(events) // 2]
    data = bytearray(original)
    struct.pack_into("<I", data, ev.pos + 9, size)
    path = write(tmp_path, data, "mysql-bin.checksum-none")
    assert_one_line_error(run_events(path), path, ev.pos)


# ---------------------------------------------------------------------------
# Unknown events
# ---------------------------------------------------------------------------


def _retyped(m2_bytes: bytes, ev: RawEvent, type_code: int, extra_flags: int) -> bytearray:
    data = bytearray(m2_bytes)
    data[ev.pos + 4] = type_code
    struct.pack_into("<H", data, ev.pos + 17, ev.flags | extra_flags)
    return with_crc(data, ev)  # a valid checksum: only the type is wrong


@pytest.mark.parametrize("which", ["query", "xid", "last"])
def test_unknown_event_type_is_an_error_naming_type_and_offset(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], which: str
) -> None:
    ev = pick(m2_events, which)
    path = write(tmp_path, _retyped(m2_bytes, ev, UNKNOWN_TYPE, 0))
    line = assert_one_line_error(run_events(path), path, ev.pos)
    assert re.search(rf"\b{UNKNOWN_TYPE}\b", line), f"the type is not named in {line!r}"
    with pytest.raises(UnknownEvent) as info, BinlogFile(path) as binlog:
        for _ in binlog.events():
            pass
    assert (info.value.file, info.value.pos) == (path.name, ev.pos)


@pytest.mark.parametrize("which", ["query", "xid"])
def test_unknown_event_type_with_the_ignorable_flag_is_passed_over_but_its_transaction_has_no_end(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], which: str
) -> None:
    ev = pick(m2_events, which)
    path = write(tmp_path, _retyped(m2_bytes, ev, UNKNOWN_TYPE, IGNORABLE_FLAG))
    run = run_events("--json", path)
    records = [json.loads(line) for line in run.stdout.splitlines()]
    # It was read and listed, not refused …
    assert ev.pos in {record["pos"] for record in records}
    # … and the event is not shown as the event it used to be.
    shown = [record for record in records if record["pos"] == ev.pos]
    assert all(record["event_type"] not in ("Query", "Xid") for record in shown), shown
    # The event ended its transaction: without it, the transaction has no end, which is reported
    # where the next one begins (its GTID) rather than passed over in silence.
    next_gtid = next(e for e in m2_events if e.pos > ev.pos and e.type_code == MARIADB_GTID)
    line = assert_one_line_error(run, path, next_gtid.pos)
    assert "no COMMIT or XID" in line, line


# ---------------------------------------------------------------------------
# Files that are not binlogs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\xfeb", id="shorter_than_the_magic"),
        pytest.param(b"\xfebim" + b"\0" * 200, id="bad_magic"),
        pytest.param(b"# relay-bin.000001\n" * 20, id="text_file"),
    ],
)
def test_a_file_that_is_not_a_binlog_is_an_error_at_position_0(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path, content, "relay-bin.000007")
    assert_one_line_error(run_events(path), path, 0)


def test_a_magic_number_alone_is_an_empty_log(tmp_path: Path) -> None:
    # The counterpart of the cases above: 4 bytes of magic are a valid log with no events yet
    # (the state of a relay log just opened), so exit 0 and nothing listed.
    run = run_events("--json", write(tmp_path, MAGIC, "relay-bin.000007"))
    assert_clean_success(run)
    assert run.stdout == ""


def test_a_file_that_does_not_exist_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "relay-bin.000404"
    assert_one_line_error(run_events(missing), missing, None)


def test_a_directory_is_named_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "relay-bin.000005"
    folder.mkdir()
    assert_one_line_error(run_events(folder), folder, None)


# ---------------------------------------------------------------------------
# Index files
# ---------------------------------------------------------------------------


def test_index_naming_a_missing_file_names_the_index_line_and_file(tmp_path: Path) -> None:
    shutil.copy(M2_FIRST, tmp_path / M2_FIRST.name)
    index = tmp_path / "relay-bin-m2.index"
    index.write_text("./relay-bin-m2.000001\n./relay-bin-m2.000002\n")  # 000002 was not copied
    line = assert_one_line_error(run_events(index), index, None)
    assert "relay-bin-m2.000002" in line and "line 2" in line, line
    with pytest.raises(RelayIndexError):
        read_index(index)


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank_lines"])
def test_empty_index_is_an_error_naming_it(tmp_path: Path, text: str) -> None:
    index = tmp_path / "relay-bin-m2.index"
    index.write_text(text)
    assert_one_line_error(run_events(index), index, None)


def test_dangling_index_that_does_not_exist_is_an_error_naming_it(tmp_path: Path) -> None:
    index = tmp_path / "relay-bin-m9.index"
    assert_one_line_error(run_events(index), index, None)


def test_index_of_good_files_is_read_to_the_end(tmp_path: Path, m2_bytes: bytes) -> None:
    # Control for the index cases: the same layout with both files present works.
    shutil.copy(M2_FIRST, tmp_path / M2_FIRST.name)
    write(tmp_path, m2_bytes)
    index = tmp_path / "relay-bin-m2.index"
    index.write_text("./relay-bin-m2.000001\n./relay-bin-m2.000002\n")
    run = run_events(index)
    assert_clean_success(run)
    assert "relay-bin-m2.000002\t" in run.stdout


# ---------------------------------------------------------------------------
# Public files that are corrupt on purpose
# ---------------------------------------------------------------------------


def _first_incomplete_event(data: bytes) -> int:
    events, stop = raw_events(data)
    assert stop < len(data), "expected a file that ends inside an event"
    return stop


def _query_whose_status_block_overruns(data: bytes) -> int:
    # A Query event whose status-variable length (u16 at body offset 11) exceeds its own body.
    for ev in raw_events(data)[0]:
        if ev.type_code == QUERY:
            status_len = struct.unpack_from("<H", data, ev.pos + HEADER_LEN + 11)[0]
            if 13 + status_len > ev.size - HEADER_LEN:
                return ev.pos
    raise AssertionError("no overrunning Query event")


CORRUPT_PUBLIC = {
    "rmc/binlog_truncated_event.000001": _first_incomplete_event,
    "rmc/binlog_truncated_prev_gtid_event.000001": _first_incomplete_event,
    "rmc/corrupt-relay-bin.000624": _query_whose_status_block_overruns,
    "canal/tsdb_mysql-bin.000001": lambda data: 0 if data[:4] != MAGIC else -1,
    # A development build's events no released decoder accepts: the damage has no independent
    # address, but it must still be reported at the start of an event.
    "rmc/ver_5_1-wl2325_r.001": None,
    "rmc/ver_5_1-wl2325_s.001": None,
}


@pytest.mark.parametrize("mode", [[], ["--json"], ["--rows"]], ids=["text", "json", "rows"])
@pytest.mark.parametrize("name", list(CORRUPT_PUBLIC))
def test_corrupt_public_fixture_is_a_one_line_error(name: str, mode: list[str]) -> None:
    path = PUBLIC / name
    data = path.read_bytes()
    locate = CORRUPT_PUBLIC[name]
    expected = locate(data) if locate else None
    line = assert_one_line_error(run_events(*mode, path), path, expected)
    if expected is None:
        reported = int(re.search(r" at position (\d+): ", line)[1])
        assert reported in {ev.pos for ev in raw_events(data)[0]}, f"{reported} is not an event start"


# ---------------------------------------------------------------------------
# --json reports errors exactly as the text mode does
# ---------------------------------------------------------------------------


def _damage(kind: str, m2_bytes: bytes, events: list[RawEvent]) -> tuple[bytes, int]:
    ev = pick(events, "rows")
    data = bytearray(m2_bytes)
    if kind == "truncated":
        return bytes(data[: ev.pos + 30]), ev.pos
    if kind == "flipped_bit":
        data[ev.pos + 40] ^= 1
    elif kind == "huge_length":
        struct.pack_into("<I", data, ev.pos + 9, 0x7FFFFFFF)
    elif kind == "unknown_type":
        data = _retyped(m2_bytes, ev, UNKNOWN_TYPE, 0)
    return bytes(data), ev.pos


@pytest.mark.parametrize("kind", ["truncated", "flipped_bit", "huge_length", "unknown_type"])
def test_json_mode_gives_the_same_one_line_error(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], kind: str
) -> None:
    data, pos = _damage(kind, m2_bytes, m2_events)
    path = write(tmp_path, data)
    text_run, json_run = run_events(path), run_events("--json", path)
    assert_one_line_error(json_run, path, pos)
    assert json_run.stderr == text_run.stderr
    assert json_run.returncode == text_run.returncode
    # What came before the error is still well-formed JSON, one object per line.
    records = [json.loads(line) for line in json_run.stdout.splitlines()]
    assert records and all(record["pos"] < pos for record in records)


# ---------------------------------------------------------------------------
# Text that is not UTF-8
# ---------------------------------------------------------------------------


def test_statement_bytes_that_are_not_utf8_do_not_crash_the_output(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent]
) -> None:
    ev = pick(m2_events, "query")
    data = bytearray(m2_bytes)
    data[ev.end - 6] = 0xFF  # a byte of the statement text, just before the checksum
    path = write(tmp_path, with_crc(data, ev))
    run = run_events(path, env={"PYTHONIOENCODING": "utf-8"})
    assert "Traceback" not in run.stderr, run.stderr
    if run.returncode != 0:
        assert_one_line_error(run, path, ev.pos)
    else:
        assert f"\t{ev.pos}\tQuery\t" in run.stdout


# ---------------------------------------------------------------------------
# Decoder messages speak of the binlog, never of Python
# ---------------------------------------------------------------------------

# Python's own words for a short buffer or a bad index, and a negative count of bytes left
PYTHON_PHRASING = re.compile(
    r"unpack|requires a buffer|index out of range|out of range for|only -?\d+ left|-\d+ left|codec|"
    r"NoneType|object|argument|subscriptable|Error\b|Traceback"
)
MARIADB_GTID, MARIADB_GTID_LIST, MARIADB_CHECKPOINT = 162, 163, 161


def shortened(data: bytes, ev: RawEvent, by: int) -> bytes:
    """The event's body `by` bytes shorter (its length, source end position and CRC32 made to
    agree), the rest after it."""
    body_end = ev.end - 4
    event = bytearray(data[ev.pos : body_end - by])
    struct.pack_into("<I", event, 9, len(event) + 4)
    (end_log_pos,) = struct.unpack_from("<I", event, 13)
    if end_log_pos:
        struct.pack_into("<I", event, 13, end_log_pos - by)
    event += struct.pack("<I", zlib.crc32(event))
    return data[: ev.pos] + bytes(event) + data[ev.end :]


def shortened_at_the_source(data: bytes, ev: RawEvent, by: int) -> bytes:
    """shortened(), with the source positions of the events after it (up to the source's next
    Rotate) moved back too: as if the source had logged the shorter event, so the relay log stays
    continuous and only the event itself is bad."""
    out = bytearray(shortened(data, ev, by))
    for later in raw_events(bytes(out))[0]:
        if later.pos <= ev.pos:
            continue
        if later.type_code == ROTATE:
            break
        (end_log_pos,) = struct.unpack_from("<I", out, later.pos + 13)
        if end_log_pos:
            struct.pack_into("<I", out, later.pos + 13, end_log_pos - by)
            struct.pack_into("<I", out, later.end - 4, zlib.crc32(out[later.pos : later.end - 4]))
    return bytes(out)


def events_stderr(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`relaydeck events --rows PATH` in this process: exit code and stderr."""
    from console.cli import main

    code = main(["events", "--rows", str(path)], out=io.StringIO())
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "type_code",
    [QUERY, TABLE_MAP, WRITE_ROWS_V1, XID, MARIADB_GTID, MARIADB_GTID_LIST, MARIADB_CHECKPOINT],
    ids=["query", "table_map", "rows", "xid", "gtid", "gtid_list", "checkpoint"],
)
def test_a_shortened_event_is_reported_in_the_binlogs_terms_not_pythons(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent], type_code: int, capsys
) -> None:
    ev = first_of(m2_events, type_code)
    body = ev.size - HEADER_LEN - 4
    messages = set()
    for by in sorted({1, 2, 3, 4, 5, 7, 8, 9, 13, body // 2, body - 1, body} - {0}):
        path = write(tmp_path, shortened_at_the_source(m2_bytes, ev, min(by, body)))
        code, err = events_stderr(path, capsys)
        if code == 0:
            continue  # a shorter body can still be a valid one (a statement or a row cut short)
        assert err.count("\n") == 1 and f"{path.name} at position {ev.pos}: " in err, err
        assert not PYTHON_PHRASING.search(err), err
        messages.add(err)
    assert messages, "no shortening of the event was found bad"


def test_a_field_past_the_end_says_how_many_bytes_it_needs_where_and_how_many_there_are() -> None:
    from engine.binlog.primitives import failure_text, need

    with pytest.raises(struct.error) as short:
        struct.unpack_from("<I", b"\0" * 10, 8)
    assert failure_text(short.value) == "event truncated: needs 4 bytes at offset 8 for a field, has 2"
    with pytest.raises(IndexError) as index:
        b"abc"[7]  # noqa: B018
    assert failure_text(index.value, 3) == "event truncated: a field runs past the end of the 3-byte body"
    with pytest.raises(
        ValueError, match=r"^event truncated: needs 4 bytes at offset 9 for a DECIMAL value, has 0$"
    ):
        need(b"abcdef", 9, 4, "a DECIMAL value")  # past the end already: never "-3 left"
    with pytest.raises(ValueError, match="negative length"):
        need(b"abcdef", 2, -1, "a string")


def test_a_row_image_cut_inside_a_value_names_the_event_without_pythons_words(
    tmp_path: Path, m2_bytes: bytes, m2_events: list[RawEvent]
) -> None:
    # As a DBA sees it: a rows event whose last row stops inside its values, read with --rows.
    ev = pick(m2_events, "rows")
    path = write(tmp_path, shortened_at_the_source(m2_bytes, ev, 3))
    line = assert_one_line_error(run_events("--rows", path), path, ev.pos)
    assert not PYTHON_PHRASING.search(line), line
    assert "malformed" in line or "truncated" in line
