"""pandas kept out of the processes that read and apply relay logs.

pandas is installed for Spark's Arrow functions, and two libraries the engine uses load it
without needing it here, each a sixth to a quarter of a second of CPU:

- sqlite_utils imports it to map pandas.Timestamp values in inserts, which the repository never
  makes: it is imported once with pandas hidden (``import_sqlite_utils``);
- pyarrow imports it at its first conversion of a Python list or numpy array, only to ask
  whether the value is a pandas object. It asks once per process and keeps the answer.
  ``settle_arrow_without_pandas`` lets it ask while pandas is hidden: the applier's process pays
  nothing, and the processes it forks inherit the answer instead of importing pandas each.

Hidden means an import finder that refuses pandas for that moment. A `None` in sys.modules
is not enough: pyarrow's compiled import takes it for the module. pandas stays importable
afterwards. pyarrow's own pandas functions (to_pandas, Table.from_pandas) import it when
called. The cost of a settled answer: ``pa.array`` no longer recognises a pandas object passed
to it, and reads it as a sequence. The engine never passes one; Spark's pandas functions run in
Spark's own Python processes, which are not settled.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType


class _RefusePandas:
    """A meta path finder under which `import pandas` raises ModuleNotFoundError."""

    @staticmethod
    def find_spec(
        name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None


@contextmanager
def pandas_hidden() -> Iterator[None]:
    """`import pandas` fails inside (when pandas is not loaded yet; otherwise nothing changes)."""
    if "pandas" in sys.modules:
        yield
        return
    finder = _RefusePandas()
    sys.meta_path.insert(0, finder)  # type: ignore[arg-type]
    try:
        yield
    finally:
        sys.meta_path.remove(finder)  # type: ignore[arg-type]


def import_sqlite_utils() -> None:
    """Import sqlite_utils without the pandas it would load. Call it on the main thread, at
    import time, before any other thread might import pandas itself."""
    if "sqlite_utils" in sys.modules:
        return
    with pandas_hidden():
        import sqlite_utils  # noqa: F401


def settle_arrow_without_pandas() -> None:
    """Have pyarrow settle, without loading pandas, that no pandas objects reach it here.

    Call it before pyarrow's first conversion in the process, and before forking processes that
    convert: they inherit the answer. Nothing changes where pandas is loaded already, where
    pyarrow has asked before, or where pyarrow is not loaded (a process that never converts
    needs no answer)."""
    if "pyarrow" not in sys.modules or "pandas" in sys.modules:
        return
    import pyarrow as pa

    with pandas_hidden():
        pa.array([])  # the conversion asks whether this is a pandas object, once per process
