"""GTID sets as DBAs write them: MySQL's 'uuid[:tag]:1-5:7' and MariaDB's 'domain-server-seq' lists,
and MySQL's binary form of a set (COM_BINLOG_DUMP_GTID, Previous_gtids): the number of sids, then per
sid its 16-byte UUID, the number of intervals and each interval as [start, end) int64 pairs.

A set holding tagged GTIDs (MySQL 8.3+) takes the tagged form: its first 8 bytes hold the format
(1) in their lowest and highest byte and the number of sids in the six between, and each UUID is
followed by its tag as a mysql::serialization string ('' for an untagged sid). A set without tags
keeps the untagged form, which every source since 5.6 reads, as MySQL's own replicas send it.
"""

from __future__ import annotations

import bisect
import re
import struct
import uuid as uuid_module
from collections.abc import Iterable
from dataclasses import dataclass

from .binlog.serialization import read_string, string_bytes

_U64 = struct.Struct("<Q")
_INTERVAL = struct.Struct("<qq")  # [start, end) as MySQL writes them: signed 64-bit
_MARIA_GTID_LIST = re.compile(r"(\d+-\d+-\d+)(,\d+-\d+-\d+)*|")
_AFTER_ANY = float("inf")  # sorts after every interval end: (n, _AFTER_ANY) follows every (n, hi)
_TAGGED_FORMAT = 1
_MAX_SIDS = (1 << 48) - 1  # what the tagged form's six bytes can count
MAX_TAG_LENGTH = 32  # MySQL 8.3+: a letter or underscore, then up to 31 letters, digits or underscores


@dataclass(slots=True, unsafe_hash=True, order=True)
class Sid:
    """A MySQL source id: the server UUID, and the tag of 8.3+ tagged GTIDs ('' when untagged)."""

    uuid: str
    tag: str = ""

    def __str__(self) -> str:
        return f"{self.uuid}:{self.tag}" if self.tag else self.uuid


