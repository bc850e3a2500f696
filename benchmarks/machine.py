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
