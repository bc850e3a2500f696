"""MySQL's binary JSON, written: the encoder of JSON column values (json_binary.cc's format)."""

from __future__ import annotations

import struct
from collections.abc import Iterable

JSONB_SMALL_OBJECT = 0x00
JSONB_LARGE_OBJECT = 0x01
JSONB_SMALL_ARRAY = 0x02
JSONB_LARGE_ARRAY = 0x03
JSONB_LITERAL = 0x04
JSONB_INT16 = 0x05
JSONB_INT32 = 0x07
JSONB_INT64 = 0x09
JSONB_UINT64 = 0x0A
JSONB_DOUBLE = 0x0B
JSONB_STRING = 0x0C

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def json_key_order(keys: Iterable[str]) -> list[str]:
    """MySQL stores (and prints) object keys shortest first, then by their UTF-8 bytes."""
    return sorted(keys, key=lambda k: (len(k.encode()), k.encode()))


def encode_json(value: JsonValue) -> bytes:
    """A JSON document in MySQL's binary format: type byte + value."""
    kind, data = _json_value(value)
    return bytes((kind,)) + data


def _json_value(value: JsonValue) -> tuple[int, bytes]:
    if value is None:
        return JSONB_LITERAL, b"\x00"
    if value is True:
        return JSONB_LITERAL, b"\x01"
    if value is False:
        return JSONB_LITERAL, b"\x02"
    if isinstance(value, int):
        if -(1 << 15) <= value < 1 << 15:
            return JSONB_INT16, value.to_bytes(2, "little", signed=True)
        if -(1 << 31) <= value < 1 << 31:
            return JSONB_INT32, value.to_bytes(4, "little", signed=True)
        if -(1 << 63) <= value < 1 << 63:
            return JSONB_INT64, value.to_bytes(8, "little", signed=True)
        return JSONB_UINT64, value.to_bytes(8, "little")
    if isinstance(value, float):
        return JSONB_DOUBLE, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return JSONB_STRING, _json_varlen(len(raw)) + raw
    if isinstance(value, list):
        return _json_container(None, value)
    if isinstance(value, dict):
        keys = json_key_order(value)
        return _json_container(keys, [value[k] for k in keys])
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _json_varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _json_container(keys: list[str] | None, values: list[JsonValue]) -> tuple[int, bytes]:
    encoded = [_json_value(v) for v in values]
    for large in (False, True):
        data = _json_layout(keys, encoded, large)
        if data is not None:
            if keys is None:
                return (JSONB_LARGE_ARRAY if large else JSONB_SMALL_ARRAY), data
            return (JSONB_LARGE_OBJECT if large else JSONB_SMALL_OBJECT), data
    raise ValueError("JSON document too large")


def _json_layout(keys: list[str] | None, encoded: list[tuple[int, bytes]], large: bool) -> bytes | None:
    width = 4 if large else 2
    limit = 1 << (8 * width)
    count = len(encoded)
    raw_keys = [k.encode() for k in keys] if keys is not None else []
    pos = 2 * width + (count * (width + 2) if keys is not None else 0) + count * (1 + width)
    key_entries = bytearray()
    for raw in raw_keys:
        key_entries += pos.to_bytes(width, "little") + len(raw).to_bytes(2, "little")
        pos += len(raw)
    value_entries = bytearray()
    payload = bytearray()
    inline = {JSONB_LITERAL, JSONB_INT16} | ({JSONB_INT32} if large else set())
    for kind, data in encoded:
        if kind in inline:
            value_entries += bytes((kind,)) + data.ljust(width, b"\x00")
        else:
            if pos >= limit:
                return None
            value_entries += bytes((kind,)) + pos.to_bytes(width, "little")
            payload += data
            pos += len(data)
    if pos >= limit:
        return None
    head = count.to_bytes(width, "little") + pos.to_bytes(width, "little")
    return b"".join((head, bytes(key_entries), bytes(value_entries), b"".join(raw_keys), bytes(payload)))
