"""Decompression bombs: compressed events whose data inflates to far more than they declare, or
whose declaration is impossible, end in one clean error naming file and position, within seconds
and in bounded memory.

The bombs are real events of the bundled logs (a MariaDB 10.11 Write_rows / Query event, MySQL
8.0's Transaction_payload) recompressed around zeros, which zlib and ZSTD shrink the most: about
1 MB of zlib data inflates to 1 GiB. `relaydeck events --json --rows` and `relaydeck replay` run in
a subprocess under a 1 GiB address-space limit, and the peak resident memory of that very process
is read from wait4(). Bombs put in the middle of the capture's channel m2 also show the slave
at the stop (exactly the transactions before the bombed one) and a rerun, once the file is
repaired, reaching the capture's expected tables.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard

from engine.binlog.constants import EventType
from engine.binlog.events.compression import MAX_UNCOMPRESSED
from engine.binlog.writer import packed_int
from engine.replay import ChannelSpec, Replay
from engine.repository import ChannelStatus, Repository
from engine.slave.database import Slave
from engine.slave.export import export_csv

from .conftest import MULTISOURCE, replay_argv
from .test_bad_input import Run, assert_one_line_error
from .test_decoder import SHOP, first_of, raw_events, rebuild
from .test_replay_oracle import assert_tables_equal, expected_tables

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD_LOG = ROOT / "fixtures" / "public-binlogs" / "rmc" / "transaction_compression.000001"
MIB = 1 << 20
ADDRESS_SPACE = 1 << 30  # for `events`; DuckDB's threads reserve more address space than that
REPLAY_ADDRESS_SPACE = 4 << 30
PEAK_RSS_LIMIT = 250 * MIB  # the interpreter and its modules take ~100 MB; every bomb here declares more
TIMEOUT = 60  # a hang fails the test; the time taken is asserted separately
SECONDS_LIMIT = 20  # two shared cores: a 300 MiB confirmation pass takes a few seconds


# The peak RSS must be the command's own. A process forked from this test process starts with
# this process's high-water mark (hundreds of MB late in a whole suite), and exec keeps it; so a
# small launcher forks the command, limits its address space and reports its wait4 figures.
_LAUNCHER = """
import os, resource, sys
limit, report, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


@dataclass(frozen=True)
class Measured:
    run: Run
    peak_rss: int
    seconds: float


def run_measured(tmp_path: Path, *args: str | Path) -> Measured:
    """`relaydeck ARGS` in a fresh process; the peak RSS of that process alone (wait4)."""
    out, err, report = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "usage"
    report.unlink(missing_ok=True)
    limit = REPLAY_ADDRESS_SPACE if args[0] == "replay" else ADDRESS_SPACE
    command = [sys.executable, "-m", "console.cli", *map(str, args)]
    started = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        launcher = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, str(limit), str(report), *command],
            cwd=ROOT,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            launcher.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
            pytest.fail(f"relaydeck {args} still running after {TIMEOUT} s")
    seconds = time.monotonic() - started
    returncode, max_rss_kib = map(int, report.read_text().split())
    run = Run(
        returncode,
        out.read_bytes().decode("utf-8", "backslashreplace"),
        err.read_bytes().decode("utf-8", "backslashreplace"),
    )
    return Measured(run, max_rss_kib * 1024, seconds)


# ---------------------------------------------------------------------------
# Compressed zeros, made once per size
# ---------------------------------------------------------------------------


