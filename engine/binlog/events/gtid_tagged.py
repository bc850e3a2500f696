"""MySQL 8.3+ GTID_TAGGED_LOG_EVENT, written in the mysql::serialization message format.

A message is: varint format version, varint message size, varint last-non-ignorable-field id,
then (varint field id, value) pairs in increasing id order; absent fields take defaults.
"""

from __future__ import annotations

from ...gtids import MAX_TAG_LENGTH, Sid
from .. import primitives as p
from ..serialization import read_string, read_varlen_signed, read_varlen_unsigned
from .base import DecodeContext, EventHeader
from .gtid import Gtid


def decode_gtid_tagged(header: EventHeader, body: bytes, ctx: DecodeContext) -> Gtid:
    _version, pos = read_varlen_unsigned(body, 0)
    size, pos = read_varlen_unsigned(body, pos)
    if size > len(body):
        raise ValueError(f"message claims {size} bytes, event holds {len(body)}")
    _last_non_ignorable, pos = read_varlen_unsigned(body, pos)
    fields: dict[int, object] = {}
    while pos < size:
        field_id, pos = read_varlen_unsigned(body, pos)
        if field_id == 1:
            uuid = bytearray()
            for _ in range(16):
                byte, pos = read_varlen_unsigned(body, pos)
                uuid.append(byte & 0xFF)
            fields[1] = bytes(uuid)
        elif field_id == 3:
            fields[3], pos = read_string(body, pos, MAX_TAG_LENGTH)
        elif field_id in (2, 4, 5):
            fields[field_id], pos = read_varlen_signed(body, pos)
        elif field_id <= 11:
            fields[field_id], pos = read_varlen_unsigned(body, pos)
        else:
            break  # a newer writer's ignorable field: everything known was before it
    if 1 not in fields:
        raise ValueError("tagged GTID without a source UUID")
    immediate = fields.get(6)
    immediate_version = fields.get(9)
    return Gtid(
        header,
        flags=int(fields.get(0, 0)),  # type: ignore[arg-type]
        sid=Sid(p.uuid_text(fields[1]), str(fields.get(3, ""))),  # type: ignore[arg-type]
        gno=int(fields.get(2, 0)),  # type: ignore[arg-type]
        last_committed=fields.get(4),  # type: ignore[arg-type]
        sequence_number=fields.get(5),  # type: ignore[arg-type]
        immediate_commit_timestamp=immediate,  # type: ignore[arg-type]
        original_commit_timestamp=fields.get(7, immediate),  # type: ignore[arg-type]
        transaction_length=fields.get(8),  # type: ignore[arg-type]
        immediate_server_version=immediate_version,  # type: ignore[arg-type]
        original_server_version=fields.get(10, immediate_version),  # type: ignore[arg-type]
        commit_group_ticket=fields.get(11, 0),  # type: ignore[arg-type]
    )
