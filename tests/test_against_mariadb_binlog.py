"""relaydeck's decoder against the real `mariadb-binlog` (MariaDB 10.11) on every fixture file.

Two comparisons, each over every fixture file mariadb-binlog can read:

* the event listing: `mariadb-binlog FILE` prints `# at POS` and a header line
  `#yymmdd hh:mm:ss server id N  end_log_pos M … <type>` for every event; relaydeck's
  `events --json` must list the same (pos, server_id, end_log_pos) in the same order, with an
  event type matching mariadb-binlog's name for it;
* the row values: `mariadb-binlog --base64-output=decode-rows -vv FILE` prints every row image as
  `###   @N=value /* TYPE meta=M nullable=0|1 is_null=0|1 */`; every value relaydeck decodes is
  rendered the way mariadb-binlog prints that column type (tests/mariadb_binlog_listing.py) and
  the two texts must be equal, as must the column types, metadata and nullability.

Comparison rules, from what mariadb-binlog 10.11 does with these files:

* Which files: mariadb-binlog's exit code decides, per file and per mode. The files it rejects are
  listed below with why, and a test pins that list, so that a new mariadb-binlog (or a new
  fixture) that changes it is noticed.
* Files it stops reading early while still exiting 0 (an `ERROR:` on stderr): its listing is a
  prefix; relaydeck's listing must start with exactly that prefix. These are listed too.
* Deferred headers: mariadb-binlog prints `# at POS` when it reads an event but holds back the
  header lines of Annotate_rows, Table_map and a statement's rows events until the statement's
  last rows event (STMT_END_F); the parser pairs queued positions with headers in order. Their
  rows come out together after the last header, so rows are compared as one sequence in file
  order (a mismatch names relaydeck's exact event position).
* TRANSACTION_PAYLOAD (MySQL 8 compressed transactions): mariadb-binlog refuses the whole file
  ("Found incompatible MySQL 8.0 TRANSACTION_PAYLOAD_EVENT"), so the events relaydeck lists from
  inside a payload (at the payload's own position, as MySQL's mysqlbinlog does) are never
  compared; a test pins that every file holding a payload is one of the rejected files.
* Event types: mariadb-binlog names some events with one word for several type codes
  ("Write_rows" for v1, v2 and compressed) and MySQL-only events as "Ignorable" plus the type
  number; MARIADB_TYPE_WORDS in the helper maps each to relaydeck's Event_type names.

How mariadb-binlog prints values (log_event_print_value; the helper's render_value does the same
to relaydeck's values), as seen in the fixtures' output:

* integers: the signed reading, then ` (unsigned)` when it is negative (`-3 (4294967293)`),
  whatever the column's signedness; YEAR as stored byte + 1900 (so YEAR 0 prints 1900);
* DECIMAL with all digits of its scale (`0.10000`, `-11`); DOUBLE with %.20g (lossless);
* strings, blobs and DATETIME2/TIME2 in single quotes as raw bytes, only bytes below 0x20 escaped
  (`\\x0a`); quotes and backslashes inside are not escaped; BINARY(n) without its 0x00 padding;
* DATE as 'YYYY:MM:DD' (colons); old DATETIME quoted; TIMESTAMP/TIMESTAMP2 as seconds since the
  epoch, unquoted, with the column's fractional digits; TIME as '[-]HH:MM:SS[.frac]' with hours
  beyond 24 ('-507:48:27');
* ENUM as its index, SET and BIT as bits b'0101' (SET: the stored bytes, little-endian, each
  byte's high bit first);
* FLOAT with %-20g, i.e. 6 significant digits, padded: the one lossy rendering, so FLOAT values
  are compared to 6 significant digits (relaydeck's float goes through the same %-20g). No fixture
  mariadb-binlog reads has a FLOAT column today.
* `meta=` is the table map's metadata as relaydeck reads it, except BIT, whose two bytes
  mariadb-binlog reads in the other order (helper: mariadb_meta).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if shutil.which("mariadb-binlog") is None:
    pytest.skip(
        "mariadb-binlog is not installed (Debian package mariadb-client); the project's test command "
        "installs it, so these comparisons run in CI",
        allow_module_level=True,
    )

from console.cli import main as relaydeck_main
from engine.binlog.columns import RowImages, decode_rows_event
from engine.binlog.constants import RowsKind
from engine.binlog.events import RowsEvent, TableMap
from engine.binlog.reader import BinlogFile
from engine.errors import RelaydeckError

from .mariadb_binlog_listing import (
    DECODE_ROWS,
    ListedEvent,
    ListedRow,
    ListedValue,
    Listing,
    Run,
    mariadb_meta,
    mariadb_type_name,
    parse_listing,
    quoted,
    relaydeck_names_for,
    render_value,
    run_mariadb_binlog,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass(frozen=True, slots=True)
class FixtureFile:
    id: str  # folder/name, without .gz
    source: Path
    gzipped: bool


def _fixture_files() -> list[FixtureFile]:
    files = []
    for path in sorted((FIXTURES / "public-binlogs").glob("*/*")):
        gzipped = path.suffix == ".gz"
        name = path.stem if gzipped else path.name
        files.append(FixtureFile(f"{path.parent.name}/{name}", path, gzipped))
    for path in sorted((FIXTURES / "mariadb-10.11-multisource" / "relay").glob("relay-bin-*.0*")):
        files.append(FixtureFile(f"multisource/{path.name}", path, False))
    return files


FILES = _fixture_files()

_PAYLOAD = "MySQL 8 TRANSACTION_PAYLOAD (compressed transaction): 'Found incompatible … event'"

# `mariadb-binlog FILE` exits non-zero on exactly these files.
REJECTED = {
    "apecloud/mysql-bin.000057": _PAYLOAD,
    "bcj/mysql-bin.compressed": _PAYLOAD,
    "rmc/transaction_compression.000001": _PAYLOAD,
    "canal/tsdb_mysql-bin.000001": "not a binlog: its magic number was mangled (a corrupt fixture)",
    "rmc/binlog_transaction_with_GTID_TAG.000001": "MySQL 9 tagged GTID event (type 42) at 245 is unknown to it",
    "rmc/binlog_truncated_event.000001": "the file ends inside the first event",
    "rmc/bug40482-bin.000001": "'Found invalid event' for the INCIDENT event (type 26) at 106",
    "rmc/corrupt-relay-bin.000624": "corrupt Query event at 91204 (relaydeck also stops there)",
    "rmc/ver_5_1-wl2325_r.001": "pre-GA 5.1 Execute_load_query at 549 it cannot parse",
    "rmc/ver_5_1-wl2325_s.001": "pre-GA 5.1 rows event (type 20) at 411",
}
# `mariadb-binlog --base64-output=decode-rows -vv FILE` also exits 1 on these, silently, at the
# first rows event holding a column type it cannot print.
REJECTED_DECODE_ROWS = REJECTED | {
    "rmc/json.binlog.000001": "a MySQL JSON column (type 245), rows event at 1059",
    "rmc/json-opaque.binlog": "a MySQL JSON column (type 245), rows event at 736",
    "rmc/vector.binlog": "a MySQL 9 VECTOR column (type 242), rows event at 1085",
    "tiflow/mysql-bin.000001": "a MariaDB 5.3-format TIMESTAMP(3) (type 7 + fractional digits), rows event at 1819",
}
# Exit code 0, but an `ERROR:` and the listing stops before the end of the file.
STOPS_EARLY = {
    "rmc/json.binlog.000001": "MySQL 8 PARTIAL_UPDATE_ROWS event (type 39) at 3750",
    "rmc/binlog_truncated_prev_gtid_event.000001": "'Event truncated' at 120 (relaydeck stops there too)",
}
STOPS_EARLY_DECODE_ROWS = {k: v for k, v in STOPS_EARLY.items() if k not in REJECTED_DECODE_ROWS}

# Known disagreements, reported to the decoder team; the tests keep asserting the right behaviour.
LISTING_XFAIL: dict[str, str] = {}
ROWS_XFAIL: dict[str, str] = {}


def _params(xfails: dict[str, str]) -> list[Any]:
    return [
        pytest.param(
            f,
            id=f.id,
            marks=[pytest.mark.xfail(strict=True, reason=xfails[f.id])] if f.id in xfails else [],
        )
        for f in FILES
    ]


@pytest.fixture(scope="session")
def fixture_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture file as a plain file on disk (gzipped ones decompressed once per session)."""
    out: dict[str, Path] = {}
    tmp = tmp_path_factory.mktemp("mariadb-binlog-fixtures")
    for f in FILES:
        if f.gzipped:
            target = tmp / f.source.stem
            target.write_bytes(gzip.decompress(f.source.read_bytes()))
            out[f.id] = target
        else:
            out[f.id] = f.source
    return out


