"""Transaction identity: MySQL GTID / anonymous GTID / tagged GTID / previous GTIDs, MariaDB GTID."""

from __future__ import annotations

from dataclasses import dataclass

from ...gtids import MAX_TAG_LENGTH, GtidSet, MariaGtid, Sid
from .. import primitives as p
from ..constants import MariaGtidFlag
from ..serialization import read_string
from .base import BinlogEvent, DecodeContext, EventHeader

_LOGICAL_TIMESTAMP_TYPECODE = 2
# plain ints: IntFlag arithmetic costs microseconds, once per transaction
_STANDALONE = int(MariaGtidFlag.STANDALONE)
_DDL = int(MariaGtidFlag.DDL)
_GROUP_COMMIT_ID = int(MariaGtidFlag.GROUP_COMMIT_ID)
_XA = int(MariaGtidFlag.PREPARED_XA | MariaGtidFlag.COMPLETED_XA)
_TS_FLAG = 1 << 55  # set in the immediate commit timestamp when the original one follows
_VERSION_FLAG = 1 << 31


@dataclass(slots=True, unsafe_hash=True)
class Gtid(BinlogEvent):
    """MySQL GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT and GTID_TAGGED_LOG_EVENT."""

    flags: int
    sid: Sid | None  # None for anonymous
    gno: int
    last_committed: int | None
    sequence_number: int | None
    immediate_commit_timestamp: int | None  # microseconds since the epoch
    original_commit_timestamp: int | None
    transaction_length: int | None
    immediate_server_version: int | None
    original_server_version: int | None
    commit_group_ticket: int | None = None

    @property
    def anonymous(self) -> bool:
        return self.sid is None

    @property
    def gtid_text(self) -> str:
        return "ANONYMOUS" if self.sid is None else f"{self.sid}:{self.gno}"

    def info(self) -> str:
        return f"SET @@SESSION.GTID_NEXT= '{self.gtid_text}'"


# A log holds the GTIDs of a few sources: each source id is formatted once.
_SIDS: dict[bytes, Sid] = {}


def decode_gtid(header: EventHeader, body: bytes, ctx: DecodeContext) -> Gtid:
    flags = p.u8(body, 0)
    raw_sid = p.take(body, 1, 16, "the source UUID")[0]
    sid = _SIDS.get(raw_sid)
    if sid is None:
        if len(_SIDS) >= 1024:
            _SIDS.clear()
        sid = _SIDS[raw_sid] = Sid(p.uuid_text(raw_sid))
    gno = int.from_bytes(p.take(body, 17, 8, "the GNO")[0], "little", signed=True)
    pos = 25
    last_committed = sequence_number = None
    if pos < len(body) and body[pos] == _LOGICAL_TIMESTAMP_TYPECODE:
        last_committed = p.u64(body, pos + 1)
        sequence_number = p.u64(body, pos + 9)
        pos += 17
    immediate = original = None
    if pos + 7 <= len(body):
        immediate = p.u56(body, pos)
        pos += 7
        if immediate & _TS_FLAG:
            immediate &= ~_TS_FLAG
            original = p.u56(body, pos)
            pos += 7
        else:
            original = immediate
    length = None
    if pos < len(body):
        length, pos = p.packed_len(body, pos)
    immediate_version = original_version = None
    if pos + 4 <= len(body):
        immediate_version = p.u32(body, pos)
        pos += 4
        if immediate_version & _VERSION_FLAG:
            immediate_version &= ~_VERSION_FLAG
            original_version = p.u32(body, pos)
            pos += 4
        else:
            original_version = immediate_version
    ticket = p.u64(body, pos) if pos + 8 <= len(body) else None
    anonymous = header.type_code == 34
    return Gtid(
        header,
        flags,
        None if anonymous else sid,
        gno,
        last_committed,
        sequence_number,
        immediate,
        original,
        length,
        immediate_version,
        original_version,
        ticket,
    )


@dataclass(slots=True, unsafe_hash=True)
class PreviousGtids(BinlogEvent):
    gtid_set: GtidSet

    def info(self) -> str:
        return str(self.gtid_set)


def decode_previous_gtids(header: EventHeader, body: bytes, ctx: DecodeContext) -> PreviousGtids:
    raw_count = p.u64(body, 0)
    # 8.3+: the top byte says whether tags follow each UUID; the tagged count sits in bytes 1–6.
    tagged = (raw_count >> 56) == 1
    count = (raw_count >> 8) & 0xFFFFFFFFFFFF if tagged else raw_count & 0x00FFFFFFFFFFFFFF
    pos = 8
    result = GtidSet()
    # Each sid takes at least 24 bytes: a count beyond what the body holds is corruption.
    if count * 24 > len(body):
        raise ValueError(f"Previous_gtids claims {count} sources in {len(body)} bytes")
    for _ in range(count):
        uuid = p.uuid_text(p.take(body, pos, 16, "a source UUID")[0])
        pos += 16
        tag = ""
        if tagged:
            tag, pos = read_string(body, pos, MAX_TAG_LENGTH)
        n_intervals = p.u64(body, pos)
        pos += 8
        if n_intervals * 16 > len(body) - pos:
            raise ValueError(f"Previous_gtids claims {n_intervals} intervals in {len(body) - pos} bytes")
        for _ in range(n_intervals):
            start, end = p.u64(body, pos), p.u64(body, pos + 8)
            pos += 16
            if end > start:
                result.add_range(Sid(uuid, tag), start, end - 1)  # stored end is exclusive
    return PreviousGtids(header, result)


