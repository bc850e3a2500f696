"""The generated relay logs benchmarks measure on: made once under benchmarks/work/, then reused."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

from commands import relaydeck_command

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "work"


def add_relay_log_options(parser: argparse.ArgumentParser, workload: str) -> None:
    """--size, --workload (default `workload`) and --seed of the generated log."""
    parser.add_argument("--size", type=float, default=100.0, help="relay-log size in MB (default 100)")
    parser.add_argument("--workload", default=workload)
    parser.add_argument("--seed", type=int, default=1)


def ensure_relay_log(workload: str, size: float, seed: int) -> Path:
    """The index file of `relaydeck generate`'s log for these settings, generated if not there yet."""
    out = WORK / f"{workload}-{seed}-{size:g}MB"
    index = out / "relay-bin.index"
    if not index.exists():
        if out.exists():
            shutil.rmtree(out)
        command = relaydeck_command(
            "generate", "--workload", workload, "--seed", str(seed), "--out", str(out), "--size", str(size)
        )
        subprocess.run(command, check=True, cwd=ROOT)
    return index
