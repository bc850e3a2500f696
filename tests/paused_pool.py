"""Freezing a local process pool mid-segment: its processes are this process's children, and
SIGSTOP holds each where it is (SIGCONT lets it go on), so a test sees the pool while it prepares
without depending on how fast this machine is."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_pool(processes: int, timeout: float = 60) -> Iterator[threading.Event]:
    """For the block: a thread waits for `processes` pool processes to be forked and stops them
    at once (the first segment is quick), then sets the event it yields. They go on when the block
    ends, also on failure, so the replay can finish. Enter it before the replay starts."""
    stopped = threading.Event()
    done = threading.Event()
    pids: list[int] = []

    def pause() -> None:
        deadline = time.monotonic() + timeout
        while not done.is_set() and time.monotonic() < deadline:
            children = multiprocessing.active_children()
            if len(children) >= processes:
                for child in children:
                    if child.pid is not None:
                        os.kill(child.pid, signal.SIGSTOP)
                        pids.append(child.pid)
                stopped.set()
                return
            time.sleep(0.0005)

    thread = threading.Thread(target=pause, name="pool-pauser", daemon=True)
    thread.start()
    try:
        yield stopped
    finally:
        done.set()
        thread.join()
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
