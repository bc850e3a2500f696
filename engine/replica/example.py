"""The bundled example the console runs when it is given no configuration file.

Two generated workloads (written once under WORK/generated/ and kept) plus the bundled MariaDB
capture's two channels. Every run starts from an empty slave and empty live folders; a feeder
then appends the generated relay logs into the live folders the way a receiver thread writes
them: half of them over the first FEED_SECONDS, at a pace that keeps workers busy and queues
filling, and the rest over TRICKLE_SECONDS after it, so that the channels still move (at a few
transactions a second) for a newcomer who looks at the console later rather than at once.
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..generate import generate
from ..relaylog.index import read_index
from .config import ServeConfig, bundled_example, parse_config

SLAVE = "example-slave.duckdb"
REPOSITORY = "example-repository.sqlite"
FEED_SECONDS = 90.0
TRICKLE_SECONDS = 1800.0
FIRST_SHARE = 0.5  # of the bytes, fed over FEED_SECONDS; the rest over TRICKLE_SECONDS
_SEED = 1
_COMPLETE = "complete"  # written last into a generated folder: its absence means "generate again"


@dataclass(frozen=True, slots=True)
class ExampleChannel:
    """A channel of the example fed from a generated workload."""

    name: str
    workload: str
    size_mb: float
    options: dict[str, Any]  # CHANGE REPLICATION SOURCE TO options, as in a configuration file
    namespace: str = ""  # suffix of the workload's database names, so channels never share one


# The capture's m1 already uses sbtest1..3, hence the oltp namespace.
EXAMPLE_CHANNELS = (
    ExampleChannel(
        "oltp",
        "oltp",
        16.0,
        {
            "replica_parallel_workers": 4,
            "replica_parallel_type": "LOGICAL_CLOCK",
            "source_host": "10.0.1.11",
            "source_port": 3306,
        },
        namespace="_oltp",
    ),
    ExampleChannel(
        "bank",
        "multidb",
        6.0,
        {
            "replica_parallel_workers": 2,
            "replica_parallel_type": "DATABASE",
            "source_host": "10.0.1.12",
            "source_port": 3306,
        },
    ),
)


@dataclass(frozen=True, slots=True)
class Example:
    config: ServeConfig
    feeder: RelayLogFeeder


def example_repository(work: str | Path) -> Path:
    """Where the example's repository is: a console checks it for a running server first."""
    return Path(work).resolve() / REPOSITORY


def prepare_example(
    work: str | Path, *, feed_seconds: float = FEED_SECONDS, trickle_seconds: float = 0.0
) -> Example:
    """Generate what is missing, empty the slave and the live folders, and return the example's
    configuration with its feeder (not started yet). No server may be running on the example's
    repository: its slave is deleted. trickle_seconds > 0: only FIRST_SHARE of the bytes in
    feed_seconds, the rest over trickle_seconds after them."""
    work = Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    sources = {c.name: generated_index(work / "generated", c) for c in EXAMPLE_CHANNELS}
    live = work / "live"
    _remove_previous_run(work, live)
    channels: dict[str, dict[str, Any]] = {}
    copies = []
    for channel in EXAMPLE_CHANNELS:
        target = live / channel.name
        copies.append((sources[channel.name], target))
        channels[channel.name] = {
            "relay_log_index": str(target / sources[channel.name].name),
            **channel.options,
        }
    generated = parse_config({"slave": SLAVE, "repository": REPOSITORY, "channels": channels}, work, None)
    captured = bundled_example(work)
    config = replace(generated, channels=[*generated.channels, *captured.channels])
    return Example(config, RelayLogFeeder(copies, feed_seconds, trickle_seconds=trickle_seconds))


def generated_index(folder: Path, channel: ExampleChannel) -> Path:
    """The index of the channel's generated workload, generating it the first time."""
    name = f"{channel.workload}{channel.namespace}-seed{_SEED}-{channel.size_mb:g}mb"
    done = folder / name
    if not (done / _COMPLETE).exists():
        # generated beside, then renamed: an interrupted run never leaves a half workload that looks whole
        partial = folder / f"{name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(done, ignore_errors=True)
        summary = generate(channel.workload, _SEED, partial, channel.size_mb, namespace=channel.namespace)
        (partial / _COMPLETE).write_text(summary.index_file.name + "\n")
        partial.rename(done)
    return done / (done / _COMPLETE).read_text().strip()


