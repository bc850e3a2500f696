"""How a forked process hands a large result to its caller: through a file in shared memory.

A prepared segment is mostly Arrow buffers: about 70 MB for the MariaDB capture's 87 MB of relay
log. Through the process pool's pipe a result is pickled into one bytes object, written in pieces
of the pipe's size and read back by the pool's result thread in the applier's process, which takes
the interpreter lock for every piece while the applier's workers want it, and copies the data
three times more on the way. Here the process pickles the result with protocol 5, its Arrow
buffers out of band, writes it all into one file in /dev/shm and sends only the file's name. The
caller maps the file, removes its name at once, and unpickles the result around the mapped
buffers, which are not copied again: the mapping lives as long as the arrays that use it.

Results below HANDOVER_MIN_BYTES, and any that cannot be written there (no /dev/shm, a full one),
go through the pipe as before. A file that nobody took over (its caller was killed in between, or
its process while writing it, a Spark task cancelled with its job) carries its executor's owner in
its name, the caller's pid first: an executor removes its own when it closes, and the next
executor started, and every channel of a replay as it starts, removes those of callers that
ended and of executors of its own process that closed (sweep_orphans), whatever was still
writing when they closed.
"""

from __future__ import annotations

import itertools
import mmap
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..leftovers import pid_alive

SHARED_MEMORY = Path("/dev/shm")
PREFIX = "relaydeck-handover-"
HANDOVER_MIN_BYTES = 1 << 20  # below this, the pipe costs less than a file and a mapping
_ALIGN = 64  # Arrow's alignment for buffers
_numbers = itertools.count()
_executors = itertools.count()


def new_owner() -> str:
    """The name part of the files of one executor's processes: the caller's pid, a number."""
    return f"{os.getpid()}-{next(_executors)}"


_closed: set[str] = set()  # owners of this process's executors that closed


def close_owner(owner: str) -> None:
    """The executor of `owner` closed: its files go now, and any written later go at the next
    sweep."""
    _closed.add(owner)
    sweep_orphans()


@dataclass(frozen=True, slots=True)
class Handover:
    """A result written to a file in shared memory: the pickle, then each out-of-band buffer."""

    path: str
    size: int
    pickled: int  # bytes of the pickle, at the start of the file
    buffers: tuple[tuple[int, int], ...]  # (offset, length) of each out-of-band buffer

    def take(self) -> Any:
        """The result, its buffers mapped from the file (whose name is removed first)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.unlink(self.path)
            mapped = mmap.mmap(fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        view = memoryview(mapped)
        return pickle.loads(view[: self.pickled], buffers=[view[at : at + n] for at, n in self.buffers])

    def discard(self) -> None:
        """Nobody wants the result any more: its file goes."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def hand_over(result: Any, owner: str) -> Any:
    """Where a result is prepared (a forked process, a Spark task on the caller's machine): the
    result as a Handover when it is large and shared memory takes it, else the result itself."""
    if not SHARED_MEMORY.is_dir():
        return result
    buffers: list[pickle.PickleBuffer] = []
    try:
        pickled = pickle.dumps(result, protocol=5, buffer_callback=buffers.append)
        raws = [buffer.raw() for buffer in buffers]
    except (BufferError, pickle.PicklingError, TypeError):  # not contiguous, or not picklable so
        return result
    layout = []
    at = _aligned(len(pickled))
    for raw in raws:
        layout.append((at, raw.nbytes))
        at = _aligned(at + raw.nbytes)
    if at < HANDOVER_MIN_BYTES:
        return result
    path = SHARED_MEMORY / f"{PREFIX}{owner}-{os.getpid()}-{next(_numbers)}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return result
    try:
        os.ftruncate(fd, at)
        _write_at(fd, pickled, 0)
        for (offset, _), raw in zip(layout, raws, strict=True):
            _write_at(fd, raw, offset)
    except OSError:  # a full /dev/shm: the pipe takes it
        os.close(fd)
        path.unlink(missing_ok=True)
        return result
    os.close(fd)
    return Handover(str(path), at, len(pickled), tuple(layout))


def _aligned(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN


def _write_at(fd: int, data: Any, offset: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError("nothing written")
        view, offset = view[written:], offset + written


def sweep_orphans() -> None:
    """Remove the files of callers that ended and of this process's executors that closed:
    nobody will take them."""
    try:
        names = os.listdir(SHARED_MEMORY)
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        caller, _, number = name[len(PREFIX) :].partition("-")
        if not caller.isdigit():
            continue
        owner = f"{caller}-{number.partition('-')[0]}"
        if owner in _closed or not pid_alive(int(caller)):
            try:
                os.unlink(SHARED_MEMORY / name)
            except OSError:
                pass
