"""How late is too late: the lag thresholds a DBA sets, and the level a lag falls into."""

from __future__ import annotations

from dataclasses import dataclass

OK = "ok"
WARN = "warn"
CRIT = "crit"
UNKNOWN = "unknown"  # no lag to judge: the channel has not applied anything it read yet


@dataclass(frozen=True, slots=True)
class LagThresholds:
    """Seconds behind the source at which lag turns yellow (warn_s) and red (crit_s)."""

    warn_s: float = 5.0
    crit_s: float = 30.0

    def __post_init__(self) -> None:
        if not 0 <= self.warn_s <= self.crit_s:
            raise ValueError(f"lag thresholds need 0 <= warn ({self.warn_s}) <= crit ({self.crit_s})")

    def level(self, lag_s: float | None) -> str:
        if lag_s is None:
            return UNKNOWN
        if lag_s >= self.crit_s:
            return CRIT
        if lag_s >= self.warn_s:
            return WARN
        return OK
