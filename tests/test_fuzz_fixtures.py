"""Property: mutated real relay logs decode completely or fail with one located BinlogError.

Hypothesis damages real fixture files (bit flips, overwritten bytes, cuts, duplicated and inserted
ranges, rewritten 32-bit fields), optionally recomputing every CRC32 so the damage gets past the
checksums into the event and row decoders, then walks every event in process the way
`relaydeck events --rows` does. The only acceptable failure is an engine.errors.BinlogError
naming the file and an event offset, in one line; anything else (IndexError, struct.error,
TypeError, MemoryError, RecursionError, a hang, memory growing with a claimed length) fails.

A handful of mutated files also go through the CLI in a subprocess, to check the one-line stderr
contract end to end against what the in-process walk reported.

Engine bugs this test has found are kept in FOUND_BUGS as reproducers (mutations of the seeds):
they are examples of the property and regression tests of their own.
Run with RELAYDECK_FUZZ_EXAMPLES=5000 for a longer search.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import struct
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st

from engine.binlog.columns import decode_rows_event
from engine.binlog.events import RowsEvent, TableMap
from engine.binlog.reader import BinlogFile
from engine.errors import BinlogError, RelaydeckError

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = ROOT / "fixtures" / "public-binlogs"
RELAY = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"
PYTHON = sys.executable

EXAMPLES = int(os.environ.get("RELAYDECK_FUZZ_EXAMPLES", "1000"))
CLI_EXAMPLES = int(os.environ.get("RELAYDECK_FUZZ_CLI_EXAMPLES", "10"))
TIME_LIMIT = 5  # seconds per decode; the seeds are ≤ 40 KB and decode in milliseconds
PEAK_LIMIT = 256 << 20  # bytes of Python allocations per decode
CLI_TIMEOUT = 60
CLI_MEMORY_LIMIT = 1 << 30

HEADER = struct.Struct("<IBIIIH")
HEADER_LEN = 19
FORMAT_DESCRIPTION = 15
CRC32_ALG = 1
COLUMN_VECTOR = 242
OLD_TEMPORALS = {7, 11, 12}  # TIMESTAMP, TIME, DATETIME: MariaDB gives them a hires metadata byte


# ---------------------------------------------------------------------------
# Seed files: small real logs of different kinds
# ---------------------------------------------------------------------------


def _raw_events(data: bytes | bytearray) -> tuple[list[tuple[int, int]], int]:
    """(pos, size) of each event whose header and length fit, and where that framing stops."""
    pos, events = 4, []
    while pos + HEADER_LEN <= len(data):
        size = HEADER.unpack_from(data, pos)[3]
        if size < HEADER_LEN or pos + size > len(data):
            break
        events.append((pos, size))
        pos += size
    return events, pos


def _cut(data: bytes, limit: int) -> bytes:
    end = 4
    for pos, size in _raw_events(data)[0]:
        if pos + size > limit:
            break
        end = pos + size
    return data[:end]


SEED_FILES: dict[str, tuple[Path, int | None]] = {
    # name: (file, cut to about this many bytes at an event boundary)
    "relay-bin-m2.000002": (RELAY / "relay-bin-m2.000002", 20_000),  # MariaDB 10.11 relay log, CRC32
    "json.binlog.000001": (PUBLIC / "rmc" / "json.binlog.000001", None),  # MySQL 8.0 JSON, partial updates
    "transaction_compression.000001": (PUBLIC / "rmc" / "transaction_compression.000001", None),  # ZSTD
    "mariadb-bin.000001": (PUBLIC / "rmc" / "mariadb-bin.000001", None),  # MariaDB 10.5 GTIDs, metadata
    "mysql-bin.checksum-none": (PUBLIC / "bcj" / "mysql-bin.checksum-none", None),  # no CRC at all
    "mysql-bin.000012": (PUBLIC / "goparse" / "mysql-bin.000012", 20_000),  # Percona 5.7 sysbench
    "vector.binlog": (PUBLIC / "rmc" / "vector.binlog", None),  # MySQL 9.0 VECTOR columns
    "mysql-enum-string-set.000001": (PUBLIC / "rmc" / "mysql-enum-string-set.000001", None),  # FULL metadata
}
SEEDS = sorted(SEED_FILES)


@cache
def seed_bytes(name: str) -> bytes:
    path, limit = SEED_FILES[name]
    data = path.read_bytes()
    return _cut(data, limit) if limit else data


@cache
def seed_has_crc(name: str) -> bool:
    data = seed_bytes(name)
    pos, size = _raw_events(data)[0][0]
    return data[pos + 4] == FORMAT_DESCRIPTION and data[pos + size - 5] == CRC32_ALG


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------


def _at(offset: int, data: bytearray) -> int:
    return offset % len(data)


@dataclass(frozen=True)
class FlipBit:
    offset: int
    bit: int

    def apply(self, data: bytearray) -> bytearray:
        data[_at(self.offset, data)] ^= 1 << self.bit
        return data


@dataclass(frozen=True)
class Overwrite:
    offset: int
    value: bytes

    def apply(self, data: bytearray) -> bytearray:
        at = _at(self.offset, data)
        data[at : at + len(self.value)] = self.value[: len(data) - at]
        return data


@dataclass(frozen=True)
class SetU32:
    """A 32-bit little-endian field (event_size, log_pos, a length) set to a chosen value."""

    offset: int
    value: int

    def apply(self, data: bytearray) -> bytearray:
        return Overwrite(self.offset, struct.pack("<I", self.value)).apply(data)


@dataclass(frozen=True)
class Truncate:
    offset: int

    def apply(self, data: bytearray) -> bytearray:
        return data[: self.offset % (len(data) + 1)]


@dataclass(frozen=True)
class Duplicate:
    start: int
    length: int
    to: int

    def apply(self, data: bytearray) -> bytearray:
        start = _at(self.start, data)
        chunk = data[start : start + self.length]
        to = _at(self.to, data)
        data[to:to] = chunk
        return data


@dataclass(frozen=True)
class Insert:
    offset: int
    value: bytes

    def apply(self, data: bytearray) -> bytearray:
        at = _at(self.offset, data)
        data[at:at] = self.value
        return data


Mutation = FlipBit | Overwrite | SetU32 | Truncate | Duplicate | Insert


@dataclass(frozen=True)
class Mutated:
    seed: str
    mutations: tuple[Mutation, ...]
    fix_crc: bool = False  # recompute every event's CRC32 after mutating: reach the decoders

    def build(self) -> bytes:
        data = bytearray(seed_bytes(self.seed))
        for mutation in self.mutations:
            if data:
                data = mutation.apply(data)
        if self.fix_crc and seed_has_crc(self.seed):
            for pos, size in _raw_events(data)[0]:
                if size >= HEADER_LEN + 4:
                    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(data[pos : pos + size - 4]))
        return bytes(data)


_offsets = st.integers(min_value=0, max_value=1 << 31)
_interesting_bytes = st.sampled_from([0x00, 0x01, 0x0A, 0x7F, 0x80, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF])
_interesting_u32 = st.sampled_from(
    [0, 1, HEADER_LEN - 1, HEADER_LEN, HEADER_LEN + 4, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
) | st.integers(min_value=0, max_value=0xFFFFFFFF)
_mutation = st.one_of(
    st.builds(FlipBit, _offsets, st.integers(0, 7)),
    st.builds(
        Overwrite, _offsets, st.binary(min_size=1, max_size=16) | _interesting_bytes.map(lambda b: bytes([b]))
    ),
    st.builds(SetU32, _offsets, _interesting_u32),
    st.builds(Truncate, _offsets),
    st.builds(Duplicate, _offsets, st.integers(1, 512), _offsets),
    st.builds(Insert, _offsets, st.binary(min_size=1, max_size=32)),
)
mutated_files = st.builds(
    Mutated,
    seed=st.sampled_from(SEEDS),
    mutations=st.lists(_mutation, min_size=1, max_size=4).map(tuple),
    fix_crc=st.booleans(),
)


# ---------------------------------------------------------------------------
# Engine bugs found by this test (reproducers under /tmp/relaydeck-repros/)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FoundBug:
    reason: str
    reproducer: Mutated
    # (offset, byte) pairs of the unmutated seed the reproducer relies on: a changed fixture
    # must not silently turn a reproducer into a no-op.
    expects: tuple[tuple[int, int], ...] = field(default=())


FOUND_BUGS: dict[str, FoundBug] = {
    "hang_no_columns_width_0": FoundBug(
        "was: a rows event with no columns present (width 0) and row data loops forever in the "
        "compiled row decoder (columns.py RowDecoder: the loop `while pos < end` never advances)",
        Mutated("mysql-bin.checksum-none", (Overwrite(1379, b"\x00"), Truncate(1517))),
        expects=((1379, 9),),  # WRITE_ROWS at 1350: column count 9 at body offset 10
    ),
    "hang_no_columns_bitmap_zero": FoundBug(
        "was: a rows event whose columns-present bitmap is all zero (CRC32 valid) loops forever "
        "in the compiled row decoder: each row consumes 0 bytes",
        Mutated("relay-bin-m2.000002", (Overwrite(2437, b"\x00\x00"), Truncate(2590)), fix_crc=True),
        expects=((2436, 11), (2437, 0xFF), (2438, 0x07)),  # WRITE_ROWS_V1 at 2409: width 11, bitmap ff07
    ),
    "vector_length_not_multiple_of_4": FoundBug(
        "was: a VECTOR value whose length is not a multiple of 4 raises TypeError (memoryview.cast) "
        "out of decode_rows_event; the CLI prints a traceback",
        Mutated("vector.binlog", (Overwrite(1125, b"\x0d"), Truncate(1170)), fix_crc=True),
        expects=((1125, 12),),  # WRITE_ROWS at 1085: vector_column length 12
    ),
    "hires_temporal_meta_over_6": FoundBug(
        "was: a MariaDB hires DATETIME/TIME/TIMESTAMP column with fractional digits > 6 in its "
        "table map raises IndexError while compiling the row decoder (columns.py value_lines)",
        Mutated(
            "relay-bin-m2.000002",
            (Overwrite(2291, b"\x0c"), Overwrite(2304, b"\x09"), Truncate(2590)),
            fix_crc=True,
        ),
        expects=((2291, 18), (2304, 6)),  # TABLE_MAP at 2240: column 6 DATETIME2 with meta 6
    ),
    "line_break_in_table_name": FoundBug(
        "was: error messages embed decoded schema/table names verbatim; a name holding a line "
        "break makes the error (and the CLI's stderr) two lines",
        Mutated(
            "vector.binlog", (Overwrite(1032, b"\n"), Overwrite(1114, b"\x03"), Truncate(1170)), fix_crc=True
        ),
        expects=((1032, ord("d")), (1114, 2)),  # TABLE_MAP at 1004: schema 'dtb'; WRITE_ROWS width 2
    ),
}


def _has_line_break(text: str) -> bool:
    return len(text.splitlines()) > 1 or text.endswith(("\n", "\r"))


# ---------------------------------------------------------------------------
# Decoding everything, in process, as `relaydeck events --rows` does
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    error: BinlogError | None = None  # what the reader reported
    rows_error: tuple[int, str] | None = None  # (event pos, message) of a malformed row image


class _TimeUp(BaseException):
    """Raised by SIGALRM; a BaseException so that no `except Exception` in the engine eats it."""


@contextmanager
def time_and_memory_limits() -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(TIME_LIMIT)
    tracemalloc.start()
    try:
        yield
    except _TimeUp:
        raise AssertionError(f"decoding hung: still running after {TIME_LIMIT} s") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < PEAK_LIMIT, f"decoding allocated {peak / 2**20:.0f} MiB"


def decode_everything(path: Path) -> Outcome:
    """Every event, info() for each, and every rows event decoded against its table map."""
    table_maps: dict[int, TableMap] = {}
    try:
        with BinlogFile(path) as binlog:
            for logged in binlog.events():
                event = logged.event
                event.info()  # the CLI shows it for every event
                if isinstance(event, TableMap):
                    table_maps[event.table_id] = event
                    continue
                if not isinstance(event, RowsEvent) or event.table_id not in table_maps:
                    continue  # the CLI shows "no table map" for the latter, not an error
                table_map = table_maps[event.table_id]
                try:
                    decode_rows_event(event, table_map).rows()
                except ValueError as exc:
                    # decode_rows_event reports malformed row images as ValueError, which the
                    # CLI turns into its one-line error; acceptable only as one line.
                    assert not _has_line_break(str(exc)), f"multi-line row error: {str(exc)!r}"
                    return Outcome(rows_error=(logged.pos, str(exc)))
    except RelaydeckError as exc:
        assert isinstance(exc, BinlogError), f"a RelaydeckError without file and position: {exc}"
        return Outcome(error=exc)
    return Outcome()


_names = count()


def write_mutated(workdir: Path, mutated: Mutated) -> tuple[Path, bytes]:
    # A fresh name per example: never rewrite a file an earlier decode may still have mapped.
    path = workdir / f"{next(_names)}-{mutated.seed}"
    data = mutated.build()
    path.write_bytes(data)
    return path, data


def check_located_error(exc: BinlogError, path: Path, data: bytes) -> None:
    """The error names this file and an offset where an event starts (or where framing breaks)."""
    assert exc.file == path.name, f"error names {exc.file!r}, not {path.name!r}"
    assert not _has_line_break(str(exc)), f"multi-line error: {str(exc)!r}"
    events, stop = _raw_events(data)
    starts = {pos for pos, _ in events} | {0, stop}
    assert exc.pos in starts, f"position {exc.pos} is not where an event starts ({exc})"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutated")


def test_every_seed_decodes_cleanly_before_mutation(workdir: Path) -> None:
    # The control: any error in the property below comes from the mutation, not the seed.
    for name in SEEDS:
        path, _ = write_mutated(workdir, Mutated(name, ()))
        with time_and_memory_limits():
            assert decode_everything(path) == Outcome(), name


def test_the_seeds_cover_checksummed_and_unchecksummed_logs() -> None:
    # Without a CRC-free seed, mutations that are not re-checksummed never reach the decoders.
    kinds = {seed_has_crc(name) for name in SEEDS}
    assert kinds == {True, False}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated=mutated_files)
@example(mutated=FOUND_BUGS["hang_no_columns_width_0"].reproducer)
@example(mutated=FOUND_BUGS["hang_no_columns_bitmap_zero"].reproducer)
@example(mutated=FOUND_BUGS["vector_length_not_multiple_of_4"].reproducer)
@example(mutated=FOUND_BUGS["hires_temporal_meta_over_6"].reproducer)
@example(mutated=FOUND_BUGS["line_break_in_table_name"].reproducer)
def test_mutated_fixture_decodes_or_fails_with_one_located_error(mutated: Mutated, workdir: Path) -> None:
    path, data = write_mutated(workdir, mutated)
    with time_and_memory_limits():
        outcome = decode_everything(path)
    if outcome.error is not None:
        check_located_error(outcome.error, path, data)
        note_event(f"error: {type(outcome.error).__name__}")
    elif outcome.rows_error is not None:
        note_event("error: malformed row image")
    else:
        note_event("decoded completely")


# ---------------------------------------------------------------------------
# The same, end to end through the command line
# ---------------------------------------------------------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY_LIMIT, CLI_MEMORY_LIMIT))


def run_cli(*args: str | Path) -> tuple[int, str]:
    proc = subprocess.run(
        [PYTHON, "-m", "console.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        timeout=CLI_TIMEOUT,
        preexec_fn=_limit_memory,
    )
    return proc.returncode, proc.stderr.decode("utf-8", "backslashreplace")


def check_cli_contract(returncode: int, stderr: str, path: Path, expected: Outcome) -> None:
    assert "Traceback" not in stderr, stderr
    gap = re.fullmatch(r"relaydeck: (.+) at position (\d+): Relay log read failure: [^\n]+\n", stderr)
    if gap is not None:
        # `events` also checks the relay log's continuity (source positions, GTID sequence), which
        # decoding in process does not: a mutation can break it before any event fails to decode
        assert returncode != 0 and gap.group(1) == path.name, stderr
        if expected.error is not None or expected.rows_error is not None:
            pos = expected.error.pos if expected.error is not None else expected.rows_error[0]
            assert int(gap.group(2)) <= pos, (stderr, expected)
        return
    if expected.error is None and expected.rows_error is None:
        assert (returncode, stderr) == (0, ""), f"in process it decoded cleanly; CLI said {stderr!r}"
        return
    pos = expected.error.pos if expected.error is not None else expected.rows_error[0]
    assert returncode != 0
    lines = stderr.splitlines()
    assert len(lines) == 1 and stderr.endswith("\n"), f"not one line: {stderr!r}"
    assert lines[0].startswith(f"relaydeck: {path.name} at position {pos}: "), (lines[0], expected)


JSON_SEED = "json.binlog.000001"


@pytest.mark.parametrize("mode", [["--rows"], ["--json", "--rows"]], ids=["text", "json"])
@settings(max_examples=CLI_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated=mutated_files)
# a byte inserted in the middle: the source positions after it no longer follow on (a gap)
@example(mutated=Mutated("relay-bin-m2.000002", (Insert(19865332, b"\x00"),), fix_crc=True))
def test_mutated_fixture_through_the_cli_keeps_the_one_line_contract(
    mode: list[str], mutated: Mutated, workdir: Path
) -> None:
    path, _ = write_mutated(workdir, mutated)
    with time_and_memory_limits():
        expected = decode_everything(path)
    returncode, stderr = run_cli("events", *mode, path)
    check_cli_contract(returncode, stderr, path, expected)


@pytest.mark.parametrize(
    ("seed", "mode"),
    [
        pytest.param(
            name,
            mode,
            id=f"{name}-{label}",
        )
        for name in SEEDS
        for label, mode in (("text", ["--rows"]), ("json", ["--json", "--rows"]))
    ],
)
def test_seed_through_the_cli_decodes_cleanly(seed: str, mode: list[str], workdir: Path) -> None:
    # The CLI control for the property above: the unmutated seeds exit 0 with nothing on stderr.
    path, _ = write_mutated(workdir, Mutated(seed, ()))
    returncode, stderr = run_cli("events", *mode, path)
    assert "Traceback" not in stderr, stderr[-2000:]
    assert (returncode, stderr) == (0, "")


# ---------------------------------------------------------------------------
# Regression tests for the engine bugs this property found
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bug",
    [pytest.param(name, id=name) for name in FOUND_BUGS],
)
def test_found_reproducer_fails_with_one_located_error(bug: str, workdir: Path) -> None:
    known = FOUND_BUGS[bug]
    original = seed_bytes(known.reproducer.seed)
    for offset, value in known.expects:  # the reproducer still targets what it was built for
        assert original[offset] == value, (bug, offset, original[offset])
    path, data = write_mutated(workdir, known.reproducer)
    with time_and_memory_limits():
        outcome = decode_everything(path)
    if outcome.error is not None:
        check_located_error(outcome.error, path, data)
    # End to end: no traceback, no hang, one line (or a clean exit).
    returncode, stderr = run_cli("events", "--rows", path)
    check_cli_contract(returncode, stderr, path, outcome)
