"""Reading the text the real `mariadb-binlog` prints, and rendering relaydeck's values the same way.

Two halves, both used by tests/test_against_mariadb_binlog.py:

* a parser for `mariadb-binlog FILE` (event comment lines) and for
  `mariadb-binlog --base64-output=decode-rows -vv FILE` (the `###` row blocks);
* a renderer that prints a value relaydeck decoded the way mariadb-binlog prints the same column
  (sql/log_event_client.cc, log_event_print_value), so the test compares text with text.

mariadb-binlog writes row values as raw bytes (string columns are not re-encoded), so everything
here works on bytes, never on decoded text.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any

from engine.binlog.charsets import codec_for
from engine.binlog.columns import ColumnInfo, InvalidTemporal
from engine.binlog.constants import ColumnType

MARIADB_BINLOG: str | None = shutil.which("mariadb-binlog")

# Options for the row listing: no BINLOG '...' base64 blocks, rows as `###` pseudo-SQL with the
# column type annotations (/* TYPE meta=… nullable=… is_null=… */).
DECODE_ROWS = ("--base64-output=decode-rows", "-vv")


# ---------------------------------------------------------------------------
# Running mariadb-binlog
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One mariadb-binlog run: its exit code and both output streams."""

    returncode: int
    stdout: bytes
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        """Its error messages (not warnings such as "Character set '#255' is not a compiled …")."""
        return [line for line in self.stderr.splitlines() if line.startswith(("ERROR:", "Error:"))]

    @property
    def stopped_early(self) -> bool:
        """Exit code 0 after an error: it stops reading at an event it cannot read, yet succeeds."""
        return self.returncode == 0 and bool(self.error_lines)

    def reason(self) -> str:
        """Why mariadb-binlog failed or stopped, in one line (for skip and assertion messages)."""
        lines = self.error_lines or self.stderr.strip().splitlines() or ["(no message)"]
        return f"exit code {self.returncode}: {lines[0]}"


@cache
def run_mariadb_binlog(path: str, options: tuple[str, ...] = ()) -> Run:
    """mariadb-binlog over one file, once per (file, options) for the whole test session."""
    if MARIADB_BINLOG is None:
        raise RuntimeError("mariadb-binlog is not installed")
    done = subprocess.run([MARIADB_BINLOG, *options, path], capture_output=True, timeout=120, check=False)
    return Run(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


# ---------------------------------------------------------------------------
# Parsing its output
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListedEvent:
    """One event as mariadb-binlog lists it: `# at POS` and the `#yymmdd hh:mm:ss …` header line."""

    pos: int
    server_id: int
    end_log_pos: int
    type_word: str  # mariadb-binlog's name for the event type, normalised (see _type_word)


@dataclass(frozen=True, slots=True)
class ListedValue:
    """One `###   @N=value /* TYPE meta=M nullable=0|1 is_null=0|1 */` line."""

    column: int  # 1-based, as in @N
    text: bytes  # the value exactly as printed (raw bytes for strings)
    type_name: str
    meta: int
    nullable: bool
    is_null: bool


@dataclass(frozen=True, slots=True)
class ListedRow:
    """One row of a rows event: `### INSERT INTO`, `### UPDATE` or `### DELETE FROM` and its images."""

    verb: str  # "INSERT INTO", "UPDATE", "DELETE FROM"
    table: str  # `schema`.`table` as printed
    before: tuple[ListedValue, ...] | None  # the WHERE image (UPDATE, DELETE)
    after: tuple[ListedValue, ...] | None  # the SET image (INSERT, UPDATE)


@dataclass(slots=True)
class Listing:
    events: list[ListedEvent] = field(default_factory=list)
    # Every row in file order, with the position of the event mariadb-binlog printed it under.
    # It prints a statement's rows events (all but the last without STMT_END_F) as one group: all
    # their headers, then all their rows, so a row's position is that of its statement's last
    # rows event, not necessarily of the event that holds it.
    rows: list[tuple[int, ListedRow]] = field(default_factory=list)


_AT = re.compile(rb"^# at (\d+)$")
# Log_event::print_header: '#' yymmdd %2d:%02d:%02d " server id %lu  end_log_pos %s "
# [CRC32 0x%08x ] then the event's own text, which starts with a tab.
_HEADER = re.compile(
    rb"^#\d{6} [ \d]\d:\d\d:\d\d server id (\d+)  end_log_pos (\d+) (?:CRC32 0x[0-9a-f]{8} )?(.*)$"
)
# Begin_load_query and Append_block print nothing after the header and name themselves on the
# next line instead: "#Begin_load_query: file_id: 2  block_len: 131072".
_NAME_NEXT_LINE = re.compile(rb"^#(\w+): ")
_IGNORABLE = re.compile(rb"^# Ignorable event type (\d+) ")
_ROW_START = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) (.+)$")
# The value runs to the last " /* " of the line (greedy): string values are printed raw and may
# hold quotes, but never a line break (bytes below 0x20 are printed as \xNN).
_VALUE = re.compile(rb"^###   @(\d+)=(.*) /\* (.+?) meta=(\d+) nullable=([01]) is_null=([01]) \*/$")


