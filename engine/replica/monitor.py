"""What an operator watches, as plain typed values: the console's whole view of the engine.

The console never reads engine internals: it asks a ReplicaHandle (a ReplicaServer in this
process, or a RemoteReplica behind a running `relaydeck serve`) for a Snapshot, the recovery
picture of a channel, the events of a relay log, and sends statements. Snapshots are read from
the repository, so they look the same whichever process runs the channels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..applier.recovery import RecoveryPicture
from ..binlog.columns import decode_rows_event
from ..binlog.events import RowsEvent, TableMap
from ..binlog.reader import BinlogFile, ReaderState
from ..errors import RelaydeckError
from ..relaylog.index import read_index
from ..render import json_value
from ..repository import Repository
from .server import Result

# ChannelStatus' states as an operator names them
_STATES = {
    "ON": "running",
    "OFF": "stopped",
    "ERROR": "error",
    "RECOVERING": "recovering",
    "WAITING FOR RELAY LOG": "waiting",
}
# the multi-threaded applier's worker states, grouped
_WORKER_STATES = {
    "waiting for dependent transaction to commit": "waiting for a dependency",
    "waiting for preceding transaction to commit": "waiting for commit order",
    "waiting for an event from the coordinator": "idle",
}


@dataclass(frozen=True, slots=True)
class ChannelView:
    name: str
    state: str  # running / stopped / error / recovering / waiting
    source: str  # host:port as CHANGE REPLICATION SOURCE TO recorded it
    relay_read: str  # file:pos the reader has reached
    relay_applied: str  # file:pos of the last committed transaction (the LWM with workers)
    executed_gtids: str
    transactions: int
    trx_per_s: float
    lag_s: float | None  # source time between the newest transaction read and the newest applied
    workers_busy: int
    workers_total: int  # 0: the single applier
    queue_fill: float  # 0..1 of replica_pending_jobs_size_max
    last_error: str  # "" or "Error N: message"


@dataclass(frozen=True, slots=True)
class WorkerView:
    channel: str
    worker: int
    state: str  # idle / applying / waiting for a dependency / waiting for commit order / error / stopped
    applying: str
    queued: int
    queued_bytes: int
    transactions: int
    trx_per_s: float
    last_applied: str
    last_applied_at: str  # UTC, MySQL's form; "" before the first
    checkpoint_seqno: int
    error: str


@dataclass(frozen=True, slots=True)
class PoolSlotView:
    """One slot of a channel's preparing pool: a process, a Spark task slot, the in-process one."""

    slot: str  # "process 1", "spark task 2", "local (Spark starting)", "in-process", "queue"
    state: str  # idle / preparing / queued / stopped
    segment: str  # where the segment it works on starts, file:pos ("" when none); the queue: how many