class GtidSet:
    """A set of MySQL GTIDs: per sid, sorted disjoint inclusive intervals."""

    __slots__ = ("_intervals",)

    def __init__(self, intervals: dict[Sid, list[tuple[int, int]]] | None = None) -> None:
        self._intervals: dict[Sid, list[tuple[int, int]]] = {}
        for sid, ranges in (intervals or {}).items():
            for start, end in ranges:
                self.add_range(sid, start, end)

    @classmethod
    def parse(cls, text: str) -> GtidSet:
        """Parse 'uuid:1-5:7,uuid2:tag:3' (whitespace and newlines allowed)."""
        result = cls()
        for part in "".join(text.split()).split(","):
            if not part:
                continue
            fields = part.split(":")
            uuid, tag = fields[0].lower(), ""
            for item in fields[1:]:
                if item and not item[0].isdigit():
                    tag = item.lower()
                    continue
                start, _, end = item.partition("-")
                if not start.isdigit() or (end and not end.isdigit()):
                    raise ValueError(f"malformed GTID set {text!r}")
                result.add_range(Sid(uuid, tag), int(start), int(end or start))
        return result

    def add(self, sid: Sid, gno: int) -> None:
        self.add_range(sid, gno, gno)

    def add_range(self, sid: Sid, start: int, end: int) -> None:
        if start > end:
            raise ValueError(f"empty GTID interval {start}-{end}")
        ranges = self._intervals.get(sid)
        if not ranges:
            self._intervals[sid] = [(start, end)]
            return
        lo, hi = ranges[-1]
        # A source's GTIDs come in order: the range goes after the last interval, or extends it.
        # Every earlier interval ends before lo - 1, so neither touches them.
        if start > hi + 1:
            ranges.append((start, end))
            return
        if start >= lo:
            if end > hi:
                ranges[-1] = (lo, end)
            return
        merged: list[tuple[int, int]] = []
        placed = False
        for lo, hi in ranges:
            if hi + 1 < start:
                merged.append((lo, hi))
            elif end + 1 < lo:
                if not placed:
                    merged.append((start, end))
                    placed = True
                merged.append((lo, hi))
            else:
                start, end = min(lo, start), max(hi, end)
        if not placed:
            merged.append((start, end))
        merged.sort()
        self._intervals[sid] = merged

    def contains(self, sid: Sid, gno: int) -> bool:
        return self.overlaps(sid, gno, gno)

    def overlaps(self, sid: Sid, start: int, end: int) -> bool:
        """Whether the set holds any of sid's GTIDs start..end."""
        ranges = self._intervals.get(sid)
        if not ranges:
            return False
        # the last interval starting at or before `end` is the only one that can reach `start`
        # (the intervals are sorted and disjoint)
        at = bisect.bisect_right(ranges, (end, _AFTER_ANY))
        return at > 0 and ranges[at - 1][1] >= start

    def intervals(self) -> dict[Sid, list[tuple[int, int]]]:
        return {sid: list(r) for sid, r in self._intervals.items()}

    def is_empty(self) -> bool:
        return not any(self._intervals.values())

    def update(self, other: GtidSet) -> GtidSet:
        """This set united with `other` (in place); itself."""
        for sid, ranges in other._intervals.items():
            for start, end in ranges:
                self.add_range(sid, start, end)
        return self

    def one_line(self) -> str:
        """'uuid:1-5:7,uuid2:1-3': the set as master_info and SHOW REPLICA STATUS's JSON keep it."""
        return str(self).replace(",\n", ",")

    def encode(self) -> bytes:
        """MySQL's binary form, as COM_BINLOG_DUMP_GTID carries it: the tagged form where a sid has
        a tag, else the untagged one (see the module's docstring)."""
        sids = [sid for sid in sorted(self._intervals) if self._intervals[sid]]
        tagged = any(sid.tag for sid in sids)
        if tagged:
            head = _TAGGED_FORMAT | len(sids) << 8 | _TAGGED_FORMAT << 56
        else:
            head = len(sids)
        out = [_U64.pack(head)]
        for sid in sids:
            out.append(uuid_module.UUID(sid.uuid).bytes)
            if tagged:
                out.append(string_bytes(sid.tag))
            ranges = self._intervals[sid]
            out.append(_U64.pack(len(ranges)))
            out.extend(_INTERVAL.pack(lo, hi + 1) for lo, hi in ranges)  # the end is exclusive
        return b"".join(out)

    @classmethod
    def decode(cls, data: bytes) -> GtidSet:
        """The set from MySQL's binary form, tagged or not; ValueError when `data` is not one."""
        if len(data) < 8:
            raise ValueError(f"a GTID set needs 8 bytes at least, not {len(data)}")
        (head,) = _U64.unpack_from(data, 0)
        tagged = head & 0xFF == _TAGGED_FORMAT and head >> 56 == _TAGGED_FORMAT
        count = head >> 8 & _MAX_SIDS if tagged else head
        pos, result = 8, cls()
        for _ in range(count):
            if pos + 24 > len(data):
                raise ValueError(f"the GTID set ends inside its source {_ + 1} of {count}")
            source = str(uuid_module.UUID(bytes=data[pos : pos + 16]))
            pos += 16
            tag = ""
            if tagged:
                try:
                    tag, pos = read_string(data, pos, MAX_TAG_LENGTH)
                except ValueError as exc:  # cut short, or too long for a tag
                    raise ValueError(f"the tag of source {_ + 1} of {count} is not one: {exc}") from None
                if pos + 8 > len(data):
                    raise ValueError(f"the GTID set ends inside its source {_ + 1} of {count}")
            sid = Sid(source, tag)
            (n_intervals,) = _U64.unpack_from(data, pos)
            pos += 8
            if pos + 16 * n_intervals > len(data):
                raise ValueError(f"the GTID set claims {n_intervals} intervals for {sid}, past its end")
            for _ in range(n_intervals):
                start, end = _INTERVAL.unpack_from(data, pos)
                pos += 16
                if not 0 < start < end:
                    raise ValueError(f"the GTID set has an empty interval [{start}, {end}) for {sid}")
                result.add_range(sid, start, end - 1)
        if pos != len(data):
            raise ValueError(f"{len(data) - pos} bytes follow the GTID set")
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidSet) and self.intervals() == other.intervals()

    def __str__(self) -> str:
        parts = []
        for sid in sorted(self._intervals):
            ranges = ":".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in self._intervals[sid])
            if ranges:
                parts.append(f"{sid}:{ranges}")
        return ",\n".join(parts)

    def __repr__(self) -> str:
        return f"GtidSet({str(self)!r})"


