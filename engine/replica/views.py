"""The values the console and the CLI see of a replica: statement results and status snapshots.

Plain typed values with no behaviour of their own, so that the modules that produce them (the
server runs statements, the monitor reads snapshots from the repository) and those that show them
(console/) meet here instead of importing each other. The console reaches them through engine/api.py.

A channel is its two threads, as in SHOW REPLICA STATUS: the SQL thread (the applier: ChannelView's
own fields) and, for a channel that connects to its source, the IO thread (the receiver:
ChannelView.receiver). A channel whose relay logs are captured, or written by another replica,
has no receiver: `receiver` is None, which is not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..applier.recovery import RecoveryPicture
from .errors import Warning_


@dataclass(slots=True)
class Result:
    """What a statement returns: a result set (maybe empty) and the notes it left."""

    columns: tuple[str, ...] = ()
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "warnings": [{"level": w.level, "code": w.code, "message": w.message} for w in self.warnings],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Result:
        return cls(
            tuple(data["columns"]),
            [tuple(r) for r in data["rows"]],
            [Warning_(w["level"], w["code"], w["message"]) for w in data["warnings"]],
        )


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
    """What the console holds: a ReplicaServer in its process, or a RemoteReplica behind `relaydeck serve`."""

    def execute(self, statement: str) -> Result: ...

    def snapshot(self) -> Snapshot: ...

    def recovery(self, channel: str) -> RecoveryPicture: ...

    def kill(self, channel: str | None = None) -> None: ...

    def relay_log_index(self, channel: str) -> str: ...
