"""The workers of the multi-threaded applier: each takes a batch from its queue, applies it as
one DuckDB transaction with its commit records, and commits it.

A batch is the ready jobs at the head of the worker's queue, and, where the scheduler spread a
chain of dependent transactions over several workers, the next ordinals taken along from the
other queues (_queue_holding). A worker holding too few waits briefly for more (GATHER_WAIT_S), since
a DuckDB commit per handful of transactions costs more than the parallelism gains, and one whose
head is not next to commit begins before its turn only with a long run of consecutive ordinals
(GATHER_MIN). With replica_preserve_commit_order a batch holds consecutive ordinals and commits
once every earlier ordinal has; without it, a batch goes on with the worker's own queue and
commits as soon as it is applied. A batch that fails is applied again one transaction per
commit, so the error names exactly the failing transaction; a write conflict between workers is
retried.
"""

from __future__ import annotations

import time
from collections import deque

import duckdb

from ..slave.database import Slave
from ..transactions import Transaction
from .executor import TransactionExecutor
from .parallel_jobs import ChannelAborted, ChannelWork, Job, WorkerQueue
from .prepared import for_slave, sliced_tables
from .reading import read_chunks
from .vocabulary import ER_UNKNOWN_ERROR, ChannelError, transaction_error

# How long a worker holding fewer than GATHER_MORE transactions (parallel.py) waits for more
GATHER_WAIT_S = 0.2
# A queue is still growing when one of the coordinator's last RECENT_PER_WORKER x workers
# transactions went to it (DATABASE spreads consecutive transactions over the partitions' workers).
RECENT_PER_WORKER = 16
CONFLICT_RETRIES = 10


class _NotPrepared(Exception):
    """A prepared table the slave cannot take set-based: the batch goes the ordinary way."""


class _JobFailed(Exception):
    def __init__(self, job: Job, error: ChannelError) -> None:
        self.job = job
        self.error = error


