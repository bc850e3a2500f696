"""Compressed payloads: MariaDB's zlib-compressed query/rows events and MySQL's ZSTD payloads."""

from __future__ import annotations

import zlib

import zstandard

# A server never writes an event larger than max_allowed_packet (1 GiB); a length claiming more
# is corruption, and must not become an allocation of that size.
MAX_UNCOMPRESSED = 1 << 30


def mariadb_uncompress(data: bytes) -> bytes:
    """MariaDB: one header byte (low 3 bits: bytes of length), big-endian length, zlib stream."""
    if not data:
        raise ValueError("empty compressed payload")
    if data[0] & 0xF0 != 0x80:
        raise ValueError(f"compressed-event header byte 0x{data[0]:02x} names no algorithm known (zlib is 0)")
    lenlen = data[0] & 0x07
    if lenlen == 0 or lenlen > 4 or len(data) < 1 + lenlen:
        raise ValueError(f"bad compressed-event header byte 0x{data[0]:02x}")
    expected = int.from_bytes(data[1 : 1 + lenlen], "big")
    if expected > MAX_UNCOMPRESSED:
        raise ValueError(f"compressed event claims {expected} bytes uncompressed")
    try:
        inflater = zlib.decompressobj()
        out = inflater.decompress(data[1 + lenlen :], expected + 1)
    except zlib.error as exc:
        raise ValueError(f"zlib: {exc}") from None
    if len(out) != expected:
        raise ValueError(f"compressed event gave {len(out)} bytes, header says {expected}")
    return out


def zstd_uncompress(data: bytes, expected: int | None) -> bytes:
    """MySQL TRANSACTION_PAYLOAD: one ZSTD frame of the transaction's events."""
    limit = MAX_UNCOMPRESSED if expected is None else expected
    if limit > MAX_UNCOMPRESSED:
        raise ValueError(f"payload claims {limit} bytes uncompressed")
    chunks: list[bytes] = []
    total = 0
    try:
        # Read in bounded steps: a frame's own size claims are not trusted.
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while total <= limit:
                chunk = reader.read(min(1 << 20, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from None
    out = b"".join(chunks)
    if total > limit:
        raise ValueError(f"payload inflates past {limit} bytes")
    if expected is not None and len(out) != expected:
        raise ValueError(f"payload gave {len(out)} bytes, header says {expected}")
    return out
