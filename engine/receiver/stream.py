"""What the receiver needs to know of the source's events, from their raw bytes: where each one
leaves the source's position, and where transactions end (the receiver stops, rotates and resumes
only between transactions), and the GTIDs of the whole transactions received: the
Retrieved_Gtid_Set, MySQL's as a set ('uuid:1-5:7,…', a GTID counted once its transaction is whole,
as a MySQL 8 replica counts it) and MariaDB's as the last GTID per domain ('domain-server-seq,…')."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..binlog.constants import COMMON_HEADER_LEN, EventType
from ..binlog.events import HEADER
from ..binlog.events.base import DecodeContext, EventHeader
from ..binlog.events.gtid_tagged import decode_gtid_tagged
from ..binlog.primitives import uuid_text
from ..gtids import GtidSet, Sid
from ..transactions import is_begin, is_commit_or_rollback

_ROTATE = int(EventType.ROTATE)
_FDE = int(EventType.FORMAT_DESCRIPTION)
_XID = int(EventType.XID)
_QUERY = int(EventType.QUERY)
_MARIADB_GTID = int(EventType.MARIADB_GTID)
_MYSQL_GTID = int(EventType.GTID)
_MYSQL_GTID_TAGGED = int(EventType.GTID_TAGGED)
_MYSQL_GTIDS = (_MYSQL_GTID, int(EventType.ANONYMOUS_GTID), _MYSQL_GTID_TAGGED)
_QUERY_POST = struct.Struct("<IIBHH")  # thread id, exec time, db length, error code, status length
_MARIADB_STANDALONE = 1


@dataclass(frozen=True, slots=True)
class SourcePosition:
    file: str
    pos: int

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"


class StreamTracker:
    """Follows the source's position and its transaction boundaries, event by event."""

    def __init__(self, position: SourcePosition | None = None) -> None:
        self.position = position  # after the last event of the source read
        self.committed = position  # after the last whole transaction
        self.in_transaction = False
        self._multi_statement = False
        self.checksum = False
        # MariaDB's GTIDs received in whole transactions: the last one per domain (Retrieved_Gtid_Set)
        self.retrieved: dict[int, tuple[int, int]] = {}
        self._pending_gtid: tuple[int, int, int] | None = None
        # MySQL's GTIDs received in whole transactions (anonymous ones have none)
        self.retrieved_mysql = GtidSet()
        self._pending_mysql: tuple[Sid, int] | None = None
        self._sids: dict[bytes, Sid] = {}

    def restart_at(self, position: SourcePosition) -> None:
        """A new dump from `position`, between two transactions (one cut short is fetched again)."""
        self.position = self.committed = position
        self.in_transaction = False
        self._pending_gtid = None
        self._pending_mysql = None

    def retrieved_gtid_set(self) -> str:
        maria = [f"{d}-{s}-{n}" for d, (s, n) in sorted(self.retrieved.items())]
        mysql = [] if self.retrieved_mysql.is_empty() else [self.retrieved_mysql.one_line()]
        return ",".join(mysql + maria)

    def load_retrieved(self, gtid_set: str) -> None:
        """Go on from a Retrieved_Gtid_Set recorded earlier ('uuid:1-5,…' and 'domain-server-seq,…')."""
        mysql = []
        for gtid in filter(None, "".join(gtid_set.split()).split(",")):
            if ":" in gtid:
                mysql.append(gtid)
                continue
            domain, server, seq = (int(part) for part in gtid.split("-"))
            self.retrieved[domain] = (server, seq)
        if mysql:
            self.retrieved_mysql.update(GtidSet.parse(",".join(mysql)))

    def event(self, event: bytes) -> None:
        _, type_code, server_id, _, log_pos, _ = HEADER.unpack_from(event, 0)
        end = len(event) - (4 if self.checksum and type_code != _FDE else 0)
        if type_code == _ROTATE:
            # the source goes on in another binlog (its own Rotate, or the dump's artificial one)
            (pos,) = struct.unpack_from("<Q", event, COMMON_HEADER_LEN)
            name = event[COMMON_HEADER_LEN + 8 : end].decode("utf-8", "surrogateescape")
            self.position = SourcePosition(name, pos)
            if not self.in_transaction:
                self.committed = self.position
            return
        if log_pos and self.position is not None:
            self.position = SourcePosition(self.position.file, log_pos)
        if type_code == _MARIADB_GTID:
            seq, domain = struct.unpack_from("<QI", event, COMMON_HEADER_LEN)
            flags2 = event[COMMON_HEADER_LEN + 12]
            self._pending_gtid = (domain, server_id, seq)
            self.in_transaction = True
            self._multi_statement = not flags2 & _MARIADB_STANDALONE
        elif type_code in _MYSQL_GTIDS:
            self.in_transaction, self._multi_statement = True, False
            self._pending_mysql = self._mysql_gtid(type_code, event, end)
        elif type_code == _XID:
            self.in_transaction = False
        elif type_code == _QUERY and self.in_transaction:
            text = _query_text(event, end)
            if is_begin(text):
                self._multi_statement = True
            elif is_commit_or_rollback(text) or not self._multi_statement:
                self.in_transaction = False
        if not self.in_transaction and log_pos:
            self.committed = self.position
            if self._pending_gtid is not None:
                domain, server, seq = self._pending_gtid
                self.retrieved[domain] = (server, seq)
                self._pending_gtid = None
            if self._pending_mysql is not None:
                self.retrieved_mysql.add(*self._pending_mysql)
                self._pending_mysql = None

    def _mysql_gtid(self, type_code: int, event: bytes, end: int) -> tuple[Sid, int] | None:
        """The (sid, gno) a MySQL GTID event opens its transaction with; None when anonymous."""
        if type_code == _MYSQL_GTID:
            raw = event[COMMON_HEADER_LEN + 1 : COMMON_HEADER_LEN + 17]
            sid = self._sids.get(raw)
            if sid is None:
                sid = self._sids[raw] = Sid(uuid_text(raw))
            (gno,) = struct.unpack_from("<q", event, COMMON_HEADER_LEN + 17)
            return sid, gno
        if type_code == _MYSQL_GTID_TAGGED:
            header = EventHeader(*HEADER.unpack_from(event, 0))
            gtid = decode_gtid_tagged(header, event[COMMON_HEADER_LEN:end], DecodeContext())
            return (gtid.sid, gtid.gno) if gtid.sid is not None else None
        return None


def _query_text(event: bytes, end: int) -> str:
    _, _, db_len, _, status_len = _QUERY_POST.unpack_from(event, COMMON_HEADER_LEN)
    start = COMMON_HEADER_LEN + _QUERY_POST.size + status_len + db_len + 1
    return event[start:end].decode("utf-8", "replace")
