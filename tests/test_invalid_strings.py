"""A string column whose logged bytes are not valid in its character set: MySQL stores them, DuckDB's
VARCHAR cannot. The channel stops with MySQL's error 1366 naming the transaction, the relay-log
position, the rows event, the table and the column, at the last whole transaction before it; once
the relay log is repaired, the same command finishes with exactly the source's tables.

The case is the issue's: the first CHAR value of a Write_rows_v1 event of the bundled capture's
m1 channel (relay-bin-m1.000002 at 450952) made two bytes of invalid UTF-8, with the CRC fixed.
Offsets are worked out here from the event layout, not taken from relaydeck.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import duckdb
import pytest

from .binlog_frames import HEADER, HEADER_LEN, raw_events, with_crc
from .conftest import MULTISOURCE, replay_argv
from .test_replay_errors import status_of
from .test_replay_oracle import M1_SCHEMAS, assert_tables_equal, expected_tables

RELAY = MULTISOURCE / "relay"
DAMAGED_FILE, EVENT_POS = "relay-bin-m1.000002", 450952
WRITE_ROWS_V1, MARIADB_GTID = 23, 162
INVALID_UTF8 = b"\xc0\xc0"  # 0xC0 never occurs in UTF-8


def first_char_value_offset(data: bytes, pos: int) -> int:
    """File offset of the first row's third column (sbtest's `c CHAR(120)`) in a Write_rows_v1 event
    of a 4-column table with every column present: header, table id (6) and flags (2), the column
    count (one byte), the present-columns bitmap, then the row: its NULL bitmap, `id INT`, `k INT`,
    and the CHAR's length, two bytes since utf8mb4 makes 120 characters up to 480 bytes."""
    _, type_code, _, _, _, _ = HEADER.unpack_from(data, pos)
    assert type_code == WRITE_ROWS_V1
    body = pos + HEADER_LEN + 6 + 2
    assert data[body] == 4  # columns
    row = body + 1 + 1
    length_at = row + 1 + 4 + 4
    assert struct.unpack_from("<H", data, length_at)[0] > len(INVALID_UTF8)
    return length_at + 2


def transaction_of(data: bytes, pos: int) -> tuple[str, int]:
    """The GTID (MariaDB domain-server-seqno) and relay position of the transaction holding `pos`:
    the last GTID event before it, found by walking the event headers."""
    at, found = 4, None
    while at < pos:
        _, type_code, server_id, size, _, _ = HEADER.unpack_from(data, at)
        if type_code == MARIADB_GTID:
            seqno, domain = struct.unpack_from("<QI", data, at + HEADER_LEN)
            found = (f"{domain}-{server_id}-{seqno}", at)
        at += size
    assert found is not None and at == pos
    return found


def damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    value_at = first_char_value_offset(data, EVENT_POS)
    data[value_at : value_at + len(INVALID_UTF8)] = INVALID_UTF8
    event = next(ev for ev in raw_events(bytes(data))[0] if ev.pos == EVENT_POS)
    path.write_bytes(bytes(with_crc(data, event)))


def m1_status(repo: Path) -> dict:
    return status_of(repo, "m1")


@pytest.mark.parametrize(
    "applier",
    [(), ("--workers", "2"), ("--workers", "2", "--pool", "processes")],
    ids=["single", "threads", "processes"],
)
def test_invalid_utf8_in_a_char_stops_cleanly_and_a_repaired_log_replays_exactly(tmp_path, applier):
    relay = tmp_path / "relay"
    shutil.copytree(RELAY, relay)
    damage(relay / DAMAGED_FILE)
    gtid, txn_pos = transaction_of((relay / DAMAGED_FILE).read_bytes(), EVENT_POS)
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    index = relay / "relay-bin-m1.index"

    run = subprocess.run(
        replay_argv(slave, repo, f"m1={index}", *applier), capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    line = run.stderr
    assert "Error 1366" in line and "internal error" not in line and "surrogate" not in line
    assert f"in transaction GTID {gtid} (relay log {DAMAGED_FILE}:{txn_pos})" in line
    assert "Incorrect string value: '\\xC0\\xC0" in line
    assert "for column `sbtest2`.`sbtest2`.`c` at row 1" in line
    assert f"rows event at {DAMAGED_FILE}:{EVENT_POS}" in line

    # nothing of the failing transaction (nor after it) is in the slave, everything before it is
    domain, server, seqno = gtid.split("-")
    con = duckdb.connect(str(slave), read_only=True)
    try:
        (executed,) = con.execute(
            "SELECT executed_gtids FROM __relaydeck.progress WHERE channel = 'm1'"
        ).fetchone()
        assert executed == f"{domain}-{server}-{int(seqno) - 1}"
        assert con.execute("SELECT count(*) FROM sbtest2.sbtest2").fetchone() == (0,)
    finally:
        con.close()
    status = m1_status(repo)
    assert status["executed_gtid_set"] == executed and status["transactions_applied"] == int(seqno) - 1
    assert status["last_error_number"] == 1366 and f"GTID {gtid}" in status["last_error_message"]

    # the relay log repaired, the same command goes on from there and ends with the source's tables
    shutil.copy(RELAY / DAMAGED_FILE, relay / DAMAGED_FILE)
    again = subprocess.run(
        replay_argv(slave, repo, f"m1={index}", *applier), capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert_tables_equal(slave, expected_tables(schemas=M1_SCHEMAS), M1_SCHEMAS)
