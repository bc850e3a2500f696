"""The relay log read in the applier's own thread: transactions and coordinator events, a few
hundred at a time, within the byte budget, checked for continuity.

The single applier reads this way always; the multi-threaded one where each transaction has to be
looked at before the next is read (UNTIL, the skip counter, SQL_Delay, following a growing relay
log), and to read again what the preparing stage handed back.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

from ..errors import BinlogError
from ..relaylog.continuity import Continuity
from ..relaylog.follow import CaughtUp, follow_events
from ..relaylog.index import RelayLogSet
from ..relaylog.stream import stream_events
from ..slave.database import ChannelProgress
from ..transactions import Transaction, TransactionAssembler, TransactionPart
from .budget import ByteBudget
from .controls import StartControls


class AnyEvent:
    """Set when any of its events is: following waits on STOP and KILL at once."""

    def __init__(self, *events: threading.Event) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


def held_size(item: object) -> int:
    """Relay-log bytes an item read holds until it is applied (coordinator events: none)."""
    kind = type(item)
    if kind is Transaction:
        return item.size - item.streamed  # type: ignore[attr-defined]
    if kind is TransactionPart:
        return item.size  # type: ignore[attr-defined]
    return 0


def read_chunks(
    logs: RelayLogSet,
    start_file: str | None,
    start_pos: int,
    follow: AnyEvent | None = None,
    budget: ByteBudget | None = None,
    parts: bool = False,
    continuity: Continuity | None = None,
    idle: bool = False,
) -> Iterator[list[object]]:
    """The relay log grouped into transactions and coordinator events, a few hundred at a time.

    Reading stays in the applier's thread: a reader thread was measured slower (the GIL makes the
    two threads take turns rather than overlap), so the single applier is one thread, like MySQL's.
    An unfinished group at the end waits for the rest of its events and is not handed on.

    follow: keep reading as the relay logs grow, until the event is set. A chunk then ends with
    CAUGHT_UP whenever everything that has arrived was read, so the applier commits what it holds
    instead of waiting for a batch to fill.

    budget: a chunk ends at its share; with parts, a row-only transaction larger than its part
    share comes in TransactionParts.

    continuity: checks every event against the ones before it (RelayLogGap where something the
    source logged is missing); None for a range read again that was checked already.

    idle: following, a chunk also ends with IDLE once a wait for the relay logs brought nothing.
    """
    if follow is not None:
        assert logs.index_file is not None, "following needs the relay-log index"
        events: Iterator = follow_events(logs.index_file, start_file, start_pos, stop=follow, idle=idle)
    else:
        events = stream_events(logs, start_file=start_file, start_pos=start_pos)
    check = None
    if continuity is not None:
        if start_file is not None:
            path = next((p for p in logs.files if p.name == start_file), None)
            if path is not None:
                continuity.starting_in(path, start_pos)
        check = continuity.event
    assembler = TransactionAssembler(budget.part_bytes if budget is not None and parts else None)
    chunk_limit = budget.chunk_bytes if budget is not None else sys.maxsize
    chunk: list[object] = []
    chunk_bytes = 0
    try:
        try:
            for logged in events:
                if isinstance(logged, CaughtUp):
                    chunk.append(logged)  # CAUGHT_UP, or IDLE
                    yield chunk
                    chunk, chunk_bytes = [], 0
                    continue
                if check is not None:
                    check(logged)
                done = assembler.feed(logged)
                if done:
                    chunk.extend(done)
                    if budget is not None:
                        chunk_bytes += sum([held_size(item) for item in done])
                if len(chunk) >= 256 or chunk_bytes >= chunk_limit:
                    yield chunk
                    chunk, chunk_bytes = [], 0
        except BinlogError:
            # Bad input: the whole transactions before it are handed on (and applied) first, so
            # the channel stops right before the bad event, as MySQL's applier does.
            if chunk:
                yield chunk
            raise
        if chunk:
            yield chunk
    finally:
        events.close()  # type: ignore[attr-defined]


def continuity_after(progress: ChannelProgress, controls: StartControls) -> Continuity:
    """The relay-log continuity check of a channel going on from what the slave recorded; the
    skip counter lets discontinuities past."""
    continuity = Continuity.resuming(
        progress.source_log_file if progress.relay_log_file is not None else None,
        progress.source_log_pos,
        progress.executed_gtids,
    )
    continuity.accept = controls.take_gap
    return continuity