class Workers(ChannelWork):
    """The workers' side of ParallelApplier: what each worker thread runs."""

    def _work(self, worker: WorkerQueue, session: Slave, executor: TransactionExecutor) -> None:
        status = worker.status
        while True:
            batch = self._take_batch(worker)
            if batch is None:
                break
            try:
                try:
                    self._execute(worker, session, executor, batch)
                except (ChannelAborted, _JobFailed):
                    raise
                except Exception as exc:  # a defect must stop the channel, not hang it
                    self._rollback(session, executor)
                    job = batch[0]
                    raise _JobFailed(job, transaction_error(self.channel, job.txn, exc)) from exc
            except ChannelAborted:
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

    def _take_batch(self, worker: WorkerQueue) -> list[Job] | None:
        """The next jobs to apply together: ready ones from the head of the queue."""
        options = self.options
        status = worker.status
        gather_until: float | None = None
        clock_waited = False
        with self._lock:
            while True:
                cap = self._ramp.transactions  # grows while this worker waits
                gather_min = min(self._gather_min, cap)
                gather_more = min(self._gather_more, cap)
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
                    not head.alone
                    and head.ordinal != self._gaq.lwm + 1
                    and self._contiguous(queue, gather_min) < gather_min
                ):
                    # Not next to commit, and too short a run to be worth a DuckDB commit of its
                    # own: the worker whose turn comes first takes these along (_queue_holding),
                    # or the run grows, or this worker's turn comes. With commit order off too
                    # (see GATHER_MIN): it then commits without waiting for earlier ordinals.
                    status.state = "waiting for preceding transaction to commit"
                    self._lock.wait()
                    continue
                if (
                    len(queue) < gather_more
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
            limit = options.pending_jobs_size_max
            row_limit = self.limits.row_changes
            preserve = options.preserve_commit_order
            taken_along: list[Job] = []
            if head.txn.size <= limit:
                last = head.ordinal
                while len(batch) < cap and rows < row_limit:
                    # the next ordinal first, wherever it is queued: one commit for a chain of
                    # dependent transactions that the scheduler spread over several workers
                    if queue and queue[0].ordinal == last + 1:
                        source = queue
                    else:
                        source = self._queue_holding(last + 1)
                        if source is None:
                            if preserve or not queue:
                                break  # with commit order kept, a batch holds consecutive ordinals
                            source = queue
                    job = source[0]
                    # A DDL comes along only where everything before it is committed or in the
                    # batch (its dependency) and what follows it waits for it: the coordinator
                    # queues one so (_settle_definitions). Never a transaction too large to run
                    # beside others. How far the batch covers is looked up only when needed.
                    if job.after > covered:
                        covered = self._ready_through(covered, members)
                        if job.after > covered:
                            break
                    if job.txn.size > limit:
                        break
                    source.popleft()
                    if source is not queue:
                        taken_along.append(job)
                    batch.append(job)
                    last = job.ordinal
                    members.add(last)
                    if last == covered + 1:
                        covered = last
                    rows += job.txn.row_events
            if taken_along:
                self._transfer(taken_along, worker)
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

    def _queue_holding(self, ordinal: int) -> deque[Job] | None:
        """The queue whose head is `ordinal`, if any; the caller looks at its own queue's head
        first, the usual case. With commit order preserved a batch may only hold consecutive
        ordinals, and without it a dependent chain is best applied in one go; the next one may
        sit at the head of another worker's queue: taking it along (it is applied after its
        predecessor in the same DuckDB transaction, as the single applier would) keeps batches
        large when the scheduler spreads consecutive transactions over workers (DATABASE, and
        every clock's runs of dependent transactions)."""
        try:
            holder = self._workers[self._gaq.worker_of(ordinal)]
        except KeyError:
            return None
        if holder.queue and holder.queue[0].ordinal == ordinal:
            return holder.queue
        return None

    def _transfer(self, jobs: list[Job], to: WorkerQueue) -> None:
        """Jobs taken along from other workers' queues become `to`'s."""
        workers = self._workers
        index = to.status.worker - 1
        move_to = self._gaq.move_to
        for job in jobs:
            origin = workers[job.worker]
            origin.queued_bytes -= job.txn.size
            to.queued_bytes += job.txn.size
            job.worker = index
            move_to(job.ordinal, index)
        for origin in workers:
            origin.status.queued = len(origin.queue)

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
        self, worker: WorkerQueue, session: Slave, executor: TransactionExecutor, batch: list[Job]
    ) -> None:
        attempts = 0
        while True:
            try:
                self._apply_and_commit(worker, session, executor, batch)
                return
            except ChannelAborted:
                self._rollback(session, executor)
                raise
            except Exception as exc:  # a defect too: narrowed down to its transaction like an apply error
                self._rollback(session, executor)
                if is_write_conflict(exc) and attempts < CONFLICT_RETRIES:
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
        self, worker: WorkerQueue, session: Slave, executor: TransactionExecutor, batch: list[Job]
    ) -> None:
        session.begin(changes_definitions=any(job.alone for job in batch))
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
        ordinals = [job.ordinal for job in batch]
        transactions = [job.txn for job in batch]
        session.record_transactions(self.channel, ordinals, transactions, worker.status.worker)
        first = batch[0].ordinal
        with self._lock:
            if self.options.preserve_commit_order:
                worker.status.state = "waiting for preceding transaction to commit"
                while self._gaq.lwm < first - 1:
                    if self._aborting or (self._failure is not None and self._failure[1].ordinal < first):
                        raise ChannelAborted
                    self._lock.wait()
            if self._aborting:
                raise ChannelAborted
        session.commit()
        last = batch[-1].txn
        with self._lock:
            passed = self._gaq.commit(ordinals)
            self._lwm_executed.add_all([job.txn.gtid for job in passed if job.txn.gtid])
            if passed:
                self._lwm_job = passed[-1]
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
        if self.on_commit is not None:  # after the LWM moved: applied_progress() includes the batch
            self.on_commit(transactions)

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
        workers = self._workers
        released = 0
        for job in batch:
            size = job.txn.size
            workers[job.worker].queued_bytes -= size
            released += size
        self._pending_bytes -= released
        self._partitions.release_each([job.partitions for job in batch if job.partitions is not None])

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


def is_write_conflict(exc: Exception) -> bool:
    """Two workers wrote the same row (DuckDB's optimistic concurrency): retried, not an error."""
    return isinstance(exc, duckdb.TransactionException) and "onflict" in str(exc)
