"""What the Spark tests share: one SparkSession for the whole run (a JVM start costs 6-30 s on a
busy machine), generated relay logs, and the thread coordinator's own WRITESET dependencies.

Test modules take the fixtures with `from .spark_fixture import spark  # noqa: F401`.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from engine.applier.parallel import ParallelApplier
from engine.applier.parallel_jobs import Job
from engine.applier.reading import read_chunks as _read_chunks
from engine.applier.vocabulary import ParallelOptions
from engine.generate import generate
from engine.relaylog.index import read_index
from engine.slave.database import Slave
from engine.spark.session import spark_session, stop_spark

from .conftest import MULTISOURCE

FIXTURE_INDEX = {
    "m1": MULTISOURCE / "relay" / "relay-bin-m1.index",
    "m2": MULTISOURCE / "relay" / "relay-bin-m2.index",
}
_GENERATED = Path(tempfile.mkdtemp(prefix="relaydeck-spark-tests-"))
atexit.register(shutil.rmtree, _GENERATED, True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    # spark_session() is one per process, so modules that each import this fixture share it too.
    yield spark_session(cores=2)
    stop_spark()


@cache
def generated_index(workload: str, size_mb: float = 1.0) -> Path:
    """A generated workload's relay-log index (seed 1), written once per test run."""
    folder = _GENERATED / f"{workload}-{size_mb:g}"
    return generate(workload, 1, folder, size_mb=size_mb).index_file


class _RecordingApplier(ParallelApplier):
    """The real multi-threaded applier, noting the dependency its coordinator gives each job. Its
    coordinator reads the relay log itself and hashes every writeset with the keys of the moment
    (the reference analyze is compared with; the preparing stage hashes ahead of the DDL it has
    not yet seen applied, and what it hashed with stale keys only depends on its predecessor).
    What follows a DDL is scheduled once the DDL has committed, as the seeds schedule it: not
    chained after it on its worker, which only serializes it further (parallel_schedule.py)."""

    chain_after_definitions = 0

    def _reader(self, continuity):  # type: ignore[no-untyped-def]
        return _read_chunks(self.logs, None, 4, continuity=continuity)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.after_of: dict[int, int] = {}
        enqueue = self._gaq.enqueue

        def recording(worker: int, job: Job) -> int:  # every job passes the GAQ, one by one or in pieces
            self.after_of[job.ordinal] = job.after
            return enqueue(worker, job)

        self._gaq.enqueue = recording  # type: ignore[method-assign]


@cache
def coordinator_dependencies(index: Path, history_size: int) -> tuple[int, ...]:
    """Job.after of every transaction when the WRITESET applier replays `index` into a new slave."""
    folder = Path(tempfile.mkdtemp(dir=_GENERATED))
    slave = Slave(folder / "slave.duckdb")
    try:
        options = ParallelOptions(workers=2, parallel_type="writeset", history_size=history_size)
        applier = _RecordingApplier(slave, "", read_index(index), options)
        applier.run()
    finally:
        slave.close()
    return tuple(applier.after_of[o] for o in range(1, len(applier.after_of) + 1))
