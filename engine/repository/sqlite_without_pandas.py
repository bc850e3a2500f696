"""sqlite_utils, imported without pandas.

sqlite_utils imports pandas when it is installed (as it is here, for Spark's Arrow functions),
only to map pandas.Timestamp values in inserts, which the repository never makes. That import
cost 0.13-0.18 s at the start of every command that opens a repository. So sqlite_utils is
imported first here, with pandas hidden for that moment; pandas stays importable by whoever
needs it afterwards. Nothing changes when either is already loaded. Module imports run at start
on the main thread, before any applier thread might import pandas itself.
"""

from __future__ import annotations

import sys

if "sqlite_utils" not in sys.modules and "pandas" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError
    try:
        import sqlite_utils  # noqa: F401
    finally:
        del sys.modules["pandas"]
