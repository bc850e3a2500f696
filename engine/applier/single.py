"""The single applier of one channel (replica_parallel_workers = 0): read, group, apply, commit.

Consecutive transactions are combined into one DuckDB transaction (the seeds' "combine several
small transactions into a bigger one") and their row changes applied set-based. DDL joins the
batch too, applied in its turn (DuckDB's DDL is transactional): committed alone, each one cost a
DuckDB commit with its WAL's fdatasync, which made a DDL-heavy log (`relaydeck generate --workload
ddl`) 1.7x slower. If anything in a combined batch fails, the batch is rolled back and its
transactions are applied again one per commit, so that the slave stops at the last whole
transaction before the failing one and the error names exactly that transaction.

Following a live source, the batch is committed each time the reader has caught up. What such a
small commit costs is DuckDB's fixed price per statement, not its rows. Measured under `relaydeck
serve`'s receiver at 1,000 one-row transactions/s (benchmarks/receiver_lag.py; 13 transactions a
commit, the machine loaded by other work): BEGIN 0.3 ms; the rows 5.9 ms (per table touched: the
Arrow operations registered, DELETE … RETURNING, INSERT … SELECT, unregistered; 2.5 ms of it on
an idle core; the registering is since done once per connection, slave/arrow_inputs.py); the
position and the commit records 3.2 ms; COMMIT 2.0 ms (the WAL written and fdatasync'd): 12 ms
a commit. benchmarks/live_throughput.py's OLTP transactions touch five tables a commit with rows
scattered through them: 8.4 ms a table, 62 ms a commit, which is its lag.
Not in the commit: the repository (SQLite) is written by the status publisher and the receiver
in their own threads (every 0.25 and 0.2 s); DuckDB checkpoints only when its WAL passes 64 MB.
So the applier commits back to back (70 commits a second at 1,000 trx/s, 0.55-0.8 ms of CPU per
transaction), and on a machine whose cores are busy with other work the lag's tail follows the
scheduler more than these costs. Spacing caught-up commits at least 25 ms apart was tried: 35-40%
less CPU, but 15-20 ms more lag at the median, and at 5,000 trx/s the wait cost the reader its
reading time and the lag grew (2 runs of 2), so every catch-up still commits.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from ..binlog.events import Incident
from ..binlog.reader import LoggedEvent
from ..errors import BinlogError
from ..gtids import ExecutedGtids
from ..relaylog.continuity import Continuity
from ..relaylog.follow import CaughtUp, grows_within
from ..relaylog.index import RelayLogSet
from ..slave.database import ChannelProgress, CommitRecord, Slave
from ..transactions import Incomplete, Transaction, TransactionPart
from .budget import ByteBudget
from .controls import StartControls
from .executor import TransactionExecutor, is_structural
from .reading import AnyEvent, continuity_after, held_size, read_chunks
from .vocabulary import (
    ApplyStats,
    BatchLimits,
    BatchRamp,
    ChannelError,
    CommitCallback,
    ProgressCallback,
    Until,
    incident_error,
    progress_after,
    transaction_error,
)

_SWITCH_INTERVAL_S = 0.001
# Following a busy source, a small batch caught up right after the last commit waits this long
# at most for more transactions to join it (see ChannelApplier._more_coming)
COMMIT_WINDOW_MAX_S = 0.02
COMMIT_WINDOW_BATCH = 8  # transactions: a batch this large is committed at once


class ChannelApplier:
    """Replays one channel's relay logs into the slave from where the slave says it stopped."""

    def __init__(
        self,
        slave: Slave,
        channel: str,
        logs: RelayLogSet,
        limits: BatchLimits | None = None,
        until: Until | None = None,
        on_progress: ProgressCallback | None = None,
        stop: threading.Event | None = None,
        controls: StartControls | None = None,
        follow: bool = False,
        on_commit: CommitCallback | None = None,
    ) -> None:
        """follow: keep applying as the relay logs grow, until stop (`relaydeck replay --follow`)."""
        self.slave = slave
        self.follow = follow
        self.on_commit = on_commit
        self.controls = controls or StartControls()
        self._skip: set[int] = set()  # id() of transactions the skip counter took
        # id() of the batched transactions that change definitions: their batch takes the DDL lock
        self._structural: set[int] = set()
        self.channel = channel
        self.logs = logs
        self.limits = limits or BatchLimits()
        self.until = until
        self.on_progress = on_progress
        self.stop = stop or threading.Event()
        self.stats = ApplyStats()
        self.budget = ByteBudget(self.limits.bytes)
        self.executor = TransactionExecutor(slave, flush_bytes=self.budget.decoded_bytes)
        # A transaction read in parts: its first part, once its DuckDB transaction is open (or it
        # was applied before, and its parts are skipped).
        self._stream: TransactionPart | None = None
        self._stream_skipped = False
        progress = slave.progress(channel)
        self.progress = progress or ChannelProgress(channel)
        self.executed = ExecutedGtids.parse(self.progress.executed_gtids)
        self._scheduled = ExecutedGtids.parse(self.progress.executed_gtids)  # executed or batched
        # Commit-behind: a full batch is applied and committed by a second thread while this one
        # reads and groups the next. DuckDB releases the GIL while it executes, so its share of
        # the work overlaps the reading instead of following it. One batch at most is in flight.
        self._committer: ThreadPoolExecutor | None = None
        self._in_flight: Future[None] | None = None
        self.continuity = continuity_after(self.progress, self.controls)
        self._last_commit_s = 0.0  # how long the last commit took, and when it ended
        self._last_commit_end = 0.0

    def run(self) -> ApplyStats:
        """Apply until the end of the available relay log, an UNTIL condition, or stop()."""
        start_file = self.progress.relay_log_file
        if start_file is not None and start_file not in {p.name for p in self.logs.files}:
            raise ChannelError(
                self.channel,
                1372,
                f"relay log file {start_file} the slave stopped in is not in the index",
                None,
                f"{start_file}:{self.progress.relay_log_pos}",
            )
        if self.until is not None and self.until.satisfied_at_start(self.executed):
            self.stats.stopped_by = "UNTIL condition"
            return self.stats
        reader = self._reader(start_file)
        batch: list[Transaction] = []
        batch_rows = batch_bytes = 0
        batch_started = time.monotonic()
        ramp = BatchRamp(self.limits)
        try:
            for chunk in reader:
                self.budget.take(sum([held_size(item) for item in chunk]))  # released once applied
                work = deque(chunk)
                while work:
                    item = work.popleft()
                    if type(item) is TransactionPart:
                        if self._stream is None:
                            self._commit(batch)  # a large transaction is applied alone
                            batch, batch_rows, batch_bytes, batch_started = [], 0, 0, time.monotonic()
                        self._apply_part(item)
                        continue
                    if type(item) is Transaction and item.streamed:
                        self._finish_stream(item)
                        if self.on_progress is not None:
                            self.on_progress(self.stats, item)
                        continue
                    if type(item) is Incomplete:
                        self._abandon_stream()  # the source abandoned it: MySQL rolls it back
                    if isinstance(item, Transaction):
                        if item.gtid:
                            if self._scheduled.contains(item.gtid):
                                self.stats.skipped += 1  # applied before (a restarted relay log)
                                self.budget.release(item.size)
                                continue
                            if self.until is not None and self.until.stops_before(item):
                                self._commit(batch)
                                self.stats.stopped_by = "UNTIL condition"
                                return self.stats
                            self._scheduled.add(item.gtid)
                        if self.controls.take_skip(item):
                            self._skip.add(id(item))
                            self.stats.skipped_by_counter += 1
                        else:
                            due = self.controls.due(item)
                            if due is not None:
                                self._commit(batch)  # what came before shows while this one waits
                                batch, batch_rows, batch_bytes, batch_started = [], 0, 0, time.monotonic()
                                if not self.controls.wait_until(due, self.stop):
                                    self.stats.stopped_by = "STOP"
                                    return self.stats
                        if is_structural(item):
                            self._structural.add(id(item))
                        batch.append(item)
                        batch_rows += item.row_events
                        batch_bytes += item.size
                        if self.until is not None and self._until_reached(batch, item):
                            self._commit(batch)
                            self.stats.stopped_by = "UNTIL condition"
                            return self.stats
                    elif isinstance(item, LoggedEvent) and isinstance(item.event, Incident):
                        self._commit(batch)
                        raise incident_error(self.channel, item)
                    elif isinstance(item, CaughtUp) and not (batch and self._more_coming(batch)):
                        self._commit(batch)  # nothing more has arrived: show what there is
                        batch, batch_rows, batch_bytes, batch_started = [], 0, 0, time.monotonic()
                    if self.on_progress is not None:
                        self.on_progress(self.stats, item)
                    if batch and (
                        len(batch) >= ramp.transactions
                        or batch_rows >= self.limits.row_changes
                        or batch_bytes >= self.budget.batch_bytes
                        or time.monotonic() - batch_started >= ramp.seconds
                    ):
                        self._commit_behind(batch)
                        batch, batch_rows, batch_bytes, batch_started = [], 0, 0, time.monotonic()
                        ramp.grow()
                if self.stop.is_set():
                    self.stats.stopped_by = "STOP"
                    break
            self._abandon_stream()  # its end has not arrived: nothing of it is committed
            self._commit(batch)
            if self.stop.is_set():
                self.stats.stopped_by = "STOP"
        except BinlogError:
            self._abandon_stream()
            self._commit(batch)  # what was read whole before the bad event
            raise
        except BaseException:
            # A batch still in flight comes first in the stream: its error, if any, is the one
            # that stopped the channel.
            self._wait_for_commit()
            self._abandon_stream()
            raise
        finally:
            reader.close()
            self.stats.gaps_accepted = self.continuity.accepted
            if self._committer is not None:
                self._committer.shutdown(wait=True)
                self._committer = None
        return self.stats

    def _reader(self, start_file: str | None) -> Iterator[list[object]]:
        follow = AnyEvent(self.stop) if self.follow else None
        return self._read_from(start_file, self.progress.relay_log_pos, follow, self.continuity)

    def _read_from(
        self,
        start_file: str | None,
        pos: int,
        follow: AnyEvent | None = None,
        continuity: Continuity | None = None,
    ) -> Iterator[list[object]]:
        """The ordinary reader, within the byte budget. Large transactions come in parts except
        where each transaction is looked at whole before it is applied (UNTIL, the skip counter,
        SQL_Delay). continuity: the check of what it reads (None: a range checked already)."""
        one_at_a_time = self.until is not None or self.controls.skip_counter or self.controls.sql_delay
        return read_chunks(
            self.logs, start_file, pos, follow, self.budget, parts=not one_at_a_time, continuity=continuity
        )

    def _commit_behind(self, batch: list[Transaction]) -> None:
        """Hand a full batch to the committer thread (after the one before it is committed).

        Only when nothing in the loop reads what a commit changes before the next one: UNTIL
        conditions look at the executed GTIDs, so they keep every commit in this thread.
        """
        if self.until is not None:
            self._commit(batch)
            return
        self._wait_for_commit()
        if self._committer is None:
            self._committer = ThreadPoolExecutor(1, thread_name_prefix=f"commit-{self.channel or 'default'}")
            # DuckDB hands the GIL back when a statement ends; with the default 5 ms switch
            # interval the committer would wait that long after each of its statements.
            if sys.getswitchinterval() > _SWITCH_INTERVAL_S:
                sys.setswitchinterval(_SWITCH_INTERVAL_S)
        self._in_flight = self._committer.submit(self._commit_now, batch)

    def _wait_for_commit(self) -> None:
        """The batch in flight is committed (or its error raised here)."""
        if self._in_flight is not None:
            in_flight, self._in_flight = self._in_flight, None
            in_flight.result()

    def _until_reached(self, batch: list[Transaction], txn: Transaction) -> bool:
        assert self.until is not None
        trial = ExecutedGtids.parse(str(self.executed))
        for pending in batch:
            if pending.gtid:
                trial.add(pending.gtid)
        if txn.gtid:
            trial.add(txn.gtid)
        return self.until.reached_after(txn, trial)

    def _commit(self, batch: list[Transaction]) -> None:
        """Commit a batch in this thread, after any batch in flight."""
        self._wait_for_commit()
        started = time.monotonic()
        self._commit_now(batch)
        if batch:
            self._last_commit_end = time.monotonic()
            self._last_commit_s = self._last_commit_end - started

    def _more_coming(self, batch: list[Transaction]) -> bool:
        """Caught up with a batch in hand, right after a commit: whether more transactions arrive
        before as long again as that commit took (at most COMMIT_WINDOW_MAX_S), so that they join
        this batch. A DuckDB commit costs milliseconds whatever it holds, so a source that sends
        transactions as fast as they commit kept the applier busy committing one at a time, each
        transaction waiting for the ones before it; joined, they commit in fewer, and wait less.
        A transaction that arrives while the applier has been idle that long is applied at once,
        and so is a batch of COMMIT_WINDOW_BATCH: its commit's cost is shared already, and an
        applier that is behind must not sit idle (waiting each time as long as it committed
        halved what it kept up with). Only where a receiver of this process writes the relay
        logs: it says when they grow."""
        if len(batch) >= COMMIT_WINDOW_BATCH:
            return False
        window = min(COMMIT_WINDOW_MAX_S, self._last_commit_s)
        left = window - (time.monotonic() - self._last_commit_end)
        if left <= 0 or self.logs.index_file is None:
            return False
        return grows_within(self.logs.index_file, left) is True

    def _commit_now(self, batch: list[Transaction]) -> None:
        """Apply and commit a batch as one DuckDB transaction; on failure, narrow down to the culprit."""
        if not batch:
            return
        # Any failure, a defect included, is narrowed down to its transaction: the channel stops
        # right before it and the error names it (and the rollback frees the DDL lock other
        # channels may wait on).
        try:
            self._apply_batch(batch)
        finally:
            self.budget.release(sum([t.size for t in batch]))
            if self._structural:
                self._structural.difference_update([id(t) for t in batch])

    def _apply_batch(self, batch: list[Transaction]) -> None:
        try:
            try:
                self._apply_and_commit(batch)
            except Exception as exc:
                self._rollback()
                if len(batch) == 1:
                    raise self._channel_error(batch[0], exc) from None
                for txn in batch:
                    try:
                        self._apply_and_commit([txn])
                    except Exception as single:
                        self._rollback()
                        raise self._channel_error(txn, single) from None
        except ChannelError:
            raise
        except BaseException:  # KeyboardInterrupt and the like: still no DDL lock kept
            self._rollback()
            raise

    def _apply_part(self, part: TransactionPart) -> None:
        """A part of a large transaction, applied (its rows flushed to DuckDB) inside the DuckDB
        transaction that its last events will commit."""
        try:
            if self._stream is None:
                self._stream = part
                self._stream_skipped = bool(part.gtid) and self._scheduled.contains(part.gtid)  # type: ignore[arg-type]
                if not self._stream_skipped:
                    self.slave.begin()
            if not self._stream_skipped:
                try:
                    self.executor.apply(part)
                    self.executor.flush()
                except Exception as exc:  # a defect too: located like an apply error
                    self._abandon_stream()
                    raise self._channel_error(part, exc) from None
        finally:
            self.budget.release(part.size)

    def _finish_stream(self, txn: Transaction) -> None:
        """The last events of a transaction read in parts: applied, and the whole committed."""
        assert self._stream is not None, "a transaction's parts come before its end"
        try:
            if self._stream_skipped:
                self.stats.skipped += 1  # applied before (a restarted relay log)
                return
            if txn.gtid:
                self._scheduled.add(txn.gtid)
            try:
                self._apply_and_commit([txn], begun=True)
            except Exception as exc:  # a defect too: located like an apply error
                self._rollback()
                raise self._channel_error(txn, exc) from None
            except BaseException:
                self._rollback()
                raise
        finally:
            self._stream = None
            self.budget.release(txn.size - txn.streamed)

    def _abandon_stream(self) -> None:
        """Roll back the parts of a transaction whose end will not be applied in this run."""
        if self._stream is not None:
            if not self._stream_skipped:
                self._rollback()
            self._stream = None

    def _apply_and_commit(self, batch: list[Transaction], begun: bool = False) -> None:
        """begun: the DuckDB transaction is open already (a transaction read in parts)."""
        if not begun:
            # Definitions change inside the batch, beside its row changes (DuckDB's DDL is
            # transactional): the lock is taken before the DuckDB transaction starts, so that its
            # snapshot holds every other channel's committed definitions.
            structural = self._structural
            self.slave.begin(changes_definitions=bool(structural) and any(id(t) in structural for t in batch))
        for txn in batch:
            if id(txn) not in self._skip:
                self.executor.apply(txn)
        self.executor.flush()
        executed = ExecutedGtids.parse(str(self.executed))
        commits = []
        seqno = self.progress.transactions
        for txn in batch:
            seqno += 1
            if txn.gtid:
                executed.add(txn.gtid)
            commits.append(
                CommitRecord(
                    self.channel,
                    seqno,
                    txn.gtid,
                    txn.end.log_name,
                    txn.end.pos,
                    txn.source_log_file,
                    txn.source_end_pos,
                )
            )
        progress = progress_after(self.progress, batch[-1], str(executed), seqno)
        self.slave.record(progress, commits)
        self.slave.commit()
        self.progress, self.executed = progress, executed
        if self.on_commit is not None:
            self.on_commit(batch)
        self.stats.transactions += len(batch)
        self.stats.commits += 1
        self.stats.bytes += sum(t.size for t in batch)
        self.stats.row_changes = self.executor.rows.rows_applied

    def applied_progress(self) -> ChannelProgress:
        """Where the channel stands now (its last commit)."""
        return self.progress

    def _rollback(self) -> None:
        self.slave.rollback()
        self.executor.discard()

    def _channel_error(self, txn: Transaction | TransactionPart, exc: Exception) -> ChannelError:
        return transaction_error(self.channel, txn, exc)
