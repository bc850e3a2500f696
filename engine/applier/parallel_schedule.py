"""The coordinator's scheduling: each transaction's ordinal, dependency and worker.

A transaction read the ordinary way is scheduled on its own (_schedule): its dependency from the
scheduler (the source's logical clock, its writeset, or the partition of its databases under
DATABASE), its worker the one the coordinator's current run goes to, or its partitions' worker.
A prepared run is scheduled a piece at a time (_schedule_in_pieces, _schedule_in_partitions):
the same dependencies, with the consecutive transactions that go to one worker enqueued together.
The coordinator waits (_wait) when a queue or replica_pending_jobs_size_max is full, when a
database is held by another worker, or when a transaction has to run alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection

import numpy as np

from ..scheduling.rowkeys import Decoded, WritesetKeys, transaction_writeset, writeset_keys
from ..transactions import Transaction, TransactionRecord
from .executor import is_structural
from .parallel_jobs import ChannelAborted, ChannelWork, Job
from .prepared import PreparedRun, RunWritesets
from .reading import read_chunks

# Transactions queued per worker (MySQL's mts_slave_worker_queue_len_max is 16384). Shorter here
# for a transaction read the ordinary way, whose Python objects weigh many times its relay-log
# bytes: reading further ahead only added memory and garbage-collector work (measured: 4x slower
# at 16384 on a hot-row log, when every transaction was read so).
READ_QUEUE_LENGTH = 2048
# A prepared transaction is a small record, its rows held in its run's Arrow tables. A worker's
# batch is at most what its queue holds, and under DATABASE a worker takes only its own queue, so
# a queue shorter than a batch cut the batches short: 8192 against 2048 measured 6-7% faster on
# the MariaDB capture with commit order on and off, 6-14% on a generated 100 MB OLTP log (the
# same peak memory; 473 MB against 456 on a 315 MB one); neutral under LOGICAL_CLOCK and hot rows.
WORKER_QUEUE_LENGTH = 8192
# Transactions of a prepared run claimed and enqueued together under DATABASE
PARTITION_PIECE = 256
# Transactions after a DDL that follow it to its worker, in stream order, before the coordinator
# waits for its commit (_settle_definitions): the short stretches between a DDL-heavy log's DDL.
CHAIN_AFTER_DEFINITIONS = 64


class Scheduling(ChannelWork):
    """The coordinator's side of ParallelApplier: scheduling onto the workers' queues."""

    # transactions after a DDL that follow it to its worker (_settle_definitions); 0: only DDL
    chain_after_definitions = CHAIN_AFTER_DEFINITIONS

    def _schedule_run(self, run: PreparedRun) -> None:
        """Schedule every transaction of a prepared run (those applied before are skipped). A run
        on a table the slave does not take set-based is read again and goes the ordinary way."""
        applied_before = run.gtids.any_in(self._scheduled)
        start = 0
        if self._definitions_pending:
            # Right after DDL: the first transactions follow it to its worker, as read ones do
            # (_schedule), unchecked: the catalog here is the one before the DDL is applied. The
            # worker checks the run's tables once it has applied the DDL (_apply_prepared), and
            # reads again what it cannot take set-based.
            start = min(len(run.transactions), self.chain_after_definitions - self._after_definitions)
            self._schedule_each(run, 0, start, applied_before, None, ())
            if start == len(run.transactions):
                self.stats.prepared_runs += 1
                return
        self._settle_definitions()
        if not self._takes_set_based(run):
            self._schedule_read_again(run, start)
            return
        self.stats.prepared_runs += 1
        keys = self._keys
        writesets = run.writesets if keys is not None else None
        stale = self._hashed_with_other_keys(run, keys) if writesets is not None else ()
        if (
            not applied_before
            and self.options.schedule is None
            and max(t.size for t in run.transactions) <= self.options.pending_jobs_size_max // 4
        ):
            if self.options.parallel_type == "database":
                end = self._schedule_in_partitions(run, start)
            else:
                end = self._schedule_in_pieces(run, writesets, stale, start)
            self._add_scheduled(run, start, end)
            return
        self._schedule_each(run, start, len(run.transactions), applied_before, writesets, stale)

    def _schedule_each(
        self,
        run: PreparedRun,
        start: int,
        end: int,
        applied_before: bool,
        writesets: RunWritesets | None,
        stale: Collection[int],
    ) -> None:
        """The run's transactions start..end one by one through _schedule (those applied before
        skipped, where the run holds any)."""
        for index in range(start, end):
            txn = run.transactions[index]
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return  # a run holds thousands: STOP waits for what was assigned, not for the run
            if applied_before and txn.gtid and self._scheduled.contains(txn.gtid):
                self.stats.skipped += 1
                self._clock.skipped(txn, self._gaq.next_ordinal - 1)  # type: ignore[arg-type]
                continue
            hashes = writesets[index] if writesets is not None and index not in stale else None
            self._schedule(txn, prepared=(run, index), hashes=hashes)

    def _schedule_read_again(self, run: PreparedRun, start: int) -> None:
        """The run's transactions from `start` on, read again from the relay log and scheduled as
        read (those applied before skipped)."""
        self.stats.runs_read_again += 1
        for item in self._read_run(run)[start:]:
            if item.gtid and self._scheduled.contains(item.gtid):
                self.stats.skipped += 1
                self._clock.skipped(item, self._gaq.next_ordinal - 1)
            else:
                self._schedule(item)

    def _schedule_in_pieces(
        self,
        run: PreparedRun,
        writesets: RunWritesets | None,
        stale: Collection[int],
        start: int = 0,
    ) -> int:
        """A prepared run under LOGICAL_CLOCK or WRITESET, scheduled a piece at a time: the
        dependencies of each transaction as _schedule gives them, and the consecutive ones that go
        to the same worker (_choose_worker's runs) enqueued at once, under one lock and one
        wake-up of the workers. One by one, the coordinator's locks, waits and wake-ups cost more
        than the scheduling itself (measured on the MariaDB capture: 0.30 s of the coordinator's
        0.46 s of CPU went to _schedule). Returns the index of the first transaction not
        scheduled (the run's length, unless STOP came first)."""
        transactions = run.transactions
        limit = self.options.pending_jobs_size_max
        logical_clock = self.options.parallel_type == "logical_clock"
        if writesets is not None:
            flat, ends, usable = writesets.as_lists()
        else:
            flat, ends, usable = [], [], [False] * len(transactions)
        index = start
        while index < len(transactions):
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return index  # STOP waits for what was assigned, not for the rest of the run
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
                    hashes = None
                    if usable[position] and position not in stale:
                        hashes = flat[ends[position - 1] if position else 0 : ends[position]]
                    after = self._history.dependency(
                        ordinal, hashes, commit_parent=ordinal - 1, distinct=True
                    )
                job = Job(ordinal, txn, after, False, None, None, worker_index, False, run, position)
                jobs.append(job)
                ordinal += 1
            with self._lock:
                self._enqueue_piece_locked(jobs)
                self._run_left -= count
            index += count
        return index

    def _schedule_in_partitions(self, run: PreparedRun, start: int = 0) -> int:
        """A prepared run under DATABASE, a piece at a time: the piece's transactions claim their
        partitions in turn (DatabasePartitions.claim_each) and are enqueued together, in ordinal
        order, under one lock and one wake-up; each is ordered after the last earlier one on its
        databases, as _claim_partitions orders it. A claim that would have to wait (a database
        held by another worker) or run alone ends the piece: that transaction goes the one-by-one
        way, which waits, once everything before it is enqueued. Returns the index of the first
        transaction not scheduled, as _schedule_in_pieces does."""
        transactions = run.transactions
        limit = self.options.pending_jobs_size_max
        preserve = self.options.preserve_commit_order
        workers = self._workers
        index = start
        while index < len(transactions):
            if self.stop.is_set() or self.kill.is_set() or self._failure is not None:
                return index  # STOP waits for what was assigned, not for the rest of the run
            count = min(PARTITION_PIECE, len(transactions) - index)
            piece = transactions[index : index + count]
            sizes = [txn.size for txn in piece]
            size = sum(sizes)
            # everything before the piece is enqueued, so the workers drain towards this
            room = max(0, WORKER_QUEUE_LENGTH - count)
            self._wait(lambda room=room: all(len(w.queue) <= room for w in workers), "queue_full")
            self._wait(lambda size=size: self._pending_bytes + size <= limit, "total_size")
            jobs: list[Job] = []
            with self._lock:
                ordinal = self._gaq.next_ordinal
                loads = [w.queued_bytes for w in workers]
                claimed = self._partitions.claim_each(
                    [txn.databases for txn in piece], sizes, loads, preserve
                )
                for offset, worker in enumerate(claimed):
                    txn = piece[offset]
                    databases = txn.databases
                    after = self._after_on_databases(databases, ordinal)  # type: ignore[arg-type]
                    jobs.append(
                        Job(ordinal, txn, after, False, None, databases, worker, False, run, index + offset)
                    )
                    ordinal += 1
                self._enqueue_piece_locked(jobs)
            index += len(jobs)
            if len(jobs) < count:
                self._schedule(transactions[index], prepared=(run, index))
                index += 1
        return index

    def _add_scheduled(self, run: PreparedRun, start: int, end: int) -> None:
        """The GTIDs of the run's transactions start..end to what the coordinator has scheduled,
        once the pieces are enqueued: the whole run's summed up per MariaDB domain and MySQL
        range (its GtidBatch) where it went whole, instead of each transaction's."""
        if start == 0 and end == len(run.transactions):
            run.gtids.add_to(self._scheduled)
        else:
            self._scheduled.add_all([txn.gtid for txn in run.transactions[start:end] if txn.gtid])

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
        structural = prepared is None and not oversized and is_structural(txn)  # type: ignore[arg-type]
        alone = oversized or structural
        chained = (
            self._definitions_pending != 0
            and not oversized
            and (structural or self._after_definitions < self.chain_after_definitions)
        )
        if not chained:
            self._settle_definitions()
        decoded: Decoded | None = None
        kind = self.options.parallel_type
        with self._lock:
            ordinal = self._gaq.next_ordinal
        if chained and kind == "writeset":
            # its writeset would need the keys the DDL ahead of it leaves: none, a new window
            after = self._history.dependency(ordinal, None, commit_parent=ordinal - 1)
        elif chained and kind == "database":
            # no partition claimed: its worker is the DDL's, which applies it in stream order
            after = self._after_on_databases(txn.databases or frozenset(), ordinal)
        elif (
            kind == "writeset" and self.options.schedule is not None and ordinal <= len(self.options.schedule)
        ):
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
        if chained:
            worker = 0
        elif kind == "database" and not alone:
            worker = self._claim_partitions(job)
        elif alone:
            self._wait(lambda: self._gaq.uncommitted() == 0, "total_size" if oversized else "sequential")
            worker = 0
        else:
            worker = self._choose_worker(job)
        self._enqueue(job, worker)
        if txn.gtid:
            self._scheduled.add(txn.gtid)
        if structural:
            # What follows goes the same way, until _settle_definitions: the worker applies the
            # DDL and what it finds queued after it in one DuckDB transaction.
            self._definitions_pending = ordinal
            self._after_definitions = 0
        elif chained:
            self._definitions_pending = ordinal
            self._after_definitions += 1
        elif job.alone:
            # Nothing runs beside it, and what comes next is scheduled against the catalog and
            # the partitions as they are after it.
            self._wait(lambda: self._gaq.is_committed(ordinal), "sequential")

    def _settle_definitions(self) -> None:
        """Wait until the DDL scheduled last, and what was chained after it, has committed.

        A DDL runs alone, as MySQL runs it: after everything before it, and nothing after it
        runs beside it. What follows it is normally scheduled once it has committed, against
        the catalog as it leaves it (WRITESET's keys, the tables a prepared run needs). Waiting
        for each DDL's commit that way cost more than the DDL on a DDL-heavy log (a DuckDB
        commit per DDL, with its WAL's fdatasync): so a DDL, the DDL after it and up to
        chain_after_definitions transactions after the last of them go to the DDL's worker in
        stream order, one after the other (a chain), and the worker applies what it finds
        queued as one DuckDB transaction. What comes next waits here for the chain's end, so
        every ordinal a later dependency can name has committed by then. A chained transaction
        claims no partition, and under WRITESET has no writeset (a new window, as MySQL
        schedules one without): the keys the DDL ahead of it leaves are not known yet."""
        pending = self._definitions_pending
        if not pending:
            return
        self._wait(lambda: self._gaq.is_committed(pending), "sequential")
        self._definitions_pending = 0
        if self._keys is not None:
            keys = writeset_keys(self.slave.catalog, self._keys.version + 1)
            if keys != self._keys:
                # segments prepared before now hashed with the keys as they were
                self._keys = self._keys_of_version[keys.version] = keys
                self._ahead_after_ddl = 0

    def _claim_partitions(self, job: Job) -> int:
        databases = job.txn.databases
        while True:
            with self._lock:
                claim = self._partitions.claim(
                    databases, [w.queued_bytes for w in self._workers], self.options.preserve_commit_order
                )
            if claim.kind == "assign":
                job.partitions = databases
                job.after = self._after_on_databases(databases, job.ordinal)  # type: ignore[arg-type]
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

    def _after_on_databases(self, databases: frozenset[str], ordinal: int) -> int:
        """DATABASE: transaction `ordinal` is now the last on each of its databases; returns its
        dependency, the last earlier one on any of them with commit order preserved (0 without).

        The partition's worker orders it after the earlier transactions on its databases. With
        commit order preserved a batch may take consecutive transactions from other queues too
        (_queue_holding), so the order is also stated. The usual transaction touches a single
        database: one lookup."""
        last_on_database = self._last_on_database
        if len(databases) == 1:
            (database,) = databases
            after = last_on_database.get(database, 0)
            last_on_database[database] = ordinal
        else:
            after = max((last_on_database.get(db, 0) for db in databases), default=0)
            for db in databases:
                last_on_database[db] = ordinal
        return after if self.options.preserve_commit_order else 0

    def _choose_worker(self, job: Job) -> int:
        with self._lock:
            worker = self._run_worker_locked(READ_QUEUE_LENGTH)
            self._run_left -= 1
            return worker

    def _run_worker_locked(self, queue_length: int = WORKER_QUEUE_LENGTH) -> int:
        """The worker the coordinator's current run of consecutive transactions goes to: the same
        one while the run lasts and its queue has room (queue_length: prepared or read), then the
        least loaded one after it."""
        if self._run_left <= 0 or len(self._workers[self._run_worker].queue) >= queue_length:
            loads = [len(w.queue) for w in self._workers]
            start = (self._run_worker + 1) % len(self._workers)
            order = [(start + i) % len(self._workers) for i in range(len(self._workers))]
            self._run_worker = min(order, key=lambda w: loads[w])
            self._run_left = self._run_length
        return self._run_worker

    def _enqueue_piece_locked(self, jobs: list[Job]) -> None:
        """Jobs numbered from the GAQ's next ordinal on, each with its worker, enqueued in order
        with one wake-up of the workers (the caller holds the lock and has waited for room; their
        GTIDs go to _scheduled, the coordinator's own, outside the lock: _add_scheduled)."""
        workers = self._workers
        self._gaq.enqueue_all([job.worker for job in jobs], jobs)
        for job in jobs:
            worker = workers[job.worker]
            worker.queue.append(job)
            worker.queued_bytes += job.txn.size
            self._pending_bytes += job.txn.size
        for worker in workers:
            worker.status.queued = len(worker.queue)
        self._caught_up = False
        self._lock.notify_all()

    def _enqueue(self, job: Job, worker_index: int) -> None:
        size = job.txn.size
        limit = self.options.pending_jobs_size_max
        worker = self._workers[worker_index]
        if size > limit:
            # Larger than the bound: waits for every queue to empty and runs alone.
            self._wait(lambda: self._pending_bytes == 0, "total_size")
        else:
            self._wait(lambda: self._pending_bytes + size <= limit, "total_size")
        self._wait(lambda: len(worker.queue) < READ_QUEUE_LENGTH, "queue_full")
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
        """Wait (counted under `reason`) until ready(), checkpointing meanwhile; ChannelAborted on failure."""
        started = None
        while True:
            with self._lock:
                if self._failure is not None or self._aborting:
                    raise ChannelAborted
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
        self._settle_definitions()  # committed with the rest: what follows is scheduled as usual
