"""Continuity of a channel's relay-log stream: nothing the source logged goes missing unnoticed.

A relay log that lost its tail, a file missing from the set, or a damaged GTID would otherwise
read as good input with fewer transactions. The relay logs carry what tells a gap from the
receiver's ordinary behaviour:

* the source positions of consecutive events of one source binlog are contiguous: an event starts
  (end_log_pos - its size) where the one before ended. MariaDB leaves out the Annotate_rows event
  before a statement's table maps, so a table map may start later;
* Rotate events say where the source goes on: the source's own at the end of a binlog, the
  receiver's (artificial) when it connects, and the relay log's own naming the next relay file;
* MariaDB numbers the transactions of a domain one after another (gtid_strict_mode logs them in
  order), so a GTID follows the previous one of its domain by one.

A transaction may legitimately stop short only where the receiver reconnected (an artificial
Rotate, or the source's Format_description after it restarted) and the same transaction comes
again from its start, or where the source restarted and never committed it. Anything else is a
RelayLogGap naming the relay file and position and what was expected there.

The check's state is plain data (picklable), so that a worker process can check a segment of the
stream and the applier can chain the segments (see `Entry`).
"""

from __future__ import annotations

import copy
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import astuple, dataclass, field, fields
from pathlib import Path
from typing import NamedTuple

from ..binlog.compiled import load
from ..binlog.constants import EventFlag, EventType
from ..binlog.events import (
    EventHeader,
    Gtid,
    GtidList,
    MariaGtidEvent,
    Query,
    Rotate,
    RowsEvent,
    TableMap,
    XaPrepare,
    Xid,
)
from ..binlog.reader import LoggedEvent
from ..errors import RelayLogGap
from ..gtids import ExecutedGtids
from ..transactions import is_begin, is_commit_or_rollback

_TABLE_MAP = int(EventType.TABLE_MAP)
_FDE = int(EventType.FORMAT_DESCRIPTION)
_ARTIFICIAL = int(EventFlag.ARTIFICIAL)
_HEADER = struct.Struct("<IBIIIH")  # timestamp, type, server_id, size, log_pos, flags
_IGNORED_GTIDS = 2  # Gtid_list flag: GTIDs the receiver left out (IGNORE_SERVER_IDS), now done
_framing = load("_framing", package="engine.binlog")


class GtidFacts(NamedTuple):
    """What the check needs of a GTID event (also built from the compiled scanner's results)."""

    text: str | None  # 'domain-server-seq', 'uuid:gno', or None (anonymous)
    domain: int | None  # MariaDB only: the sequence is checked per domain
    seq: int
    multi_statement: bool  # False: a standalone statement (MariaDB), closed by its query
    log_name: str
    pos: int
    source_log_file: str | None
    source_start: int | None  # where the event starts in the source's binlog; None: not logged
    source_end: int  # its end_log_pos (0: not logged)


@dataclass(slots=True)
class _Open:
    """The transaction whose end has not been read yet."""

    gtid: GtidFacts
    multi_statement: bool
    reconnected: bool = False  # the receiver reconnected (or the source restarted) since it began
    source_restarted: bool = False


@dataclass(slots=True)
class Entry:
    """A segment read on its own: what its first events must agree with in the stream before it."""

    first_gtid: GtidFacts | None = None  # when the segment begins with a GTID event
    domains: dict[int, GtidFacts] = field(default_factory=dict)  # each domain's first GTID in it
    started: bool = False  # an event was checked


