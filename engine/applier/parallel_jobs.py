"""What the multi-threaded applier's coordinator hands its workers, and what they share.

A Job is one transaction with the ordinal the group assignment queue gave it and its dependency;
each worker has a WorkerQueue of them. ChannelWork names the state the coordinator
(parallel.py, parallel_schedule.py) and the workers (parallel_workers.py) share: ParallelApplier
sets it up, and the queues, the GAQ and the flags are read and changed under `_lock`, whose
notify_all wakes whoever waits on them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..gtids import ExecutedGtids
from ..relaylog.index import RelayLogSet
from ..scheduling.clock import LogicalClock
from ..scheduling.gaq import GroupAssignmentQueue
from ..scheduling.partition import DatabasePartitions
from ..scheduling.rowkeys import Decoded, WritesetKeys
from ..scheduling.writeset import WritesetHistory
from ..slave.database import Slave
from ..transactions import Transaction, TransactionRecord
from .prepared import PreparedRun
from .vocabulary import (
    ApplyStats,
    BatchLimits,
    BatchRamp,
    ChannelError,
    CommitCallback,
    ParallelOptions,
    WaitCounters,
    WorkerStatus,
)


@dataclass(slots=True)
class Job:
    ordinal: int
    txn: Transaction | TransactionRecord
    after: int  # every ordinal up to this one must have committed before the job starts
    alone: bool  # changes definitions: nothing else runs with it
    decoded: Decoded | None = None
    partitions: frozenset[str] | None = None  # DATABASE: released when it commits
    worker: int = -1
    skip: bool = False  # taken by the skip counter: recorded as applied, not executed
    run: PreparedRun | None = None  # prepared: transaction `index` of this run (txn is its record)
    index: int = 0


@dataclass(slots=True)
class WorkerQueue:
    """One worker: its queue of jobs, its status and its thread."""

    status: WorkerStatus
    queue: deque[Job] = field(default_factory=deque)
    queued_bytes: int = 0
    last_position: tuple[str, int, str | None, int] = ("", 0, None, 0)
    thread: threading.Thread | None = None


class ChannelAborted(Exception):
    """The channel is stopping without finishing (a worker failed, or KILL)."""


class ChannelWork:
    """The state the coordinator and the workers share (set up by ParallelApplier.__init__)."""

    channel: str
    logs: RelayLogSet
    slave: Slave
    options: ParallelOptions
    limits: BatchLimits
    stats: ApplyStats
    waits: WaitCounters
    on_commit: CommitCallback | None
    stop: threading.Event
    kill: threading.Event
    _lock: threading.Condition
    _gaq: GroupAssignmentQueue[Job]
    _workers: list[WorkerQueue]
    _pending_bytes: int  # bytes of the jobs queued and not yet committed (replica_pending_jobs_size_max)
    _scheduled: ExecutedGtids  # GTIDs applied or queued
    _lwm_executed: ExecutedGtids  # GTIDs up to the LWM
    _lwm_job: Job | None  # the job at the LWM
    _failure: tuple[int, Job, ChannelError] | None  # the worker and job that failed first, its error
    _aborting: bool  # KILL, or STOP past its timeout: workers drop what they hold
    _reading_done: bool
    _coordinator_waiting: bool
    _caught_up: bool  # following: all that has arrived is queued, nothing more is coming yet
    # the schedulers' state
    _keys: WritesetKeys | None
    _keys_of_version: dict[int, WritesetKeys]
    _clock: LogicalClock
    _history: WritesetHistory
    _partitions: DatabasePartitions
    _definitions_pending: int  # the last ordinal of a chain after DDL, until it commits (0: none)
    _after_definitions: int  # transactions chained after the chain's last DDL
    _last_on_database: dict[str, int]
    _run_worker: int
    _run_left: int
    _run_length: int
    # the workers' batches
    _gather_min: int
    _gather_more: int
    _ramp: BatchRamp
    # the coordinator's (parallel.py), which the workers call: checkpoint when a group or period passed
    _maybe_checkpoint: Callable[[], None]
