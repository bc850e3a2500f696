"""The workload generator: relay logs a MySQL 8.0 replica would write, and the oracle's tables.

Each workload is generated once per session (small default sizes) and checked several ways:
byte-level framing and checksums, relay-log choreography, GTID stamping, the real mariadb-binlog,
and a replay of its row events through relaydeck's own decoder against the expected CSVs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from engine.binlog.column_types import decimal_to_bin, parse_column_type, time2_bytes
from engine.binlog.constants import EventFlag, EventType
from engine.binlog.json_binary import encode_json
from engine.binlog.writer import FORMAT_DESCRIPTION_SIZE, transaction_length
from engine.generate import WORKLOADS, GenerateSummary, RotationSizes, generate, generate_with
from engine.generate.oracle import MysqlRand, csv_field, render_value
from engine.scheduling.writeset import WritesetHistory, writeset_hash

ROOT = Path(__file__).resolve().parent.parent
MARIADB_BINLOG = shutil.which("mariadb-binlog")
needs_mariadb_binlog = pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog is not installed")
# Workloads whose every change is a row event: a replay of those events alone must give the oracle.
ROW_ONLY = ("oltp", "hot", "multidb", "large", "types")
SOURCE_ID, REPLICA_ID = 1, 2


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, GenerateSummary]]:
    base = tmp_path_factory.mktemp("workloads")
    return {w: (base / w, generate(w, seed=7, out=base / w)) for w in WORKLOADS}


# --------------------------------------------------------------------------------------------
# An independent walk over the files: header, size, CRC, nothing else assumed.


@dataclass(frozen=True)
class Raw:
    file: str
    pos: int
    timestamp: int
    type_code: int
    server_id: int
    size: int
    log_pos: int
    flags: int
    body: bytes  # between the common header and the checksum


def walk(directory: Path) -> list[Raw]:
    events = []
    for name in (directory / "relay-bin.index").read_text().split():
        data = (directory / name).read_bytes()
        assert data[:4] == b"\xfebin", name
        pos = 4
        while pos < len(data):
            ts, type_code, server_id, size, log_pos, flags = struct.unpack_from("<IBIIIH", data, pos)
            assert pos + size <= len(data), f"{name}@{pos}: event runs past the end"
            event = data[pos : pos + size]
            (crc,) = struct.unpack_from("<I", event, size - 4)
            assert zlib.crc32(event[:-4]) == crc, f"{name}@{pos}: bad CRC32"
            events.append(
                Raw(Path(name).name, pos, ts, type_code, server_id, size, log_pos, flags, event[19:-4])
            )
            pos += size
    return events


@dataclass(frozen=True)
class Gtid:
    gno: int
    last_committed: int
    sequence_number: int
    transaction_length: int


def parse_gtid(body: bytes) -> Gtid:
    _, _, gno, typecode, last_committed, seq = struct.unpack_from("<B16sqBqq", body)
    assert typecode == 2
    pos = 42 + 7
    first = body[pos]
    length = (
        first
        if first < 251
        else int.from_bytes(body[pos + 1 : pos + 1 + {252: 2, 253: 3, 254: 8}[first]], "little")
    )
    return Gtid(gno, last_committed, seq, length)


def manifest(directory: Path) -> dict:
    return json.loads((directory / "expected" / "manifest.json").read_text())


# --------------------------------------------------------------------------------------------
# Determinism


def tree_bytes(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


def test_same_arguments_give_identical_files_and_another_seed_does_not(tmp_path: Path, generated) -> None:
    directory, _ = generated["oltp"]
    generate("oltp", seed=7, out=tmp_path / "again")
    generate("oltp", seed=8, out=tmp_path / "other")
    assert tree_bytes(tmp_path / "again") == tree_bytes(directory)
    other = tree_bytes(tmp_path / "other")
    assert other.keys() == tree_bytes(directory).keys()
    assert other["relay-bin.000002"] != tree_bytes(directory)["relay-bin.000002"]


def test_output_does_not_depend_on_hash_randomization(tmp_path: Path, generated) -> None:
    directory, _ = generated["mixed"]
    code = "import sys; from pathlib import Path; from engine.generate import generate; generate('mixed', 7, Path(sys.argv[1]))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], check=True, env=env, cwd=ROOT)
    assert tree_bytes(tmp_path / "m") == tree_bytes(directory)


# --------------------------------------------------------------------------------------------
# Framing and relay-log choreography


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_event_is_framed_and_checksummed(generated, workload: str) -> None:
    directory, summary = generated[workload]
    events = walk(directory)
    assert len(events) == summary.events
    assert sum(p.stat().st_size for p in summary.relay_files) == summary.bytes
    assert sum(1 for e in events if e.type_code == EventType.GTID) == summary.transactions


@pytest.mark.parametrize("workload", WORKLOADS)
def test_index_lists_the_relay_files_in_order_each_opening_and_closing_like_mysql(
    generated, workload: str
) -> None:
    directory, summary = generated[workload]
    names = (directory / "relay-bin.index").read_text().splitlines()
    assert names == [f"./relay-bin.{i:06d}" for i in range(1, len(names) + 1)]
    assert [directory / n[2:] for n in names] == summary.relay_files
    assert all(p.is_file() for p in summary.relay_files)
    by_file: dict[str, list[Raw]] = {}
    for e in walk(directory):
        by_file.setdefault(e.file, []).append(e)
    for i, name in enumerate(n[2:] for n in names):
        first, second = by_file[name][:2]
        # the replica's own FORMAT_DESCRIPTION and PREVIOUS_GTIDS, relay positions, flag 0x40
        assert (first.type_code, first.server_id, first.log_pos, first.flags) == (
            EventType.FORMAT_DESCRIPTION,
            REPLICA_ID,
            4 + FORMAT_DESCRIPTION_SIZE,
            EventFlag.RELAY_LOG,
        )
        assert first.body[2:8] == b"8.0.36" and first.body[-1] == 1  # server version, CRC32
        assert (second.type_code, second.server_id, second.log_pos) == (
            EventType.PREVIOUS_GTIDS,
            REPLICA_ID,
            second.pos + second.size,
        )
        last = by_file[name][-1]
        if i + 1 < len(names):
            assert (last.type_code, last.server_id, last.flags) == (
                EventType.ROTATE,
                REPLICA_ID,
                EventFlag.RELAY_LOG,
            )
            assert last.body == struct.pack("<Q", 4) + names[i + 1][2:].encode()


@pytest.mark.parametrize("workload", WORKLOADS)
def test_source_events_carry_contiguous_source_positions(generated, workload: str) -> None:
    directory, _ = generated[workload]
    expected_start = None
    binlog = None
    for e in walk(directory):
        if e.flags & EventFlag.ARTIFICIAL:
            assert e.log_pos == 0 and e.server_id == SOURCE_ID
            if e.type_code == EventType.ROTATE:
                assert e.timestamp == 0  # the dump thread's rotate
                binlog = e.body[8:].decode()
            continue
        if e.server_id == REPLICA_ID or (e.server_id == 0 and e.type_code == EventType.ROTATE):
            assert e.log_pos == e.pos + e.size  # written by the replica: relay positions
            if e.server_id == 0:  # stands in for the source's PREVIOUS_GTIDS
                assert e.body[8:].decode() == binlog
                expected_start = struct.unpack_from("<Q", e.body)[0]
            continue
        assert e.server_id == SOURCE_ID
        if e.type_code == EventType.FORMAT_DESCRIPTION:
            assert e.log_pos == 4 + FORMAT_DESCRIPTION_SIZE
            continue
        assert e.log_pos - e.size == expected_start, f"{e.file}@{e.pos}"
        expected_start = e.log_pos


@pytest.mark.parametrize("workload", WORKLOADS)
def test_gtids_are_stamped_like_a_writeset_source(generated, workload: str) -> None:
    directory, summary = generated[workload]
    events = walk(directory)
    gnos, files = [], 0
    expected_seq = 1
    for i, e in enumerate(events):
        if (
            e.type_code == EventType.ROTATE
            and e.server_id == SOURCE_ID
            and not e.flags & EventFlag.ARTIFICIAL
        ):
            files += 1
            expected_seq = 1  # a new source binlog restarts the numbering
        if e.type_code != EventType.GTID:
            continue
        g = parse_gtid(e.body)
        gnos.append(g.gno)
        assert g.sequence_number == expected_seq
        assert 0 <= g.last_committed < g.sequence_number
        expected_seq += 1
        length = e.size
        for nxt in events[i + 1 :]:
            if (
                nxt.type_code == EventType.GTID
                or nxt.server_id != SOURCE_ID
                or nxt.type_code == EventType.ROTATE
            ):
                break
            length += nxt.size
        assert g.transaction_length == length
    assert gnos == list(range(1, summary.transactions + 1))
    assert files >= 1, "small runs still rotate the source binlog at least once"
    binlogs = manifest(directory)["generator"]["binlog_files"]
    assert len(binlogs) == files + 1


def dependency_windows(directory: Path) -> list[int]:
    gtids = [parse_gtid(e.body) for e in walk(directory) if e.type_code == EventType.GTID]
    return [g.sequence_number - g.last_committed for g in gtids]


def test_hot_rows_serialize_where_oltp_spreads_out_and_statements_never_overlap(generated) -> None:
    hot = dependency_windows(generated["hot"][0])
    oltp = dependency_windows(generated["oltp"][0])
    statement = dependency_windows(generated["statement"][0])
    assert sum(w == 1 for w in hot) / len(hot) > 0.3  # most hot transactions wait for the previous one
    assert sum(hot) / len(hot) * 4 < sum(oltp) / len(oltp)
    assert set(statement) == {1}  # no writeset: each depends on its predecessor


def test_relay_log_rotation_by_size_repeats_the_source_format_description(tmp_path: Path) -> None:
    generate_with(
        "oltp", 3, tmp_path, 400_000, RotationSizes(max_binlog_size=10**9, max_relay_log_size=60_000)
    )
    events = walk(tmp_path)
    copies = [
        e
        for e in events
        if e.type_code == EventType.FORMAT_DESCRIPTION
        and e.server_id == SOURCE_ID
        and e.flags & EventFlag.ARTIFICIAL
    ]
    files = {e.file for e in events}
    assert len(files) >= 6
    assert len(copies) == len(files) - 2  # every size-rotated file; not the first two
    for c in copies:
        third = [e for e in events if e.file == c.file][2]
        assert third == c and c.log_pos == 0
        assert struct.unpack_from("<I", c.body, 52)[0] == 0  # created = 0
    # transactions never straddle relay files: each file's source events start with a GTID
    for name in sorted(files)[2:]:
        source = [
            e
            for e in events
            if e.file == name and e.server_id == SOURCE_ID and not e.flags & EventFlag.ARTIFICIAL
        ]
        assert source[0].type_code == EventType.GTID


# --------------------------------------------------------------------------------------------
# Workload content


def event_census(directory: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for e in walk(directory):
        counts[e.type_code] = counts.get(e.type_code, 0) + 1
    return counts


def queries(directory: Path) -> list[str]:
    out = []
    for e in walk(directory):
        if e.type_code == EventType.QUERY:
            db_len, status_len = e.body[8], struct.unpack_from("<H", e.body, 11)[0]
            out.append(e.body[13 + status_len + db_len + 1 :].decode())
    return out


def test_statement_workload_logs_context_events_before_its_queries(generated) -> None:
    directory, _ = generated["statement"]
    census = event_census(directory)
    for kind in (EventType.USER_VAR, EventType.INTVAR, EventType.RAND, EventType.XID):
        assert census.get(kind, 0) > 0, kind.name
    assert EventType.WRITE_ROWS not in census and EventType.UPDATE_ROWS not in census
    text = queries(directory)
    assert any("FLOOR(RAND()*1000)" in q for q in text)
    assert any("LAST_INSERT_ID()" in q for q in text)
    assert any("NOW(6)" in q for q in text)


def test_temporary_workload_interleaves_sessions_with_same_named_temp_tables(generated) -> None:
    directory, _ = generated["temporary"]
    threads = set()
    for e in walk(directory):
        if e.type_code == EventType.QUERY and b"CREATE TEMPORARY TABLE `tmp_stage`" in e.body:
            assert e.flags & EventFlag.THREAD_SPECIFIC
            threads.add(struct.unpack_from("<I", e.body)[0])
    assert len(threads) >= 2
    text = queries(directory)
    assert any(q.startswith("INSERT INTO totals (session_id, n, total) SELECT") for q in text)
    assert any(q.startswith("DROP TEMPORARY TABLE IF EXISTS `tmp_stage`") for q in text)


def test_ddl_workload_table_maps_follow_the_altered_columns(generated) -> None:
    from engine.binlog.events.rows import TableMap
    from engine.binlog.reader import BinlogFile, ReaderState

    directory, _ = generated["ddl"]
    text = queries(directory)
    for verb in (
        "ADD COLUMN",
        "DROP COLUMN",
        "MODIFY COLUMN",
        "CHANGE COLUMN",
        "RENAME COLUMN",
        "FIRST",
        "AFTER",
    ):
        assert any(verb in q for q in text), verb
    for verb in (
        "CREATE INDEX",
        "CREATE UNIQUE INDEX",
        "DROP INDEX",
        "RENAME TABLE",
        "TRUNCATE TABLE",
        "DROP TABLE",
    ):
        assert any(q.startswith(verb) for q in text), verb
    shapes: list[tuple[str, ...]] = []
    state = ReaderState()
    for name in (directory / "relay-bin.index").read_text().split():
        with BinlogFile(directory / name) as f:
            for logged in f.events(state):
                ev = logged.event
                if isinstance(ev, TableMap) and ev.table in ("items_1", "items_1_old"):
                    if not shapes or shapes[-1] != ev.column_names:
                        shapes.append(ev.column_names)
    assert shapes[0] == ("id", "name", "qty")
    assert ("id", "name", "price", "qty") in shapes
    assert ("code", "id", "name", "price", "qty") in shapes
    assert shapes[-1] == ("sku", "id", "title", "note", "qty")


def test_large_workload_splits_rows_events_near_8k(generated) -> None:
    directory, _ = generated["large"]
    rows = [
        e
        for e in walk(directory)
        if e.type_code in (EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS)
    ]
    assert max(len(e.body) for e in rows) <= 8192
    assert sum(1 for e in rows if len(e.body) > 7000) > 20
    assert manifest(directory)["generator"]["row_images"]["insert"] >= 2000


# --------------------------------------------------------------------------------------------
# The real mariadb-binlog


def run_mariadb_binlog(directory: Path, *args: str) -> str:
    files = [str(directory / n) for n in (directory / "relay-bin.index").read_text().split()]
    proc = subprocess.run([MARIADB_BINLOG, "--base64-output=decode-rows", *args, *files], capture_output=True)
    # MariaDB does not know MySQL 8.0's utf8mb4_0900_ai_ci (255); it says so and carries on.
    complaints = [
        line
        for line in proc.stderr.decode(errors="replace").splitlines()
        if line and "Character set '#255'" not in line
    ]
    assert proc.returncode == 0 and not complaints, complaints[:3]
    return proc.stdout.decode(errors="replace")


ROW_LINE = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) ", re.MULTILINE)


@needs_mariadb_binlog
@pytest.mark.parametrize("workload", WORKLOADS)
def test_mariadb_binlog_reads_every_file_and_sees_every_row(generated, workload: str) -> None:
    directory, summary = generated[workload]
    listing = run_mariadb_binlog(directory)
    assert listing.count("# at ") == summary.events
    info = manifest(directory)
    by_table = info["generator"]["row_images_by_table"]
    # mariadb-binlog cannot print MySQL's JSON columns (type 245), so those tables are left out.
    json_tables = {
        q.split(".")[1] for q, t in info["tables"].items() if any(c["type"] == "json" for c in t["columns"])
    }
    names = sorted({q.split(".")[1] for q in by_table} - json_tables)
    expected = sum(sum(c.values()) for q, c in by_table.items() if q.split(".")[1] in names)
    if json_tables:
        seen = sum(
            len(ROW_LINE.findall(run_mariadb_binlog(directory, "-v", f"--table={name}"))) for name in names
        )
    else:
        seen = len(ROW_LINE.findall(run_mariadb_binlog(directory, "-v")))
        assert expected == sum(info["generator"]["row_images"].values())
    assert seen == expected


# --------------------------------------------------------------------------------------------
# The oracle against relaydeck's own decoder


@pytest.mark.parametrize("workload", ROW_ONLY)
def test_replaying_the_row_events_gives_the_expected_tables(generated, workload: str) -> None:
    from engine.binlog.columns import decode_rows_event
    from engine.binlog.events.rows import RowsEvent, TableMap
    from engine.binlog.reader import BinlogFile, ReaderState

    directory, summary = generated[workload]
    maps: dict[int, TableMap] = {}
    tables: dict[tuple[str, str], dict[tuple, dict]] = {}
    state = ReaderState()
    for name in (directory / "relay-bin.index").read_text().split():
        with BinlogFile(directory / name) as f:
            for logged in f.events(state):
                ev = logged.event
                if isinstance(ev, TableMap):
                    maps[ev.table_id] = ev
                elif isinstance(ev, RowsEvent):
                    tm = maps[ev.table_id]
                    key = [tm.column_names[i] for i in tm.primary_key]
                    rows = tables.setdefault((tm.schema, tm.table), {})
                    for before, after in decode_rows_event(ev, tm).rows():
                        if before is not None:
                            del rows[tuple(before[c] for c in key)]
                        if after is not None:
                            rows[tuple(after[c] for c in key)] = after
    info = manifest(directory)
    assert set(info["tables"]) == {f"{db}.{t}" for db, t in tables}
    for qualified, table in info["tables"].items():
        columns = [(c["name"], parse_column_type(c["type"])) for c in table["columns"]]
        rows = tables[tuple(qualified.split("."))]
        lines = [",".join(name for name, _ in columns)]
        for pk in sorted(rows):
            row = rows[pk]
            # the decoder hands JSON back as MySQL's text already
            fields = [
                row[n] if t.base == "json" and isinstance(row[n], str) else render_value(t, row[n])
                for n, t in columns
            ]
            binary = [
                t.base in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
                for _, t in columns
            ]
            lines.append(",".join(csv_field(f, b) for f, b in zip(fields, binary, strict=True)))
        expected = (directory / "expected" / table["file"]).read_bytes().decode()
        assert "\n".join(lines) + "\n" == expected, qualified
        assert summary.tables[qualified] == len(rows) == table["rows"]


# --------------------------------------------------------------------------------------------
# Writeset dependency tracking: the seed's worked examples (AL1, EX3-EX7)


def feed(history: WritesetHistory, first_sn: int, writesets: list[list[int] | None]) -> list[int]:
    return [history.dependency(first_sn + i, ws) for i, ws in enumerate(writesets)]


def test_ex3_transactions_wait_only_for_earlier_writers_of_their_rows() -> None:
    ws1, ws2, ws3, ws4, ws5, ws6, ws7, ws8 = range(1, 9)
    h = WritesetHistory(window_start=1)  # group boot: SN starts at 2, LC at 1
    got = feed(h, 2, [[ws1], [ws2], [ws1, ws3], [ws4], [ws5], [ws5, ws6], [ws7], [ws8]])
    assert got == [1, 1, 2, 1, 1, 6, 1, 1]


def test_ex4_transactions_without_writeset_serialize_and_open_a_window() -> None:
    h = WritesetHistory(window_start=1)
    assert feed(h, 2, [None, [1], [2], None, [1]]) == [1, 2, 2, 4, 5]
    assert h.window_start == 5


def test_ex5_ex6_a_purged_history_moves_the_window_so_no_conflict_is_lost() -> None:
    h = WritesetHistory(window_start=1)
    assert feed(h, 2, [[1], [2]]) == [1, 1]
    h.reset()  # garbage collection purges T1's entry
    got = feed(h, 4, [[1], [4]])
    assert got == [3, 3]  # EX6; EX5's wrong answer would be [1, 1]


def test_ex7_an_unfed_view_change_leaves_the_counters_alone() -> None:
    h = WritesetHistory(window_start=1)
    feed(h, 2, [[1], [2]])
    assert h.dependency(4, [3]) == 1


def test_a_full_history_judges_the_transaction_then_starts_afresh() -> None:
    h = WritesetHistory(history_size=2)
    assert feed(h, 1, [[10], [20]]) == [0, 0]
    assert h.dependency(3, [10, 30]) == 1  # 2 + 2 hashes exceed 2: still sees 10 from SN 1
    assert len(h) == 0 and h.window_start == 3
    assert h.dependency(4, [20]) == 3


def test_a_new_binlog_file_restarts_relative_numbering_and_commit_order_caps_the_answer() -> None:
    h = WritesetHistory()
    feed(h, 1, [[1], [2], [1]])
    h.reset(0)
    assert h.dependency(1, [1]) == 0
    assert h.dependency(2, [1], commit_parent=0) == 0  # min(writeset parent, commit-order parent)
    assert h.dependency(3, [1, 1, 1]) == 2


def test_writeset_hash_is_stable_and_tells_values_apart() -> None:
    h = writeset_hash("sbtest1", "sbtest1", "PRIMARY", (42,))
    # pinned: the preparing processes, Spark's executors and the coordinator hash the same keys
    # in different interpreters and machines, and must agree
    assert h == 0x89EC30C5922D623A
    assert writeset_hash("sbtest1", "sbtest1", "PRIMARY", ("42",)) == 0xF21506FDADBF0458
    distinct = {
        h,
        writeset_hash("sbtest1", "sbtest1", "PRIMARY", ("42",)),
        writeset_hash("sbtest1", "sbtest1", "PRIMARY", (b"42",)),
        writeset_hash("sbtest1", "sbtest2", "PRIMARY", (42,)),
        writeset_hash("sbtest2", "sbtest1", "PRIMARY", (42,)),
        writeset_hash("sbtest1", "sbtest1", "uk", (42,)),
        writeset_hash("sbtest1", "sbtest1", "PRIMARY", (4, 2)),
    }
    assert len(distinct) == 7


# --------------------------------------------------------------------------------------------
# Encoders and renderers against published facts


def test_decimal_binary_matches_the_mysql_manual_example() -> None:
    # "1234567890.1234 as DECIMAL(14,4)" from the MySQL internals documentation
    assert decimal_to_bin(Decimal("1234567890.1234"), 14, 4).hex() == "810dfb38d204d2"
    assert decimal_to_bin(Decimal("-1234567890.1234"), 14, 4).hex() == "7ef204c72dfb2d"


def test_negative_time2_keeps_mysqls_reversed_fraction() -> None:
    # my_time.cc's table: -00:00:00.01 with 2 decimals is stored 7FFFFF.FF
    assert time2_bytes(-timedelta(microseconds=10000), 2).hex() == "7fffffff"
    assert time2_bytes(timedelta(hours=838, minutes=59, seconds=59), 0).hex() == "b46efb"


def test_small_json_object_layout() -> None:
    # type 0 (small object), 1 element, 12 bytes, key at 11 len 1, int16 inline 1, key "a"
    assert encode_json({"a": 1}).hex() == "00" + "0100" + "0c00" + "0b000100" + "050100" + "61"


def test_gtid_transaction_length_counts_its_own_packed_width() -> None:
    assert transaction_length(100) == 100 + 77
    assert transaction_length(200) == 200 + 79  # 277 needs the 3-byte packed form


def test_mysql_rand_reproduces_rand_0_and_rand_1() -> None:
    # Item_func_rand::seed_random seeds with (n * 0x10001 + 55555555, n * 0x10000001)
    assert MysqlRand(55555555, 0).next() == 0.15522042769493574
    assert MysqlRand(0x10001 + 55555555, 0x10000001).next() == 0.40540353712197724


def test_values_render_as_mysql_prints_them() -> None:
    assert render_value(parse_column_type("decimal(10,2)"), Decimal("12.3")) == "12.30"
    assert (
        render_value(parse_column_type("time"), -timedelta(hours=838, minutes=59, seconds=59)) == "-838:59:59"
    )
    assert (
        render_value(parse_column_type("time(2)"), timedelta(hours=100, microseconds=990000))
        == "100:00:00.99"
    )
    assert (
        render_value(parse_column_type("datetime(6)"), datetime(2020, 1, 2, 3, 4, 5))
        == "2020-01-02 03:04:05.000000"
    )
    assert render_value(parse_column_type("char(10)"), "ab  ") == "ab"
    assert render_value(parse_column_type("blob"), b"\x00\xff") == "00ff"
    assert render_value(parse_column_type("bit(13)"), 4096) == "4096"
    assert (
        render_value(parse_column_type("json"), {"bb": [1, None], "a": "x"}) == '{"a": "x", "bb": [1, null]}'
    )
    assert [csv_field(v) for v in (None, "", "a,b", 'say "hi"', "plain")] == [
        "\\N",
        '""',
        '"a,b"',
        '"say ""hi"""',
        "plain",
    ]


def test_unknown_workload_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown workload"):
        generate("nope", 1, tmp_path)
