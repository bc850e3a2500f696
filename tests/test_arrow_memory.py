"""The applier's process allocates Arrow's batches with jemalloc, unless the user chose a pool."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from .conftest import MULTISOURCE, ROOT

# a replay of the bundled capture's small channel, then the default pool's backend
_REPLAY_AND_SAY_THE_POOL = f"""
import sys, tempfile
from pathlib import Path
import pyarrow as pa
from engine.replay import ChannelSpec, Replay
work = Path(tempfile.mkdtemp())
before = pa.default_memory_pool().backend_name
channel = ChannelSpec("m2", Path({str(MULTISOURCE / "relay" / "relay-bin-m2.index")!r}))
outcomes = Replay(work / "slave.duckdb", None, [channel]).run()
assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
print(before, pa.default_memory_pool().backend_name)
"""


def _pools(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"} | env
    result = subprocess.run(
        [sys.executable, "-c", _REPLAY_AND_SAY_THE_POOL],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


@pytest.mark.skipif(
    "jemalloc" not in pa.supported_memory_backends(), reason="a pyarrow built without jemalloc"
)
def test_a_replay_moves_arrow_to_jemalloc():
    assert _pools() == ["mimalloc", "jemalloc"]


def test_a_pool_the_user_chose_stays():
    assert _pools(ARROW_DEFAULT_MEMORY_POOL="system") == ["system", "system"]
