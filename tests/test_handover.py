"""A forked process hands a large result over through a file in /dev/shm (engine/pool/handover.py):
the caller gets the same result, the file's name is gone once taken, and no file outlives its
caller. Small results, and results shared memory cannot take, go through the pipe as they are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from engine.applier.vocabulary import ParallelOptions
from engine.generate import generate
from engine.pool import ProcessExecutor, handover
from engine.pool.handover import PREFIX, SHARED_MEMORY, Handover, close_owner, hand_over, new_owner
from engine.relaylog.segments import Segment
from engine.replay import ChannelSpec, Replay

pytestmark = pytest.mark.skipif(not SHARED_MEMORY.is_dir(), reason="no /dev/shm on this machine")


def handover_files(owner: str = "") -> list[str]:
    return sorted(n for n in os.listdir(SHARED_MEMORY) if n.startswith(PREFIX + owner))


def big_table(rows: int = 200_000) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(rows), pa.int64()), "c": pa.array([f"row {i:07d}" for i in range(rows)])}
    )


def test_a_large_result_comes_back_equal_through_a_file_whose_name_is_gone_once_taken() -> None:
    owner = new_owner()
    result = {"table": big_table(), "note": "beside it"}
    handed = hand_over(result, owner)
    assert isinstance(handed, Handover)
    assert handover_files(owner) == [Path(handed.path).name]
    assert handed.size >= result["table"].nbytes
    got = handed.take()
    assert handover_files(owner) == []
    assert got["note"] == "beside it"
    assert got["table"].equals(result["table"])
    # the arrays use the mapped file, which outlives its name
    assert got["table"].column("c").to_pylist()[-1] == "row 0199999"


def test_a_small_result_and_one_shared_memory_cannot_take_go_through_the_pipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    small = {"rows": [1, 2, 3]}
    assert hand_over(small, new_owner()) is small
    large = big_table()
    monkeypatch.setattr(handover, "SHARED_MEMORY", tmp_path / "missing")
    assert hand_over(large, new_owner()) is large


def test_a_result_nobody_takes_is_discarded() -> None:
    owner = new_owner()
    handed = hand_over(big_table(), owner)
    assert isinstance(handed, Handover)
    handed.discard()
    assert handover_files(owner) == []
    handed.discard()  # twice: nothing left to do


class _BigResult:
    """A task whose result is large: the process hands it over through shared memory."""

    def run(self, segment: Segment) -> pa.Table:
        return pa.table({"n": pa.array(range(segment.number * 100_000, (segment.number + 1) * 100_000))})


def segment(number: int) -> Segment:
    return Segment(files=(), start_pos=4, state=None, stop=None, number=number)  # type: ignore[arg-type]


def test_the_process_pool_hands_results_over_and_leaves_no_file() -> None:
    executor = ProcessExecutor(2)
    try:
        futures = [executor.submit(_BigResult(), segment(n)) for n in range(4)]
        tables = [f.result(timeout=60) for f in futures]
        owner = executor._owner
    finally:
        executor.close()
    for n, table in enumerate(tables):
        assert table.column("n").to_pylist()[:2] == [n * 100_000, n * 100_000 + 1]
        assert table.num_rows == 100_000
    assert handover_files(owner) == []


def test_files_of_a_caller_that_ended_are_removed_when_an_executor_starts() -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(ended.stdout)
    orphan = SHARED_MEMORY / f"{PREFIX}{dead_pid}-0-1-0"
    orphan.write_bytes(b"left by a killed caller")
    mine = SHARED_MEMORY / f"{PREFIX}{os.getpid()}-999999-1-0"  # a live caller's: kept
    mine.write_bytes(b"still wanted")
    try:
        executor = ProcessExecutor(1)
        try:
            executor.submit(_BigResult(), segment(0)).result(timeout=60)
            assert not orphan.exists()
            assert mine.exists()
        finally:
            executor.close()
        close_owner(f"{os.getpid()}-999999")
        assert not mine.exists()
    finally:
        orphan.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)


@pytest.mark.parametrize("parallel", [None, ParallelOptions(workers=2, pool="threads")])
def test_files_of_a_caller_that_ended_are_removed_when_any_replay_starts(parallel, tmp_path) -> None:
    """The single applier and the thread pool hand nothing over, but a replay killed before them
    (with a pool of processes or Spark) may have left files: they go at the next start."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    orphan = SHARED_MEMORY / f"{PREFIX}{int(ended.stdout)}-0-1-0"
    orphan.write_bytes(b"left by a killed replay")
    mine = SHARED_MEMORY / f"{PREFIX}{os.getpid()}-999998-1-0"  # a live caller's: kept
    mine.write_bytes(b"still wanted")
    try:
        summary = generate("oltp", 0.2, tmp_path / "relay")
        outcomes = Replay(
            tmp_path / "slave.duckdb", None, [ChannelSpec("", summary.index_file)], parallel=parallel
        ).run()
        assert outcomes[0].error is None
        assert not orphan.exists()
        assert mine.exists()
    finally:
        orphan.unlink(missing_ok=True)
        mine.unlink(missing_ok=True)