@dataclass(slots=True, unsafe_hash=True, order=True)
class MariaGtid:
    """One MariaDB GTID: domain-server-seq_no."""

    domain_id: int
    server_id: int
    seq_no: int

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"

    @classmethod
    def parse(cls, text: str) -> MariaGtid:
        parts = text.strip().split("-")
        if len(parts) != 3 or not all(x.isdigit() for x in parts):
            raise ValueError(f"malformed MariaDB GTID {text!r}")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))


def maria_gtid_list(text: str) -> str:
    """A MariaDB GTID list as @slave_connect_state takes it ('domain-server-seq,…'; '' for the
    start), its spaces dropped; ValueError when it is not one."""
    compact = text.replace(" ", "")
    if not _MARIA_GTID_LIST.fullmatch(compact):
        raise ValueError(f"{text!r} is not a MariaDB GTID list (domain-server-seq,…)")
    return compact


class ExecutedGtids:
    """What a channel has applied: a MySQL GTID set and/or MariaDB's last seq_no per domain.

    MariaDB replicas track gtid_slave_pos (the last GTID of each domain) rather than a set; with
    gtid_strict_mode sequence numbers only grow within a domain, so "seq_no <= last" is "applied".
    """

    __slots__ = ("mysql", "maria")

    def __init__(self) -> None:
        self.mysql = GtidSet()
        self.maria: dict[int, MariaGtid] = {}

    @classmethod
    def parse(cls, text: str) -> ExecutedGtids:
        result = cls()
        for part in "".join((text or "").split()).split(","):
            if not part:
                continue
            if ":" in part:
                for sid, ranges in GtidSet.parse(part).intervals().items():
                    for lo, hi in ranges:
                        result.mysql.add_range(sid, lo, hi)
            else:
                gtid = MariaGtid.parse(part)
                result.maria[gtid.domain_id] = gtid
        return result

    def add(self, gtid: str) -> None:
        if ":" in gtid:
            source, _, number = gtid.rpartition(":")
            self.mysql.add(_sid(source), int(number))
        else:
            domain, server, seq = _maria_parts(gtid)
            current = self.maria.get(domain)
            if current is None or seq >= current.seq_no:
                self.maria[domain] = MariaGtid(domain, server, seq)

    def add_all(self, gtids: Iterable[str]) -> None:
        """add(g) for every g, in order. A MariaDB domain keeps the last of its highest seq_no
        (as adding them one by one leaves it), made into a MariaGtid once, not once per GTID; a
        MySQL source's numbers are added as ranges of consecutive ones (GtidBatch). The applier
        adds every transaction's, to what it has scheduled and to what has committed.

        Each MariaDB GTID is split once, at its last dash, and its "domain-server" kept as it
        came (checked the first time it comes): half the time of splitting every one into its
        three numbers, which the applier's workers spend holding their channel's lock."""
        kept: dict[str, tuple[int, int]] = {}  # "domain-server" -> (highest seq_no, the position of its last)
        mysql: GtidBatch | None = None
        for position, gtid in enumerate(gtids):
            if ":" in gtid:
                if mysql is None:
                    mysql = GtidBatch()
                mysql.add(gtid)
                continue
            prefix, _, seq_text = gtid.rpartition("-")
            seq = int(seq_text)
            current = kept.get(prefix)
            if current is None:
                _maria_parts(gtid)  # a malformed GTID is refused as add() refuses it
                kept[prefix] = (seq, position)
            elif seq >= current[0]:
                kept[prefix] = (seq, position)
        if mysql is not None:
            mysql.add_to(self)
        highest: dict[int, tuple[int, int, int]] = {}  # domain -> (seq_no, position, server)
        for prefix, (seq, position) in kept.items():
            domain, server, _ = _maria_parts(f"{prefix}-0")
            current = highest.get(domain)
            if current is None or (seq, position) > current[:2]:
                highest[domain] = (seq, position, server)
        for domain, (seq, _, server) in highest.items():
            current = self.maria.get(domain)
            if current is None or seq >= current.seq_no:
                self.maria[domain] = MariaGtid(domain, server, seq)

    def contains(self, gtid: str) -> bool:
        if ":" in gtid:
            source, _, number = gtid.rpartition(":")
            return self.mysql.contains(_sid(source), int(number))
        domain, _, seq = _maria_parts(gtid)
        current = self.maria.get(domain)
        return current is not None and seq <= current.seq_no

    def __str__(self) -> str:
        parts = [str(self.mysql).replace(",\n", ",")] if not self.mysql.is_empty() else []
        parts += [str(self.maria[d]) for d in sorted(self.maria)]
        return ",".join(parts)


