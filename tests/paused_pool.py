"""Freezing a local process pool mid-segment: its processes are this process's children, and
SIGSTOP holds each where it is (SIGCONT lets it go on), so a test sees the pool while it prepares
without depending on how fast this machine is."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def paused_pool(processes: int, timeout: float = 60) -> Iterator[list[int]]:
    """Wait for `processes` pool processes to be forked, stop them all and yield their pids; they
    go on when the block ends (also on failure, so the replay can finish)."""
    deadline = time.monotonic() + timeout
    while len(children := multiprocessing.active_children()) < processes:
        if time.monotonic() > deadline:
            pytest.fail(f"{processes} pool processes were not started within {timeout} s")
        time.sleep(0.001)  # the first segment is quick: stop them before they finish it
    pids = [child.pid for child in children if child.pid is not None]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield pids
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