def _remove_previous_run(work: Path, live: Path) -> None:
    shutil.rmtree(live, ignore_errors=True)
    for name in (SLAVE, REPOSITORY):
        for suffix in ("", ".wal", "-wal", "-shm", "-journal"):
            (work / f"{name}{suffix}").unlink(missing_ok=True)


class RelayLogFeeder:
    """Appends finished relay logs into live folders at a steady pace, as a receiver thread would.

    Each copy gets its share of the bytes in proportion to its size, so all of them end together
    after `seconds` (with trickle_seconds, FIRST_SHARE of them then, and the rest over
    trickle_seconds more). Writes end anywhere, inside events too: the channels wait for the rest.
    A file enters the live index once its first bytes are written, as a server's relay log does.
    """

    def __init__(
        self,
        copies: list[tuple[Path, Path]],
        seconds: float,
        tick_s: float = 0.1,
        *,
        trickle_seconds: float = 0.0,
    ) -> None:
        self.seconds = max(seconds, tick_s)
        self.trickle_seconds = max(0.0, trickle_seconds)
        self.tick_s = tick_s
        self._copies = [_Copy(index, target) for index, target in copies]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="example-feeder", daemon=True)

    @property
    def total_bytes(self) -> int:
        return sum(c.total for c in self._copies)

    @property
    def fed_bytes(self) -> int:
        return sum(c.written for c in self._copies)

    @property
    def done(self) -> bool:
        return all(c.written >= c.total for c in self._copies)

    def start(self) -> None:
        for copy in self._copies:
            copy.target.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop appending (what was written stays); returns once the thread has ended."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def share_at(self, elapsed: float) -> float:
        """The share of the bytes fed `elapsed` seconds after the start."""
        if not self.trickle_seconds:
            return min(1.0, elapsed / self.seconds)
        if elapsed <= self.seconds:
            return FIRST_SHARE * elapsed / self.seconds
        return min(1.0, FIRST_SHARE + (1 - FIRST_SHARE) * (elapsed - self.seconds) / self.trickle_seconds)

    def _run(self) -> None:
        started = time.monotonic()
        try:
            while not self._stop.is_set() and not self.done:
                share = self.share_at(time.monotonic() - started)
                for copy in self._copies:
                    copy.write_up_to(int(copy.total * share))
                self._stop.wait(self.tick_s)
        finally:
            for copy in self._copies:
                copy.close()


class _Copy:
    """One relay-log set being appended to its live folder."""

    def __init__(self, source_index: Path, target: Path) -> None:
        self.files = list(read_index(source_index).files)
        self.sizes = [p.stat().st_size for p in self.files]
        self.total = sum(self.sizes)
        self.target = target
        self.index = target / source_index.name
        self.written = 0
        self._file = 0  # which source file is being copied
        self._offset = 0  # bytes of it already copied
        self._source = None  # open handles of the file being copied and of its copy
        self._out = None

    def write_up_to(self, goal: int) -> None:
        while self.written < goal and self._file < len(self.files):
            if self._source is None:
                self._source = open(self.files[self._file], "rb")  # noqa: SIM115 - kept across ticks
                self._out = open(self.target / self.files[self._file].name, "wb")  # noqa: SIM115
            chunk = self._source.read(min(goal - self.written, self.sizes[self._file] - self._offset))
            if not chunk:  # the source file is shorter than it was: nothing more to copy from it
                self._offset = self.sizes[self._file]
            self._out.write(chunk)
            self._out.flush()
            if self._offset == 0 and chunk:
                with open(self.index, "a") as index:
                    index.write(f"./{self.files[self._file].name}\n")
            self._offset += len(chunk)
            self.written += len(chunk)
            if self._offset >= self.sizes[self._file]:
                self.close()
                self._file += 1
                self._offset = 0

    def close(self) -> None:
        for handle in (self._source, self._out):
            if handle is not None:
                handle.close()
        self._source = self._out = None
