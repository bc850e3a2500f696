"""MySQL 8.0 TRANSACTION_PAYLOAD: a whole transaction's events, ZSTD-compressed into one event."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import primitives as p
from .base import BinlogEvent, DecodeContext, EventHeader
from .compression import zstd_uncompress

_END_MARK, _SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = 0, 1, 2, 3
COMPRESSION_ZSTD, COMPRESSION_NONE = 0, 255


@dataclass(slots=True, unsafe_hash=True)
class TransactionPayload(BinlogEvent):
    compression_type: int
    payload_size: int
    uncompressed_size: int | None
    events_data: bytes = field(repr=False)  # the inner events, uncompressed

    def info(self) -> str:
        kind = {COMPRESSION_ZSTD: "ZSTD", COMPRESSION_NONE: "NONE"}.get(self.compression_type, "?")
        return (
            f"compression='{kind}', decompressed_size={self.uncompressed_size or len(self.events_data)} bytes"
        )


def decode_transaction_payload(header: EventHeader, body: bytes, ctx: DecodeContext) -> TransactionPayload:
    pos = 0
    size = None
    compression = COMPRESSION_NONE
    uncompressed = None
    while pos < len(body):
        field_type, pos = p.packed_len(body, pos)
        if field_type == _END_MARK:
            break
        length, pos = p.packed_len(body, pos)
        value, pos = p.take(body, pos, length, "a payload header field")
        number = p.packed_len(value, 0)[0]
        if field_type == _SIZE:
            size = number
        elif field_type == _COMPRESSION_TYPE:
            compression = number
        elif field_type == _UNCOMPRESSED_SIZE:
            uncompressed = number
    data = bytes(body[pos:])
    if size is not None and size != len(data):
        raise ValueError(f"payload size field says {size} bytes, event holds {len(data)}")
    if compression == COMPRESSION_ZSTD:
        data = zstd_uncompress(data, uncompressed)
    elif compression != COMPRESSION_NONE:
        raise ValueError(f"unknown payload compression type {compression}")
    return TransactionPayload(header, compression, len(body) - pos, uncompressed, data)
