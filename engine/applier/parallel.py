"""The multi-threaded applier of one channel: a coordinator and a pool of workers (WL#5569).

The coordinator (the thread calling run()) reads the relay log, assembles transactions, skips
those already applied, checks UNTIL, and schedules each transaction onto a worker's queue with
the ordinal the group assignment queue gives it and a dependency: the ordinal up to which every
transaction must have committed before this one may start. The dependency comes from the
scheduler: the source's logical clock, the writeset the coordinator computes from the row images,
or, for DATABASE, the partition the transaction's databases are held in (the coordinator waits
instead). Transactions that change definitions run alone: after everything before them, and
nothing is scheduled until they commit.

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
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace

import duckdb
import numpy as np

from ..binlog.events import Incident
from ..binlog.reader import LoggedEvent
from ..gtids import ExecutedGtids
from ..pool import Executor, InProcessExecutor
from ..pool.ahead import SEGMENTS_AHEAD_PER_WORKER
from ..relaylog.continuity import Continuity
from ..relaylog.follow import CaughtUp
from ..relaylog.index import RelayLogSet
from ..scheduling.clock import LogicalClock
from ..scheduling.gaq import GroupAssignmentQueue, WorkerCheckpoint
from ..scheduling.partition import DatabasePartitions
from ..scheduling.rowkeys import Decoded, WritesetKeys, transaction_writeset, writeset_keys
from ..scheduling.writeset import WritesetHistory
from ..slave.database import ChannelProgress, Slave
from ..transactions import Transaction, TransactionRecord
from . import processes
from .controls import StartControls
from .executor import TransactionExecutor, is_structural
from .prepare import PrepareTask
from .prepared import PreparedRun, for_slave, sliced_tables
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
    transaction_error,
)

# Transactions queued per worker (MySQL's mts_slave_worker_queue_len_max is 16384). Shorter here:
# a queued transaction's Python objects weigh many times its relay-log bytes, and reading further
# ahead only added memory and garbage-collector work (measured: 4x slower at 16384 on a hot-row log).
WORKER_QUEUE_LENGTH = 2048
# Consecutive transactions the coordinator keeps giving one worker: a run a worker may combine
# into one DuckDB transaction even with commit order preserved.
RUN_LENGTH = 2000
# A worker with fewer queued transactions than this waits briefly for more before it begins:
# one DuckDB commit per handful of transactions would cost more than the parallelism gains.
GATHER_MIN = 1000
GATHER_WAIT_S = 0.2
# Transactions of a prepared run claimed and enqueued together under DATABASE
PARTITION_PIECE = 256
# A queue is still growing when one of the coordinator's last RECENT_PER_WORKER x workers
# transactions went to it (DATABASE spreads consecutive transactions over the partitions' workers).
RECENT_PER_WORKER = 16
CONFLICT_RETRIES = 10


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


class _Abort(Exception):
    """The channel is stopping without finishing (a worker failed, or KILL)."""


class _NotPrepared(Exception):
    """A prepared table the slave cannot take set-based: the batch goes the ordinary way."""


class _JobFailed(Exception):
    def __init__(self, job: Job, error: ChannelError) -> None:
        self.job = job
        self.error = error


@dataclass(slots=True)
class _Worker:
    status: WorkerStatus
    queue: deque[Job] = field(default_factory=deque)
    queued_bytes: int = 0
    last_position: tuple[str, int, str | None, int] = ("", 0, None, 0)
    thread: threading.Thread | None = None


class ParallelApplier:
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
        self._workers = [_Worker(WorkerStatus(i + 1)) for i in range(options.workers)]
        self._pending_bytes = 0
        self._reading_done = False
        self._coordinator_waiting = False
        self._caught_up = False  # following: all that has arrived is queued, nothing more is coming yet
        self.executor: Executor = executor or InProcessExecutor()
        self._keys: WritesetKeys | None = None  # what the next segments' writesets are hashed with
        self._keys_of_version: dict[int, WritesetKeys] = {}
        # segments ahead since the keys last changed; a new slave (no tables) starts at one
        self._ahead_after_ddl = 0 if not len(slave.catalog) else 1 << 30
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
        # Whether a batch takes the next ordinal along from another worker's queue (_queue_holding).
        # Not for DATABASE without commit order: each worker applies its partitions' transactions,
        # which are ordered only by the queue they share, and consecutive ordinals are mostly
        # other databases, applied side by side on other workers.
        self._takes_along = options.preserve_commit_order or options.parallel_type != "database"
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
        # The translators of DDL and statements load sqlglot and its dialects when the first one
        # comes (0.3-0.6 s on this machine's 2 cores). The coordinator waits for the first prepared
        # segment meanwhile, so they are loaded beside it now rather than in the first DDL.
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
        except _Abort:
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
            return read_chunks(self.logs, start_file, pos, follow, continuity=continuity)
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
        """Segments in flight: fewer while definitions change. What is prepared before a DDL that
        changes the keys of its tables is hashed again here, in the coordinator's thread, so
        while DDL comes (a new slave's CREATE TABLEs) few segments are prepared ahead; one more
        each time a chunk is taken, back to the executor's default."""
        if self._keys is None:
            return None
        self._ahead_after_ddl += 1
        if self._ahead_after_ddl > self.executor.workers * SEGMENTS_AHEAD_PER_WORKER + 1:
            return None
        return self._ahead_after_ddl

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
                    if self._keys is not None and is_structural(item):
                        keys = writeset_keys(self.slave.catalog, self._keys.version + 1)
                        if keys != self._keys:
                            # segments prepared before now hashed with the keys as they were
                            self._keys = self._keys_of_version[keys.version] = keys
                            self._ahead_after_ddl = 0
                elif isinstance(item, LoggedEvent) and isinstance(item.event, Incident):
                    self._drain()
                    return incident_error(self.channel, item)
                elif isinstance(item, CaughtUp):
                    with self._lock:
                        self._caught_up = True  # workers stop gathering and commit what they hold
                        self._lock.notify_all()
                    # The reader is about to wait for the relay log to grow: the position must
                    # not wait with it, so what was assigned is committed and checkpointed now.
                    self._drain()
                    self._checkpoint()
                if self.on_progress is not None:
                    self.on_progress(self.stats, item)
                self._maybe_checkpoint()
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                break
        return None

    def _schedule_run(self, run: PreparedRun) -> None:
        """Schedule every transaction of a prepared run (those applied before are skipped). A run
        on a table the slave does not take set-based is read again and goes the ordinary way."""
        if not self._takes_set_based(run):
            self.stats.runs_read_again += 1
            for item in self._read_run(run):
                if item.gtid and self._scheduled.contains(item.gtid):
                    self.stats.skipped += 1
                    self._clock.skipped(item, self._gaq.next_ordinal - 1)
                else:
                    self._schedule(item)
            return
        self.stats.prepared_runs += 1
        applied_before = run.gtids.any_in(self._scheduled)
        keys = self._keys
        writesets = run.writesets if keys is not None else None
        stale = self._hashed_with_other_keys(run, keys) if writesets is not None else ()
        if (
            not applied_before
            and self.options.schedule is None
            and max(t.size for t in run.transactions) <= self.options.pending_jobs_size_max // 4
        ):
            if self.options.parallel_type == "database":
                self._schedule_in_partitions(run)
            else:
                self._schedule_in_pieces(run, writesets, stale)
            return
        for index, txn in enumerate(run.transactions):
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return  # a run holds thousands: STOP waits for what was assigned, not for the run
            if applied_before and txn.gtid and self._scheduled.contains(txn.gtid):
                self.stats.skipped += 1
                self._clock.skipped(txn, self._gaq.next_ordinal - 1)  # type: ignore[arg-type]
                continue
            hashes = writesets[index] if writesets is not None and index not in stale else None
            self._schedule(txn, prepared=(run, index), hashes=hashes)

    def _schedule_in_pieces(
        self, run: PreparedRun, writesets: list[tuple[int, ...] | None] | None, stale: Collection[int]
    ) -> None:
        """A prepared run under LOGICAL_CLOCK or WRITESET, scheduled a piece at a time: the
        dependencies of each transaction as _schedule gives them, and the consecutive ones that go
        to the same worker (_choose_worker's runs) enqueued at once, under one lock and one
        wake-up of the workers. One by one, the coordinator's locks, waits and wake-ups cost more
        than the scheduling itself (measured on the MariaDB capture: 0.30 s of the coordinator's
        0.46 s of CPU went to _schedule)."""
        transactions = run.transactions
        limit = self.options.pending_jobs_size_max
        logical_clock = self.options.parallel_type == "logical_clock"
        index = 0
        while index < len(transactions):
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return  # STOP waits for what was assigned, not for the rest of the run
            with self._lock:
                worker_index = self._run_worker_locked()
                count = min(self._run_left, len(transactions) - index, WORKER_QUEUE_LENGTH)
            worker = self._workers[worker_index]
            # room for at least one transaction, as _enqueue waits for it; the piece is what fits
            self._wait(lambda w=worker: len(w.queue) < WORKER_QUEUE_LENGTH, "queue_full")
            first = transactions[index].size
            self._wait(lambda first=first: self._pending_bytes + first <= limit, "total_size")
            with self._lock:
                count = max(1, min(count, WORKER_QUEUE_LENGTH - len(worker.queue)))
                room = limit - self._pending_bytes
            piece = transactions[index : index + count]
            size = 0
            for taken, txn in enumerate(piece):
                if size + txn.size > room and taken:
                    piece = piece[:taken]
                    break
                size += txn.size
            count = len(piece)
            with self._lock:
                ordinal = self._gaq.next_ordinal
            jobs = []
            for offset, txn in enumerate(piece):
                position = index + offset
                if logical_clock:
                    after = self._clock.dependency(txn, ordinal)  # type: ignore[arg-type]
                else:
                    hashes = writesets[position] if writesets is not None and position not in stale else None
                    after = self._history.dependency(ordinal, hashes, commit_parent=ordinal - 1)
                job = Job(ordinal, txn, after, False, None, None, worker_index, False, run, position)
                jobs.append(job)
                ordinal += 1
            with self._lock:
                self._enqueue_piece_locked(jobs)
                self._run_left -= count
            index += count

    def _schedule_in_partitions(self, run: PreparedRun) -> None:
        """A prepared run under DATABASE, a piece at a time: each transaction claims its partitions
        as _claim_partitions claims them, and the piece's transactions are enqueued together, in
        ordinal order, under one lock and one wake-up. A claim that would have to wait (a database
        held by another worker) or run alone ends the piece: that transaction goes the one-by-one
        way, which waits, once everything before it is enqueued."""
        transactions = run.transactions
        limit = self.options.pending_jobs_size_max
        preserve = self.options.preserve_commit_order
        workers = self._workers
        index = 0
        while index < len(transactions):
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return  # STOP waits for what was assigned, not for the rest of the run
            count = min(PARTITION_PIECE, len(transactions) - index)
            size = sum(t.size for t in transactions[index : index + count])
            # everything before the piece is enqueued, so the workers drain towards this
            room = WORKER_QUEUE_LENGTH - count
            self._wait(lambda room=room: all(len(w.queue) <= room for w in workers), "queue_full")
            self._wait(lambda size=size: self._pending_bytes + size <= limit, "total_size")
            jobs: list[Job] = []
            with self._lock:
                ordinal = self._gaq.next_ordinal
                loads = [w.queued_bytes for w in workers]
                last_on_database = self._last_on_database
                for position in range(index, index + count):
                    txn = transactions[position]
                    databases = txn.databases
                    claim = self._partitions.claim(databases, loads, preserve)
                    if claim.kind != "assign":
                        break
                    after = max(last_on_database.get(db, 0) for db in databases) if preserve else 0  # type: ignore[union-attr]
                    for db in databases:  # type: ignore[union-attr]
                        last_on_database[db] = ordinal
                    jobs.append(
                        Job(ordinal, txn, after, False, None, databases, claim.worker, False, run, position)
                    )
                    loads[claim.worker] += txn.size
                    ordinal += 1
                self._enqueue_piece_locked(jobs)
            index += len(jobs)
            if len(jobs) < count:
                self._schedule(transactions[index], prepared=(run, index))
                index += 1

    def _hashed_with_other_keys(self, run: PreparedRun, keys: WritesetKeys) -> Collection[int]:
        """The run's transactions whose writesets were hashed with keys other than the slave's now
        (a DDL came between while the run was prepared; one on other tables changes nothing).

        They are scheduled as MySQL schedules a transaction without a writeset: after their
        predecessor, opening a new window. Hashing them again here would put the preparing
        stage's work back on the coordinator (measured: a sixth of the coordinator's time on the
        MariaDB capture, whose first segments are prepared before its CREATE TABLEs are applied).
        """
        if run.writeset_version == keys.version:
            return ()
        hashed_with = self._keys_of_version.get(run.writeset_version)  # type: ignore[arg-type]
        changed = [
            ops
            for ops in run.tables
            if hashed_with is None or hashed_with.of(ops.schema, ops.table) != keys.of(ops.schema, ops.table)
        ]
        if not changed:
            return ()
        if len(changed) == len(run.tables):
            return range(len(run.transactions))
        starts = np.asarray(run.op_starts[: len(run.transactions)])
        touching = np.concatenate(
            [np.searchsorted(starts, ops.seq_array(), side="right") - 1 for ops in changed]
        )
        return set(np.unique(touching).tolist())

    def _takes_set_based(self, run: PreparedRun) -> bool:
        """Whether the slave holds every table of the run set-based (a primary key, the columns
        the run was logged with)."""
        catalog = self.slave.catalog
        for ops in run.tables:
            table = catalog.get((ops.schema, ops.table))
            if table is None or not table.primary_key or len(table.columns) != len(ops.columns):
                return False
        return True

    def _read_run(self, run: PreparedRun) -> list[Transaction]:
        """The run's transactions read the ordinary way, from the relay log."""
        out: list[Transaction] = []
        reader = read_chunks(self.logs, run.start.log_name, run.start.pos)
        try:
            for chunk in reader:
                for item in chunk:
                    if isinstance(item, Transaction):
                        out.append(item)
                        if item.end == run.end:
                            return out
        finally:
            reader.close()
        return out

    def _schedule(
        self,
        txn: Transaction | TransactionRecord,
        skip: bool = False,
        prepared: tuple[PreparedRun, int] | None = None,
        hashes: tuple[int, ...] | None = None,
    ) -> None:
        """prepared: the run and index of a prepared transaction, `hashes` its writeset."""
        # Definitions change, or bigger than replica_pending_jobs_size_max: nothing else runs with it.
        oversized = txn.size > self.options.pending_jobs_size_max
        alone = oversized or (prepared is None and is_structural(txn))  # type: ignore[arg-type]
        decoded: Decoded | None = None
        kind = self.options.parallel_type
        with self._lock:
            ordinal = self._gaq.next_ordinal
        if kind == "writeset" and self.options.schedule is not None and ordinal <= len(self.options.schedule):
            after = min(self.options.schedule[ordinal - 1], ordinal - 1)
        elif kind == "writeset":
            if prepared is None and not alone:
                hashes, decoded = transaction_writeset(txn, self.slave.catalog)  # type: ignore[arg-type,assignment]
            after = self._history.dependency(ordinal, None if alone else hashes, commit_parent=ordinal - 1)
        elif kind == "logical_clock":
            after = self._clock.dependency(txn, ordinal)  # type: ignore[arg-type]
        else:
            after = ordinal - 1
        if alone:
            after = ordinal - 1
        job = Job(ordinal, txn, after, alone, decoded, skip=skip)
        if prepared is not None:
            job.run, job.index = prepared
        if kind == "database" and not alone:
            worker = self._claim_partitions(job)
        elif alone:
            self._wait(lambda: self._gaq.uncommitted() == 0, "total_size" if oversized else "sequential")
            worker = 0
        else:
            worker = self._choose_worker(job)
        self._enqueue(job, worker)
        if txn.gtid:
            self._scheduled.add(txn.gtid)
        if job.alone:
            # Nothing runs beside it, and what comes next is scheduled against the catalog and
            # the partitions as they are after it.
            self._wait(lambda: self._gaq.is_committed(ordinal), "sequential")

    def _claim_partitions(self, job: Job) -> int:
        databases = job.txn.databases
        while True:
            with self._lock:
                claim = self._partitions.claim(
                    databases, [w.queued_bytes for w in self._workers], self.options.preserve_commit_order
                )
            if claim.kind == "assign":
                job.partitions = databases
                # The partition's worker orders it after the earlier transactions on its
                # databases. With commit order preserved a batch may take consecutive
                # transactions from other queues too (_queue_holding), so the order is also
                # stated: after the last earlier transaction on any of its databases.
                job.after = 0
                if self.options.preserve_commit_order:
                    job.after = max(self._last_on_database.get(db, 0) for db in databases)  # type: ignore[union-attr]
                for db in databases:  # type: ignore[union-attr]
                    self._last_on_database[db] = job.ordinal
                return claim.worker
            if claim.kind == "alone":
                # More databases than a partition set holds, or none logged: sequential mode.
                job.after = job.ordinal - 1
                job.alone = True
                self._wait(lambda: self._gaq.uncommitted() == 0, "sequential")
                return 0
            holder = claim.blocking
            self._wait(
                lambda holder=holder: self._partitions.holder(holder)[1] == 0,  # type: ignore[index]
                "partition",
            )

    def _choose_worker(self, job: Job) -> int:
        with self._lock:
            worker = self._run_worker_locked()
            self._run_left -= 1
            return worker

    def _run_worker_locked(self) -> int:
        """The worker the coordinator's current run of consecutive transactions goes to: the same
        one while the run lasts and its queue has room, then the least loaded one after it."""
        if self._run_left <= 0 or len(self._workers[self._run_worker].queue) >= WORKER_QUEUE_LENGTH:
            loads = [len(w.queue) for w in self._workers]
            start = (self._run_worker + 1) % len(self._workers)
            order = [(start + i) % len(self._workers) for i in range(len(self._workers))]
            self._run_worker = min(order, key=lambda w: loads[w])
            self._run_left = self._run_length
        return self._run_worker

    def _enqueue_piece_locked(self, jobs: list[Job]) -> None:
        """Jobs numbered from the GAQ's next ordinal on, each with its worker, enqueued in order
        with one wake-up of the workers (the caller holds the lock and has waited for room)."""
        workers = self._workers
        for job in jobs:
            self._gaq.enqueue(job.worker, job)
            worker = workers[job.worker]
            worker.queue.append(job)
            worker.queued_bytes += job.txn.size
            self._pending_bytes += job.txn.size
        for worker in workers:
            worker.status.queued = len(worker.queue)
        self._caught_up = False
        self._lock.notify_all()
        scheduled = self._scheduled
        for job in jobs:
            if job.txn.gtid:
                scheduled.add(job.txn.gtid)

    def _enqueue(self, job: Job, worker_index: int) -> None:
        size = job.txn.size
        limit = self.options.pending_jobs_size_max
        worker = self._workers[worker_index]
        if size > limit:
            # Larger than the bound: waits for every queue to empty and runs alone.
            self._wait(lambda: self._pending_bytes == 0, "total_size")
        else:
            self._wait(lambda: self._pending_bytes + size <= limit, "total_size")
        self._wait(lambda: len(worker.queue) < WORKER_QUEUE_LENGTH, "queue_full")
        with self._lock:
            self._caught_up = False
            job.worker = worker_index
            self._gaq.enqueue(worker_index, job)
            worker.queue.append(job)
            worker.queued_bytes += size
            worker.status.queued = len(worker.queue)
            self._pending_bytes += size
            self._lock.notify_all()

    def _wait(self, ready: Callable[[], bool], reason: str) -> None:
        """Wait (counted under `reason`) until ready(), checkpointing meanwhile; _Abort on failure."""
        started = None
        while True:
            with self._lock:
                if self._failure is not None or self._aborting:
                    raise _Abort
                if ready():
                    break
                if started is None:
                    started = time.monotonic()
                    self._coordinator_waiting = True
                    self._lock.notify_all()  # workers gathering a batch: nothing more is coming now
                self._lock.wait(min(0.05, self.options.checkpoint_period_ms / 1000))
            if self.kill.is_set():
                self._aborting = True
            self._maybe_checkpoint()
        if started is not None:
            self._coordinator_waiting = False
            setattr(self.waits, reason, getattr(self.waits, reason) + 1)
            setattr(
                self.waits, reason + "_s", getattr(self.waits, reason + "_s") + time.monotonic() - started
            )

    def _drain(self) -> None:
        self._wait(lambda: self._gaq.uncommitted() == 0, "sequential")

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

    # -- workers -------------------------------------------------------------------------------

    def _work(self, worker: _Worker, session: Slave, executor: TransactionExecutor) -> None:
        status = worker.status
        while True:
            batch = self._take_batch(worker)
            if batch is None:
                break
            try:
                try:
                    self._execute(worker, session, executor, batch)
                except (_Abort, _JobFailed):
                    raise
                except Exception as exc:  # a defect must stop the channel, not hang it
                    self._rollback(session, executor)
                    job = batch[0]
                    raise _JobFailed(job, transaction_error(self.channel, job.txn, exc)) from exc
            except _Abort:
                self._release(batch)
                break
            except _JobFailed as exc:
                failed = exc.job
                with self._lock:
                    if self._failure is None or failed.ordinal < self._failure[1].ordinal:
                        self._failure = (
                            status.worker,
                            failed,
                            self._worker_error(status.worker, failed, exc.error),
                        )
                    status.state = "error"
                    status.error = exc.error.one_line()
                    self._release_locked([j for j in batch if not self._gaq.is_committed(j.ordinal)])
                    self._lock.notify_all()
                break
        if status.state != "error":
            status.state = "stopped"
        status.applying = None

    def _take_batch(self, worker: _Worker) -> list[Job] | None:
        """The next jobs to apply together: ready ones from the head of the queue."""
        options = self.options
        status = worker.status
        gather_until: float | None = None
        clock_waited = False
        with self._lock:
            while True:
                cap = self._ramp.transactions  # grows while this worker waits
                gather_min = min(self._gather_min, cap)
                if self._aborting:
                    return None
                queue = worker.queue
                if self._failure is not None:
                    # Finish what comes before the failed transaction; drop what comes after.
                    failed = self._failure[1].ordinal
                    dropped = [j for j in queue if j.ordinal > failed]
                    if dropped:
                        for job in dropped:
                            queue.remove(job)
                        self._release_locked(dropped)
                    if not queue:
                        return None
                if not queue:
                    if self._reading_done:
                        return None
                    status.state = "waiting for an event from the coordinator"
                    self._lock.wait()
                    continue
                head = queue[0]
                if head.after > self._ready_through(self._gaq.lwm, ()):
                    status.state = "waiting for dependent transaction to commit"
                    if not clock_waited:
                        self.waits.worker_clock += 1
                        clock_waited = True
                    self._lock.wait()
                    continue
                if (
                    options.preserve_commit_order
                    and not head.alone
                    and head.ordinal != self._gaq.lwm + 1
                    and self._contiguous(queue, gather_min) < gather_min
                ):
                    # Not next to commit, and too short a run to be worth a DuckDB commit of its
                    # own: the worker whose turn comes first takes these along (_queue_holding),
                    # or the run grows, or this worker's turn comes.
                    status.state = "waiting for preceding transaction to commit"
                    self._lock.wait()
                    continue
                if (
                    len(queue) < gather_min
                    and not self._reading_done
                    and not head.alone
                    and self._may_grow(queue)
                ):
                    now = time.monotonic()
                    if gather_until is None:
                        gather_until = now + GATHER_WAIT_S
                    if now < gather_until:
                        self._lock.wait(gather_until - now)
                        continue
                break
            batch = [queue.popleft()]
            members = {head.ordinal}
            covered = self._ready_through(self._gaq.lwm, members)
            rows = head.txn.row_events
            if not head.alone:
                while len(batch) < cap and rows < self.limits.row_changes:
                    # the next ordinal first, wherever it is queued: one commit for a chain of
                    # dependent transactions that the scheduler spread over several workers
                    source = self._queue_holding(batch[-1].ordinal + 1, worker) if self._takes_along else None
                    if source is None and not options.preserve_commit_order:
                        source = queue
                    if not source:
                        break
                    job = source[0]
                    if job.alone or job.after > covered:
                        break
                    if options.preserve_commit_order and job.ordinal != batch[-1].ordinal + 1:
                        break
                    source.popleft()
                    if source is not queue:
                        self._transfer(job, worker)
                    batch.append(job)
                    members.add(job.ordinal)
                    covered = self._ready_through(covered, members)
                    rows += job.txn.row_events
            status.state = "applying"
            status.applying = batch[0].txn.gtid or str(batch[0].txn.end)
            status.queued = len(queue)
            return batch

    def _ready_through(self, start: int, members: set[int] | tuple[()]) -> int:
        """The highest ordinal up to which every transaction has committed or is in `members`
        (the batch being built), scanning on from `start` (known to qualify): amortised O(1) per
        transaction as a batch grows."""
        gaq = self._gaq
        covered = start
        while (covered + 1) in members or gaq.is_committed(covered + 1):
            covered += 1
        return covered

    def _queue_holding(self, ordinal: int, worker: _Worker) -> deque[Job] | None:
        """The queue whose head is `ordinal`, if any. With commit order preserved a batch may
        only hold consecutive ordinals, and without it a dependent chain is best applied in one
        go; the next one may sit at the head of another worker's queue: taking it along (it is
        applied after its predecessor in the same DuckDB transaction, as the single applier
        would) keeps batches large when the scheduler spreads consecutive transactions over
        workers (DATABASE, and every clock's runs of dependent transactions)."""
        if worker.queue and worker.queue[0].ordinal == ordinal:
            return worker.queue
        try:
            holder = self._workers[self._gaq.entry(ordinal).worker]
        except KeyError:
            return None
        if holder.queue and holder.queue[0].ordinal == ordinal:
            return holder.queue
        return None

    def _transfer(self, job: Job, to: _Worker) -> None:
        origin = self._workers[job.worker]
        origin.queued_bytes -= job.txn.size
        origin.status.queued = len(origin.queue)
        job.worker = to.status.worker - 1
        to.queued_bytes += job.txn.size
        self._gaq.entry(job.ordinal).worker = job.worker

    @staticmethod
    def _contiguous(queue: deque[Job], enough: int) -> int:
        """How many consecutive ordinals the queue starts with."""
        first = queue[0].ordinal
        count = 0
        for job in queue:
            if job.ordinal != first + count or count >= enough:
                break
            count += 1
        return count

    def _may_grow(self, queue: deque[Job]) -> bool:
        """Whether waiting could make the batch at the head of the queue larger: one of the
        coordinator's newest transactions went to this queue (more may follow: the run it gives
        this worker, or the databases this worker holds) and, with commit order preserved, the
        queue holds consecutive ordinals."""
        recent = self._gaq.next_ordinal - 1 - RECENT_PER_WORKER * len(self._workers)
        if self._coordinator_waiting or self._caught_up or queue[-1].ordinal <= recent:
            return False
        return (
            not self.options.preserve_commit_order or queue[-1].ordinal - queue[0].ordinal == len(queue) - 1
        )

    def _execute(
        self, worker: _Worker, session: Slave, executor: TransactionExecutor, batch: list[Job]
    ) -> None:
        attempts = 0
        while True:
            try:
                self._apply_and_commit(worker, session, executor, batch)
                return
            except _Abort:
                self._rollback(session, executor)
                raise
            except Exception as exc:  # a defect too: narrowed down to its transaction like an apply error
                self._rollback(session, executor)
                if _is_conflict(exc) and attempts < CONFLICT_RETRIES:
                    # Two writers met on a row; the schedulers should prevent it: retry, not fail.
                    attempts += 1
                    worker.status.conflict_retries += 1
                    time.sleep(0.005 * attempts)
                    continue
                if len(batch) == 1:
                    job = batch[0]
                    if job.run is not None:
                        # read as the relay log has it: the ordinary way applies it, or names
                        # what is wrong with it exactly (the rows event, the row)
                        self._read_again(job)
                        continue
                    raise _JobFailed(job, transaction_error(self.channel, job.txn, exc)) from None
                for job in batch:
                    self._execute(worker, session, executor, [job])
                return

    def _apply_and_commit(
        self, worker: _Worker, session: Slave, executor: TransactionExecutor, batch: list[Job]
    ) -> None:
        session.begin(changes_definitions=batch[0].alone)
        prepared: list[list[object]] = []  # [run, first index, end index] of consecutive prepared jobs
        for job in batch:
            if job.skip:
                continue
            if job.run is None:
                if prepared:
                    self._apply_prepared(session, executor, prepared)
                    prepared = []
                executor.apply(job.txn, job.decoded)  # type: ignore[arg-type]
            elif prepared and prepared[-1][0] is job.run and prepared[-1][2] == job.index:
                prepared[-1][2] = job.index + 1
            else:
                prepared.append([job.run, job.index, job.index + 1])
        if prepared:
            self._apply_prepared(session, executor, prepared)
        executor.flush()
        session.record_transactions(
            self.channel, [job.ordinal for job in batch], [job.txn for job in batch], worker.status.worker
        )
        first = batch[0].ordinal
        with self._lock:
            if self.options.preserve_commit_order:
                worker.status.state = "waiting for preceding transaction to commit"
                while self._gaq.lwm < first - 1:
                    if self._aborting or (self._failure is not None and self._failure[1].ordinal < first):
                        raise _Abort
                    self._lock.wait()
            if self._aborting:
                raise _Abort
        session.commit()
        if self.on_commit is not None:
            self.on_commit([job.txn for job in batch])
        last = batch[-1].txn
        with self._lock:
            passed = self._gaq.commit(job.ordinal for job in batch)
            for entry in passed:
                if entry.item.txn.gtid:
                    self._lwm_executed.add(entry.item.txn.gtid)
            if passed:
                self._lwm_job = passed[-1].item
            self._release_locked(batch)
            self._ramp.grow()
            status = worker.status
            status.transactions += len(batch)
            status.rows = executor.rows.rows_applied
            status.batches += 1
            status.last_applied = last.gtid or str(last.end)
            status.last_applied_at = time.time()
            status.applying = None
            worker.last_position = (
                last.end.log_name,
                last.end.pos,
                last.source_log_file,
                last.source_end_pos,
            )
            self.stats.transactions += len(batch)
            self.stats.commits += 1
            self.stats.bytes += sum(job.txn.size for job in batch)
            self._lock.notify_all()

    @staticmethod
    def _apply_prepared(session: Slave, executor: TransactionExecutor, parts: list[list[object]]) -> None:
        """Apply prepared transactions (parts of runs) as set-based statements per table."""
        executor.flush()  # what the ordinary way queued before them comes first
        catalog = session.catalog
        rows = executor.rows
        for ops in sliced_tables(parts):  # type: ignore[arg-type]
            table = catalog.get((ops.schema, ops.table))
            if table is None or not table.primary_key or len(table.columns) != len(ops.columns):
                raise _NotPrepared(f"{ops.schema}.{ops.table}")
            rows.apply_ops(table, rows.key_positions(table), for_slave(ops, table), ops.rows)

    def _read_again(self, job: Job) -> None:
        """A prepared job becomes the transaction as the ordinary reader reads it."""
        txn = job.txn
        reader = read_chunks(self.logs, txn.start.log_name, txn.start.pos)
        try:
            for chunk in reader:
                for item in chunk:
                    if isinstance(item, Transaction) and item.end == txn.end:
                        job.txn, job.run = item, None
                        with self._lock:
                            self.stats.runs_read_again += 1
                        return
        finally:
            reader.close()
        raise ChannelError(
            self.channel,
            ER_UNKNOWN_ERROR,
            "the relay log no longer holds the prepared transaction",
            txn.describe(),
            str(txn.start),
        )

    def _release(self, batch: list[Job]) -> None:
        with self._lock:
            self._release_locked(batch)
            self._lock.notify_all()

    def _release_locked(self, batch: list[Job]) -> None:
        for job in batch:
            worker = self._workers[job.worker]
            worker.queued_bytes -= job.txn.size
            self._pending_bytes -= job.txn.size
            if job.partitions is not None:
                self._partitions.release(job.partitions)

    @staticmethod
    def _rollback(session: Slave, executor: TransactionExecutor) -> None:
        session.rollback()
        executor.discard()

    def _worker_error(self, worker: int, job: Job, exc: ChannelError) -> ChannelError:
        return ChannelError(
            self.channel,
            exc.errno,
            f"worker {worker} failed: {exc.message}. The channel's coordinator and workers stopped; "
            "transactions after the low-water mark may have gaps until the next start, which "
            "applies exactly the missing ones",
            job.txn.describe(),
            str(job.txn.start),
        )

    # -- status --------------------------------------------------------------------------------

    def worker_status(self) -> list[WorkerStatus]:
        with self._lock:
            return [
                replace(w.status, queued=len(w.queue), queued_bytes=w.queued_bytes) for w in self._workers
            ]

    @property
    def lwm(self) -> int:
        return self._gaq.lwm


def _load_translators() -> None:
    from ..slave import ddl, statements  # noqa: F401 - loaded for the first DDL or statement


def _is_conflict(exc: Exception) -> bool:
    return isinstance(exc, duckdb.TransactionException) and "onflict" in str(exc)
