"""The engine keeps OpenBLAS from starting threads that spin at numpy's import (engine/__init__.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# OpenBLAS starts its server threads only where it may use more than one core
NEEDS_TWO_CORES = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no server thread")
REPORT = (
    "import os, engine, numpy; print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])"
)


def _threads_and_setting(env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", REPORT], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    threads, setting = done.stdout.split()
    return int(threads), setting


def _environment_without_the_setting() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}


@NEEDS_TWO_CORES
def test_numpy_imported_after_the_engine_runs_on_the_importing_thread_alone() -> None:
    assert _threads_and_setting(_environment_without_the_setting()) == (1, "1")


@NEEDS_TWO_CORES
def test_a_thread_count_the_user_chose_is_kept() -> None:
    env = {**_environment_without_the_setting(), "OPENBLAS_NUM_THREADS": "2"}
    threads, setting = _threads_and_setting(env)
    assert setting == "2" and threads == 2  # the importing thread and one server thread
