"""Deterministic workload generator: MySQL 8.0 relay logs plus the table contents they must produce.

generate() runs one workload against a simulated source, writes DIR/relay-bin.NNNNNN and
DIR/relay-bin.index the way a replica's receiver thread would, and writes the oracle's expected
tables under DIR/expected/. Same arguments, same bytes: every timestamp, UUID and value comes
from the seed.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from engine.binlog.writer import SERVER_VERSION
from engine.generate.oracle import Oracle
from engine.generate.relay_writer import ChannelSettings, RelayLogWriter
from engine.generate.workloads import TIME_ZONE, WORKLOAD_CLASSES, SourceServer
from engine.scheduling.writeset import DEFAULT_HISTORY_SIZE

WORKLOADS: tuple[str, ...] = tuple(WORKLOAD_CLASSES)

SOURCE_SERVER_ID = 1
REPLICA_SERVER_ID = 2
MIN_RELAY_LOG_SIZE = 1 << 20
MIN_BINLOG_SIZE = 64 << 10


@dataclass(frozen=True)
class GenerateSummary:
    """What generate() wrote."""

    workload: str
    seed: int
    index_file: Path
    relay_files: list[Path]
    transactions: int
    events: int
    bytes: int
    tables: dict[str, int]  # "db.table" -> expected row count


@dataclass(frozen=True)
class RotationSizes:
    """Where the simulated source rotates its binlog and the replica its relay log."""

    max_binlog_size: int
    max_relay_log_size: int

    @classmethod
    def for_target(cls, target_bytes: int) -> RotationSizes:
        # A few source binlogs even for small runs, so per-file sequence numbers get exercised.
        return cls(max(MIN_BINLOG_SIZE, target_bytes // 4), max(MIN_RELAY_LOG_SIZE, target_bytes // 20))


def generate(
    workload: str, seed: int, out: Path, size_mb: float | None = None, namespace: str = ""
) -> GenerateSummary:
    """Write relay logs and expected tables for one workload into out; see the module docstring.

    namespace, if given, is appended to every database name (oltp only), so that logs generated
    with different namespaces can be replayed into one slave as separate channels.
    """
    cls = WORKLOAD_CLASSES.get(workload)
    if cls is None:
        raise ValueError(f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)}")
    size = cls.default_size_mb if size_mb is None else size_mb
    if size <= 0:
        raise ValueError("size must be positive")
    target = int(size * (1 << 20))
    return generate_with(
        workload, seed, Path(out), target, RotationSizes.for_target(target), size_mb=size, namespace=namespace
    )


def generate_with(
    workload: str,
    seed: int,
    out: Path,
    target_bytes: int,
    rotation: RotationSizes,
    *,
    size_mb: float | None = None,
    namespace: str = "",
) -> GenerateSummary:
    """generate() with explicit byte target and rotation sizes (tests use small ones)."""
    cls = WORKLOAD_CLASSES[workload]
    if namespace and not cls.takes_namespace:
        supported = ", ".join(name for name, c in WORKLOAD_CLASSES.items() if c.takes_namespace)
        raise ValueError(
            f"workload {workload!r} does not take a namespace (database name suffix); only {supported} does"
        )
    rng = random.Random(f"relaydeck:{workload}:{seed}")
    source_uuid = uuid.UUID(int=rng.getrandbits(128), version=4)
    start_time = 1_600_000_000 + rng.randrange(200_000_000)
    settings = ChannelSettings(
        directory=out,
        source_uuid=source_uuid.bytes,
        start_time=start_time,
        max_binlog_size=rotation.max_binlog_size,
        max_relay_log_size=rotation.max_relay_log_size,
        source_server_id=SOURCE_SERVER_ID,
        replica_server_id=REPLICA_SERVER_ID,
    )
    relay = RelayLogWriter(settings)
    oracle = Oracle()
    source = SourceServer(relay, oracle, rng, start_time * 1_000_000 + rng.randrange(1_000_000))
    if namespace:
        instance = cls(rng, target_bytes, namespace=namespace)  # type: ignore[call-arg]  # takes_namespace
    else:
        instance = cls(rng, target_bytes)  # as before a namespace existed: same seed, same bytes
    instance.setup(source)
    while relay.bytes_written < target_bytes:
        instance.step(source)
    result = relay.close()
    rows = source.row_counts
    parameters = {
        "workload": workload,
        "seed": seed,
        "size_mb": size_mb,
        "target_bytes": target_bytes,
        "server_version": SERVER_VERSION,
        "source_server_id": SOURCE_SERVER_ID,
        "replica_server_id": REPLICA_SERVER_ID,
        "source_uuid": str(source_uuid),
        "start_time": start_time,
        "time_zone": TIME_ZONE,
        "max_binlog_size": rotation.max_binlog_size,
        "max_relay_log_size": rotation.max_relay_log_size,
        "binlog_transaction_dependency_history_size": DEFAULT_HISTORY_SIZE,
        "binlog_files": result.binlog_files,
        "relay_files": [p.name for p in result.relay_files],
        "transactions": result.transactions,
        "events": result.events,
        "bytes": result.bytes,
        "row_images": {"insert": rows.insert, "update": rows.update, "delete": rows.delete},
        "row_images_by_table": source.row_counts_by_table(),
    }
    if namespace:  # only when given, so manifests of plain runs stay as they were
        parameters["namespace"] = namespace
    tables = oracle.write_expected(out / "expected", parameters)
    return GenerateSummary(
        workload=workload,
        seed=seed,
        index_file=result.index_file,
        relay_files=result.relay_files,
        transactions=result.transactions,
        events=result.events,
        bytes=result.bytes,
        tables=tables,
    )


__all__ = ["WORKLOADS", "GenerateSummary", "RotationSizes", "generate", "generate_with"]
