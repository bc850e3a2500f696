"""The cycle collector's thresholds for a process that decodes and applies relay logs.

Decoding allocates millions of small objects (events, headers, values) and an applier keeps a
batch of them alive until it commits. With CPython's default thresholds (700, 10, 10) the collector
runs after every 700 allocations and keeps walking the live batch again: measured 30-40% of the
time spent reading the MariaDB capture. These objects hold no reference cycles worth hunting
often, so collections are made rarer, not disabled: cycles are still found.

The first threshold counts tracked objects allocated and not yet freed. Above what a full batch
holds (a 20,000-transaction batch of the capture stays below a million), the young generation is
collected only when garbage really accumulates, instead of walking each batch on its way to the
commit: at 50,000 the collector still took 0.8-1.0 s of a 9-10 s replay of the capture, at
1,000,000 it never ran. Memory is unchanged: acyclic garbage is freed by reference counting.
"""

from __future__ import annotations

import gc

THRESHOLDS = (1_000_000, 20, 100)


def relax_garbage_collector() -> None:
    """Raise the collector's thresholds to THRESHOLDS (never lowers thresholds set higher)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(c, t) for c, t in zip(current, THRESHOLDS, strict=True)))
