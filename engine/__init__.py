"""relaydeck's engine: relay logs read, scheduled and applied into DuckDB (see README's layout)."""

import os

# numpy serves the engine element-wise only, never through BLAS. OpenBLAS starts a server thread
# per core at numpy's import, which spins for about 0.1 s of CPU before it sleeps: a core taken
# from the applier and its preparing processes at every start (and in each of Spark's Python
# workers, which inherit the setting). Set before anything imports numpy; a value the user set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