@dataclass(slots=True, unsafe_hash=True)
class MariaGtidEvent(BinlogEvent):
    """MariaDB GTID_EVENT: opens a transaction (or a standalone statement) with domain-server-seq."""

    gtid: MariaGtid
    flags: int
    commit_id: int | None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    flags_extra: int = 0
    extra_engines: int | None = None
    start_alter_seq_no: int | None = None
    thread_id: int | None = None  # MariaDB 11.5+

    @property
    def standalone(self) -> bool:
        return bool(self.flags & _STANDALONE)

    @property
    def is_ddl(self) -> bool:
        return bool(self.flags & _DDL)

    def info(self) -> str:
        text = f"GTID {self.gtid}" if self.standalone else f"BEGIN GTID {self.gtid}"
        if self.commit_id is not None:
            text += f" cid={self.commit_id}"
        return text


def decode_maria_gtid(header: EventHeader, body: bytes, ctx: DecodeContext) -> MariaGtidEvent:
    seq_no = p.u64(body, 0)
    domain = p.u32(body, 8)
    flags = p.u8(body, 12)
    pos = 13
    commit_id = None
    xa = (None, None, None)
    if flags & _GROUP_COMMIT_ID:
        commit_id = p.u64(body, pos)
        pos += 8
    if flags & _XA:
        format_id = p.u32(body, pos)
        gtrid_len, bqual_len = p.u8(body, pos + 4), p.u8(body, pos + 5)
        gtrid, pos2 = p.take(body, pos + 6, gtrid_len, "the XA gtrid")
        bqual, pos = p.take(body, pos2, bqual_len, "the XA bqual")
        xa = (format_id, gtrid, bqual)
    flags_extra = 0
    extra_engines = start_alter = thread_id = None
    if pos < len(body):
        flags_extra = p.u8(body, pos)
        pos += 1
        if flags_extra & 1:  # FL_EXTRA_MULTI_ENGINE_E1
            extra_engines = p.u8(body, pos)
            pos += 1
        if flags_extra & (4 | 8):  # FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1
            start_alter = p.u64(body, pos)
            pos += 8
        if flags_extra & 0x10:  # FL_EXTRA_THREAD_ID
            thread_id = p.u32(body, pos)
            pos += 4
    return MariaGtidEvent(
        header,
        MariaGtid(domain, header.server_id, seq_no),
        flags,
        commit_id,
        *xa,
        flags_extra=flags_extra,
        extra_engines=extra_engines,
        start_alter_seq_no=start_alter,
        thread_id=thread_id,
    )


@dataclass(slots=True, unsafe_hash=True)
class GtidList(BinlogEvent):
    gtids: tuple[MariaGtid, ...]
    list_flags: int

    def info(self) -> str:
        return "[" + ",".join(str(g) for g in self.gtids) + "]"


def decode_gtid_list(header: EventHeader, body: bytes, ctx: DecodeContext) -> GtidList:
    raw = p.u32(body, 0)
    count, list_flags = raw & 0x0FFFFFFF, raw >> 28
    if count * 16 > len(body) - 4:
        raise ValueError(f"Gtid_list claims {count} entries in {len(body) - 4} bytes")
    gtids = []
    for i in range(count):
        at = 4 + 16 * i
        gtids.append(MariaGtid(p.u32(body, at), p.u32(body, at + 4), p.u64(body, at + 8)))
    return GtidList(header, tuple(gtids), list_flags)


@dataclass(slots=True, unsafe_hash=True)
class BinlogCheckpoint(BinlogEvent):
    log_file: str

    def info(self) -> str:
        return self.log_file


def decode_binlog_checkpoint(header: EventHeader, body: bytes, ctx: DecodeContext) -> BinlogCheckpoint:
    length = p.u32(body, 0)
    return BinlogCheckpoint(header, p.text(p.take(body, 4, length, "the checkpoint file name")[0]))


@dataclass(slots=True, unsafe_hash=True)
class TransactionContext(BinlogEvent):
    """Group Replication certification context; carried, not interpreted."""

    server_uuid: str
    thread_id: int
    gtid_specified: bool
    payload: bytes


def decode_transaction_context(header: EventHeader, body: bytes, ctx: DecodeContext) -> TransactionContext:
    uuid_len = p.u8(body, 0)
    thread_id = p.u32(body, 1)
    gtid_specified = bool(p.u8(body, 5))
    pos = 18  # post-header: uuid len, thread id, gtid flag, write/read set sizes
    uuid = p.text(p.take(body, pos, uuid_len, "the server UUID")[0])
    return TransactionContext(header, uuid, thread_id, gtid_specified, bytes(body[pos + uuid_len :]))
