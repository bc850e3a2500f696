"""Partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT): diffs decoded, and applied as a replica does.

A partial JSON update (PARTIAL_UPDATE_ROWS_EVENT, binlog_row_value_options=PARTIAL_JSON)
logs a column as ``uint32 length`` + diffs; each diff is ``operation byte``, packed
path length + path text and, unless the operation is REMOVE, packed value length +
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from functools import lru_cache

from engine.binlog.json_binary.decoder import decode_json

_U32 = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logical change of a partially updated JSON column."""

    operation: str  # "REPLACE" | "INSERT" | "REMOVE"
    path: str
    value: object | None


_OPERATIONS = ("REPLACE", "INSERT", "REMOVE")
_REMOVE = 2
_U16 = struct.Struct("<H")
_U64 = struct.Struct("<Q")


def read_packed_int(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read MySQL's packed integer (net_field_length); return (value, new position)."""
    end = len(buf)
    if pos >= end:
        raise ValueError("truncated packed integer")
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        if pos + 3 > end:
            raise ValueError("truncated packed integer")
        return _U16.unpack_from(buf, pos + 1)[0], pos + 3
    if first == 253:
        if pos + 4 > end:
            raise ValueError("truncated packed integer")
        return int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    if first == 254:
        if pos + 9 > end:
            raise ValueError("truncated packed integer")
        return _U64.unpack_from(buf, pos + 1)[0], pos + 9
    # 251 is SQL NULL in the protocol and 255 is unused: neither is a length.
    raise ValueError(f"invalid packed integer prefix {first}")


def decode_json_diffs(data: bytes | memoryview) -> list[JsonDiff]:
    """Decode the diffs of one column, i.e. the bytes after its 4-byte length prefix."""
    buf = data if type(data) is bytes else bytes(data)
    n = len(buf)
    pos = 0
    diffs: list[JsonDiff] = []
    try:
        while pos < n:
            op = buf[pos]
            if op > _REMOVE:
                raise ValueError(f"malformed JSON diff: unknown operation {op}")
            path_len, pos = read_packed_int(buf, pos + 1)
            if pos + path_len > n:
                raise ValueError("malformed JSON diff: path exceeds the data")
            path = buf[pos : pos + path_len].decode("utf-8")
            pos += path_len
            _parse_path(path)
            value = None
            if op != _REMOVE:
                value_len, pos = read_packed_int(buf, pos)
                if pos + value_len > n:
                    raise ValueError("malformed JSON diff: value exceeds the data")
                value = decode_json(buf[pos : pos + value_len])
                pos += value_len
            diffs.append(JsonDiff(_OPERATIONS[op], path, value))
    except UnicodeDecodeError:
        raise ValueError("malformed JSON diff: invalid UTF-8 in path") from None
    return diffs


def read_json_diff_column(buf: bytes | memoryview, pos: int) -> tuple[list[JsonDiff], int]:
    """Read a partially logged JSON column at pos in a row image: uint32 length + diffs."""
    if pos < 0 or pos + 4 > len(buf):
        raise ValueError("truncated JSON diff column")
    length = _U32.unpack_from(buf, pos)[0]
    start = pos + 4
    stop = start + length
    if stop > len(buf):
        raise ValueError("JSON diff column exceeds the row data")
    return decode_json_diffs(buf[start:stop]), stop


# --- paths ------------------------------------------------------------------

_MEMBER = 0
_CELL = 1
_WS = re.compile(r"\s*")
_QUOTED_MEMBER = re.compile(r'"(?:[^"\\]|\\.)*"')
_PLAIN_MEMBER = re.compile(r'[^\s.\[\]"*]+')
_CELL_LEG = re.compile(r"\[\s*(?:(\d+)|last(?:\s*-\s*(\d+))?)\s*\]")

_Leg = tuple[int, str | int, bool]


@lru_cache(maxsize=1024)
def _parse_path(path: str) -> tuple[_Leg, ...]:
    """Parse a path as Json_path::to_string() prints it: $, .key, ."quoted", [n], [last-n]."""
    pos = _WS.match(path).end()  # type: ignore[union-attr]
    if not path.startswith("$", pos):
        raise ValueError(f"invalid JSON path {path!r}")
    pos += 1
    legs: list[_Leg] = []
    n = len(path)
    while True:
        pos = _WS.match(path, pos).end()  # type: ignore[union-attr]
        if pos == n:
            return tuple(legs)
        c = path[pos]
        if c == ".":
            pos = _WS.match(path, pos + 1).end()  # type: ignore[union-attr]
            m = _QUOTED_MEMBER.match(path, pos)
            if m is not None:
                try:
                    name = json.loads(m.group())
                except json.JSONDecodeError:
                    raise ValueError(f"invalid JSON path {path!r}") from None
            else:
                m = _PLAIN_MEMBER.match(path, pos)
                if m is None:
                    raise ValueError(f"unsupported JSON path {path!r}")
                name = m.group()
            legs.append((_MEMBER, name, False))
            pos = m.end()
        elif c == "[":
            m = _CELL_LEG.match(path, pos)
            if m is None:
                raise ValueError(f"unsupported JSON path {path!r}")
            if m.group(1) is not None:
                legs.append((_CELL, int(m.group(1)), False))
            else:
                legs.append((_CELL, int(m.group(2) or 0), True))
            pos = m.end()
        else:
            raise ValueError(f"invalid JSON path {path!r}")


def _cell_position(leg: _Leg, length: int) -> tuple[int, bool]:
    """Json_array_index: (position clamped to [0, length], within bounds)."""
    index = leg[1]
    assert isinstance(index, int)
    if leg[2]:
        return (length - index - 1 if index < length else 0), index < length
    return min(index, length), index < length


def _mysql_key_order(key: str) -> tuple[int, bytes]:
    # Json_object keeps members sorted by byte length, then bytes.
    b = key.encode("utf-8")
    return len(b), b


def _rejected(diff: JsonDiff, why: str) -> ValueError:
    return ValueError(f"cannot apply JSON diff {diff.operation} {diff.path}: {why}")


def _child(parent: object, leg: _Leg, diff: JsonDiff) -> tuple[str | int, object]:
    """Find the existing child a leg names, as seek_exact_path() does (no auto-wrap)."""
    if leg[0] == _MEMBER:
        if type(parent) is dict and leg[1] in parent:
            return leg[1], parent[leg[1]]
    elif type(parent) is list:
        position, within = _cell_position(leg, len(parent))
        if within:
            return position, parent[position]
    raise _rejected(diff, "path not found")


def _copy(value: object, diff: JsonDiff) -> dict | list:
    if type(value) is dict:
        return dict(value)
    if type(value) is list:
        return list(value)
    raise _rejected(diff, "path not found")


def _insert_member(obj: dict, name: str, value: object) -> None:
    order = _mysql_key_order(name)
    if not obj or _mysql_key_order(next(reversed(obj))) < order:
        obj[name] = value
        return
    items = list(obj.items())
    obj.clear()
    # The last key sorts after the new one, so the loop always places it.
    for k, v in items:
        if name not in obj and _mysql_key_order(k) > order:
            obj[name] = value
        obj[k] = v


def apply_json_diffs(document: object, diffs: list[JsonDiff]) -> object:
    """Apply diffs as a replica's apply_json_diffs() does and return the new document.

    REPLACE needs an existing value (like JSON_REPLACE, but a miss is an error);
    INSERT adds a new object member (JSON_INSERT; an existing key is an error) or
    inserts into an array at the clamped position (JSON_ARRAY_INSERT); REMOVE deletes
    an existing member or element (JSON_REMOVE; a miss is an error).  The root cannot
    be targeted.  Any rejected diff raises ValueError.  The input document is not
    modified: containers along changed paths are copied, everything else is shared.
    """
    root = document
    fresh: set[int] = set()  # ids of containers copied by this call, safe to mutate
    for diff in diffs:
        legs = _parse_path(diff.path)
        if not legs:
            raise _rejected(diff, "the document root cannot be changed by a diff")
        if id(root) not in fresh:
            root = _copy(root, diff)
            fresh.add(id(root))
        parent = root
        for leg in legs[:-1]:
            key, child = _child(parent, leg, diff)
            if id(child) not in fresh:
                child = _copy(child, diff)
                fresh.add(id(child))
                parent[key] = child  # type: ignore[index]
            parent = child
        leg = legs[-1]
        op = diff.operation
        if op == "REPLACE":
            key, _ = _child(parent, leg, diff)
            parent[key] = diff.value  # type: ignore[index]
        elif op == "INSERT":
            if leg[0] == _MEMBER and type(parent) is dict:
                if leg[1] in parent:
                    raise _rejected(diff, "member already exists")
                _insert_member(parent, leg[1], diff.value)  # type: ignore[arg-type]
            elif leg[0] == _CELL and type(parent) is list:
                parent.insert(_cell_position(leg, len(parent))[0], diff.value)
            else:
                raise _rejected(diff, "path not found")
        elif op == "REMOVE":
            key, _ = _child(parent, leg, diff)
            del parent[key]  # type: ignore[attr-defined]
        else:
            raise _rejected(diff, "unknown operation")
    return root
