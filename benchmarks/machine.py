"""What every benchmark's results file starts with (when, how it was run, and on what machine),
and where it is written."""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path


def write_bytecode(checkout: Path) -> None:
    """A checkout's Python compiled to bytecode once, so that each process a benchmark starts
    loads it, as a user's `relaydeck` does from its second run on, rather than compiling the
    sources again (about 0.1 s a start; where PYTHONDONTWRITEBYTECODE is set, Python never
    writes the bytecode itself)."""
    import compileall

    for package in ("engine", "console"):
        if (checkout / package).is_dir():
            compileall.compile_dir(checkout / package, quiet=1)


# every benchmark imports this module: this checkout's bytecode is there before anything is timed
write_bytecode(Path(__file__).resolve().parent.parent)


def measurement_header() -> dict[str, object]:
    return {
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command_line": shlex.join([sys.executable, *sys.argv]),
        "machine": {
            "cpu_count": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
    }


def write_results(name: str, results: dict[str, object]) -> Path:
    """benchmarks/results/NAME.json, written."""
    folder = Path(__file__).resolve().parent / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    return path