class GtidBatch:
    """The GTIDs of consecutive transactions, summed up for ExecutedGtids: MariaDB's per domain
    (the lowest seq_no, and the GTID that adding them one by one would leave), MySQL's as ranges
    of consecutive numbers per source ('uuid' or 'uuid:tag' as written), in the order they came.

    Built where a run of transactions is prepared, so that the applier checks and records a run
    a domain or a range at a time instead of a transaction at a time (measured: a sixth of the
    applier's Python time for MariaDB's; for MySQL's, 5 us a transaction one by one)."""

    __slots__ = ("maria", "mysql")

    def __init__(self) -> None:
        self.maria: dict[int, tuple[int, MariaGtid]] = {}  # domain -> (lowest seq_no, last kept)
        self.mysql: dict[str, list[tuple[int, int]]] = {}  # source -> ranges (first, last number)

    def add(self, gtid: str) -> None:
        if ":" in gtid:
            source, _, number = gtid.rpartition(":")
            self.add_mysql(source, int(number))
            return
        self.add_maria(MariaGtid(*_maria_parts(gtid)))

    def add_mysql(self, source: str, number: int) -> None:
        """MySQL's GTID source:number ('uuid' or 'uuid:tag', as the GTID's text has it)."""
        self._add_mysql_range(source, number, number)

    def _add_mysql_range(self, source: str, first: int, last: int) -> None:
        """first..last after the source's numbers so far: the last range extended when they follow on."""
        ranges = self.mysql.get(source)
        if ranges is None:
            self.mysql[source] = [(first, last)]
        elif first == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))

    def add_maria(self, gtid: MariaGtid) -> None:
        seq = gtid.seq_no
        entry = self.maria.get(gtid.domain_id)
        if entry is None:
            self.maria[gtid.domain_id] = (seq, gtid)
        else:
            lowest, kept = entry
            self.maria[gtid.domain_id] = (min(lowest, seq), gtid if seq >= kept.seq_no else kept)

    def extend(self, later: GtidBatch) -> None:
        """Append the batch of the transactions that follow."""
        for source, ranges in later.mysql.items():
            for first, last in ranges:
                self._add_mysql_range(source, first, last)
        for domain, (lowest, kept) in later.maria.items():
            entry = self.maria.get(domain)
            if entry is None:
                self.maria[domain] = (lowest, kept)
            else:
                self.maria[domain] = (
                    min(entry[0], lowest),
                    kept if kept.seq_no >= entry[1].seq_no else entry[1],
                )

    def any_in(self, executed: ExecutedGtids) -> bool:
        """Whether executed.contains(g) for some GTID g of the batch."""
        for domain, (lowest, _) in self.maria.items():
            current = executed.maria.get(domain)
            if current is not None and lowest <= current.seq_no:
                return True
        overlaps = executed.mysql.overlaps
        for source, ranges in self.mysql.items():
            sid = _sid(source)
            if any(overlaps(sid, first, last) for first, last in ranges):
                return True
        return False

    def add_to(self, executed: ExecutedGtids) -> None:
        """executed.add(g) for every GTID g of the batch, in order."""
        for domain, (_, kept) in self.maria.items():
            current = executed.maria.get(domain)
            if current is None or kept.seq_no >= current.seq_no:
                executed.maria[domain] = kept
        add_range = executed.mysql.add_range
        for source, ranges in self.mysql.items():
            sid = _sid(source)
            for first, last in ranges:
                add_range(sid, first, last)


_SIDS: dict[str, Sid] = {}  # the Sid of each source text met (a replica hears from a few sources)


def _sid(source: str) -> Sid:
    """The Sid of a MySQL GTID's source text: 'uuid' or 'uuid:tag', in any case. Made once per
    text: the single applier looks one up for every transaction, and a Sid made anew is hashed and
    compared field by field where the one kept is found by identity."""
    sid = _SIDS.get(source)
    if sid is None:
        if len(_SIDS) >= 1024:
            _SIDS.clear()
        uuid, _, tag = source.partition(":")
        sid = _SIDS[source] = Sid(uuid.lower(), tag.lower())
    return sid


def _maria_parts(gtid: str) -> tuple[int, int, int]:
    """'domain-server-seq' as integers (checked: a malformed GTID is a ValueError)."""
    parts = gtid.split("-")
    if len(parts) != 3:
        raise ValueError(f"malformed MariaDB GTID {gtid!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])
