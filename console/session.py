"""Which replica the console drives: a running `relaydeck serve` (attached through its socket), or
one it runs in this process from a configuration file or the bundled example.

An in-process replica also serves the control socket, so `relaydeck sql` and other consoles reach
it as they would reach `relaydeck serve`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from engine.api import (
    ControlSocket,
    RelaydeckError,
    ReplicaHandle,
    ReplicaServer,
    Repository,
    ServeConfig,
    apply_config,
    connect,
    load_config,
)


@dataclass
class Session:
    replica: ReplicaHandle
    description: str  # for the title bar: what the console is connected to
    notes: list[str] = field(default_factory=list)  # what configuring said, for the log
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Stop what this process runs (feeder, socket, channels), newest first."""
        while self._closers:
            self._closers.pop()()


def attach(repository: Path) -> Session | None:
    remote = connect(repository) if repository.exists() else None
    if remote is None:
        return None
    return Session(remote, f"attached to relaydeck serve on {repository}", _closers=[remote.close])


def open_repository(repository: Path, slave: Path | None) -> Session:
    """--repository: the server running on it, else the repository opened here (channels not started)."""
    session = attach(repository)
    if session is not None:
        return session
    if not repository.exists():
        raise RelaydeckError(f"{repository}: repository does not exist")
    if slave is None:
        with Repository(repository) as repo:
            recorded = repo.slave_path()
        if recorded is None:
            raise RelaydeckError(f"{repository}: no slave is recorded for this repository yet; give --slave")
        slave = Path(recorded)
    return _in_process(slave, repository, None, f"in-process on {repository} (no server was running)")


def open_config(path: Path) -> Session:
    config = load_config(path)
    return attach(config.repository) or _in_process(
        config.slave, config.repository, config, f"in-process: {path}"
    )


def open_example(work: Path, out: TextIO = sys.stderr, feed_seconds: float | None = None) -> Session:
    """feed_seconds: how long the feeder takes to append the generated relay logs (default: the example's)."""
    from engine.api import FEED_SECONDS, TRICKLE_SECONDS, example_repository, prepare_example

    session = attach(example_repository(work))
    if session is not None:
        return session
    out.write(f"relaydeck console: preparing the bundled example in {work} (generated once, then kept) …\n")
    out.flush()
    # as a DBA opens it: a busy first minute and a half, then a trickle while the console is open;
    # a caller that gives the feed's length (the screenshots, the tests) gets it all in that time
    if feed_seconds is None:
        example = prepare_example(work, feed_seconds=FEED_SECONDS, trickle_seconds=TRICKLE_SECONDS)
    else:
        example = prepare_example(work, feed_seconds=feed_seconds)
    session = _in_process(
        example.config.slave,
        example.config.repository,
        example.config,
        f"in-process: bundled example in {work}",
    )
    example.feeder.start()
    session._closers.append(example.feeder.stop)  # stopped before the channels: nothing half-fed after
    return session


def _in_process(slave: Path, repository: Path, config: ServeConfig | None, description: str) -> Session:
    slave.parent.mkdir(parents=True, exist_ok=True)
    repository.parent.mkdir(parents=True, exist_ok=True)
    replica = ReplicaServer(slave, repository, follow=True)
    session = Session(replica, description, _closers=[replica.close])
    try:
        control = ControlSocket(replica)
        session._closers.append(control.close)
        if config is not None:
            session.notes += [str(w) for w in apply_config(replica, config)]
    except BaseException:
        session.close()
        raise
    return session
