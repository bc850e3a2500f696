"""`relaydeck events --jobs N`: the listing formatted by N processes is the serial listing, byte
for byte, errors included.

Segments are made a few transactions small here, so that even the small public binlogs are cut
into several and every boundary case (a table map from an earlier segment, a gap or bad bytes in
a middle segment, a start position inside a transaction) falls between processes.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

import engine.listing as listing
from console.cli import main
from engine.generate import generate
from engine.listing import ListingOptions
from engine.listing.task import ListingTask
from engine.relaylog.index import read_index
from engine.relaylog.segments import plan_segments

from .conftest import MULTISOURCE, ROOT

RELAY = MULTISOURCE / "relay"
PUBLIC = ROOT / "fixtures" / "public-binlogs"
MODES = {"text": [], "json": ["--json"], "rows": ["--rows"], "rows-json": ["--rows", "--json"]}
HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, size, log_pos, flags
FORMAT_DESCRIPTION, TABLE_MAP, MYSQL_GTID, MARIADB_GTID = 15, 19, 33, 162


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Segments of 3 transactions (or 16 KiB); the executors the listing made, to look at."""
    monkeypatch.setattr(listing, "SEGMENT_TRANSACTIONS", 3)
    monkeypatch.setattr(listing, "SEGMENT_BYTES", 16 << 10)
    made: list[object] = []
    make = listing.make_executor

    def recording(kind: str, workers: int) -> object:
        executor = make(kind, workers)
        made.append(executor)
        return executor

    monkeypatch.setattr(listing, "make_executor", recording)
    return made


def run_events(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """(exit code, output, error output) of `relaydeck events ARGS`, run in this process."""
    capsys.readouterr()
    out = io.StringIO()
    code = main(["events", *map(str, args)], out)
    return code, out.getvalue(), capsys.readouterr().err


def assert_same_as_serial(
    capsys: pytest.CaptureFixture[str],
    made: list[object],
    args: list[str | Path],
    jobs: tuple[int, ...] = (2,),
) -> tuple[int, str, str]:
    serial = run_events(capsys, "--jobs", "1", *args)
    for n in jobs:
        before = len(made)
        assert run_events(capsys, "--jobs", str(n), *args) == serial, f"--jobs {n} {args}"
        shared = made[before:]
        if shared:  # a stream of one segment is listed serially, without processes
            assert shared[0].segments_done >= 1  # type: ignore[attr-defined]
    return serial


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("channel", ["m1", "m2"])
def test_the_bundled_capture_lists_the_same_with_2_and_3_processes(
    capsys: pytest.CaptureFixture[str], small_segments: list[object], channel: str, mode: str
) -> None:
    listing.SEGMENT_TRANSACTIONS = 20  # type: ignore[attr-defined]  # the capture holds 6 MB
    code, out, err = assert_same_as_serial(
        capsys, small_segments, [*MODES[mode], RELAY / f"relay-bin-{channel}.index"], jobs=(2, 3)
    )
    assert code == 0 and err == "" and out.count("\n") > 1000
    assert small_segments and small_segments[-1].segments_done > 10  # type: ignore[attr-defined]


def public_binlogs() -> list[Path]:
    return sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", public_binlogs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_public_binlog_lists_the_same_in_parallel(
    capsys: pytest.CaptureFixture[str], small_segments: list[object], path: Path
) -> None:
    # bad ones too (a truncated event, a corrupt relay log, a gzip file): the same lines, then the
    # same error
    for mode in MODES.values():
        assert_same_as_serial(capsys, small_segments, [*mode, path])