@functools.cache
def zlib_zeros(size: int) -> bytes:
    deflater = zlib.compressobj(9)
    block = bytes(MIB)
    parts = [deflater.compress(block) for _ in range(size // MIB)]
    return b"".join([*parts, deflater.flush()])


@functools.cache
def zstd_zeros(size: int) -> bytes:
    """A ZSTD frame of zeros that does not state its own size (as a streaming writer leaves it)."""
    compressor = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    block = bytes(MIB)
    parts = [compressor.compress(block) for _ in range(size // MIB)]
    return b"".join([*parts, compressor.flush()])


def mariadb_record(declared: int, stream: bytes, length_bytes: int = 4) -> bytes:
    return bytes([0x80 | length_bytes]) + declared.to_bytes(length_bytes, "big") + stream


# ---------------------------------------------------------------------------
# Bomb files
# ---------------------------------------------------------------------------


def write_log(path: Path, events: list[bytes]) -> Path:
    path.write_bytes(b"\xfebin" + b"".join(events))
    return path


def zlib_rows_bomb(path: Path, declared: int, stream: bytes) -> tuple[Path, int]:
    """The shop log's format description, a table map and a Write_rows_compressed_v1 carrying
    `stream` as its row images; returns the file and the bomb's position."""
    events = raw_events(SHOP)
    fde, table_map = events[0][1], first_of(events, EventType.TABLE_MAP)
    rows = next(raw for t, raw in events if t == EventType.WRITE_ROWS_V1 and raw[19:25] == table_map[19:25])
    plain_part = 19 + 8 + 1 + (rows[27] + 7) // 8  # table id, flags, width (one byte), bitmap
    bomb = rebuild(
        rows, EventType.WRITE_ROWS_COMPRESSED_V1, rows[19:plain_part] + mariadb_record(declared, stream)
    )
    return write_log(path, [fde, table_map, bomb]), 4 + len(fde) + len(table_map)


def zlib_query_bomb(path: Path, declared: int, stream: bytes) -> tuple[Path, int]:
    events = raw_events(SHOP)
    fde = events[0][1]
    plain = next(raw for t, raw in events if t == EventType.QUERY and b"CREATE TABLE" in raw)
    status_len = struct.unpack_from("<H", plain, 19 + 11)[0]
    split = 19 + 13 + status_len + plain[19 + 8] + 1  # post-header, status, database, NUL
    bomb = rebuild(plain, EventType.QUERY_COMPRESSED, plain[19:split] + mariadb_record(declared, stream))
    return write_log(path, [fde, bomb]), 4 + len(fde)


def _payload_field(field_type: int, value: int) -> bytes:
    packed = packed_int(value)
    return bytes((field_type,)) + packed_int(len(packed)) + packed


def zstd_payload_bomb(path: Path, declared: int, frame: bytes) -> tuple[Path, int]:
    """MySQL 8.0's log up to its Transaction_payload, which is replaced by one carrying `frame`."""
    events = raw_events(PAYLOAD_LOG)
    head = [raw for t, raw in events[: next(i for i, (t, _) in enumerate(events) if t == 40)]]
    payload = next(raw for t, raw in events if t == 40)
    body = b"".join(
        (
            _payload_field(2, 0),  # compression type: ZSTD
            _payload_field(3, declared),  # uncompressed size
            _payload_field(1, len(frame)),  # payload size
            b"\x00",  # end of the header fields
            frame,
        )
    )
    return write_log(path, [*head, rebuild(payload, body=body)]), 4 + sum(map(len, head))


def zstd_frame_claiming(size: int) -> bytes:
    """A small ZSTD frame whose header's content size field is rewritten to `size`."""
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(bytes(MIB)))
    descriptor = frame[4]
    assert descriptor >> 6 == 2 and descriptor & 0x20, "expected a single-segment frame with a 4-byte size"
    frame[5:9] = size.to_bytes(4, "little")
    assert zstandard.frame_content_size(bytes(frame)) == size
    return bytes(frame)


# ---------------------------------------------------------------------------
# The contract
# ---------------------------------------------------------------------------


def assert_clean_bounded_error(measured: Measured, path: Path, pos: int, words: str) -> None:
    line = assert_one_line_error(measured.run, path, pos)
    assert words in line, line
    assert measured.peak_rss < PEAK_RSS_LIMIT, f"peak RSS {measured.peak_rss / MIB:.0f} MiB: {line}"
    assert measured.seconds < SECONDS_LIMIT, f"{measured.seconds:.1f} s: {line}"


ZLIB_BOMBS = {
    # a 1 MB relay file: 1 GiB of zeros behind a small declaration
    "declares_1000_bytes_inflates_to_1GiB": (1000, 1 << 30, "inflates past the 1000 bytes declared"),
    # a large declaration within the limit, which must be confirmed before it is allocated
    "declares_300MiB_inflates_to_1GiB": (300 * MIB, 1 << 30, f"inflates past the {300 * MIB} bytes declared"),
    # padded after the stream's end (zlib ignores it), so that the declaration looks possible
    "declares_300MiB_holds_200MiB": (
        300 * MIB,
        200 * MIB,
        f"inflates to {200 * MIB} bytes, {300 * MIB} declared",
    ),
    "declares_more_than_the_server_limit": (0xFFFF_FFFF, 1 << 30, "over max_allowed_packet's limit"),
    "declares_more_than_zlib_can_hold": (1 << 30, 64 * MIB, "bytes of zlib data can hold"),
}


@pytest.mark.parametrize("case", list(ZLIB_BOMBS))
def test_a_zlib_rows_bomb_is_a_clean_error_in_bounded_memory(tmp_path: Path, case: str) -> None:
    declared, inflated, words = ZLIB_BOMBS[case]
    stream = zlib_zeros(inflated)
    if case == "declares_300MiB_holds_200MiB":
        stream += bytes(declared // 1000 - len(stream))
    path, pos = zlib_rows_bomb(tmp_path / "relay-bin-m2.000001", declared, stream)
    measured = run_measured(tmp_path, "events", "--json", "--rows", path)
    assert_clean_bounded_error(measured, path, pos, words)


def test_the_1GiB_zlib_bomb_fits_a_1MB_relay_file(tmp_path: Path) -> None:
    path, _ = zlib_rows_bomb(tmp_path / "relay-bin-m2.000001", 1000, zlib_zeros(1 << 30))
    assert path.stat().st_size < 1_100_000


def test_a_zlib_query_bomb_is_a_clean_error_in_bounded_memory(tmp_path: Path) -> None:
    path, pos = zlib_query_bomb(tmp_path / "relay-bin-m2.000001", 1000, zlib_zeros(1 << 30))
    measured = run_measured(tmp_path, "events", "--json", "--rows", path)
    assert_clean_bounded_error(measured, path, pos, "inflates past the 1000 bytes declared")


ZSTD_BOMBS = {
    "declares_1000_bytes_inflates_to_1GiB": (
        1000,
        lambda: zstd_zeros(1 << 30),
        "inflates past the 1000 bytes",
    ),
    "declares_300MiB_inflates_to_1GiB": (
        300 * MIB,
        lambda: zstd_zeros(1 << 30),
        f"inflates past the {300 * MIB} bytes declared",
    ),
    "declares_more_than_the_server_limit": (
        MAX_UNCOMPRESSED + 1,
        lambda: zstd_zeros(1 << 30),
        "over max_allowed_packet's limit",
    ),
    "frame_claims_4GiB": (MIB, lambda: zstd_frame_claiming(0xFFFF_FFF0), "frame declares 4294967280 bytes"),
}


@pytest.mark.parametrize("case", list(ZSTD_BOMBS))
def test_a_zstd_payload_bomb_is_a_clean_error_in_bounded_memory(tmp_path: Path, case: str) -> None:
    declared, frame, words = ZSTD_BOMBS[case]
    path, pos = zstd_payload_bomb(tmp_path / "binlog.000001", declared, frame())
    measured = run_measured(tmp_path, "events", "--json", "--rows", path)
    assert_clean_bounded_error(measured, path, pos, words)


def test_the_1GiB_zstd_bomb_is_a_few_kilobytes(tmp_path: Path) -> None:
    path, _ = zstd_payload_bomb(tmp_path / "binlog.000001", 1000, zstd_zeros(1 << 30))
    assert path.stat().st_size < 100_000


@pytest.mark.parametrize("kind", ["zlib", "zstd"])
def test_replaying_a_bomb_is_a_clean_error_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    relay = tmp_path / "relay"
    relay.mkdir()
    if kind == "zlib":
        path, pos = zlib_rows_bomb(relay / "relay-bin-m2.000001", 300 * MIB, zlib_zeros(1 << 30))
    else:
        path, pos = zstd_payload_bomb(relay / "relay-bin-m2.000001", 300 * MIB, zstd_zeros(1 << 30))
    index = relay / "relay-bin-m2.index"
    index.write_text(f"{path}\n")
    slave, repository = tmp_path / "slave.duckdb", tmp_path / "repository.sqlite"
    measured = run_measured(
        tmp_path, "replay", "--slave", slave, "--repository", repository, "--channel", f"m2={index}"
    )
    assert_clean_bounded_error(measured, path, pos, f"inflates past the {300 * MIB} bytes declared")


# ---------------------------------------------------------------------------
# A bomb in the middle of the bundled capture: the stop, the slave at the stop, the rerun
# ---------------------------------------------------------------------------

M2_FILES = ("relay-bin-m2.000001", "relay-bin-m2.000002")
BOMBED_FILE = "relay-bin-m2.000002"
# A replay of the capture's m2 up to its middle peaks at ~255 MiB (DuckDB, Arrow, the interpreter);
# the bomb may add its 1 MiB steps, never a buffer of the size it inflates to.
BOMB_RSS_MARGIN = 64 * MIB


@dataclass(frozen=True)
class BombSite:
    transaction_pos: int  # relay position of the bombed transaction's GTID event
    pos: int  # relay position of the bomb, the transaction's second rows event
    images: int  # bytes of row images the original event carried


def m2_relay_copy(folder: Path) -> Path:
    """Channel m2 of the MariaDB 10.11 capture, copied with its index; returns the index."""
    folder.mkdir()
    for name in (*M2_FILES, "relay-bin-m2.index"):
        shutil.copyfile(MULTISOURCE / "relay" / name, folder / name)
    return folder / "relay-bin-m2.index"


def _with_source_end(event: bytes, end_log_pos: int) -> bytes:
    head = bytearray(event[:19])
    struct.pack_into("<I", head, 13, end_log_pos)
    body = event[19:-4]
    return bytes(head) + body + struct.pack("<I", zlib.crc32(bytes(head) + body))


def compress_middle_rows_event(path: Path, record: Callable[[bytes], bytes]) -> BombSite:
    """Rewrites `path` with the second rows event of the first transaction past its middle whose
    second rows event is an insert (here: an order, then its order lines) as a
    Write_rows_compressed_v1 carrying `record(the original row images)`. The source positions
    (end_log_pos) of that event and every later one move by its growth, as the source would have
    logged them."""
    events = raw_events(path)
    offsets = [4 + sum(len(raw) for _, raw in events[:i]) for i in range(len(events))]
    middle = path.stat().st_size // 2
    rows_types = (EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_V1)
    gtid_index = rows_index = None
    rows_seen = 0
    for i, (type_code, _) in enumerate(events):
        if type_code == EventType.MARIADB_GTID:
            gtid_index, rows_seen = i, 0
        elif type_code in rows_types:
            rows_seen += 1
            if rows_seen == 2 and type_code == EventType.WRITE_ROWS_V1 and offsets[i] > middle:
                rows_index = i
                break
    assert gtid_index is not None and rows_index is not None, "no such transaction past the middle"
    rows = events[rows_index][1]
    plain_part = 19 + 8 + 1 + (rows[27] + 7) // 8  # table id, flags, width (one byte), bitmap
    images = rows[plain_part:-4]
    replaced = rebuild(rows, EventType.WRITE_ROWS_COMPRESSED_V1, rows[19:plain_part] + record(images))
    growth = len(replaced) - len(rows)
    rewritten = [raw for _, raw in events[:rows_index]]
    for raw in [replaced, *(raw for _, raw in events[rows_index + 1 :])]:
        end_log_pos = struct.unpack_from("<I", raw, 13)[0]
        rewritten.append(_with_source_end(raw, end_log_pos + growth) if end_log_pos else raw)
    write_log(path, rewritten)
    return BombSite(offsets[gtid_index], offsets[rows_index], len(images))


def export_tables(slave_path: Path, folder: Path) -> dict[tuple[str, str], Path]:
    """Every user table of the slave, as CSV in the expected tables' format."""
    slave = Slave(slave_path)
    try:
        out = {}
        for schema, table in slave.user_tables():
            path = folder / schema / f"{table}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(export_csv(slave, slave.catalog.get((schema, table))).encode("utf-8"))
            out[(schema, table)] = path
        return out
    finally:
        slave.close()


def m2_status(repository: Path) -> ChannelStatus:
    with Repository(repository) as repo:
        return repo.status("m2")[0]


MIDDLE_BOMBS = {
    # a plausible declaration, the real size of the row images, over a stream of 1 GiB of zeros
    "inflates_past_its_declaration": (
        lambda images: mariadb_record(len(images), zlib_zeros(1 << 30)),
        lambda site: f"inflates past the {site.images} bytes declared",
    ),
    # the real row images, declared as 4 GiB
    "declares_an_impossible_size": (
        lambda images: mariadb_record(0xFFFF_FFFF, zlib.compress(images)),
        lambda site: "over max_allowed_packet's limit",
    ),
}


APPLIERS = {"single": (), "workers_4": ("--workers", "4")}


@pytest.mark.parametrize(
    ("case", "applier"),
    [(case, "single") for case in MIDDLE_BOMBS] + [("inflates_past_its_declaration", "workers_4")],
)
def test_a_bomb_in_the_capture_stops_at_the_last_whole_transaction_and_a_rerun_is_exact(
    tmp_path: Path, case: str, applier: str
) -> None:
    record, words = MIDDLE_BOMBS[case]
    options = APPLIERS[applier]
    index = m2_relay_copy(tmp_path / "relay")
    bombed = index.parent / BOMBED_FILE
    site = compress_middle_rows_event(bombed, record)

    # What the slave must hold at the stop, and the memory that costs: the untouched log replayed
    # up to the end of the transaction before the bombed one.
    reference = tmp_path / "reference"
    reference.mkdir()
    untouched = MULTISOURCE / "relay" / "relay-bin-m2.index"
    baseline = run_measured(
        reference,
        "replay",
        "--slave",
        reference / "slave.duckdb",
        "--repository",
        reference / "repository.sqlite",
        "--channel",
        f"m2={untouched}",
        "--until-pos",
        f"{BOMBED_FILE}:{site.transaction_pos}",
    )
    assert baseline.run.returncode == 0 and "stopped by UNTIL condition" in baseline.run.stdout, baseline.run
    expected_at_stop = export_tables(reference / "slave.duckdb", reference / "tables")

    slave, repository = tmp_path / "slave.duckdb", tmp_path / "repository.sqlite"
    measured = run_measured(
        tmp_path, "replay", "--slave", slave, "--repository", repository, "--channel", f"m2={index}", *options
    )
    line = assert_one_line_error(measured.run, bombed, site.pos)
    assert words(site) in line, line
    assert measured.peak_rss < baseline.peak_rss + BOMB_RSS_MARGIN, (
        f"peak RSS {measured.peak_rss / MIB:.0f} MiB, {baseline.peak_rss / MIB:.0f} MiB without the bomb"
    )
    assert measured.seconds < SECONDS_LIMIT, f"{measured.seconds:.1f} s: {line}"

    # Nothing of the bombed transaction, whose first insert precedes the bomb, nor of any after it.
    assert_tables_equal(slave, expected_at_stop)
    at_stop, wanted = m2_status(repository), m2_status(reference / "repository.sqlite")
    assert at_stop.executed_gtid_set == wanted.executed_gtid_set
    assert (at_stop.relay_log_file, at_stop.relay_log_pos) == (BOMBED_FILE, site.transaction_pos)
    assert at_stop.last_error_number != 0 and words(site) in at_stop.last_error_message

    # Repaired: the original file back, the same command applies the rest, and only the rest.
    shutil.copyfile(MULTISOURCE / "relay" / BOMBED_FILE, bombed)
    rerun = subprocess.run(
        replay_argv(slave, repository, f"m2={index}", *options),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert rerun.returncode == 0 and rerun.stderr == "", rerun.stderr
    applied_before = int(at_stop.executed_gtid_set.rsplit("-", 1)[1])  # MariaDB's D-S-N: 1..N applied
    assert f" {303 - applied_before} transactions applied (0 already applied)" in rerun.stdout, rerun.stdout
    assert_tables_equal(slave, expected_tables(schemas={"shop"}))
    repaired = m2_status(repository)
    assert repaired.executed_gtid_set == "2-2-303" and repaired.last_error_number == 0


def test_the_middle_event_compressed_honestly_replays_to_the_expected_tables(tmp_path: Path) -> None:
    # The control for the bombs above: the rewritten event, its record sound, replays exactly, so
    # a stop there is the bomb's doing.
    index = m2_relay_copy(tmp_path / "relay")
    compress_middle_rows_event(
        index.parent / BOMBED_FILE, lambda images: mariadb_record(len(images), zlib.compress(images))
    )
    slave = tmp_path / "slave.duckdb"
    outcomes = Replay(slave, tmp_path / "repository.sqlite", [ChannelSpec("m2", index)]).run()
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].stats.transactions == 303
    assert_tables_equal(slave, expected_tables(schemas={"shop"}))