def _type_word(text: bytes) -> str:
    """The event type from the text after the header: its first word(s), without the details."""
    text = text.lstrip(b"\t")
    for prefix in (b"Rotate to", b"Gtid list", b"Binlog checkpoint"):
        if text.startswith(prefix):
            return prefix.decode()
    word = re.match(rb"[A-Za-z_]*", text)
    assert word is not None
    return word.group(0).decode()


def parse_listing(output: bytes) -> Listing:
    """Events and rows from mariadb-binlog's stdout (with or without decode-rows -vv).

    mariadb-binlog prints `# at POS` when it reads an event but may hold the event's header line
    back: Annotate_rows, Table_map and the rows events of one statement are printed together once
    the statement's last rows event (STMT_END_F) is read. Headers come out in event order, so
    `# at` positions are queued and each header line takes the oldest.

    Raises ValueError on a header without a pending `# at`, and on a line shape the parser does not
    know inside a row block, so that a change of output format fails loudly instead of silently
    dropping events or values.
    """
    listing = Listing()
    pending_at: deque[int] = deque()
    last: ListedEvent | None = None
    row: dict[str, Any] | None = None
    image: list[ListedValue] | None = None

    def finish_row() -> None:
        nonlocal row, image
        if row is not None and last is not None:
            before, after = row["WHERE"], row["SET"]
            listing.rows.append(
                (
                    last.pos,
                    ListedRow(
                        row["verb"],
                        row["table"],
                        tuple(before) if before is not None else None,
                        tuple(after) if after is not None else None,
                    ),
                )
            )
        row, image = None, None

    for line in output.split(b"\n"):
        if m := _AT.match(line):
            finish_row()
            pending_at.append(int(m.group(1)))
            continue
        if m := _HEADER.match(line):
            finish_row()
            if not pending_at:
                raise ValueError(f"event header line without a '# at' line before it: {line[:200]!r}")
            last = ListedEvent(pending_at.popleft(), int(m.group(1)), int(m.group(2)), _type_word(m.group(3)))
            listing.events.append(last)
            continue
        if last is not None and last.type_word == "" and (m := _NAME_NEXT_LINE.match(line)):
            last = ListedEvent(last.pos, last.server_id, last.end_log_pos, m.group(1).decode())
            listing.events[-1] = last
            continue
        if last is not None and last.type_word == "Ignorable" and (m := _IGNORABLE.match(line)):
            # "# Ignorable event type 33 (MySQL Gtid)": keep the number, it is what identifies it.
            last = ListedEvent(last.pos, last.server_id, last.end_log_pos, f"Ignorable({int(m.group(1))})")
            listing.events[-1] = last
            continue
        if not line.startswith(b"###"):
            finish_row()
            continue
        if m := _ROW_START.match(line):
            finish_row()
            row = {
                "verb": m.group(1).decode(),
                "table": m.group(2).decode("utf-8", "replace"),
                "WHERE": None,
                "SET": None,
            }
            continue
        if line in (b"### WHERE", b"### SET") and row is not None:
            image = row[line[4:].decode()] = []
            continue
        if (m := _VALUE.match(line)) and image is not None:
            image.append(
                ListedValue(
                    int(m.group(1)),
                    m.group(2),
                    m.group(3).decode(),
                    int(m.group(4)),
                    m.group(5) == b"1",
                    m.group(6) == b"1",
                )
            )
            continue
        raise ValueError(f"unexpected line in a mariadb-binlog row block: {line[:200]!r}")
    finish_row()
    if pending_at:
        raise ValueError(f"'# at' lines without an event header: {list(pending_at)}")
    return listing