def test_all_public_binlogs_of_a_source_given_together(
    capsys: pytest.CaptureFixture[str], small_segments: list[object]
) -> None:
    # several inputs in one listing: table maps and the line count carry across them
    for folder in ("canal", "mdbpoc", "goparse", "apecloud"):
        files = sorted((PUBLIC / folder).iterdir())
        assert_same_as_serial(capsys, small_segments, ["--rows", "--json", *files])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated log of every kind of event the generator writes (DDL, statements, rows)."""
    out = tmp_path_factory.mktemp("mixed")
    return generate("mixed", 7, out, 1.0).index_file


@pytest.mark.parametrize("mode", list(MODES))
def test_a_generated_log_lists_the_same_in_parallel(
    capsys: pytest.CaptureFixture[str], small_segments: list[object], generated: Path, mode: str
) -> None:
    code, out, err = assert_same_as_serial(capsys, small_segments, [*MODES[mode], generated], jobs=(2, 3))
    assert code == 0 and err == ""
    assert small_segments[-1].segments_done > 10  # type: ignore[attr-defined]


def test_a_start_position_inside_a_transaction_and_a_limit(
    capsys: pytest.CaptureFixture[str], small_segments: list[object]
) -> None:
    # a relay file given alone: --from-pos is a position in it
    first = max(read_index(RELAY / "relay-bin-m1.index").files, key=lambda p: p.stat().st_size)
    inside = [pos for pos, code, _, _ in events_of(first.read_bytes()) if code == TABLE_MAP][3]
    for args in (
        ["--from-pos", str(inside)],
        ["--limit", "5000"],
        ["--from-pos", str(inside), "--limit", "7"],
    ):
        code, out, _ = assert_same_as_serial(capsys, small_segments, ["--rows", *args, first])
        assert code == 0
    # the listing from inside a transaction starts at that event
    code, out, _ = run_events(capsys, "--jobs", "2", "--rows", "--from-pos", str(inside), first)
    assert out.splitlines()[1].split("\t")[:3] == [first.name, str(inside), "Table_map"]
    assert small_segments[-1].segments_done > 10  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# Bad input and gaps: the same lines, then the same one-line error
# ---------------------------------------------------------------------------


def events_of(data: bytes | bytearray) -> list[tuple[int, int, int, int]]:
    """(pos, type, size, log_pos) of every whole event."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        _, code, _, size, log_pos, _ = HEADER.unpack_from(data, pos)
        if size < 19 or pos + size > len(data):
            break
        out.append((pos, code, size, log_pos))
        pos += size
    return out


def copy_channel(folder: Path, channel: str = "m1") -> Path:
    folder.mkdir()
    for path in RELAY.glob(f"relay-bin-{channel}.*"):
        shutil.copyfile(path, folder / path.name)
    return folder / f"relay-bin-{channel}.index"


def middle_file(index: Path) -> Path:
    """The largest relay file (m1: the fifth of seven holding transactions)."""
    return max(read_index(index).files, key=lambda p: p.stat().st_size)


def damage_by_flipping_a_rows_event_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rows = [(pos, size) for pos, code, size, _ in events_of(data) if code in (23, 24, 25, 30, 31, 32)]
    pos, size = rows[len(rows) // 2]
    data[pos + size - 8] ^= 0x10  # the CRC32 no longer matches
    path.write_bytes(bytes(data))


def damage_by_cutting_a_transaction_out(path: Path) -> None:
    data = path.read_bytes()
    starts = [pos for pos, code, _, _ in events_of(data) if code == MARIADB_GTID]
    middle = len(starts) // 2
    path.write_bytes(data[: starts[middle]] + data[starts[middle + 1] :])


def damage_by_truncating(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size * 2 // 3)


def damage_by_a_bad_gtid_sequence(path: Path) -> None:
    data = bytearray(path.read_bytes())
    starts = [(pos, size) for pos, code, size, _ in events_of(data) if code == MARIADB_GTID]
    pos, size = starts[len(starts) // 2]
    seq = struct.unpack_from("<Q", data, pos + 19)[0]
    struct.pack_into("<Q", data, pos + 19, seq + 5)
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos : pos + size - 4]))
    path.write_bytes(bytes(data))


def damage_by_flipping_a_byte_of_the_copied_format_description(path: Path) -> None:
    # the source's FORMAT_DESCRIPTION after the relay file's own: the planner's walk of the file's
    # headers meets it before every cut, so each segment's reader walks the file and reports it
    data = bytearray(path.read_bytes())
    pos, size = [(pos, size) for pos, code, size, _ in events_of(data) if code == FORMAT_DESCRIPTION][1]
    data[pos + size - 8] ^= 0x10  # the CRC32 no longer matches
    path.write_bytes(bytes(data))


def damage_by_overwriting_a_file(index: Path) -> None:
    middle_file(index).write_bytes(b"not a relay log at all")


