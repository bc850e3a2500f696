"""Column values as MySQL prints them (SELECT output, mysqlbinlog -v), and as JSON-safe values."""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

# Categories a terminal does not show as themselves: controls (ESC starts escape sequences, C1's
# CSI too), format characters (bidi overrides, zero-width characters), line/paragraph separators.
_HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))


def _escaped(char: str) -> str:
    if char == " " or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    code = ord(char)
    # \xNN as mysqlbinlog -v writes control bytes; \uNNNN / \UNNNNNNNN beyond Latin-1
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """Text from a log as a terminal may print it: characters that would act on the terminal or
    hide text instead of showing (see _HIDDEN_CATEGORIES) escaped, e.g. ESC as \\x1b."""
    if text.isprintable():
        return text
    return "".join([_escaped(c) for c in text])


_BEYOND_ASCII = re.compile("[^\x00-\x7e]+")  # json.dumps escapes C0 itself


def _json_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():
        return run
    return "".join([_json_char(c) for c in run])


def _json_char(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character beyond the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_visible(document: str) -> str:
    """JSON text from json.dumps(ensure_ascii=False), which escapes only C0, with the other
    characters that act on a terminal or hide text (DEL, C1, bidi, zero-width…) written as \\uNNNN
    escapes: the same JSON value, safe to print."""
    if document.isascii() and "\x7f" not in document:
        return document
    return _BEYOND_ASCII.sub(_json_run, document)


def time_text(value: dt.timedelta) -> str:
    """TIME: [-]HH:MM:SS[.ffffff], hours may exceed 24."""
    micro_total = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micro_total < 0 else ""
    micro_total = abs(micro_total)
    seconds, micro = divmod(micro_total, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{micro:06d}" if micro else text


def value_text(value: Any) -> str:
    """A value as MySQL's client prints it (without quoting): the house's canonical text form."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        return value
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return f"{text}.{value.microsecond:06d}" if value.microsecond else text
    if isinstance(value, dt.date):
        return value.strftime("%Y-%m-%d")
    if isinstance(value, dt.timedelta):
        return time_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list):
        if all(isinstance(v, float) for v in value):  # VECTOR
            return "[" + ",".join(float_text(v) for v in value) + "]"
        return "; ".join(value_text(v) for v in value)  # a partial JSON update: its diffs
    if hasattr(value, "operation") and hasattr(value, "path"):
        # here: the JSON package is loaded by the decoders that make these, and every command
        # that only prints text (`relaydeck status`, `--help`) starts without it
        from .binlog.json_binary import json_text

        shown = "" if value.value is None else f", {json_text(value.value)}"
        return f"JSON_{value.operation}({value.path}{shown})"
    return str(value)


def float_text(value: float) -> str:
    """Shortest round-trip digits, written the way MySQL writes them (1e20, not 1e+20)."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value)) if value or str(value)[0] != "-" else "-0"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


def json_value(value: Any) -> Any:
    """A JSON-serialisable form: numbers stay numbers, exact decimals and temporals become text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return {"hex": bytes(value).hex()}
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if hasattr(value, "operation") and hasattr(value, "path"):  # a partial-JSON diff
        return {"operation": value.operation, "path": value.path, "value": json_value(value.value)}
    return value_text(value)


def quoted(value: Any) -> str:
    """A value as a SQL literal, for one-line row displays."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str:
        if "\\" in value or "'" in value:
            value = value.replace("\\", "\\\\").replace("'", "\\'")
        if not value.isprintable():
            value = visible(value)
        return f"'{value}'"
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray | memoryview):
        try:  # strings logged without charset metadata: show them as text when they are text
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return f"X'{bytes(value).hex()}'"
        if not value.isprintable():
            return f"X'{value.encode().hex()}'"
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return value_text(value)
    text = value_text(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{visible(text)}'"


def row_lines(
    head: str, columns: Sequence[Any], images: tuple[dict[int, list[Any]] | None, ...], count: int
) -> str:
    """The rows as mysqlbinlog -v shows them, one line (and newline) per row: head, then each
    image present as (name=value, ...), joined by ' -> '.

    columns: the table's columns (each with a .name); images: the before and after images, each
    None, or a dict of column index -> that column's values.
    """
    shown = [[(columns[i].name, values) for i, values in image.items()] for image in images if image]
    return "".join(
        head
        + " -> ".join(
            "(" + ", ".join([f"{name}={quoted(values[r])}" for name, values in image]) + ")"
            for image in shown
        )
        + "\n"
        for r in range(count)
    )


_json_string = json.encoder.encode_basestring  # type: ignore[attr-defined]


def value_json(value: Any) -> str:
    """A value as json.dumps(json_value(value), ensure_ascii=False) writes it."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str:
        return _json_string(value)
    if value is None:
        return "null"
    return json.dumps(json_value(value), ensure_ascii=False)


def rows_json_text(
    keys: Sequence[str],
    before: dict[int, list[Any]] | None,
    after: dict[int, list[Any]] | None,
    count: int,
) -> str:
    """The rows as the JSON list json.dumps(ensure_ascii=False) writes for
    [{"before": {name: value, ...}, "after": {...}}, ...] (an image present only when it holds
    columns), without building those dicts.

    keys: each column's name as a JSON string (unique); before/after: None, or a dict of column
    index -> that column's values.
    """
    shown = [
        (label, [(keys[i], values) for i, values in image.items()])
        for label, image in (('"before": {', before), ('"after": {', after))
        if image
    ]
    return (
        "["
        + ", ".join(
            "{"
            + ", ".join(
                label + ", ".join([f"{key}: {value_json(values[r])}" for key, values in image]) + "}"
                for label, image in shown
            )
            + "}"
            for r in range(count)
        )
        + "]"
    )
