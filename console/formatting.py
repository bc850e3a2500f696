"""Numbers, sizes, durations and times as an operator reads them in a narrow terminal."""

from __future__ import annotations

import time

NONE = "—"


def count(n: int) -> str:
    return f"{n:,}"


def rate(per_s: float) -> str:
    return f"{per_s:,.1f}" if per_s < 1000 else f"{per_s:,.0f}"


def seconds(value: float | None) -> str:
    """A lag: tenths under ten seconds, then minutes and hours (None: unknown)."""
    if value is None:
        return NONE
    if value < 10:
        return f"{value:.1f} s"
    whole = int(value)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def size(n_bytes: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes} B"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def utc_clock(epoch: float) -> str:
    """UTC, as the engine's apply timestamps are: one clock whatever the host's time zone."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(epoch))


def mysql_time(timestamp: str) -> str:
    """A timestamp in MySQL's form (UTC, microseconds) to the second, said to be UTC."""
    return f"{timestamp.split('.', 1)[0]} UTC"


def channel_label(name: str) -> str:
    """The default channel has the empty name; MySQL writes it ''."""
    return name if name else "''"


def or_none(text: str) -> str:
    return text if text else NONE