def _mariadb_binlog(path: Path, options: tuple[str, ...] = ()) -> Run:
    return run_mariadb_binlog(str(path), options)


def _readable_listing(
    fixture: FixtureFile, path: Path, options: tuple[str, ...], rejected: dict[str, str]
) -> tuple[Run, Listing]:
    """mariadb-binlog's parsed output, or a skip naming why it does not read the file."""
    run = _mariadb_binlog(path, options)
    if run.returncode != 0:
        # test_mariadb_binlog_rejects_exactly_the_known_files checks this file is a known one.
        why = rejected.get(fixture.id) or run.reason()
        pytest.skip(f"mariadb-binlog {' '.join(options)} exits {run.returncode} on this file: {why}")
    return run, parse_listing(run.stdout)


def _first_difference(expected: list[Any], actual: list[Any]) -> str:
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return f"event #{i}: mariadb-binlog {a}, relaydeck {b}"
    if len(expected) != len(actual):
        shorter = min(len(expected), len(actual))
        extra = (expected if len(expected) > shorter else actual)[shorter : shorter + 3]
        who = "mariadb-binlog" if len(expected) > shorter else "relaydeck"
        return (
            f"mariadb-binlog lists {len(expected)} events, relaydeck {len(actual)}; "
            f"{who} goes on with {extra}"
        )
    return "no difference"


