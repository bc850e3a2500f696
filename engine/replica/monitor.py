"""What an operator watches, as plain typed values: the console's whole view of the engine.

The console never reads engine internals: it asks a ReplicaHandle (a ReplicaServer in this
process, or a RemoteReplica behind a running `relaydeck serve`) for a Snapshot, the recovery
picture of a channel, the events of a relay log, and sends statements. Snapshots are read from
the repository, so they look the same whichever process runs the channels.

A channel is its two threads, as in SHOW REPLICA STATUS: the SQL thread (the applier: ChannelView's
own fields) and, for a channel that connects to its source, the IO thread (the receiver:
ChannelView.receiver). A channel whose relay logs are captured, or written by another replica,
has no receiver: `receiver` is None, which is not an error.
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
from ..repository import ZERO_TIMESTAMP, ChannelStatus, Repository
from .server import Result, receives_from_source

# ChannelStatus' states as an operator names them
_STATES = {
    "ON": "running",
    "OFF": "stopped",
    "ERROR": "error",
    "RECOVERING": "recovering",
    "WAITING FOR RELAY LOG": "waiting",
}
# Replica_IO_Running as an operator names it
_IO_STATES = {"Yes": "running", "Connecting": "connecting", "No": "stopped"}
# the multi-threaded applier's worker states, grouped
_WORKER_STATES = {
    "waiting for dependent transaction to commit": "waiting for a dependency",
    "waiting for preceding transaction to commit": "waiting for commit order",
    "waiting for an event from the coordinator": "idle",
}


@dataclass(frozen=True, slots=True)
class ReceiverView:
    """A channel's IO thread: the receiver that copies the source's binary log into its relay logs."""

    state: str  # running / connecting (retrying) / stopped / error (it stopped on Last_IO_Error)
    io_state: str  # Replica_IO_State: what it does right now ("" when stopped)
    read: str  # Source_Log_File:Read_Source_Log_Pos, how far it received the source's binary log
    retrieved_gtids: str  # Retrieved_Gtid_Set
    last_error: str  # "" or "Error N: message" (Last_IO_Errno, Last_IO_Error)
    last_error_at: str  # Last_IO_Error_Timestamp, UTC in MySQL's form; "" with no error


@dataclass(frozen=True, slots=True)
class ChannelView:
    """A channel: its SQL thread (the applier) and, if it has one, its IO thread (the receiver)."""

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
    # Relay_Source_Log_File:Exec_Source_Log_Pos: the source's binary log position applied up to,
    # to set against the receiver's read position
    source_executed: str = ""
    last_error_at: str = ""  # Last_SQL_Error_Timestamp, UTC in MySQL's form; "" with no error
    receiver: ReceiverView | None = None  # None: relay logs captured or written by another replica


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
                source_executed=_position(status.relay_source_log_file, status.exec_source_log_pos),
                last_error_at=_timestamp(status.last_error_timestamp) if error else "",
                receiver=_receiver(repository, status),
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


def _receiver(repository: Repository, status: ChannelStatus) -> ReceiverView | None:
    """The IO thread of a channel that connects to its source (or whose receiver ran or failed
    anyway: a START REPLICA IO_THREAD of a channel with a SOURCE_HOST alone); else None."""
    name = status.channel_name
    io_running = status.replica_io_running
    if not (receives_from_source(repository, name) or io_running != "No" or status.last_io_error_number):
        return None
    state = _IO_STATES[io_running]
    if state == "stopped" and status.last_io_error_number:
        state = "error"
    error = (
        f"Error {status.last_io_error_number}: {status.last_io_error_message}"
        if status.last_io_error_number
        else ""
    )
    return ReceiverView(
        state=state,
        io_state=status.replica_io_state,
        read=_position(status.source_log_file, status.read_source_log_pos),
        retrieved_gtids=status.retrieved_gtid_set,
        last_error=error,
        last_error_at=_timestamp(status.last_io_error_timestamp) if error else "",
    )


def _timestamp(value: str | None) -> str:
    return "" if not value or value == ZERO_TIMESTAMP else value


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
    same transaction. The rows are the ones `relaydeck events --rows --json` writes.
    """
    from ..listing.lines import row_values

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
            rows = tuple(row_values(decode_rows_event(event, table_map)))
            return EventRows(f"{table_map.schema}.{table_map.table}", logged.event_type, rows)
    return None
