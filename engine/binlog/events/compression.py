"""Compressed payloads: MariaDB's zlib-compressed query/rows events and MySQL's ZSTD payloads.

Both formats declare the uncompressed size, and neither the declaration nor the compressed stream
is trusted until they agree: a declaration is checked against the server's limit and what the
stream could possibly hold before anything is allocated, output is produced in bounded steps and
never past the declaration, and a large declaration is first confirmed by inflating without
keeping the output, so that a lie costs time (bounded by the limit) but never its memory.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import zstandard

# A server never sends an event larger than max_allowed_packet, whose maximum is 1 GiB; a
# declared size above it is corruption, and must not become an allocation of that size.
MAX_UNCOMPRESSED = 1 << 30
# Deflate codes at most 258 bytes in 2 bits, so a zlib stream never inflates more than 1032-fold.
ZLIB_MAX_RATIO = 1032
# Declarations up to this are inflated directly; larger ones are confirmed first.
CONFIRM_ABOVE = 16 << 20
_STEP = 1 << 20


def mariadb_uncompress(data: bytes) -> bytes:
    """MariaDB: one header byte (low 3 bits: bytes of length), big-endian length, zlib stream."""
    if not data:
        raise ValueError("empty compressed payload")
    if data[0] & 0xF0 != 0x80:
        raise ValueError(f"compressed-event header byte 0x{data[0]:02x} names no algorithm known (zlib is 0)")
    lenlen = data[0] & 0x07
    if lenlen == 0 or lenlen > 4 or len(data) < 1 + lenlen:
        raise ValueError(f"bad compressed-event header byte 0x{data[0]:02x}")
    declared = int.from_bytes(data[1 : 1 + lenlen], "big")
    stream = data[1 + lenlen :]
    if declared == 0:
        raise ValueError("compressed event declares 0 bytes uncompressed")  # MariaDB refuses it too
    _check_limit(declared, "compressed event")
    if declared > ZLIB_MAX_RATIO * len(stream):
        raise ValueError(
            f"compressed event declares {declared} bytes uncompressed, "
            f"more than {len(stream)} bytes of zlib data can hold"
        )
    try:
        if declared > CONFIRM_ABOVE:
            _confirm_size(_inflate_steps(stream), declared, "compressed event")
            # Confirmed: one buffer of exactly the declared size, no copies.
            return zlib.decompress(stream, bufsize=declared)
        return _bounded(_inflate_steps(stream), declared, "compressed event")
    except zlib.error as exc:
        raise ValueError(f"zlib: {exc}") from None


def zstd_uncompress(data: bytes, declared: int | None) -> bytes:
    """MySQL TRANSACTION_PAYLOAD: one ZSTD frame of the transaction's events."""
    what = "payload"
    if declared is not None:
        _check_limit(declared, what)
    try:
        in_frame = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from None
    if in_frame >= 0:
        # The decompressor would allocate what the frame claims: it must agree with the event.
        _check_limit(in_frame, "payload's ZSTD frame")
        if declared is not None and in_frame != declared:
            raise ValueError(f"payload's ZSTD frame declares {in_frame} bytes, the event {declared}")
        declared = in_frame
    try:
        if declared is None or declared > CONFIRM_ABOVE:
            size = _confirm_size(_zstd_steps(data), declared, what)
            return zstandard.ZstdDecompressor().decompress(data, max_output_size=max(size, 1))
        return _bounded(_zstd_steps(data), declared, what)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstd: {exc}") from None


def _check_limit(declared: int, what: str) -> None:
    if declared > MAX_UNCOMPRESSED:
        raise ValueError(
            f"{what} declares {declared} bytes uncompressed, over max_allowed_packet's limit of {MAX_UNCOMPRESSED}"
        )


def _inflate_steps(stream: bytes) -> Iterator[bytes]:
    """The zlib stream's output, at most _STEP bytes at a time, until its end."""
    inflater = zlib.decompressobj()
    pending = stream
    while not inflater.eof:
        chunk = inflater.decompress(pending, _STEP)
        pending = inflater.unconsumed_tail
        if not chunk and not pending:
            return  # the input ran out before the stream's end: short output says so
        yield chunk


def _zstd_steps(frame: bytes) -> Iterator[bytes]:
    """The ZSTD frame's output, at most _STEP bytes at a time; its own size claims unused."""
    with zstandard.ZstdDecompressor().stream_reader(frame) as reader:
        while chunk := reader.read(_STEP):
            yield chunk


def _confirm_size(steps: Iterator[bytes], declared: int | None, what: str) -> int:
    """The size the steps add up to, stopping as soon as it passes the declaration (or the limit)."""
    limit = MAX_UNCOMPRESSED if declared is None else declared
    total = 0
    for chunk in steps:
        total += len(chunk)
        _check_output(total, limit, declared, what)
    _check_whole(total, declared, what)
    return total


def _bounded(steps: Iterator[bytes], declared: int, what: str) -> bytes:
    """The output kept, never more than declared + one step."""
    chunks: list[bytes] = []
    total = 0
    for chunk in steps:
        chunks.append(chunk)
        total += len(chunk)
        _check_output(total, declared, declared, what)
    _check_whole(total, declared, what)
    return b"".join(chunks)


def _check_output(total: int, limit: int, declared: int | None, what: str) -> None:
    if total > limit:
        said = f"the {declared} bytes declared" if declared is not None else f"the limit of {limit} bytes"
        raise ValueError(f"{what} inflates past {said}")


def _check_whole(total: int, declared: int | None, what: str) -> None:
    if declared is not None and total != declared:
        raise ValueError(f"{what} inflates to {total} bytes, {declared} declared")