# ---------------------------------------------------------------------------
# Which files mariadb-binlog reads
# ---------------------------------------------------------------------------


def test_mariadb_binlog_rejects_exactly_the_known_files(fixture_paths: dict[str, Path]) -> None:
    """The explicit lists of rejected and cut-short files are still what mariadb-binlog does."""
    plain = {f.id: _mariadb_binlog(fixture_paths[f.id]) for f in FILES}
    rows = {f.id: _mariadb_binlog(fixture_paths[f.id], DECODE_ROWS) for f in FILES}

    def failing(runs: dict[str, Run]) -> dict[str, str]:
        return {name: run.reason() for name, run in runs.items() if run.returncode != 0}

    def cut_short(runs: dict[str, Run]) -> dict[str, str]:
        return {name: run.reason() for name, run in runs.items() if run.stopped_early}

    assert sorted(failing(plain)) == sorted(REJECTED), failing(plain)
    assert sorted(failing(rows)) == sorted(REJECTED_DECODE_ROWS), failing(rows)
    assert sorted(cut_short(plain)) == sorted(STOPS_EARLY), cut_short(plain)
    assert sorted(cut_short(rows)) == sorted(STOPS_EARLY_DECODE_ROWS), cut_short(rows)


def test_every_file_with_a_transaction_payload_is_one_mariadb_binlog_rejects(
    fixture_paths: dict[str, Path],
) -> None:
    """Events inside TRANSACTION_PAYLOADs are never compared: mariadb-binlog refuses those files."""
    with_payload = set()
    for f in FILES:
        with contextlib.suppress(RelaydeckError), BinlogFile(fixture_paths[f.id]) as binlog:
            if any(logged.inner for logged in binlog.events()):
                with_payload.add(f.id)
    assert with_payload == {name for name, why in REJECTED.items() if why == _PAYLOAD}
    for name in with_payload:
        assert "TRANSACTION_PAYLOAD" in _mariadb_binlog(fixture_paths[name]).stderr


# ---------------------------------------------------------------------------
# 1. Event listing
# ---------------------------------------------------------------------------