# ---------------------------------------------------------------------------
# Event type names: mariadb-binlog's words -> relaydeck's Event_type names
# ---------------------------------------------------------------------------

# mariadb-binlog names events in the header line's text; one word may stand for several type
# codes (it prints "Write_rows" for v1, v2 and compressed rows events alike).
MARIADB_TYPE_WORDS: dict[str, frozenset[str]] = {
    "Start": frozenset({"Format_desc", "Start_v3"}),
    "Query": frozenset({"Query", "Query_compressed"}),
    "Execute_load_query": frozenset({"Execute_load_query"}),
    "Begin_load_query": frozenset({"Begin_load_query"}),
    "Append_block": frozenset({"Append_block"}),
    "Xid": frozenset({"Xid"}),
    "Table_map": frozenset({"Table_map"}),
    "Write_rows": frozenset(
        {"Write_rows", "Write_rows_v1", "Write_rows_compressed", "Write_rows_compressed_v1"}
    ),
    "Update_rows": frozenset(
        {"Update_rows", "Update_rows_v1", "Update_rows_compressed", "Update_rows_compressed_v1"}
    ),
    "Delete_rows": frozenset(
        {"Delete_rows", "Delete_rows_v1", "Delete_rows_compressed", "Delete_rows_compressed_v1"}
    ),
    "GTID": frozenset({"Gtid"}),  # MariaDB GTID (type 162)
    "Gtid list": frozenset({"Gtid_list"}),
    "Binlog checkpoint": frozenset({"Binlog_checkpoint"}),
    "Annotate_rows": frozenset({"Annotate_rows"}),
    "Rotate to": frozenset({"Rotate"}),
    "Stop": frozenset({"Stop"}),
    "Intvar": frozenset({"Intvar"}),
    "User_var": frozenset({"User var"}),
    "Rand": frozenset({"RAND"}),
    "Incident": frozenset({"Incident"}),
    # MySQL-only events MariaDB does not decode: "Ignorable" + "# Ignorable event type N (…)".
    "Ignorable(29)": frozenset({"Rows_query"}),
    "Ignorable(33)": frozenset({"Gtid"}),
    "Ignorable(34)": frozenset({"Anonymous_Gtid"}),
    "Ignorable(35)": frozenset({"Previous_gtids"}),
    "Ignorable(36)": frozenset({"Transaction_context"}),
    "Ignorable(37)": frozenset({"View_change"}),
    "Ignorable(38)": frozenset({"XA_prepare"}),
}


def relaydeck_names_for(type_word: str) -> frozenset[str] | None:
    """The relaydeck event type names mariadb-binlog's word stands for; None if the word is unknown."""
    if type_word in MARIADB_TYPE_WORDS:
        return MARIADB_TYPE_WORDS[type_word]
    if m := re.fullmatch(r"Ignorable\((\d+)\)", type_word):
        # An unknown ignorable type: relaydeck names it Unknown(N) if it lists it at all.
        return frozenset({f"Unknown({m.group(1)})"})
    return None


# ---------------------------------------------------------------------------
# Rendering relaydeck's values the way mariadb-binlog prints them
# ---------------------------------------------------------------------------

_INT_BITS = {
    ColumnType.TINY: 8,
    ColumnType.SHORT: 16,
    ColumnType.INT24: 24,
    ColumnType.LONG: 32,
    ColumnType.LONGLONG: 64,
}
_INT_NAMES = {
    ColumnType.TINY: "TINYINT",
    ColumnType.SHORT: "SHORTINT",
    ColumnType.INT24: "MEDIUMINT",
    ColumnType.LONG: "INT",
    ColumnType.LONGLONG: "LONGINT",
}
_BLOB_NAMES = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}
_BLOB_TYPES = frozenset({ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB})
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def string_length(meta: int) -> int:
    """CHAR(n)'s byte length from its metadata (long CHARs borrow two bits of the type byte)."""
    if meta >= 256:
        byte0, byte1 = meta >> 8, meta & 0xFF
        if byte0 & 0x30 != 0x30:
            return byte1 | ((byte0 & 0x30) ^ 0x30) << 4
        return byte1
    return meta


