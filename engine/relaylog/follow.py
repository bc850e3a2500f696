"""Following relay logs that are still being written: events as they are appended, files as they are listed.

follow_events() yields what stream_events() would yield once the logs are complete, and in between
says when it has caught up with the writer, so that the applier can commit what it holds.

How the follower learns that the logs grew: a writer in another process (a MySQL replica's IO
thread, a copy) is noticed through file notifications (watchfiles), which come a step or two of
the watcher (10 ms each) after the write. A writer in this process (relaydeck's own receiver,
RelayLogFiles, under `relaydeck serve`) announces each whole transaction it flushed with
announce_growth(), and a follower of that index that is waiting wakes at once. Measured with
benchmarks/receiver_lag.py (a MariaDB source, one-row transactions, two runs each): lag p50 from
27 to 9 ms at 20 trx/s, from 22 to 9-13 ms at 100 trx/s. Under a heavier load the follower
seldom waits (something new has arrived by the end of each commit), and the figures at 1,000
trx/s stayed within the spread of the machine's other load.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..binlog.reader import BinlogFile, LoggedEvent, ReaderState
from ..errors import BinlogError, RelayIndexError, TruncatedEvent
from .index import read_index

if TYPE_CHECKING:
    from watchfiles import Change

# watchfiles: how often the waiting thread looks for changes (and at `stop`), and how long it may keep
# gathering changes once it has one. Small, so an appended event is applied tens of milliseconds later.
WATCH_STEP_MS = 10
WATCH_DEBOUNCE_MS = 50

# The `start` for files before start_file: they are read only for their format and source file name.
_CONTEXT_ONLY = sys.maxsize


class _Growth:
    """A relay-log index that a writer of this process appends to: how many times it grew."""

    def __init__(self) -> None:
        self.changed = threading.Condition(threading.Lock())
        self.version = 0
        self.writers = 0


_GROWTH: dict[str, _Growth] = {}
_GROWTH_LOCK = threading.Lock()


_GROWTH_BY_NAME: dict[str, _Growth] = {}  # the path as given: realpath once, not at every flush


def _growth_of(index_file: str | os.PathLike[str]) -> _Growth:
    given = os.fspath(index_file)
    growth = _GROWTH_BY_NAME.get(given)
    if growth is not None:
        return growth
    key = os.path.realpath(given)
    with _GROWTH_LOCK:
        growth = _GROWTH.get(key)
        if growth is None:
            growth = _GROWTH[key] = _Growth()
        _GROWTH_BY_NAME[given] = growth
        return growth


def grows_within(index_file: str | os.PathLike[str], seconds: float) -> bool | None:
    """Whether a writer of this process announces that `index_file`'s relay logs grew within
    `seconds` (waiting until it does or the time is up); None when no writer of this process
    writes them (another process's growth is not announced)."""
    growth = _growth_of(index_file)
    with growth.changed:
        if growth.writers <= 0:
            return None
        version = growth.version
        return growth.changed.wait_for(lambda: growth.version != version, timeout=max(0.0, seconds))


def writing(index_file: str | os.PathLike[str], active: bool) -> None:
    """A writer of this process starts (active) or stops writing the relay logs of `index_file`:
    while one does, followers of that index wait for announce_growth() rather than for file
    notifications."""
    growth = _growth_of(index_file)
    with growth.changed:
        growth.writers += 1 if active else -1
        growth.version += 1
        growth.changed.notify_all()


def announce_growth(index_file: str | os.PathLike[str]) -> None:
    """The relay logs of `index_file` grew (events flushed, or the index rewritten)."""
    growth = _growth_of(index_file)
    with growth.changed:
        growth.version += 1
        growth.changed.notify_all()


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class CaughtUp:
    """Marker: every complete event written so far has been yielded (a good moment to commit)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "CAUGHT_UP"


CAUGHT_UP = CaughtUp()


class Idle(CaughtUp):
    """Marker: caught up, and a wait (a change notification, or poll_s) brought nothing new to
    read: the source is quiet for now (a good moment for work that should not hold up a reader
    that is only between two transactions arriving)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "IDLE"


IDLE = Idle()


def follow_events(
    index_file: str | os.PathLike[str],
    start_file: str | None = None,
    start_pos: int = 4,
    state: ReaderState | None = None,
    stop: StopFlag | None = None,
    *,
    poll_s: float = 0.5,
    grace_s: float = 5.0,
    idle: bool = False,
) -> Iterator[LoggedEvent | CaughtUp]:
    """The events of a relay-log set that is still growing, as stream_events() reads a finished one.

    Yields CAUGHT_UP when nothing complete is left to read (once, then again only after new events),
    then sleeps until the index or the file being read changes; with `idle`, IDLE once after the
    first such wait that brought nothing new (a CaughtUp too); poll_s bounds every sleep in case a
    change notification is lost. Returns soon after `stop.is_set()`. An event cut off at the end of
    a file is waited for, except when a later file is listed: then it is TruncatedEvent after grace_s
    (give or take poll_s) without the rest arriving.
    """
    if poll_s <= 0:
        raise ValueError(f"poll_s must be positive, not {poll_s}")
    if grace_s < 0:
        raise ValueError(f"grace_s cannot be negative, not {grace_s}")
    follower = _Follower(
        Path(index_file), start_file, start_pos, state if state is not None else ReaderState(), stop, grace_s
    )
    follower.says_idle = idle
    waiter = _ChangeWaiter(stop, poll_s, _growth_of(index_file))
    try:
        yield from follower.run(waiter)
    finally:
        waiter.close()


class _Follower:
    """Where the follower is: the index as last read, the file being read and how far it got."""

    def __init__(
        self,
        index_path: Path,
        start_file: str | None,
        start_pos: int,
        state: ReaderState,
        stop: StopFlag | None,
        grace_s: float,
    ) -> None:
        self.index_path = index_path
        self.start_name = Path(start_file).name if start_file is not None else None
        self.start_file = start_file
        self.start_pos = start_pos
        self.state = state
        self.stop = stop
        self.grace_s = grace_s
        self.files: tuple[Path, ...] = ()
        self.index_signature: tuple[int, int, int] | None = None
        self.current: Path | None = None
        self.started = False  # reached start_file: its events (from start_pos) and later ones are yielded
        self.emit_from = 4  # events of `current` at or past this position are still to be yielded
        self.mapped_size: int | None = None  # size of `current` when last read; None before the first read
        self.identity: tuple[int, int] | None = None  # (device, inode) of `current` when first read
        self.consumed = 4  # where that read stopped: the end of the last complete event
        self.stall: tuple[int | None, float] | None = None  # (size, deadline) of a cut-off tail
        self.says_idle = False  # IDLE after a wait that brought nothing new

    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def run(self, waiter: _ChangeWaiter) -> Iterator[LoggedEvent | CaughtUp]:
        caught_up_due = True  # the first one comes even when there is nothing at all to read yet
        idle_due = False  # after a wait that brought nothing new
        waited = False
        while not self.stopped():
            self.refresh_index()
            waiter.watch([self.index_path, *([self.current] if self.current else [])])
            if self.current is not None:
                if (yield from self.read_new_events()):
                    caught_up_due, idle_due = True, False
                if self.stopped():
                    return
                if self.mapped_size == self.consumed and self.move_to_next_file():
                    continue
            if caught_up_due:
                caught_up_due, idle_due, waited = False, self.says_idle, False
                yield CAUGHT_UP
                continue  # the applier may have taken a while to commit: look again before sleeping
            if idle_due and waited:
                idle_due = False
                yield IDLE
                continue
            self.check_cut_off_tail()
            # Once the watcher has started (at the first wait), it records changes between waits too:
            # one landing after the checks above ends this wait at once. Before it has started, the
            # poll_s timeout is what catches such a change.
            if not waiter.wait():
                return
            waited = True

    def refresh_index(self) -> None:
        try:
            info = self.index_path.stat()
        except FileNotFoundError:
            return  # not created yet: keep waiting (or keep what was listed, if it is being replaced)
        signature = (info.st_ino, info.st_size, info.st_mtime_ns)
        if signature == self.index_signature:
            return
        text = self.index_path.read_bytes()
        if not text.strip():
            return  # created but not written yet
        # Listed files may not exist yet (the index written before the file, or copied first).
        files = read_index(self.index_path, must_exist=False).files
        settled = text.endswith(b"\n") or files[-1].exists()
        if not settled:
            # A last line without its line break that names nothing may be a name still being
            # written: set it aside, and read the index again at every look until it settles.
            files = files[:-1]
        else:
            self.index_signature = signature
        names = [path.name for path in files]
        if self.current is None:
            if self.start_name is not None and self.start_name not in names:
                if not settled:
                    return
                raise RelayIndexError(
                    str(self.index_path), None, f"{self.start_file!r} is not one of its files"
                )
            if not files:
                return
            self.files = files
            self.begin_file(files[0])
            return
        if self.current.name not in names:
            if not settled:
                return
            if not self.started and self.start_name in names:
                # Purged (relay_log_purge) while read only for its format and source file name:
                # the files still listed, the start file's among them, begin with their own.
                self.files = files
                self.begin_file(files[0])
                return
            raise RelayIndexError(
                str(self.index_path), None, f"{self.current.name!r}, the file being read, is no longer listed"
            )
        self.files = files
        if self.mapped_size is None:
            # Not opened yet: a file that has appeared since may now resolve elsewhere (beside the index).
            self.current = files[names.index(self.current.name)]

    def begin_file(self, path: Path) -> None:
        if not self.started and (self.start_name is None or path.name == self.start_name):
            self.started = True
            # As stream_events: start_pos applies to start_file only.
            self.emit_from = self.start_pos if self.start_name is not None else 4
        else:
            self.emit_from = 4 if self.started else _CONTEXT_ONLY
        self.current = path
        self.mapped_size = None
        self.identity = None
        self.consumed = 4
        self.stall = None

    def later_files(self) -> tuple[Path, ...]:
        names = [path.name for path in self.files]
        return self.files[names.index(self.current.name) + 1 :]

    def move_to_next_file(self) -> bool:
        later = self.later_files()
        if later:
            self.begin_file(later[0])
        return bool(later)

    def read_new_events(self) -> Iterator[LoggedEvent]:
        """The events of `current` not yielded yet, if it has grown; returns whether there were any."""
        size = _size_of(self.current)
        if self.identity is not None and _identity_of(self.current) not in (None, self.identity):
            # Another file now has the name: what it holds need not continue what was read.
            raise BinlogError(
                str(self.current),
                self.consumed,
                "file was replaced while being read (a new file under the same name)",
            )
        if size is None or size < 4 or size == self.mapped_size:
            return False  # not there yet, or nothing new
        if self.mapped_size is not None and size < self.mapped_size:
            raise BinlogError(
                str(self.current),
                None,
                f"file shrank from {self.mapped_size} to {size} bytes while being read",
            )
        yielded = False
        # resume: the state knows where the last read of this file stopped and goes on from there,
        # rather than walking the file's headers from position 4 at every growth (quadratic).
        with (
            BinlogFile(self.current) as binlog,
            closing(
                binlog.events(self.state, start=self.emit_from, partial_tail_ok=True, resume=True)
            ) as events,
        ):
            self.mapped_size = binlog.size
            if self.identity is None:
                info = os.fstat(binlog._fh.fileno())
                self.identity = (info.st_dev, info.st_ino)
            for logged in events:
                if not logged.inner:  # a payload's inner events come with it
                    if self.stopped():
                        return yielded
                    self.emit_from = logged.end_pos
                yielded = True
                yield logged
        self.consumed = self.state.read_pos
        self.emit_from = max(self.emit_from, self.consumed)
        return yielded

    def check_cut_off_tail(self) -> None:
        """A file that ends inside an event while a later one is listed gets grace_s to be completed."""
        if self.current is None or not self.later_files():
            self.stall = None  # the last file: its writer may take as long as it likes
            return
        size = _size_of(self.current)
        now = time.monotonic()
        if self.stall is None or self.stall[0] != size:
            self.stall = (size, now + self.grace_s)  # new, or the copier is still at it: start over
            return
        if now < self.stall[1]:
            return
        name, later = self.current.name, self.later_files()[0].name
        why = f"{later} is listed after it, and the rest did not arrive within {self.grace_s:g} s"
        if size is None:
            raise RelayIndexError(str(self.index_path), None, f"{name!r} does not exist, though {why}")
        if size < 4:
            raise TruncatedEvent(name, 0, f"file is {size} bytes, shorter than the binlog magic; {why}")
        raise TruncatedEvent(
            name, self.consumed, f"file ends {size - self.consumed} bytes into an event; {why}"
        )


class _ChangeWaiter:
    """Sleeps until one of the watched files changes, poll_s passes, or `stop` is set.

    One watcher serves every wait, rather than one per wait: notify keeps recording changes while
    the follower is busy reading and yielding, so a change that lands between the follower's last
    look at the files and its next wait ends that wait at once. A watcher started per wait would
    not have seen it, and the follower would sleep the whole poll_s with an event ready.

    While a writer of this process writes the index's relay logs, the waiter waits for its
    announcements instead. The version it last saw plays the watcher's part: an announcement made
    while the follower was reading ends the next wait at once.
    """

    def __init__(self, stop: StopFlag | None, poll_s: float, growth: _Growth | None = None) -> None:
        self.stop = stop
        self.poll_s = poll_s
        self.growth = growth
        self.seen = growth.version if growth is not None else 0
        self.names: set[str] = set()  # read by the filter, so changing it needs no new watcher
        self.folders: tuple[str, ...] = ()
        self.changes: Iterator[set[tuple[Change, str]]] | None = None

    def watch(self, paths: Iterable[Path]) -> None:
        """Wake up for changes to these files (by name, in whichever of their folders exist)."""
        paths = list(paths)
        self.names.clear()
        self.names.update(path.name for path in paths)
        folders = tuple(sorted({str(path.parent) for path in paths if path.parent.is_dir()}))
        if folders != self.folders:
            self.close()  # the folders a watcher watches are fixed when it starts
            self.folders = folders

    def is_watched(self, change: Change, path: str) -> bool:
        return os.path.basename(path) in self.names

    def wait(self) -> bool:
        """False once `stop` is set."""
        if self.growth is not None and self.growth.writers > 0:
            self.close()  # its notifications would only repeat the announcements
            return self.wait_for_announcement(self.growth)
        if not self.folders:
            return self.sleep()  # nothing to watch (no folder yet): wait poll_s, still minding `stop`
        if self.changes is None:
            from watchfiles import watch  # loaded by following only, not by every replay's start

            self.changes = watch(
                *self.folders,
                watch_filter=self.is_watched,
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                stop_event=self.stop,
                rust_timeout=max(1, round(self.poll_s * 1000)),
                yield_on_timeout=True,  # the safety net: look again even without a notification
                recursive=False,
                debug=False,
            )
        try:
            next(self.changes)
        except StopIteration:  # watchfiles saw `stop` set
            self.changes = None
            return False
        return True

    def wait_for_announcement(self, growth: _Growth) -> bool:
        deadline = time.monotonic() + self.poll_s
        with growth.changed:
            while growth.version == self.seen:
                if self.stop is not None and self.stop.is_set():
                    return False
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                growth.changed.wait(min(left, WATCH_STEP_MS / 1000))  # `stop` cannot be waited on
            self.seen = growth.version
        return self.stop is None or not self.stop.is_set()

    def sleep(self) -> bool:
        deadline = time.monotonic() + self.poll_s
        while time.monotonic() < deadline:
            if self.stop is not None and self.stop.is_set():
                return False
            time.sleep(WATCH_STEP_MS / 1000)
        return self.stop is None or not self.stop.is_set()

    def close(self) -> None:
        if self.changes is not None:
            self.changes.close()  # ends the watching thread
            self.changes = None


def _identity_of(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino)


def _size_of(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
