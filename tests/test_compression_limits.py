"""The decompressors on their own: honest declarations of every size decode exactly, whichever
path (direct or confirmed first) they take; lies are refused with the reason."""

from __future__ import annotations

import zlib

import pytest
import zstandard

from engine.binlog.events.compression import CONFIRM_ABOVE, mariadb_uncompress, zstd_uncompress

SIZES = [1, 1000, CONFIRM_ABOVE, CONFIRM_ABOVE + 1, 3 * CONFIRM_ABOVE // 2]


def _content(size: int) -> bytes:
    return (b"relaydeck " * (size // 10 + 1))[:size]


@pytest.mark.parametrize("size", SIZES)
def test_an_honest_mariadb_record_inflates_exactly(size: int) -> None:
    content = _content(size)
    record = bytes([0x84]) + size.to_bytes(4, "big") + zlib.compress(content)
    assert mariadb_uncompress(record) == content


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("states_size", [True, False])
def test_an_honest_zstd_payload_inflates_exactly(size: int, states_size: bool) -> None:
    content = _content(size)
    compressor = zstandard.ZstdCompressor(write_content_size=states_size).compressobj()
    frame = compressor.compress(content) + compressor.flush()
    assert zstd_uncompress(frame, size) == content
    assert zstd_uncompress(frame, None) == content


@pytest.mark.parametrize("size", [1000, CONFIRM_ABOVE + 1])
def test_a_truncated_zlib_stream_is_short_of_its_declaration(size: int) -> None:
    stream = zlib.compress(_content(size))
    record = bytes([0x84]) + size.to_bytes(4, "big") + stream[: len(stream) // 2]
    with pytest.raises(ValueError, match=f"inflates to \\d+ bytes, {size} declared"):
        mariadb_uncompress(record)


def test_a_zero_declaration_is_refused_as_mariadb_does() -> None:
    with pytest.raises(ValueError, match="declares 0 bytes"):
        mariadb_uncompress(bytes([0x81, 0]) + zlib.compress(b""))


def test_a_frame_disagreeing_with_the_event_is_refused() -> None:
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 500)
    with pytest.raises(ValueError, match="frame declares 500 bytes, the event 400"):
        zstd_uncompress(frame, 400)
