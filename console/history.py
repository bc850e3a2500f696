"""The rolling history behind the plots: each channel's throughput and lag, snapshot by snapshot."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from engine.api import Snapshot

HISTORY_SECONDS = 600.0  # what the console remembers; a plot shows the newest part that fits


@dataclass(frozen=True, slots=True)
class Sample:
    taken_at: float
    trx_per_s: float
    lag_s: float | None


class RollingHistory:
    def __init__(self, seconds: float = HISTORY_SECONDS) -> None:
        self.seconds = seconds
        self._samples: dict[str, deque[Sample]] = {}

    def add(self, snapshot: Snapshot) -> None:
        for channel in snapshot.channels:
            samples = self._samples.setdefault(channel.name, deque())
            if samples and samples[-1].taken_at >= snapshot.taken_at:
                continue  # the same snapshot twice (a refresh raced a statement's) adds nothing
            samples.append(Sample(snapshot.taken_at, channel.trx_per_s, channel.lag_s))
            while samples[0].taken_at < snapshot.taken_at - self.seconds:
                samples.popleft()

    def samples(self, channel: str) -> list[Sample]:
        return list(self._samples.get(channel, ()))