def _relaydeck_listing(path: Path) -> tuple[int, list[dict[str, Any]], str]:
    """`relaydeck events --json FILE`, in process: exit code, events, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = relaydeck_main(["events", "--json", str(path)], out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


@pytest.mark.parametrize("fixture", _params(LISTING_XFAIL))
def test_event_listing_matches_mariadb_binlog(fixture: FixtureFile, fixture_paths: dict[str, Path]) -> None:
    """Same events, same order: (pos, server_id, end_log_pos) and a matching type name for each."""
    path = fixture_paths[fixture.id]
    run, listing = _readable_listing(fixture, path, (), REJECTED)
    code, ours, stderr = _relaydeck_listing(path)
    theirs = listing.events
    assert theirs, "mariadb-binlog listed no events: the parser no longer understands its output"

    if run.stopped_early:
        # mariadb-binlog gave up part-way (STOPS_EARLY says where): compare what it did list.
        assert fixture.id in STOPS_EARLY, run.reason()
        ours = ours[: len(theirs)]
    else:
        assert code == 0, f"relaydeck fails on a file mariadb-binlog reads: {stderr.strip()}"

    expected = [(e.pos, e.server_id, e.end_log_pos) for e in theirs]
    actual = [(e["pos"], e["server_id"], e["end_log_pos"]) for e in ours]
    assert actual == expected, _first_difference(expected, actual)

    wrong_types = []
    for listed, event in zip(theirs, ours, strict=True):
        names = relaydeck_names_for(listed.type_word)
        assert names is not None, (
            f"at {listed.pos}: mariadb-binlog's event word {listed.type_word!r} is not in "
            "MARIADB_TYPE_WORDS (tests/mariadb_binlog_listing.py); add what it stands for"
        )
        if event["event_type"] not in names:
            wrong_types.append(
                f"at {listed.pos}: mariadb-binlog {listed.type_word!r}, relaydeck {event['event_type']!r}"
            )
    assert not wrong_types, "\n".join(wrong_types)


# ---------------------------------------------------------------------------
# 2. Row values
# ---------------------------------------------------------------------------

_VERBS = {RowsKind.WRITE: "INSERT INTO", RowsKind.UPDATE: "UPDATE", RowsKind.DELETE: "DELETE FROM"}


@dataclass(frozen=True, slots=True)
class OurRow:
    pos: int  # the rows event's position
    images: RowImages
    index: int  # the row's index within the event


def _relaydeck_rows(path: Path, stops_early: bool) -> list[OurRow]:
    """Every row relaydeck decodes, in file order (up to a read error when mariadb-binlog also stops)."""
    rows: list[OurRow] = []
    table_maps: dict[int, TableMap] = {}
    try:
        with BinlogFile(path) as binlog:
            for logged in binlog.events():
                event = logged.event
                if isinstance(event, TableMap):
                    table_maps[event.table_id] = event
                elif isinstance(event, RowsEvent):
                    assert event.table_id in table_maps, (
                        f"at {logged.pos}: no table map for table {event.table_id}"
                    )
                    images = decode_rows_event(event, table_maps[event.table_id])
                    rows.extend(OurRow(logged.pos, images, i) for i in range(images.count))
    except RelaydeckError:
        if not stops_early:
            raise
    return rows


def _image_differences(
    where: str, listed: tuple[ListedValue, ...] | None, ours: dict[int, list[Any]] | None, row: OurRow
) -> tuple[list[str], int]:
    """Discrepancies between one printed image and relaydeck's, and how many values were compared."""
    if (listed is None) != (ours is None):
        return [f"{where}: mariadb-binlog image {listed is not None}, relaydeck image {ours is not None}"], 0
    if listed is None or ours is None:
        return [], 0
    # Columns by position: @N is column N-1 of the table map, relaydeck's RowImages key.
    printed = [value.column for value in listed]
    present = [index + 1 for index in ours]
    if printed != present:
        return [f"{where}: mariadb-binlog columns @{printed}, relaydeck @{present}"], 0
    problems = []
    for value, (index, values) in zip(listed, ours.items(), strict=True):
        col = row.images.columns[index]
        ours_value = values[row.index]
        at = f"{where} @{value.column} ({col.name})"
        described = (mariadb_type_name(col), mariadb_meta(col), col.nullable)
        if described != (value.type_name, value.meta, value.nullable):
            problems.append(
                f"{at}: mariadb-binlog /* {value.type_name} meta={value.meta} nullable={value.nullable:d} */, "
                f"relaydeck's table map gives /* {described[0]} meta={described[1]} nullable={described[2]:d} */"
            )
            continue
        try:
            rendered = render_value(col, ours_value)
        except (ValueError, TypeError, AttributeError) as exc:
            problems.append(
                f"{at} {value.type_name}: relaydeck's value {ours_value!r} cannot be rendered: {exc}"
            )
            continue
        if rendered != value.text:
            problems.append(
                f"{at} {value.type_name}: mariadb-binlog {value.text[:120]!r}, relaydeck {rendered[:120]!r} "
                f"(decoded as {ours_value!r:.120})"
            )
    return problems, len(listed)