def mariadb_meta(col: ColumnInfo) -> int:
    """The column metadata as mariadb-binlog prints it in meta=…

    The same number as relaydeck's ColumnInfo.meta except for BIT: relaydeck keeps the first
    metadata byte (bits % 8) high, mariadb-binlog reads the two bytes little-endian (first low).
    """
    if col.type_code == ColumnType.BIT:
        return (col.meta & 0xFF) << 8 | col.meta >> 8
    return col.meta


def bit_width(col: ColumnInfo) -> int:
    """BIT(n)'s n, computed from the metadata the way mariadb-binlog does."""
    meta = mariadb_meta(col)
    return (meta >> 8) * 8 + (meta & 0xFF)


def mariadb_type_name(col: ColumnInfo) -> str:
    """The TYPE mariadb-binlog prints in the /* … */ annotation for this column."""
    t, meta = col.type_code, col.meta
    if t in _INT_NAMES:
        return _INT_NAMES[t]
    names = {
        ColumnType.FLOAT: "FLOAT",
        ColumnType.DOUBLE: "DOUBLE",
        ColumnType.TIMESTAMP: "TIMESTAMP",
        ColumnType.DATETIME: "DATETIME",
        ColumnType.TIME: "TIME",
        ColumnType.DATE: "DATE",
        ColumnType.NEWDATE: "DATE",
        ColumnType.YEAR: "YEAR",
        ColumnType.GEOMETRY: "GEOMETRY",
    }
    if t in names:
        return names[t]
    if t == ColumnType.NEWDECIMAL:
        return f"DECIMAL({meta >> 8},{meta & 0xFF})"
    if t == ColumnType.BIT:
        return f"BIT({bit_width(col)})"
    if t in (ColumnType.TIMESTAMP2, ColumnType.DATETIME2, ColumnType.TIME2):
        return f"{ColumnType(t).name[:-1]}({meta})"
    if t == ColumnType.ENUM:
        return "ENUM(1 byte)" if meta & 0xFF == 1 else "ENUM(2 bytes)"
    if t == ColumnType.SET:
        return f"SET({meta & 0xFF} bytes)"
    if t in _BLOB_TYPES:
        return _BLOB_NAMES.get(meta, f"BLOB meta={meta}")
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        return f"VARSTRING({meta})"
    if t == ColumnType.STRING:
        return f"STRING({string_length(meta)})"
    return f"type {t}"


def quoted(raw: bytes) -> bytes:
    """my_b_write_quoted: bytes below 0x20 as \\xNN, every other byte as it is, in single quotes.

    Its branches that would escape ' and \\ are unreachable (both are above 0x1F), so quotes and
    backslashes inside a value are printed bare.
    """
    return b"'" + re.sub(rb"[\x00-\x1f]", lambda m: b"\\x%02x" % m.group(0)[0], raw) + b"'"


def _signed_and_unsigned(value: int, bits: int) -> bytes:
    """my_b_write_sint32_and_uint32 (and the LONGLONG case): signed, then (unsigned) if negative."""
    unsigned = value % (1 << bits)
    signed = unsigned - (1 << bits) if unsigned >> (bits - 1) else unsigned
    return b"%d (%d)" % (signed, unsigned) if signed < 0 else b"%d" % signed


def _bits(data: bytes, nbits: int) -> bytes:
    """my_b_write_bit: the last nbits bits of data, most significant bit of each byte first."""
    text = "".join(f"{byte:08b}" for byte in data)
    return b"b'" + text[len(text) - nbits :].encode() + b"'"


def _fraction(micro: int, dec: int) -> str:
    return f".{micro // 10 ** (6 - dec):0{dec}d}" if dec else ""


def _datetime_parts(value: dt.datetime | InvalidTemporal) -> tuple[int, int, int, int, int, int, int]:
    if isinstance(value, InvalidTemporal):
        # relaydeck keeps dates Python cannot hold (zero dates) as MySQL text.
        m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?", value)
        assert m is not None, f"unexpected invalid-datetime text {value!r}"
        return tuple(int(g or 0) for g in m.groups())  # type: ignore[return-value]
    return value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond


def _date_parts(value: dt.date | InvalidTemporal) -> tuple[int, int, int]:
    if isinstance(value, InvalidTemporal):
        m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", value)
        assert m is not None, f"unexpected invalid-date text {value!r}"
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    return value.year, value.month, value.day


