"""Arrow's allocator in a process that applies relay logs: jemalloc, where pyarrow was built with it.

pyarrow allocates with mimalloc by default. A batch's operations are built, reduced and handed to
DuckDB, then freed, and the next batch allocates as much again: mimalloc gives freed pages back to
the system shortly after (its purge delay) and faults them in anew. Profiled on the MariaDB capture
(perf, logical_clock, 4 workers), page faults under mimalloc's free-list extension were a tenth of
a second of the applier process's kernel time. With jemalloc, interleaved runs of the capture
(8-10 each, to the last commit) took 0.96-0.99 of the time under logical_clock, 0.94-0.97 under
writeset, 0.98-1.02 under database; the system allocator 0.98 (logical_clock). The processes that
prepare segments choose their own (see pool/executors.py). ARROW_DEFAULT_MEMORY_POOL, when set,
is the user's choice and stays.
"""

from __future__ import annotations

import os

ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def use_applier_allocator() -> None:
    """Make jemalloc Arrow's default pool in this process, unless chosen otherwise or not built."""
    if os.environ.get(ARROW_POOL_VARIABLE):
        return
    import pyarrow as pa

    if "jemalloc" in pa.supported_memory_backends():  # else a build without it: mimalloc stays
        pa.set_memory_pool(pa.jemalloc_memory_pool())