@dataclass(frozen=True, slots=True)
class PoolView:
    """The preparing pool of a multi-threaded channel's last start: where its relay log is read,
    decoded and turned into the workers' row changes."""

    channel: str
    kind: str  # threads (in-process) / processes / spark
    workers: int  # segments it prepares side by side
    segments_done: int
    prepared_runs: int  # runs the workers applied as prepared
    runs_read_again: int  # prepared runs or transactions that went the ordinary way instead
    slots: tuple[PoolSlotView, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    taken_at: float  # epoch seconds
    channels: tuple[ChannelView, ...]
    workers: dict[str, tuple[WorkerView, ...]] = field(default_factory=dict)
    pools: dict[str, PoolView] = field(default_factory=dict)  # channels without one are absent


@dataclass(frozen=True, slots=True)
class EventRows:
    """The decoded row images of one rows event (before/after per row), for the relay-log browser."""

    table: str
    kind: str
    rows: tuple[tuple[dict[str, Any] | None, dict[str, Any] | None], ...]
    note: str = ""


class ReplicaHandle(Protocol):
    def execute(self, statement: str) -> Result: ...

    def snapshot(self) -> Snapshot: ...

    def recovery(self, channel: str) -> RecoveryPicture: ...

    def kill(self, channel: str | None = None) -> None: ...

    def relay_log_index(self, channel: str) -> str: ...


def read_snapshot(repository: Repository, now: float | None = None) -> Snapshot:
    channels = []
    workers: dict[str, tuple[WorkerView, ...]] = {}
    pools: dict[str, PoolView] = {}
    for status in repository.status():
        stats = {r["worker"]: r for r in repository.worker_stats(status.channel_name)}
        rows = repository.channel_stats(status.channel_name)
        state = _STATES.get(rows.get("state") or status.service_state, "stopped")
        if status.last_error_number and state != "running":
            state = "error"
        if status.service_state != "ON" and state in ("running", "recovering", "waiting"):
            state = "stopped"
        source = f"{status.source_host}:{status.source_port}" if status.source_host else ""
        error = (
            f"Error {status.last_error_number}: {status.last_error_message}"
            if status.last_error_number
            else ""
        )
        channels.append(
            ChannelView(
                name=status.channel_name,
                state=state,
                source=source,
                relay_read=_position(status.relay_log_file_read, status.relay_log_pos_read),
                relay_applied=_position(status.relay_log_file, status.relay_log_pos),
                executed_gtids=status.executed_gtid_set,
                transactions=status.transactions_applied,
                trx_per_s=status.trx_per_s if state == "running" else 0.0,
                lag_s=status.seconds_behind_source,
                workers_busy=rows.get("workers_busy") or 0,
                workers_total=rows.get("workers_total") or 0,
                queue_fill=rows.get("queue_fill") or 0.0,
                last_error=error,
            )
        )
        workers[status.channel_name] = tuple(
            WorkerView(
                channel=status.channel_name,
                worker=w["worker"],
                state=_worker_state(w, state),
                applying=w["applying"],
                queued=w["queued"],
                queued_bytes=w["queued_bytes"],
                transactions=w["transactions"],
                trx_per_s=w["trx_per_s"] if state == "running" else 0.0,
                last_applied=w["last_applied"],
                last_applied_at=w["last_applied_at"] or "",
                checkpoint_seqno=w["checkpoint_seqno"],
                error=w["error"],
            )
            for w in stats.values()
        )
        if rows.get("pool_kind"):
            pools[status.channel_name] = _pool(status.channel_name, rows, repository, state)
    return Snapshot(time.time() if now is None else now, tuple(channels), workers, pools)


def _pool(channel: str, stats: dict[str, Any], repository: Repository, channel_state: str) -> PoolView:
    running = channel_state in ("running", "recovering", "waiting")
    slots = tuple(
        PoolSlotView(s["slot"], s["state"] if running else "stopped", s["segment"] if running else "")
        for s in repository.pool_stats(channel)
        if running or s["state"] != "queued"  # a stopped pool holds nothing in its queue
    )
    return PoolView(
        channel=channel,
        kind=stats["pool_kind"],
        workers=stats.get("pool_workers") or 0,
        segments_done=stats.get("pool_segments_done") or 0,
        prepared_runs=stats.get("prepared_runs") or 0,
        runs_read_again=stats.get("runs_read_again") or 0,
        slots=slots,
    )


def _worker_state(row: dict[str, Any], channel_state: str) -> str:
    if row["error"]:
        return "error"
    if channel_state != "running":
        return "stopped"
    if row["applying"]:
        return "applying"
    return _WORKER_STATES.get(row["state"], "idle" if row["state"] in ("idle", "") else row["state"])


def _position(file: str, pos: int) -> str:
    return f"{file}:{pos}" if file else ""


def event_rows(index_file: str | Path, log_name: str, pos: int) -> EventRows | None:
    """The rows of the rows event at log_name:pos (None when the event there is not a rows event).

    Reads the relay-log file itself (read-only): the table map it needs comes before it in the
    same transaction.
    """
    files = read_index(index_file).files
    path = next((p for p in files if p.name == Path(log_name).name), None)
    if path is None:
        raise RelaydeckError(f"{log_name} is not in {index_file}")
    table_maps: dict[int, TableMap] = {}
    with BinlogFile(path) as binlog:
        for logged in binlog.events(ReaderState(), partial_tail_ok=True):
            event = logged.event
            if isinstance(event, TableMap):
                table_maps[event.table_id] = event
            if logged.pos < pos:
                continue
            if logged.pos > pos or not isinstance(event, RowsEvent):
                return None
            table_map = table_maps.get(event.table_id)
            if table_map is None:
                return EventRows("", logged.event_type, (), "no table map before this event in its file")
            images = decode_rows_event(event, table_map)
            rows = tuple(
                (
                    None if before is None else {k: json_value(v) for k, v in before.items()},
                    None if after is None else {k: json_value(v) for k, v in after.items()},
                )
                for before, after in images.rows()
            )
            return EventRows(f"{table_map.schema}.{table_map.table}", logged.event_type, rows)
    return None