DAMAGES = {
    "flipped bit": lambda index: damage_by_flipping_a_rows_event_byte(middle_file(index)),
    "transaction cut out": lambda index: damage_by_cutting_a_transaction_out(middle_file(index)),
    "truncated middle file": lambda index: damage_by_truncating(middle_file(index)),
    "GTID sequence jumps": lambda index: damage_by_a_bad_gtid_sequence(middle_file(index)),
    "a middle file that is no binlog": damage_by_overwriting_a_file,
    "copied format description fails its check": lambda index: (
        damage_by_flipping_a_byte_of_the_copied_format_description(middle_file(index))
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_bad_input_gives_the_same_lines_and_error_in_parallel(
    capsys: pytest.CaptureFixture[str], small_segments: list[object], tmp_path: Path, damage: str
) -> None:
    listing.SEGMENT_TRANSACTIONS = 50  # type: ignore[attr-defined]
    index = copy_channel(tmp_path / "relay")
    DAMAGES[damage](index)
    for mode in (["--rows"], ["--json"]):
        code, out, err = assert_same_as_serial(capsys, small_segments, [*mode, index], jobs=(2, 3))
        assert code == 1 and err.startswith("relaydeck: relay-bin-m1.") and err.count("\n") == 1, err
        assert " at position " in err
        assert out.count("\n") > 1000  # the error comes after what precedes it
        assert small_segments[-1].segments_done > 5  # type: ignore[attr-defined]


def without_repeated_table_maps(data: bytes) -> bytes:
    """The relay file without the table maps that map a table id again, the source positions
    after each removal moved back and the checksums written again: valid input whose rows events
    use the table map of an earlier transaction."""
    out = bytearray(data[:4])
    shift, mapped = 0, set()
    for pos, code, size, log_pos in events_of(data):
        event = bytearray(data[pos : pos + size])
        checksummed = zlib.crc32(event[:-4]) == struct.unpack_from("<I", event, size - 4)[0]
        if code == TABLE_MAP:
            table_id = int.from_bytes(event[19:25], "little")
            if table_id in mapped:
                shift += size
                continue
            mapped.add(table_id)
        if shift and log_pos >= shift:
            struct.pack_into("<I", event, 13, log_pos - shift)
            if checksummed:
                struct.pack_into("<I", event, size - 4, zlib.crc32(event[:-4]))
        out += event
    assert shift, "no table map removed"
    return bytes(out)


def test_rows_events_using_an_earlier_segments_table_map(
    capsys: pytest.CaptureFixture[str],
    small_segments: list[object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = tmp_path / "oltp"
    index = generate("oltp", 3, source, 0.3).index_file
    files = read_index(index).files
    busiest = max(files, key=lambda p: p.stat().st_size)
    busiest.write_bytes(without_repeated_table_maps(busiest.read_bytes()))
    resumed = []
    resume = listing._resumed
    monkeypatch.setattr(listing, "_resumed", lambda *args: resumed.append(args) or resume(*args))
    for mode in (["--rows"], ["--rows", "--json"]):
        code, out, err = assert_same_as_serial(capsys, small_segments, [*mode, busiest])
        # the serial listing took over at the segment that needs a map from before it
        assert resumed and resumed.pop()[2][0] == 0
        assert code == 0, err
        # the serial listing decodes them with the earlier map, and so does the parallel one
        assert "no table map" not in out
        assert out.count("### UPDATE" if mode == ["--rows"] else '"before"') > 20


# ---------------------------------------------------------------------------
# The task's Arrow form (what a Spark task hands back)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("options", [ListingOptions(), ListingOptions(as_json=True, rows=True)])
def test_a_listed_segment_comes_back_from_arrow_as_it_was(options: ListingOptions) -> None:
    logs = read_index(RELAY / "relay-bin-m2.index")
    task = ListingTask(options)
    segments = list(plan_segments(logs, None, 4, 20))
    assert len(segments) > 5
    for segment in segments[:3] + segments[-2:]:
        listed = task.run(segment)
        back = task.from_arrow(task.to_arrow(listed), segment)
        assert back == listed
        assert listed.text and listed.continuity is not None


def test_text_that_utf8_cannot_carry_comes_back_from_arrow_too() -> None:
    logs = read_index(RELAY / "relay-bin-m2.index")
    segment = next(iter(plan_segments(logs, None, 4, 20)))
    task = ListingTask(ListingOptions())
    listed = task.run(segment)
    listed.text += "a statement's bytes kept as surrogates: \udcc0\udcff\n"
    assert task.from_arrow(task.to_arrow(listed), segment) == listed


# ---------------------------------------------------------------------------
# A reader that goes away
# ---------------------------------------------------------------------------


def processes_naming(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_the_worker_processes_end_with_a_listing_ended_by_its_reader(tmp_path: Path) -> None:
    # `relaydeck events … | head`: SIGPIPE ends the listing at once; its workers must not stay
    # behind, blocked on results nobody reads
    index = copy_channel(tmp_path / "relay")
    listing_process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "events", "--rows", "--jobs", "2", str(index)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert listing_process.stdout is not None
    assert listing_process.stdout.readline().startswith(b"Log_name")
    listing_process.stdout.close()
    assert listing_process.wait(timeout=60) != 0
    deadline = time.monotonic() + 10
    while processes_naming(str(index)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = processes_naming(str(index))
    for pid in left:  # not left running by a failing test either
        os.kill(pid, signal.SIGKILL)
    assert left == []