def _epoch_parts(value: dt.datetime | InvalidTemporal) -> tuple[int, int]:
    if isinstance(value, InvalidTemporal):
        assert value == "0000-00-00 00:00:00", f"unexpected invalid-timestamp text {value!r}"
        return 0, 0
    delta = value - _EPOCH
    return delta.days * 86400 + delta.seconds, delta.microseconds


def _time_parts(value: dt.timedelta) -> tuple[str, int, int, int, int]:
    sign = "-" if value < dt.timedelta(0) else ""
    total = abs(value)
    seconds = total.days * 86400 + total.seconds
    return sign, seconds // 3600, seconds // 60 % 60, seconds % 60, total.microseconds


def _stored_bytes(col: ColumnInfo, value: str | bytes) -> bytes:
    """The bytes the binlog holds for a string value relaydeck decoded (undoing its charset decode)."""
    if isinstance(value, bytes):
        return value
    codec = codec_for(col.charset) or "utf-8"
    return value.encode(codec, "surrogateescape")


def render_value(col: ColumnInfo, value: Any) -> bytes:
    """relaydeck's decoded value of `col`, printed as mariadb-binlog prints that column."""
    t, meta = col.type_code, col.meta
    if value is None:
        return b"NULL"
    if t in _INT_BITS:
        return _signed_and_unsigned(value, _INT_BITS[t])
    if t == ColumnType.NEWDECIMAL:
        # decimal2string: every digit of the column's scale, no exponent; relaydeck's Decimal
        # carries the scale as its exponent, so 'f' formatting prints exactly its digits.
        assert isinstance(value, Decimal)
        return format(value, "f").encode()
    if t == ColumnType.FLOAT:
        # sprintf("%-20g", (double) fl): 6 significant digits, padded to 20 columns.
        return b"%-20g" % value
    if t == ColumnType.DOUBLE:
        return b"%.20g" % value
    if t == ColumnType.BIT:
        nbits = bit_width(col)
        return _bits(value.to_bytes((nbits + 7) // 8, "big"), nbits)
    if t == ColumnType.YEAR:
        # It prints the stored byte + 1900, so YEAR 0000 (stored as 0; relaydeck's 0) prints 1900.
        return b"%04d" % (value or 1900)
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        return b"'%04d:%02d:%02d'" % _date_parts(value)  # sic: colons
    if t == ColumnType.DATETIME:
        return b"'%04d-%02d-%02d %02d:%02d:%02d'" % _datetime_parts(value)[:6]
    if t == ColumnType.DATETIME2:
        year, month, day, hour, minute, second, micro = _datetime_parts(value)
        text = (
            f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{_fraction(micro, meta)}"
        )
        return quoted(text.encode())
    if t == ColumnType.TIMESTAMP:
        return b"%d" % _epoch_parts(value)[0]  # seconds since the epoch, unquoted
    if t == ColumnType.TIMESTAMP2:
        seconds, micro = _epoch_parts(value)
        return (f"{seconds}" + _fraction(micro, meta)).encode()  # my_timeval_to_str
    if t == ColumnType.TIME:
        sign, h, m, s, _ = _time_parts(value)
        return f"'{sign}{h:02d}:{m:02d}:{s:02d}'".encode()
    if t == ColumnType.TIME2:
        sign, h, m, s, micro = _time_parts(value)
        return quoted(f"{sign}{h:02d}:{m:02d}:{s:02d}{_fraction(micro, meta)}".encode())
    if t == ColumnType.ENUM:
        # The stored index; relaydeck gives the member's name when the table map lists them.
        if isinstance(value, str):
            value = col.enum_values.index(value) + 1 if value else 0  # type: ignore[union-attr]
        return b"%d" % value
    if t == ColumnType.SET:
        if isinstance(value, str):
            members = value.split(",") if value else []
            value = sum(1 << col.set_values.index(m) for m in members)  # type: ignore[union-attr]
        size = meta & 0xFF
        return _bits(value.to_bytes(size, "little"), size * 8)
    if t == ColumnType.STRING:
        raw = _stored_bytes(col, value)
        if col.is_binary:
            # The binlog holds BINARY(n) without its trailing 0x00 pad and mariadb-binlog prints
            # what is stored; relaydeck pads the value back to n bytes.
            raw = raw.rstrip(b"\x00")
        return quoted(raw)
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.GEOMETRY) or t in _BLOB_TYPES:
        return quoted(_stored_bytes(col, value))
    raise ValueError(f"no mariadb-binlog rendering for column type {t}")
