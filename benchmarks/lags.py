"""The lag figures the live benchmarks report: the distribution of per-transaction lags in commit
order, and how the lag moved from the first fifth of the run to the last (a replica that keeps up
ends about where it began)."""

from __future__ import annotations

import statistics


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def lag_distribution(lags_ms: list[float]) -> dict[str, float]:
    """p50 / p99 / max, and the medians of the first and the last fifth (lags in source order)."""
    fifth = max(1, len(lags_ms) // 5)
    return {
        "lag_ms_p50": round(statistics.median(lags_ms), 1),
        "lag_ms_p99": round(percentile(lags_ms, 0.99), 1),
        "lag_ms_max": round(max(lags_ms), 1),
        "lag_ms_first_20pct_median": round(statistics.median(lags_ms[:fifth]), 1),
        "lag_ms_last_20pct_median": round(statistics.median(lags_ms[-fifth:]), 1),
    }