@pytest.mark.parametrize("fixture", _params(ROWS_XFAIL))
def test_row_values_match_mariadb_binlog(fixture: FixtureFile, fixture_paths: dict[str, Path]) -> None:
    """Every row, column and value relaydeck decodes is the one mariadb-binlog prints, in order."""
    path = fixture_paths[fixture.id]
    run, listing = _readable_listing(fixture, path, DECODE_ROWS, REJECTED_DECODE_ROWS)
    assert listing.events, "mariadb-binlog listed no events: the parser no longer understands its output"
    ours = _relaydeck_rows(path, run.stopped_early)
    theirs = listing.rows
    if run.stopped_early:
        assert fixture.id in STOPS_EARLY_DECODE_ROWS, run.reason()
        ours = ours[: len(theirs)]

    assert len(ours) == len(theirs), (
        f"mariadb-binlog prints {len(theirs)} rows, relaydeck decodes {len(ours)}"
    )
    problems: list[str] = []
    compared = 0
    for n, ((printed_at, listed), row) in enumerate(zip(theirs, ours, strict=True)):
        where = f"row {n} (relaydeck: event at {row.pos} row {row.index}; mariadb-binlog: under {printed_at})"
        table_map = row.images.table_map
        table = f"`{table_map.schema}`.`{table_map.table}`"
        if (listed.verb, listed.table) != (_VERBS[row.images.kind], table):
            problems.append(
                f"{where}: mariadb-binlog {listed.verb} {listed.table}, relaydeck {_VERBS[row.images.kind]} {table}"
            )
            continue
        for label, printed, image in (
            ("WHERE", listed.before, row.images.before),
            ("SET", listed.after, row.images.after),
        ):
            found, count = _image_differences(f"{where} {label}", printed, image, row)
            problems += found
            compared += count
    assert not problems, f"{len(problems)} discrepancies in {compared} values:\n" + "\n".join(problems[:40])
    if theirs:
        assert compared > 0, "rows were printed but no value was compared"


# ---------------------------------------------------------------------------
# The parser and renderer on mariadb-binlog output shapes seen in the fixtures
# ---------------------------------------------------------------------------


def test_parser_pairs_held_back_headers_with_their_positions_in_order() -> None:
    # Shape from bcj/mysql-bin.sakila: a statement's rows events, headers printed after all '# at'.
    output = (
        b"# at 21601\n"
        b"#130624 19:15:05 server id 1  end_log_pos 21654 \tTable_map: `sakila`.`actor` mapped to number 44\n"
        b"# at 21654\n# at 22680\n"
        b"#130624 19:15:05 server id 1  end_log_pos 22680 \tWrite_rows: table id 44\n"
        b"#130624 19:15:05 server id 1  end_log_pos 25906 \tWrite_rows: table id 44 flags: STMT_END_F\n"
        b"### INSERT INTO `sakila`.`actor`\n### SET\n"
        b"###   @1=1 /* SHORTINT meta=0 nullable=0 is_null=0 */\n"
        b"###   @2='it's \\x0a' /* VARSTRING(135) meta=135 nullable=0 is_null=0 */\n"
        b"# Number of rows: 1\n"
    )
    listing = parse_listing(output)
    assert listing.events == [
        ListedEvent(21601, 1, 21654, "Table_map"),
        ListedEvent(21654, 1, 22680, "Write_rows"),
        ListedEvent(22680, 1, 25906, "Write_rows"),
    ]
    assert listing.rows == [
        (
            22680,
            ListedRow(
                "INSERT INTO",
                "`sakila`.`actor`",
                None,
                (
                    ListedValue(1, b"1", "SHORTINT", 0, False, False),
                    ListedValue(2, b"'it's \\x0a'", "VARSTRING(135)", 135, False, False),
                ),
            ),
        )
    ]


def test_quoting_escapes_control_bytes_only_and_leaves_quotes_bare() -> None:
    # my_b_write_quoted: its escapes for ' and \ are unreachable (both are above 0x1F).
    assert quoted(b"a'b\\c\n\x00\xff") == b"'a'b\\c\\x0a\\x00\xff'"
