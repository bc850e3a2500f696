"""What an operator watches, as plain typed values: the console's whole view of the engine.

The console never reads engine internals: it asks a ReplicaHandle (a ReplicaServer in this
process, or a RemoteReplica behind a running `relaydeck serve`) for a Snapshot, the recovery
picture of a channel, the events of a relay log, and sends statements. Snapshots are read from
the repository, so they look the same whichever process runs the channels.

The values themselves (Snapshot, ChannelView, …) live in views.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..binlog.columns import decode_rows_event
from ..binlog.events import RowsEvent, TableMap
from ..binlog.reader import BinlogFile, ReaderState
from ..errors import RelaydeckError
from ..relaylog.index import read_index
from ..repository import ZERO_TIMESTAMP, ChannelStatus, Repository
from .receiving import receives_from_source
from .views import ChannelView, EventRows, PoolSlotView, PoolView, ReceiverView, Snapshot, WorkerView

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
                relay_read=_position(*_read_at_least_applied(status)),
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


def _read_at_least_applied(status: ChannelStatus) -> tuple[str, int]:
    """Where the reader is: at least where the applier's checkpoint is. The read position is
    published with the live status every STATUS_INTERVAL_S, the checkpoint (relay_log_info) as the
    workers commit, so read apart the first can trail the second by a published interval."""
    read = (status.relay_log_file_read, status.relay_log_pos_read)
    applied = (status.relay_log_file, status.relay_log_pos)
    # relay log names of one channel share their base and a zero-padded number: they sort as text
    return applied if read[0] and applied[0] and read < applied else read


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
