"""Following relay logs while they are written: the same events as reading them once complete."""

from __future__ import annotations

import mmap
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from engine.binlog import reader
from engine.binlog.reader import BinlogFile, ReaderState
from engine.errors import RelayIndexError, TruncatedEvent
from engine.relaylog.follow import CAUGHT_UP, announce_growth, follow_events, writing
from engine.relaylog.index import RelayLogSet, read_index
from engine.relaylog.stream import stream_events

from .conftest import MULTISOURCE

M1_INDEX = MULTISOURCE / "relay" / "relay-bin-m1.index"
M1_FILES = read_index(M1_INDEX).files
CHUNK = 7_919  # prime: chunk ends fall inside events and inside event headers
WATCHDOG_S = 15  # a follower that misses changes fails the test instead of hanging it


def where(logged):
    return (
        logged.log_name,
        logged.pos,
        logged.end_pos,
        logged.event_type,
        logged.source_log_file,
        logged.inner,
    )


def expected_stream(files, start_file=None, start_pos=4):
    return [where(e) for e in stream_events(RelayLogSet(None, tuple(files)), start_file, start_pos)]


def collect(follower, count, stop):
    """Follow until `count` events have come; returns them and how many CAUGHT_UPs came between."""
    watchdog = threading.Timer(WATCHDOG_S, stop.set)
    watchdog.start()
    events, caught_up = [], 0
    try:
        for item in follower:
            if item is CAUGHT_UP:
                caught_up += 1
                continue
            events.append(where(item))
            if len(events) == count:
                break
    finally:
        watchdog.cancel()
    assert len(events) == count, f"only {len(events)} of {count} events within {WATCHDOG_S} s"
    return events, caught_up


class GrowingCopy(threading.Thread):
    """Copies relay files into a folder in small chunks, listing each in the index after its first chunk."""

    def __init__(self, files, folder: Path, chunk=CHUNK, pause_s=0.001, delay_s=0.0):
        super().__init__(daemon=True)
        self.files, self.folder, self.chunk, self.pause_s, self.delay_s = (
            files,
            folder,
            chunk,
            pause_s,
            delay_s,
        )
        self.index = folder / "relay-bin-m1.index"
        self.error: BaseException | None = None

    def run(self):
        try:
            time.sleep(self.delay_s)
            for source in self.files:
                data = source.read_bytes()
                with open(self.folder / source.name, "wb") as out:
                    for offset in range(0, len(data), self.chunk):
                        out.write(data[offset : offset + self.chunk])
                        out.flush()
                        if offset == 0:
                            with open(self.index, "a") as index:
                                index.write(f"./{source.name}\n")  # as the server writes it
                        time.sleep(self.pause_s)
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc


def copy_complete(files, folder: Path) -> Path:
    for source in files:
        shutil.copyfile(source, folder / source.name)
    index = folder / "relay-bin-m1.index"
    index.write_text("".join(f"./{source.name}\n" for source in files))
    return index


def test_following_a_relay_log_set_while_it_is_copied_in_chunks_yields_what_reading_it_complete_does(
    tmp_path,
):
    expected = expected_stream(M1_FILES)
    writer = GrowingCopy(M1_FILES, tmp_path)
    stop = threading.Event()
    follower = follow_events(tmp_path / "relay-bin-m1.index", stop=stop)
    writer.start()
    try:
        events, caught_up = collect(follower, len(expected), stop)
        writer.join()
        assert writer.error is None
        assert events == expected
        assert caught_up >= 1
        # Everything is in: what comes next says so, not another event.
        assert next(follower) is CAUGHT_UP
    finally:
        stop.set()
        follower.close()


