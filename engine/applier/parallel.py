"""The multi-threaded applier of one channel: a coordinator and a pool of workers (WL#5569).

The coordinator (the thread calling run()) reads the relay log, assembles transactions, skips
those already applied, checks UNTIL, and schedules each transaction onto a worker's queue with
the ordinal the group assignment queue gives it and a dependency: the ordinal up to which every
transaction must have committed before this one may start. The dependency comes from the
scheduler: the source's logical clock, the writeset the coordinator computes from the row images,
or, for DATABASE, the partition the transaction's databases are held in (the coordinator waits
instead). Transactions that change definitions run alone: after everything before them, and
nothing after them runs beside them. What follows a DDL closely (the next DDL, a few dozen
transactions) goes to the DDL's worker in stream order, which applies what it holds in one DuckDB
transaction; then the coordinator waits for that chain to commit (parallel_schedule.py). A
commit per DDL cost more than the DDL on DDL-heavy logs.

Workers take runs of ready transactions from their queue and apply them as one DuckDB transaction
(set-based, like the single applier), each with its commit record. With
replica_preserve_commit_order a worker only combines consecutive ordinals and commits once every
earlier ordinal has committed, so the slave only shows states the source had. Without it, workers
commit as they finish and the LWM trails behind; what committed after it is recorded, which is
what recovery (recovery.py) uses after a crash.

What the coordinator schedules comes prepared. Reading, assembling and decoding the relay log
is Python work, and Python threads take turns on one interpreter lock, so it runs in the
preparing stage (engine/pool) on segments of the relay log: in forked processes, in Spark tasks, or
in this thread for tiny logs. Runs of row-only transactions arrive with their row changes as Arrow
operations per table and each transaction's scheduler inputs (logical clock, databases, writeset
hashes computed where the run was prepared); the coordinator schedules each transaction of a run
like any other, and a worker applies the operations of the transactions it was given as
set-based statements. DuckDB releases the interpreter lock while it executes, so workers apply
side by side where the scheduler allows it. Everything else (DDL, statements, what a run cannot
hold) arrives as read, and goes the ordinary way. Where each transaction has to be looked at
before the next is read (UNTIL, the skip counter, SQL_Delay, following a growing relay log) the
coordinator reads the relay log itself.

This module is the coordinator's loop, its reading and its checkpoints; how it schedules onto the
workers' queues is parallel_schedule.py, what the workers do is parallel_workers.py, and the jobs,
queues and state the two sides share are parallel_jobs.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import duckdb

from ..binlog.events import Incident
from ..binlog.reader import LoggedEvent
from ..gtids import ExecutedGtids
from ..pool import Executor, InProcessExecutor
from ..relaylog.continuity import Continuity
from ..relaylog.follow import CaughtUp, Idle
from ..relaylog.index import RelayLogSet
from ..scheduling.clock import LogicalClock
from ..scheduling.gaq import GroupAssignmentQueue, WorkerCheckpoint
from ..scheduling.partition import DatabasePartitions
from ..scheduling.rowkeys import WritesetKeys, writeset_keys
from ..scheduling.writeset import WritesetHistory
from ..slave.database import ChannelProgress, Slave
from ..slave.translators import load_ddl, load_statements
from ..transactions import Transaction
from . import processes
from .controls import StartControls
from .executor import TransactionExecutor
from .parallel_jobs import ChannelAborted, Job, WorkerQueue
from .parallel_schedule import Scheduling
from .parallel_workers import Workers
from .prepare import PrepareTask
from .prepared import PreparedRun
from .processes import prepared_chunks
from .reading import AnyEvent, continuity_after, read_chunks
from .vocabulary import (
    ER_UNKNOWN_ERROR,
    ApplyStats,
    BatchLimits,
    BatchRamp,
    ChannelError,
    Checkpoint,
    CommitCallback,
    ParallelOptions,
    ProgressCallback,
    Until,
    WaitCounters,
    WorkerStatus,
    incident_error,
    progress_after,
)

# Consecutive transactions the coordinator keeps giving one worker: a run a worker may combine
# into one DuckDB transaction even with commit order preserved.
RUN_LENGTH = 2000
# A run of consecutive transactions worth a DuckDB commit of its own: a worker whose head is not
# next to commit begins before its turn only with one this long, with commit order preserved or
# not. Without commit order, DATABASE gives each worker every third or fourth transaction of the
# MariaDB capture (its databases interleave): the workers applying their shares side by side, a
# commit each per few thousand, took 1.09 of the time of one worker at a time taking the next
# ordinals along from every queue (interleaved runs, --workers 4), WRITESET 1.05, LOGICAL_CLOCK
# 1.02. The workers share one interpreter lock and DuckDB's one writer.
GATHER_MIN = 1000
# A worker with fewer queued transactions than this waits briefly for more before it begins, while
# the coordinator is still adding to its queue: a DuckDB commit per handful of transactions costs
# more than the parallelism gains. 3000 against 1000 measured on the MariaDB capture (--workers 4,
# interleaved runs of each): 0.96-0.97 of the time under DATABASE with commit order off, whose
# workers take a third of each prepared run each, 0.97-0.99 under WRITESET off and DATABASE on,
# the same under LOGICAL_CLOCK on; 6000 was no better than 3000.
GATHER_MORE = 3000


class ParallelApplier(Scheduling, Workers):
    """Coordinator + workers for one channel; run() returns when the relay log is applied."""

    def __init__(
        self,
        slave: Slave,
        channel: str,
        logs: RelayLogSet,
        options: ParallelOptions,
        limits: BatchLimits | None = None,
        until: Until | None = None,
        on_progress: ProgressCallback | None = None,
        stop: threading.Event | None = None,
        kill: threading.Event | None = None,
        on_checkpoint: Callable[[Checkpoint], None] | None = None,
        controls: StartControls | None = None,
        follow: bool = False,
        on_commit: CommitCallback | None = None,
        executor: Executor | None = None,
    ) -> None:
        """follow: keep applying as the relay logs grow, until STOP or KILL. executor: where the
        relay log is prepared (engine/pool; the caller closes it); None: in this thread."""
        self.slave = slave
        self.follow = follow
        self.on_commit = on_commit
        self.controls = controls or StartControls()
        self.channel = channel
        self.logs = logs
        self.options = options
        self.limits = limits or BatchLimits()
        self.until = until
        self.on_progress = on_progress
        self.stop = stop or threading.Event()
        self.kill = kill or threading.Event()
        self.on_checkpoint = on_checkpoint
        self.stats = ApplyStats()
        self.waits = WaitCounters()
        self.progress = slave.progress(channel) or ChannelProgress(channel)
        self._lock = threading.Condition()
        self._gaq: GroupAssignmentQueue[Job] = GroupAssignmentQueue(self.progress.transactions)
        self._lwm_executed = ExecutedGtids.parse(self.progress.executed_gtids)
        self._lwm_job: Job | None = None
        self._scheduled = ExecutedGtids.parse(self.progress.executed_gtids)
        self._workers = [WorkerQueue(WorkerStatus(i + 1)) for i in range(options.workers)]
        self._pending_bytes = 0
        self._reading_done = False
        self._coordinator_waiting = False
        self._caught_up = False  # following: all that has arrived is queued, nothing more is coming yet
        self.executor: Executor = executor or InProcessExecutor()
        self._keys: WritesetKeys | None = None  # what the next segments' writesets are hashed with
        self._keys_of_version: dict[int, WritesetKeys] = {}
        # segments ahead since the keys last changed; a new slave (no tables) starts at one
        self._ahead_after_ddl = 0 if not len(slave.catalog) else 1 << 30
        self._definitions_pending = 0  # the last ordinal of a chain after DDL (parallel_schedule.py)
        self._after_definitions = 0  # transactions chained after the chain's last DDL
        self._failure: tuple[int, Job, ChannelError] | None = None
        self._aborting = False  # KILL, or STOP past its timeout: workers drop what they hold
        self._clock = LogicalClock()
        self._history = WritesetHistory(options.history_size, window_start=self.progress.transactions)
        self._partitions = DatabasePartitions(options.workers)
        self._last_on_database: dict[str, int] = {}
        self._run_worker = 0
        self._run_left = 0
        # A worker never combines more than the batch limit: longer runs would only serialize.
        self._run_length = max(1, min(RUN_LENGTH, self.limits.transactions))
        self._gather_min = max(1, min(GATHER_MIN, self.limits.transactions))
        self._gather_more = max(1, min(GATHER_MORE, self.limits.transactions))
        self._ramp = BatchRamp(self.limits)  # batches start small at a start (see BatchRamp)
        if options.schedule is not None and self.progress.transactions != 0:
            raise ChannelError(
                channel,
                ER_UNKNOWN_ERROR,
                "a schedule from relaydeck analyze describes the relay logs read from their start; "
                f"this slave has already applied {self.progress.transactions} transactions of the channel",
                None,
                None,
            )
        self._checkpointed_lwm = self.progress.transactions
        self._last_checkpoint = time.monotonic()
        self._executors: list[TransactionExecutor] = []

    # -- coordinator ---------------------------------------------------------------------------

    def run(self) -> ApplyStats:
        # The translators load sqlglot when the first DDL or statement comes (0.1 s of CPU here).
        # The coordinator waits for the first prepared segment meanwhile, so they are loaded beside
        # it now: the DDL translator first, which a log's first transactions (its CREATEs) wait
        # for, then the statement translator with sqlglot's DuckDB dialect (a fifth of the time).
        threading.Thread(target=_load_translators, name="load-translators", daemon=True).start()
        sessions = [self.slave.session() for _ in self._workers]
        self._executors = [TransactionExecutor(s) for s in sessions]
        for worker, session, executor in zip(self._workers, sessions, self._executors, strict=True):
            worker.thread = threading.Thread(
                target=self._work,
                args=(worker, session, executor),
                name=f"channel-{self.channel}-worker-{worker.status.worker}",
                daemon=True,
            )
            worker.thread.start()
        incident: ChannelError | None = None
        try:
            incident = self._coordinate()
        except ChannelAborted:
            pass
        finally:
            self._finish()
            for session in sessions:
                session.close()
        if self._failure is not None:
            raise self._failure[2]
        if incident is not None:
            raise incident
        return self.stats

    def _coordinate(self) -> ChannelError | None:
        if self.until is not None and self.until.satisfied_at_start(self._scheduled):
            self.stats.stopped_by = "UNTIL condition"
            return None
        continuity = continuity_after(self.progress, self.controls)
        reader = self._reader(continuity)
        try:
            return self._schedule_all(reader)
        finally:
            reader.close()
            self.stats.gaps_accepted = continuity.accepted
            if self.stop.is_set() or self.kill.is_set():  # also when following ended the reading
                if self.stats.stopped_by != "UNTIL condition":
                    self.stats.stopped_by = "KILL" if self.kill.is_set() else "STOP"

    def _reader(self, continuity: Continuity) -> Iterator[list[object]]:
        """The relay log, prepared by the executor, or read here where each transaction is
        looked at before the next is read."""
        start_file, pos = self.progress.relay_log_file, self.progress.relay_log_pos
        one_at_a_time = self.until is not None or self.controls.skip_counter or self.controls.sql_delay
        if self.follow or one_at_a_time:
            follow = AnyEvent(self.stop, self.kill) if self.follow else None
            return read_chunks(self.logs, start_file, pos, follow, continuity=continuity, idle=True)
        if self.options.parallel_type == "writeset" and self.options.schedule is None:
            self._keys = writeset_keys(self.slave.catalog)
            self._keys_of_version[self._keys.version] = self._keys
        return prepared_chunks(
            self.logs,
            start_file,
            pos,
            self.executor,
            self._read_again_from,
            continuity,
            self._task,
            processes.SEGMENT_TRANSACTIONS * self.executor.segment_scale,
            processes.SEGMENT_BYTES * self.executor.segment_scale,
            ahead=self._segments_ahead,
        )

    def _segments_ahead(self) -> int | None:
        """Segments in flight: one while definitions change. What is prepared before a DDL that
        changes the keys of its tables is scheduled without its writeset, so while DDL comes (a
        new slave's CREATE TABLEs) one segment is prepared ahead; once a chunk is taken with no
        change of keys, the executor's default again. Stepping back up one segment per chunk
        instead held the MariaDB capture's coordinator waiting for prepared segments for 0.4 s
        of its 1.8 s (WRITESET, 4 workers: 1.83-1.87 s against 1.68-1.77 s this way; a DDL-heavy
        log, where every chunk holds DDL, runs the same either way)."""
        if self._keys is None:
            return None
        self._ahead_after_ddl += 1
        return 1 if self._ahead_after_ddl == 1 else None

    def _task(self) -> PrepareTask:
        """What the next segment is prepared with: the keys the slave has now."""
        return PrepareTask(processes.SEGMENT_TRANSACTIONS * self.executor.segment_scale, self._keys)

    def _read_again_from(self, start_file: str, pos: int) -> Iterator[list[object]]:
        """The ordinary reader, where the preparing stage handed over (bad input, a failed task):
        a range its continuity check has already covered."""
        return read_chunks(self.logs, start_file, pos)

    def _schedule_all(self, reader: Iterator[list[object]]) -> ChannelError | None:
        for chunk in reader:
            for item in chunk:
                if type(item) is PreparedRun:
                    self._schedule_run(item)
                    if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                        break
                elif isinstance(item, Transaction):
                    if item.gtid and self._scheduled.contains(item.gtid):
                        self.stats.skipped += 1
                        self._clock.skipped(item, self._gaq.next_ordinal - 1)
                        continue
                    if self.until is not None and self.until.stops_before(item):
                        self.stats.stopped_by = "UNTIL condition"
                        return None
                    skip = self.controls.take_skip(item)
                    if skip:
                        self.stats.skipped_by_counter += 1
                    else:
                        due = self.controls.due(item)
                        if due is not None and not self.controls.wait_until(due, self.stop):
                            self.stats.stopped_by = "STOP"
                            return None
                    self._schedule(item, skip)
                    if self.until is not None and self.until.reached_after(item, self._scheduled):
                        self.stats.stopped_by = "UNTIL condition"
                        return None
                elif isinstance(item, LoggedEvent) and isinstance(item.event, Incident):
                    self._drain()
                    return incident_error(self.channel, item)
                elif isinstance(item, CaughtUp):
                    with self._lock:
                        self._caught_up = True  # workers stop gathering and commit what they hold
                        self._lock.notify_all()
                    if isinstance(item, Idle):
                        # The source is quiet: the position must not wait with the reader, so
                        # what was assigned is committed and checkpointed now. Not at every
                        # CAUGHT_UP: following a busy source the reader catches up between two
                        # transactions arriving, and draining the workers there held the
                        # coordinator (and the transactions arriving) behind each commit.
                        # Status does not wait: each commit publishes what it executed.
                        self._drain()
                        self._checkpoint()
                if self.on_progress is not None:
                    self.on_progress(self.stats, item)
                self._maybe_checkpoint()
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                break
        return None

    def _finish(self) -> None:
        """Let the workers finish what was assigned (bounded on STOP, not at all on KILL)."""
        deadline = time.monotonic() + self.options.stop_timeout_s
        with self._lock:
            self._reading_done = True
            if self.kill.is_set():
                self._aborting = True
            self._lock.notify_all()
        while True:
            with self._lock:
                if self._aborting or self._failure is not None or self._gaq.uncommitted() == 0:
                    break
                if self.stop.is_set() and time.monotonic() > deadline:
                    self._aborting = True
                    break
                self._lock.wait(0.05)
                if self.kill.is_set():
                    self._aborting = True
            self._maybe_checkpoint()
        with self._lock:
            self._lock.notify_all()
        for worker in self._workers:
            if worker.thread is not None:
                worker.thread.join()
        self._checkpoint()
        self.stats.row_changes = sum(e.rows.rows_applied for e in self._executors)

    # -- checkpoints ---------------------------------------------------------------------------

    def _maybe_checkpoint(self) -> None:
        lwm = self._gaq.lwm
        if lwm - self._checkpointed_lwm >= self.options.checkpoint_group or (
            time.monotonic() - self._last_checkpoint >= self.options.checkpoint_period_ms / 1000
        ):
            self._checkpoint()

    def _checkpoint(self) -> None:
        """Write the LWM to the slave (and, through on_checkpoint, relay_log_info/worker_info)."""
        with self._lock:
            lwm = self._gaq.lwm
            job = self._lwm_job
            executed = str(self._lwm_executed)
            workers = tuple(self._gaq.checkpoint(w.status.worker - 1) for w in self._workers)
            positions = tuple(w.last_position for w in self._workers)
        self._last_checkpoint = time.monotonic()
        progress = self.progress
        if job is not None and lwm != self._checkpointed_lwm:
            progress = progress_after(self.progress, job.txn, executed, lwm)
            self.slave.begin()
            try:
                self.slave.record_progress(progress)
                self.slave.commit()
            except duckdb.Error:
                self.slave.rollback()
                raise
            self.progress = progress
            self._checkpointed_lwm = lwm
        if self.on_checkpoint is not None:
            workers = tuple(WorkerCheckpoint(w.worker + 1, w.seqno, w.bitmap) for w in workers)
            self.on_checkpoint(
                Checkpoint(self.channel, progress, workers, positions, self.options.checkpoint_group)
            )

    # -- status --------------------------------------------------------------------------------

    def applied_progress(self) -> ChannelProgress:
        """Where the channel stands now: the LWM with its GTIDs, between two checkpoints too."""
        with self._lock:
            job, lwm, executed = self._lwm_job, self._gaq.lwm, str(self._lwm_executed)
        if job is None or lwm == self.progress.transactions:
            return self.progress
        return progress_after(self.progress, job.txn, executed, lwm)

    def worker_status(self) -> list[WorkerStatus]:
        with self._lock:
            return [
                replace(w.status, queued=len(w.queue), queued_bytes=w.queued_bytes) for w in self._workers
            ]

    @property
    def lwm(self) -> int:
        return self._gaq.lwm


def is_write_conflict(exc: Exception) -> bool:
    return isinstance(exc, duckdb.TransactionException) and "onflict" in str(exc)


def _load_translators() -> None:
    load_ddl()
    load_statements()
