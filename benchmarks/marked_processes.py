"""The processes of one lap of a kill storm, found by a marker in their environment, which the
processes a lap starts (forked preparing processes, Spark's JVM and its Python workers) inherit."""

from __future__ import annotations

import os
import signal
import time


def marked_processes(marker: str) -> dict[int, str]:
    """pid -> command line of the live processes whose environment holds marker (NAME=VALUE), or a
    variable that starts with it when marker ends with '*'."""
    prefix = marker.endswith("*")
    wanted = marker.rstrip("*").encode()
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                variables = f.read().split(b"\0")  # empty for a zombie: it holds nothing any more
            if not any(v.startswith(wanted) if prefix else v == wanted for v in variables):
                continue
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:  # ended meanwhile, or another user's
            continue
        found[int(entry.name)] = command
    return found


def wait_until_gone(marker: str, grace: float, poll: float = 0.2) -> tuple[float, dict[int, str]]:
    """(seconds until no marked process was left, what was left after `grace` seconds)."""
    started = time.monotonic()
    while True:
        left = marked_processes(marker)
        waited = time.monotonic() - started
        if not left or waited >= grace:
            return waited, left
        time.sleep(poll)


def kill_all(pids: dict[int, str]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