def test_starting_mid_way_in_a_file_still_being_written_yields_the_tail_reading_it_complete_does(tmp_path):
    in_sixth = [e for e in stream_events(read_index(M1_INDEX)) if e.log_name == "relay-bin-m1.000006"]
    start = in_sixth[len(in_sixth) // 2]
    # Named with a foreign folder, as a saved position may be: only the name counts.
    start_file = f"/var/lib/mysql/{start.log_name}"
    expected = expected_stream(M1_FILES, start_file, start.pos)
    assert expected[0][:2] == (start.log_name, start.pos)
    writer = GrowingCopy(M1_FILES, tmp_path, chunk=65_521)
    writer.start()
    # A saved position names a listed file (one that is not is an error): follow from the moment it
    # is listed, when the start position may not have arrived yet.
    deadline = time.monotonic() + WATCHDOG_S
    while start.log_name not in (writer.index.read_text() if writer.index.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.001)
    stop = threading.Event()
    follower = follow_events(writer.index, start_file, start.pos, stop=stop)
    try:
        events, _ = collect(follower, len(expected), stop)
        assert events == expected
        writer.join()
        assert next(follower) is CAUGHT_UP
    finally:
        stop.set()
        follower.close()


def test_files_purged_while_read_before_the_start_file_do_not_stop_the_follower(tmp_path, monkeypatch):
    """relay_log_purge takes the files before the applier's off the index while a follower that
    starts in a later file still reads them for their format: it goes on from the first file
    still listed, and yields what reading from the start file gives."""
    import engine.relaylog.follow as follow

    index = copy_complete(M1_FILES, tmp_path)
    files = read_index(index).files
    start_file = files[3].name
    expected = expected_stream(files, start_file, 4)
    opened = []

    class PurgedWhileOpen(BinlogFile):
        def __init__(self, path, *args, **kwargs):
            super().__init__(path, *args, **kwargs)
            opened.append(Path(path).name)
            if Path(path) == files[1]:
                # what relay_log_purge does: the index rewritten, the files before it deleted
                index.write_text("".join(f"./{f.name}\n" for f in files[3:]))
                for purged in files[:3]:
                    purged.unlink()

    monkeypatch.setattr(follow, "BinlogFile", PurgedWhileOpen)
    stop = threading.Event()
    follower = follow_events(index, start_file, 4, stop=stop)
    try:
        events, _ = collect(follower, len(expected), stop)
        # from the source's Rotate that follows the start file's own Format_description on, the
        # same events with the same source positions; that first event names the source file of
        # whatever was read before it (as a follower started after the purge would not)
        assert events[1:] == expected[1:]
        assert events[0][:4] == expected[0][:4] and events[1][3] == "Rotate"
        assert opened[:2] == [files[0].name, files[1].name]  # read for context when the purge came
        assert files[2].name not in opened
    finally:
        stop.set()
        follower.close()


def test_a_start_file_the_index_does_not_list_is_an_error(tmp_path):
    index = copy_complete(M1_FILES[:2], tmp_path)
    with pytest.raises(RelayIndexError, match="relay-bin-m1.000009"):
        next(follow_events(index, "relay-bin-m1.000009", 4))


def test_setting_stop_while_the_follower_waits_ends_it_long_before_the_next_poll(tmp_path):
    index = copy_complete(M1_FILES[:2], tmp_path)
    stop = threading.Event()
    follower = follow_events(index, stop=stop, poll_s=30)
    items = []
    for item in follower:
        if item is CAUGHT_UP:
            break
        items.append(item)
    assert len(items) == len(expected_stream(M1_FILES[:2]))
    threading.Timer(0.2, stop.set).start()
    began = time.monotonic()
    with pytest.raises(StopIteration):
        next(follower)  # waiting for a change that never comes
    assert time.monotonic() - began < 2


def cut_inside_an_event(path: Path, near: int):
    """(cut offset, position of the event it falls in) for a cut `near` bytes into the file."""
    with BinlogFile(path) as binlog:
        for logged in binlog.events():
            if logged.pos < near < logged.end_pos:
                return near, logged.pos
    raise AssertionError(f"no event spans offset {near}")


def test_a_file_cut_off_inside_an_event_while_a_later_one_is_listed_is_an_error_after_the_grace_period(
    tmp_path,
):
    files = M1_FILES[:3]
    index = copy_complete(files, tmp_path)
    cut, cut_event_pos = cut_inside_an_event(files[1], 300_007)
    os.truncate(tmp_path / files[1].name, cut)
    before_cut = [e for e in expected_stream(files) if e[0] != files[1].name or e[2] <= cut]
    before_cut = [e for e in before_cut if e[0] != files[2].name]
    follower = follow_events(index, poll_s=0.05, grace_s=0.3)
    events, caught_up = [], 0
    began = time.monotonic()
    with pytest.raises(TruncatedEvent) as raised:
        for item in follower:
            if item is CAUGHT_UP:
                caught_up += 1
            else:
                events.append(where(item))
    assert time.monotonic() - began >= 0.3  # given its grace, not refused at once
    assert events == before_cut  # everything complete before the cut came first
    assert caught_up == 1  # and the applier was told it could commit it while the follower waited
    error = raised.value
    assert (error.file, error.pos) == (files[1].name, cut_event_pos)
    assert files[1].name in str(error) and str(cut_event_pos) in str(error)


def test_a_cut_off_file_completed_within_the_grace_period_is_read_on(tmp_path):
    files = M1_FILES[:3]
    index = copy_complete(files, tmp_path)
    cut, _ = cut_inside_an_event(files[1], 300_007)
    os.truncate(tmp_path / files[1].name, cut)

    def complete_it():
        with open(tmp_path / files[1].name, "ab") as out:
            out.write(files[1].read_bytes()[cut:])

    threading.Timer(0.3, complete_it).start()
    stop = threading.Event()
    follower = follow_events(index, stop=stop, poll_s=0.05, grace_s=5)
    try:
        events, caught_up = collect(follower, len(expected_stream(files)), stop)
        assert events == expected_stream(files)
        assert caught_up >= 1
    finally:
        follower.close()


def test_an_index_that_appears_later_is_waited_for_and_its_changes_wake_the_follower(tmp_path):
    files = M1_FILES[:4]
    expected = expected_stream(files)
    stop = threading.Event()
    # A poll this long would fail the time check below: waking up must come from the change itself.
    follower = follow_events(tmp_path / "relay-bin-m1.index", stop=stop, poll_s=10)
    try:
        assert next(follower) is CAUGHT_UP  # nothing to read yet: the applier hears so at once
        writer = GrowingCopy(files, tmp_path, chunk=65_521, delay_s=0.3)
        writer.start()
        began = time.monotonic()
        events, _ = collect(follower, len(expected), stop)
        assert events == expected
        assert time.monotonic() - began < 5
        writer.join()
        assert writer.error is None
    finally:
        stop.set()
        follower.close()


class CountingHeader:
    """Stands in for the reader's event-header struct and notes where file headers are read."""

    def __init__(self, real):
        self.real = real
        self.offsets: list[int] = []

    def unpack_from(self, buffer, offset=0):
        if isinstance(buffer, mmap.mmap):  # not the events inside a transaction payload
            self.offsets.append(offset)
        return self.real.unpack_from(buffer, offset)


def test_resuming_a_read_starts_where_the_last_read_stopped_and_gives_the_same_events(monkeypatch):
    headers = CountingHeader(reader.HEADER)
    monkeypatch.setattr(reader, "HEADER", headers)
    # headers are counted in the Python loop; tests/test_framing_compiled.py holds the compiled
    # one to the same events and positions, resumed reads included
    monkeypatch.setattr(reader, "_framing", None)
    path = M1_FILES[1]
    with BinlogFile(path) as binlog:
        state = ReaderState()
        first_part = list(binlog.events(state, stop=binlog.size // 2, partial_tail_ok=True))
        stopped_at = state.read_pos
        assert stopped_at == first_part[-1].end_pos
        headers.offsets.clear()
        resumed = [where(e) for e in binlog.events(state, start=stopped_at, resume=True)]
        assert headers.offsets[0] == stopped_at
        assert len(headers.offsets) == len(resumed)  # each header read once, none before the start
        headers.offsets.clear()
        walked = [where(e) for e in binlog.events(ReaderState(), start=stopped_at)]
        assert headers.offsets[0] == 4  # without resume the walk starts at the top
    assert resumed == walked


def test_following_a_growing_file_reads_each_header_once_more_per_read_at_most_not_from_the_top(
    tmp_path, monkeypatch
):
    first, growing = M1_FILES[0], M1_FILES[1]
    expected = expected_stream([first, growing])
    event_ends = {e[2] for e in expected if e[0] == growing.name}
    index = copy_complete([first], tmp_path)
    with open(index, "a") as out:
        out.write(f"./{growing.name}\n")
    data = growing.read_bytes()
    target = tmp_path / growing.name
    target.write_bytes(b"")
    headers = CountingHeader(reader.HEADER)
    monkeypatch.setattr(reader, "HEADER", headers)
    # headers are counted in the Python loop; tests/test_framing_compiled.py holds the compiled
    # one to the same events and positions, resumed reads included
    monkeypatch.setattr(reader, "_framing", None)
    follower = follow_events(index, poll_s=0.05)
    events, reads = [], 0
    try:
        # No writer thread: grow the file by a chunk, then take what the follower has until it says
        # it caught up. After CAUGHT_UP it looks again before waiting, so this never sleeps, as long
        # as the chunk completed an event (else it would wait for one).
        for offset in range(0, len(data), 5_003):
            with open(target, "ab") as out:
                out.write(data[offset : offset + 5_003])
            if not any(offset < end <= offset + 5_003 for end in event_ends):
                continue
            for item in follower:
                if item is CAUGHT_UP:
                    break
                events.append(where(item))
            reads += 1
    finally:
        follower.close()
        monkeypatch.undo()
    assert events == expected
    # Each read looks at new headers, plus at most one at the tail that is not complete yet; walking
    # from position 4 again at each read is some thirty times as many here, and grows with the file.
    assert reads > 50
    assert len(headers.offsets) <= len(events) + reads + 1


def open_paths():
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # closed meanwhile (the listing's own fd)
    return links


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_closing_the_follower_early_releases_the_mapped_file_and_the_watcher(tmp_path):
    files = M1_FILES[:2]
    index = copy_complete(files, tmp_path)
    growing = tmp_path / files[1].name
    cut, _ = cut_inside_an_event(files[1], 300_007)
    os.truncate(growing, cut)
    inotify_before = open_paths().count("anon_inode:inotify")
    follower = follow_events(index, poll_s=5)
    while next(follower) is not CAUGHT_UP:
        pass

    def complete_it():
        with open(growing, "ab") as out:
            out.write(files[1].read_bytes()[cut:])

    threading.Timer(0.2, complete_it).start()
    assert next(follower) is not CAUGHT_UP  # woken by the change, part-way through the rest
    # The test can only fail if these were held in the first place.
    assert str(growing) in open_paths()
    assert str(growing) in Path("/proc/self/maps").read_text()
    assert open_paths().count("anon_inode:inotify") > inotify_before

    follower.close()
    assert str(growing) not in open_paths()
    assert str(growing) not in Path("/proc/self/maps").read_text()
    deadline = time.monotonic() + 2
    while open_paths().count("anon_inode:inotify") > inotify_before and time.monotonic() < deadline:
        time.sleep(0.01)  # the watcher's thread lets go of it as it ends
    assert open_paths().count("anon_inode:inotify") == inotify_before


def next_in_thread(follower):
    """next(follower) in a thread: (the thread, the list its item lands in)."""
    got = []
    thread = threading.Thread(target=lambda: got.append(next(follower)), daemon=True)
    thread.start()
    return thread, got


def test_a_writer_in_this_process_wakes_the_follower_when_it_announces_what_it_flushed(tmp_path):
    """relaydeck's own receiver announces each transaction it flushed: the follower waits for that,
    not for file notifications (which come tens of milliseconds later), and wakes at once."""
    whole = M1_FILES[0].read_bytes()
    events = list(stream_events(RelayLogSet(None, (M1_FILES[0],))))
    cut = events[len(events) // 2].pos  # an event boundary: what is before it reads whole
    relay = tmp_path / M1_FILES[0].name
    relay.write_bytes(whole[:cut])
    index = tmp_path / "relay-bin-m1.index"
    index.write_text(f"./{relay.name}\n")
    stop = threading.Event()
    writing(index, True)
    follower = follow_events(index, stop=stop, poll_s=30)
    try:
        first = []
        for item in follower:
            if item is CAUGHT_UP:
                break
            first.append(item)
        assert len(first) == len(events) // 2
        thread, got = next_in_thread(follower)
        thread.join(0.3)  # it looked again, found nothing, and waits
        with relay.open("ab") as out:  # the rest arrives, unannounced
            out.write(whole[cut:])
        thread.join(0.5)
        assert not got, "without an announcement the follower waits (poll_s is its safety net)"
        announced = time.monotonic()
        announce_growth(tmp_path / "." / index.name)  # the same index, however it is named
        thread.join(5)
        assert got and got[0] is not CAUGHT_UP
        assert time.monotonic() - announced < 0.5
        assert where(got[0]) == where(events[len(events) // 2])
    finally:
        stop.set()
        writing(index, False)
        follower.close()


def test_stop_ends_a_wait_for_announcements_long_before_the_next_poll(tmp_path):
    index = copy_complete(M1_FILES[:1], tmp_path)
    stop = threading.Event()
    writing(index, True)
    follower = follow_events(index, stop=stop, poll_s=30)
    try:
        for item in follower:
            if item is CAUGHT_UP:
                break
        threading.Timer(0.2, stop.set).start()
        began = time.monotonic()
        with pytest.raises(StopIteration):
            next(follower)
        assert time.monotonic() - began < 2
    finally:
        writing(index, False)
        follower.close()


def test_idle_comes_once_after_a_wait_that_brought_nothing_and_again_only_after_new_events(tmp_path):
    """CAUGHT_UP at once when everything is read; IDLE (asked for) only after a wait that brought
    nothing new, so an applier reading between two arriving transactions is not held by it."""
    from engine.relaylog.follow import IDLE

    writer = GrowingCopy(M1_FILES[:2], tmp_path)
    writer.start()
    writer.join()
    expected = expected_stream(M1_FILES[:2])
    stop = threading.Event()
    follower = follow_events(writer.index, stop=stop, poll_s=0.05, idle=True)
    try:
        events = []
        while len(events) < len(expected):
            item = next(follower)
            if item is not CAUGHT_UP:
                assert item is not IDLE, "IDLE before everything written was read"
                events.append(where(item))
        assert events == expected
        assert next(follower) is CAUGHT_UP
        started = time.monotonic()
        assert next(follower) is IDLE
        assert time.monotonic() - started >= 0.04  # after a wait (poll_s), not at once
        with open(writer.index.parent / M1_FILES[2].name, "wb") as out:  # one more file, whole
            out.write(M1_FILES[2].read_bytes())
        with open(writer.index, "a") as index:
            index.write(f"./{M1_FILES[2].name}\n")
        more = [next(follower) for _ in range(3)]
        assert all(item is not IDLE and item is not CAUGHT_UP for item in more)
    finally:
        stop.set()
        follower.close()
    quiet = threading.Event()
    plain = follow_events(writer.index, stop=quiet, poll_s=0.05)
    try:
        # every event of the three files, then CAUGHT_UP
        seen = [next(plain) for _ in range(len(expected_stream(M1_FILES[:3])) + 1)]
        assert seen[-1] is CAUGHT_UP
        threading.Timer(0.3, quiet.set).start()  # several waits bring nothing, then it stops
        assert list(plain) == []  # no IDLE unless asked for
    finally:
        quiet.set()
        plain.close()