@dataclass(slots=True)
class Continuity:
    """The check itself: feed it every event of the stream, in order."""

    source_file: str | None = None
    expected: int | None = None  # where the next event of source_file starts; None: not known yet
    # After the receiver connected at position 4 of a binlog: in GTID mode the source sends the
    # transactions from the connecting GTID on, so the first one may start past the headers.
    resync: bool = False
    at_start: bool = True  # nothing read yet: a GTID may repeat what was applied (RESET REPLICA)
    last_seq: dict[int, int] = field(default_factory=dict)  # MariaDB domain -> last seq_no read
    open: _Open | None = None
    # MySQL 5.0 logged the events inside a transaction with positions relative to its start
    positions_logged: bool = True
    relay_file: str | None = None
    relay_writer: int | None = None  # server id of the relay file's own Format_description
    next_relay: str | None = None  # the relay file the previous one's own Rotate named
    entry: Entry | None = None  # set: a segment's check, recording what the stream before must give
    accept: Callable[[], bool] | None = None  # asked at each discontinuity: True lets it past
    accepted: int = 0  # discontinuities a DBA let past (the skip counter)
    skipping: bool = False  # one was let past: the check starts afresh at the next transaction

    @classmethod
    def resuming(cls, source_file: str | None, source_pos: int, executed: str) -> Continuity:
        """The check for a channel that goes on after what the repository recorded as applied."""
        state = cls(source_file=source_file, expected=source_pos if source_file else None)
        state.last_seq = {d: g.seq_no for d, g in ExecutedGtids.parse(executed).maria.items()}
        return state

    @classmethod
    def segment(cls, first_file: Path, start_pos: int) -> Continuity:
        """The check of a segment that a worker process reads on its own."""
        state = cls(entry=Entry(), at_start=False)
        state.starting_in(first_file, start_pos)
        return state

    def starting_in(self, path: Path, pos: int) -> None:
        """Reading begins at `pos` of `path`: past its own Format_description when pos > 4, whose
        writer tells the relay log's own events from the source's."""
        if pos <= 4:
            return
        self.relay_file = path.name
        try:
            with open(path, "rb") as fh:
                header = fh.read(4 + 19)[4:]
        except OSError:
            return  # the reader reports it
        if len(header) == 19 and header[4] == _FDE:
            self.relay_writer = int.from_bytes(header[5:9], "little")

    # -- events ---------------------------------------------------------------------------------

    def event(self, logged: LoggedEvent) -> None:
        """Check one event (raises RelayLogGap); inner events of a payload need no check."""
        event, header, log_name, _, _, source_log_file, _, _, inner = logged
        kind = type(event)
        if inner:
            return
        if log_name != self.relay_file:
            self._relay_file_begins(logged)
        entry = self.entry
        if entry is not None and not entry.started and kind is not MariaGtidEvent and kind is not Gtid:
            entry.started = True
        if kind is RowsEvent or kind is TableMap:
            # most events of every relay log: contiguous, inside a multi-statement transaction
            end = header.log_pos
            start = end - header.event_size
            if source_log_file == self.source_file:
                if start == self.expected and (
                    kind is TableMap or self.open is None or self.open.multi_statement
                ):
                    self.expected = end
                    return
                if (
                    kind is TableMap
                    and self.expected is not None
                    and start > self.expected
                    and self.positions_logged
                    and not self.skipping
                    and header.server_id != self.relay_writer
                ):
                    # past the source's Annotate_rows, which a MariaDB replica does not relay
                    # unless asked: what _source_event lets past, without the way round (every
                    # table map of such a log)
                    self.expected = end
                    return
        self._other_event(logged, header, event, kind)

    def _other_event(self, logged: LoggedEvent, header: EventHeader, event: object, kind: type) -> None:
        code = header.type_code
        if code == _FDE:
            if not logged.copied_fde:
                self.relay_writer = header.server_id
                return
            self.positions_logged = _version(event.server_version) >= (5, 1)  # type: ignore[attr-defined]
            if header.log_pos and self.positions_logged and not self.skipping:
                # The source's own format description at the start of a binlog it opened.
                self._position(logged, header.log_pos - header.event_size)
                if self.open is not None:
                    self.open.reconnected = self.open.source_restarted = True
            return
        if kind is Rotate:
            self._rotate(logged, event)  # type: ignore[arg-type]
            return
        if header.server_id == self.relay_writer and self.relay_writer is not None:
            return  # the replica's own events (MySQL's Previous_gtids of the relay file)
        if kind is MariaGtidEvent or kind is Gtid:
            self.gtid(gtid_facts(logged))
            return
        if header.log_pos and self.positions_logged and not self.skipping:
            self._position(logged, header.log_pos - header.event_size)
        if kind is GtidList and event.list_flags & _IGNORED_GTIDS:  # type: ignore[attr-defined]
            for g in event.gtids:  # type: ignore[attr-defined]
                self.last_seq[g.domain_id] = max(self.last_seq.get(g.domain_id, 0), g.seq_no)
            self.expected = None  # the receiver left their events out: positions go on past them
            return
        group = self.open
        if group is None:
            return
        if kind is Xid or kind is XaPrepare:
            self.open = None
        elif kind is Query:
            text = event.query  # type: ignore[attr-defined]
            if is_begin(text):
                group.multi_statement = True
            elif is_commit_or_rollback(text) or not group.multi_statement:
                self.open = None
        elif kind is RowsEvent and not group.multi_statement and event.statement_end:  # type: ignore[attr-defined]
            self.open = None

    def gtid(self, facts: GtidFacts) -> None:
        """A transaction begins: it must not cut the one before short, nor skip or repeat GTIDs."""
        if self.skipping:
            self._start_afresh(facts)
            return
        accepted = self.accepted  # a gap let past below starts the check afresh at this GTID
        entry = self.entry
        if entry is not None and not entry.started:
            entry.first_gtid, entry.started = facts, True  # the stream before checks it (follows)
            if facts.source_start is not None:
                self.source_file, self.expected = facts.source_log_file, facts.source_end
        else:
            self._position_of(facts)
            if self.accepted != accepted:
                return
        group = self.open
        if group is not None:
            again = (
                group.gtid.text == facts.text
                if facts.text
                else (
                    (group.gtid.source_log_file, group.gtid.source_start)
                    == (facts.source_log_file, facts.source_start)
                )
            )
            if not (group.reconnected and (again or group.source_restarted)):
                self._gap(
                    facts.log_name,
                    facts.pos,
                    f"transaction {_name(group.gtid)} that begins at {group.gtid.log_name}:"
                    f"{group.gtid.pos} has no COMMIT or XID: "
                    f"{_name(facts)} begins here before it ended, and the receiver did not fetch it again",
                    facts,
                )
                return
            if group.gtid.domain is not None:
                # fetched again, or the source restarted and never committed it: its number comes again
                self.last_seq[group.gtid.domain] = group.gtid.seq - 1
        if facts.domain is not None:
            self._sequence(facts)
            if self.accepted != accepted:
                return
        self.open = _Open(facts, facts.multi_statement)
        self.at_start = False

    def _sequence(self, facts: GtidFacts) -> None:
        domain, seq = facts.domain, facts.seq
        assert domain is not None
        last = self.last_seq.get(domain)
        if last is None:
            entry = self.entry
            if entry is not None and domain not in entry.domains:
                entry.domains[domain] = facts
        elif seq != last + 1 and not (self.at_start and seq <= last):
            if seq > last + 1:
                missing = seq - last - 1
                why = f"{missing} transaction{'s' if missing > 1 else ''} of domain {domain} are missing"
            else:
                why = "its sequence number goes back (a damaged GTID, or events out of order)"
            self._gap(
                facts.log_name,
                facts.pos,
                f"GTID {facts.text} follows {last} in domain {domain}, expected sequence number "
                f"{last + 1}: {why}",
                facts,
            )
            return
        self.last_seq[domain] = seq

    def _rotate(self, logged: LoggedEvent, event: Rotate) -> None:
        header = logged.header
        if self.relay_writer is not None and header.server_id == self.relay_writer:
            self.next_relay = event.next_file  # the relay log's own: names the next relay file
            return
        artificial = header.log_pos == 0 or header.flags & _ARTIFICIAL or header.server_id == 0
        if artificial:
            # The receiver (re)connected, or noted where the source goes on: positions restart there.
            self.source_file, self.expected = event.next_file, event.position
            self.resync = event.position <= 4
            if self.open is not None:
                self.open.reconnected = True
            return
        if self.positions_logged and not self.skipping:
            self._position(logged, header.log_pos - header.event_size)
        # The source's own, at the end of its binlog: the next one begins at the position it names.
        self.source_file, self.expected, self.resync = event.next_file, event.position, False

    def _position_of(self, facts: GtidFacts) -> None:
        if facts.source_start is None or not self.positions_logged:
            return
        if facts.source_log_file != self.source_file:
            self.source_file, self.expected = facts.source_log_file, None
        expected = self.expected
        if (
            expected is not None
            and facts.source_start != expected
            and not (self.resync and facts.source_start > expected)
        ):
            self._position_gap(facts.log_name, facts.pos, facts.source_start, facts)
            return
        self.resync = False
        self.expected = facts.source_end

    def _position(self, logged: LoggedEvent, start: int) -> None:
        self._source_event(
            logged.log_name,
            logged.pos,
            logged.type_code,
            logged.source_log_file,
            start,
            logged.header.log_pos,
        )

    def _source_event(
        self, log_name: str, pos: int, type_code: int, source_log_file: str | None, start: int, end: int
    ) -> None:
        if source_log_file != self.source_file:
            self.source_file, self.expected = source_log_file, None
        expected = self.expected
        if expected is not None and start != expected:
            leaves_out_annotation = start > expected and type_code == _TABLE_MAP
            if not leaves_out_annotation and not (self.resync and start > expected):
                self._position_gap(log_name, pos, start, None)
                return
        self.expected = end

    def scanned(
        self,
        log_name: str,
        source_log_file: str,
        data: bytes,
        pos: int,
        end: int,
        domain: int | None,
        seq: int,
        mysql_gtid: str | None = None,
    ) -> None:
        """A row-only transaction the compiled scanner read whole from pos to end (the process
        pool): its GTID, then its other events' positions from their headers. A MariaDB GTID
        comes as its domain and seq_no; a MySQL one as its text (mysql_gtid, domain None)."""
        _, _, server_id, size, log_pos, _ = _HEADER.unpack_from(data, pos)
        if server_id == self.relay_writer:
            return  # a binlog's own transaction, not a relay log's (as event() leaves it)
        start = log_pos - size if log_pos else None
        entry = self.entry
        facts = None
        if (
            start is not None
            and start == self.expected
            and source_log_file == self.source_file
            and (domain is None or self.last_seq.get(domain) == seq - 1)
            and self.open is None
            and self.positions_logged
            and not self.skipping
            and (entry is None or entry.started)
        ):
            # what gtid() concludes for the usual case, without its facts: the GTID starts where
            # the source's last event ended and follows the last of its domain by one
            self.expected = log_pos
            self.resync = self.at_start = False
            if domain is not None:
                self.last_seq[domain] = seq
        else:
            facts = _scanned_facts(
                log_name, source_log_file, pos, domain, server_id, seq, start, log_pos, mysql_gtid
            )
            self.gtid(facts)
        at = pos + size
        checked = self.positions_logged and not self.skipping
        if _framing is not None and checked and source_log_file == self.source_file:
            # compiled, as long as every event follows: on the MariaDB capture this walk was
            # about a tenth of the preparing processes' CPU, and the replay's apply took 2-8%
            # less time (eight interleaved pairs). The loop below goes on from an event that
            # does not follow, and reports it
            stopped, expected = _framing.source_positions_follow(
                data, at, end, -1 if self.expected is None else self.expected, self.resync, _TABLE_MAP
            )
            self.expected = None if expected < 0 else expected
            at = end if stopped < 0 else stopped
        if at < end and facts is None:
            # the events are checked one by one: a gap among them names the transaction open
            facts = _scanned_facts(
                log_name, source_log_file, pos, domain, server_id, seq, start, log_pos, mysql_gtid
            )
            self.open = _Open(facts, True)
        while at < end:
            _, type_code, _, size, log_pos, _ = _HEADER.unpack_from(data, at)
            if log_pos and self.positions_logged and not self.skipping:
                self._source_event(log_name, at, type_code, source_log_file, log_pos - size, log_pos)
            at += size
        self.open = None  # it ends with its XID

    def _position_gap(self, log_name: str, pos: int, start: int, facts: GtidFacts | None) -> None:
        expected = self.expected
        assert expected is not None
        what = (
            f"events of {self.source_file} from {expected} to {start} are missing"
            if start > expected
            else f"it overlaps the events before it, which end at {expected}"
        )
        cut = f"; transaction {_name(self.open.gtid)} is cut off" if self.open is not None else ""
        self._gap(
            log_name,
            pos,
            f"the source's event here starts at {self.source_file}:{start}, expected "
            f"{self.source_file}:{expected}: {what}{cut}",
            facts,
        )

    def _relay_file_begins(self, logged: LoggedEvent) -> None:
        previous, named = self.relay_file, self.next_relay
        self.relay_file, self.relay_writer, self.next_relay = logged.log_name, None, None
        if previous is not None and named is not None and named != logged.log_name:
            self._gap(
                logged.log_name,
                logged.pos,
                f"{previous} ends with a Rotate to {named}, but {logged.log_name} comes next",
                None,
            )

    # -- letting a gap past ---------------------------------------------------------------------

    def _gap(self, log_name: str, pos: int, message: str, facts: GtidFacts | None) -> None:
        if self.accept is not None and self.accept():
            self.accepted += 1
            self.skipping = True
            self.open = None
            if facts is not None:
                self._start_afresh(facts)
            return
        raise RelayLogGap(log_name, pos, message)

    def _start_afresh(self, facts: GtidFacts) -> None:
        """After a gap let past: this transaction is where the stream is followed again."""
        self.skipping = False
        self.open = _Open(facts, facts.multi_statement)
        self.source_file, self.expected, self.resync = facts.source_log_file, None, False
        if facts.source_start is not None:
            self.expected = facts.source_end
        if facts.domain is not None:
            self.last_seq[facts.domain] = facts.seq
        self.at_start = False

    # -- segments -------------------------------------------------------------------------------

    def follows(self, entry: Entry, exit_state: Continuity) -> Continuity:
        """The state after a segment that begins with `entry` and ends in `exit_state`, checked
        against this state (the stream before the segment); raises RelayLogGap where they disagree."""
        accept, self.accept = self.accept, None
        try:
            joined = copy.deepcopy(self)
        finally:
            self.accept = accept
        at_start = joined.at_start
        if entry.first_gtid is not None:
            joined.gtid(entry.first_gtid)
        for domain, facts in entry.domains.items():
            if facts == entry.first_gtid or domain not in joined.last_seq:
                continue
            joined.at_start = at_start
            joined._sequence(facts)
        after = copy.deepcopy(exit_state)
        after.entry = None
        for domain, seq in joined.last_seq.items():
            after.last_seq.setdefault(domain, seq)
        return after


