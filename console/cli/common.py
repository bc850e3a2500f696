"""What several subcommands share: SIGTERM as STOP, and values from a log printed safely."""

from __future__ import annotations

import signal
import threading

from engine.api import visible


def stop_on_sigterm(stop: threading.Event) -> object:
    """SIGTERM means STOP: finish what is assigned, checkpoint, exit cleanly. The handler it
    replaces, for the caller to put back."""

    def handler(signum: int, frame: object) -> None:
        stop.set()

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (tests call main() from threads)
        return signal.getsignal(signal.SIGTERM)


def shown(value: object) -> str:
    """A result value as text: names and statements from a log print their control characters
    escaped, never as terminal escape sequences."""
    return "" if value is None else visible(str(value))
