"""One relay-log stream read in index order: events with their relay and source positions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..binlog.reader import BinlogFile, LoggedEvent, ReaderState
from ..errors import RelayIndexError
from .index import RelayLogSet


def stream_events(
    logs: RelayLogSet,
    start_file: str | None = None,
    start_pos: int = 4,
    state: ReaderState | None = None,
) -> Iterator[LoggedEvent]:
    """Every event of the set from (start_file, start_pos); the source file name carries across files."""
    state = state if state is not None else ReaderState()
    started = start_file is None
    for path in logs.files:
        if not started:
            if Path(path).name != Path(start_file).name:
                # Files before the start still tell which source binlog is current. One that is
                # gone was purged after the list was read (the receiver's relay_log_purge takes it
                # off the index, then deletes it): the reader needs nothing of it but that context.
                if not Path(path).exists():
                    continue
                with BinlogFile(path) as skipped:
                    for _ in skipped.events(state, start=skipped.size):
                        pass
                continue
            started = True
            pos = start_pos
        else:
            pos = 4
        with BinlogFile(path) as binlog:
            yield from binlog.events(state, start=pos)
    if not started:
        where = str(logs.index_file) if logs.index_file else "the relay logs given"
        raise RelayIndexError(where, None, f"{start_file!r} is not one of its files")