def _scanned_facts(
    log_name: str,
    source_log_file: str,
    pos: int,
    domain: int | None,
    server_id: int,
    seq: int,
    start: int | None,
    end: int,
    mysql_gtid: str | None,
) -> GtidFacts:
    """The facts of a GTID the compiled scanner read, opening a transaction: as gtid_facts()
    gives them for the event (a MySQL GTID's multi_statement comes with the BEGIN after it)."""
    if domain is None:
        return GtidFacts(mysql_gtid, None, 0, False, log_name, pos, source_log_file, start, end)
    return GtidFacts(
        f"{domain}-{server_id}-{seq}", domain, seq, True, log_name, pos, source_log_file, start, end
    )


def _version(text: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def _name(facts: GtidFacts) -> str:
    if facts.text:
        return facts.text
    return f"at {facts.source_log_file}:{facts.source_start}"


def gtid_facts(logged: LoggedEvent) -> GtidFacts:
    event = logged.event
    header = logged.header
    start = header.log_pos - header.event_size if header.log_pos else None
    if type(event) is MariaGtidEvent:
        g = event.gtid
        return GtidFacts(
            str(g), g.domain_id, g.seq_no, not event.standalone, logged.log_name, logged.pos,
            logged.source_log_file, start, header.log_pos,
        )  # fmt: skip
    text = None if event.anonymous else event.gtid_text  # type: ignore[attr-defined]
    return GtidFacts(
        text, None, 0, False, logged.log_name, logged.pos, logged.source_log_file, start, header.log_pos
    )


def checked(events: Iterable[LoggedEvent], state: Continuity) -> Iterator[LoggedEvent]:
    """The events, each checked first (anything else in the stream, such as markers, passes)."""
    check = state.event
    for logged in events:
        if type(logged) is LoggedEvent:
            check(logged)
        yield logged


def continuity_as_plain(state: Continuity) -> dict[str, object]:
    """The check's state as JSON-ready data, for results that travel as Arrow (a Spark task's);
    `accept` is the caller's and does not travel."""
    plain: dict[str, object] = {
        f.name: getattr(state, f.name)
        for f in fields(Continuity)
        if f.name not in ("accept", "open", "entry")
    }
    plain["last_seq"] = list(state.last_seq.items())
    group = state.open
    plain["open"] = None if group is None else [list(group.gtid), *astuple(group)[1:]]
    entry = state.entry
    plain["entry"] = (
        None
        if entry is None
        else [
            None if entry.first_gtid is None else list(entry.first_gtid),
            [[domain, list(facts)] for domain, facts in entry.domains.items()],
            entry.started,
        ]
    )
    return plain


def continuity_from_plain(plain: dict[str, object]) -> Continuity:
    """continuity_as_plain's result back as the state it was."""
    values: dict = dict(plain)
    values["last_seq"] = {domain: seq for domain, seq in values["last_seq"]}
    group = values["open"]
    values["open"] = None if group is None else _Open(GtidFacts(*group[0]), *group[1:])
    entry = values["entry"]
    if entry is not None:
        first, domains, started = entry
        values["entry"] = Entry(
            None if first is None else GtidFacts(*first),
            {domain: GtidFacts(*facts) for domain, facts in domains},
            started,
        )
    return Continuity(**values)
