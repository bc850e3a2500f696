"""What every benchmark's results file starts with: when, how it was run, and on what machine."""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time


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
