"""The words the appliers are started with and report in, shared by the single applier
(single.py), the multi-threaded one (parallel.py), recovery, replay, the replica server and the
command line: the batch limits, UNTIL, the multi-threaded applier's options, the statistics, the
checkpoint and worker status it reports, and the error that stops a channel, with how an apply
error is worded in it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import duckdb

from ..binlog.reader import LoggedEvent
from ..errors import RelaydeckError
from ..gtids import ExecutedGtids, GtidSet
from ..pool import EXECUTOR_KINDS
from ..scheduling.gaq import WorkerCheckpoint
from ..scheduling.writeset import DEFAULT_HISTORY_SIZE
from ..slave.database import ChannelProgress
from ..slave.rowapply import ApplyError, InvalidString
from ..slave.untranslatable import UntranslatableStatement
from ..transactions import Transaction, TransactionPart
from .budget import DEFAULT_BUDGET
from .executor import locate_invalid_string

ER_UNKNOWN_ERROR = 1105
ER_INCIDENT = 1590


class ChannelError(RelaydeckError):
    """The channel stopped on an apply error; the slave holds every transaction before it."""

    def __init__(
        self, channel: str, errno: int, message: str, transaction: str | None, position: str | None
    ) -> None:
        self.channel = channel
        self.errno = errno
        self.message = message
        self.transaction = transaction
        self.position = position
        where = f" in transaction {transaction}" if transaction else ""
        at = f" (relay log {position})" if position else ""
        name = f"'{channel}'" if channel else "''"
        super().__init__(f"channel {name}: Error {errno}{where}{at}: {message}")


@dataclass(slots=True, unsafe_hash=True)
class BatchLimits:
    """When a combined DuckDB transaction is committed."""

    # Measured on the MariaDB capture: larger groups amortise DuckDB's per-commit and per-table
    # statement costs (500 trx/commit: 1,430 trx/s; 2,000: 2,460; 20,000: 2,890), up to the point
    # where one batch's Arrow tables get large (50,000: 2,290).
    transactions: int = 20_000
    row_changes: int = 400_000
    seconds: float = 5.0
    # relay-log bytes read and not yet committed (see budget.py): a batch is at most a quarter
    bytes: int = DEFAULT_BUDGET


# A start's first batch is small, and each batch after it may be this many times larger, up to
# the limits: after a restart the first commit comes within a fraction of a second (with 20,000
# transactions or 5 s to a batch, a replay killed every few seconds could commit nothing), while a
# long replay still commits in large batches, at the price of a handful more commits.
FIRST_BATCH_TRANSACTIONS = 256
FIRST_BATCH_SECONDS = 0.25
BATCH_GROWTH = 4


@dataclass(slots=True)
class BatchRamp:
    """The limits of the next batch: small at a start, growing to `limits` batch after batch."""

    limits: BatchLimits
    transactions: int = 0
    seconds: float = 0.0

    def __post_init__(self) -> None:
        self.transactions = min(self.limits.transactions, FIRST_BATCH_TRANSACTIONS)
        self.seconds = min(self.limits.seconds, FIRST_BATCH_SECONDS)

    def grow(self) -> None:
        self.transactions = min(self.limits.transactions, self.transactions * BATCH_GROWTH)
        self.seconds = min(self.limits.seconds, self.seconds * BATCH_GROWTH)


@dataclass(slots=True, unsafe_hash=True)
class Until:
    """START REPLICA UNTIL: SQL_BEFORE_GTIDS, SQL_AFTER_GTIDS, or a relay/source log position.

    log_kind says which log log_file names: "relay", "source", or "either" (the command line's
    --until-pos, which matches a name of either kind).
    """

    after_gtids: str | None = None
    log_file: str | None = None
    log_pos: int | None = None
    before_gtids: str | None = None
    log_kind: str = "either"

    def reached_after(self, txn: Transaction, executed: ExecutedGtids) -> bool:
        if self.after_gtids is not None:
            return _covers(executed, _parsed_set(self.after_gtids))
        if self.log_file is not None and self.log_pos is not None:
            if self.log_kind != "source" and txn.end.log_name == self.log_file:
                return txn.end.pos >= self.log_pos
            if self.log_kind != "relay" and txn.source_log_file == self.log_file:
                return txn.source_end_pos >= self.log_pos
        return False

    def stops_before(self, txn: Transaction) -> bool:
        """SQL_BEFORE_GTIDS: the transaction is one of the set, so the channel stops before it."""
        if self.before_gtids is None or not txn.gtid:
            return False
        return _in_set(txn.gtid, self.before_gtids)

    def satisfied_at_start(self, executed: ExecutedGtids) -> bool:
        """SQL_BEFORE_GTIDS naming a transaction already applied: too late to stop before it (MySQL
        stops at once); SQL_AFTER_GTIDS all applied: nothing left to wait for."""
        if self.before_gtids is not None:
            return _overlaps(_parsed_set(self.before_gtids), executed)
        if self.after_gtids is not None:
            return _covers(executed, _parsed_set(self.after_gtids))
        return False


@functools.lru_cache(maxsize=8)
def _parsed_set(text: str) -> ExecutedGtids:
    """UNTIL's set, parsed once (it is checked for every transaction; callers do not change it)."""
    return ExecutedGtids.parse(text)


def _in_set(gtid: str, set_text: str) -> bool:
    wanted = _parsed_set(set_text)
    if ":" in gtid:
        return wanted.contains(gtid)
    # A MariaDB position names one GTID per domain, not everything up to it
    return gtid in {str(g) for g in wanted.maria.values()}


def _overlaps(wanted: ExecutedGtids, executed: ExecutedGtids) -> bool:
    if any(executed.contains(str(g)) for g in wanted.maria.values()):
        return True
    done = executed.mysql.intervals()
    for sid, ranges in wanted.mysql.intervals().items():
        for lo, hi in ranges:
            if any(a <= hi and lo <= b for a, b in done.get(sid, ())):
                return True
    return False


def _covers(executed: ExecutedGtids, wanted: ExecutedGtids) -> bool:
    if not all(executed.contains(str(g)) for g in wanted.maria.values()):
        return False
    done = executed.mysql.intervals()  # merged: a covered interval lies inside one of them
    return all(
        any(a <= lo and hi <= b for a, b in done.get(sid, ()))
        for sid, ranges in wanted.mysql.intervals().items()
        for lo, hi in ranges
    )


@dataclass(slots=True)
class ApplyStats:
    transactions: int = 0
    skipped: int = 0  # already applied (by GTID)
    skipped_by_counter: int = 0  # sql_replica_skip_counter
    gaps_accepted: int = 0  # relay-log discontinuities the skip counter let past
    row_changes: int = 0
    bytes: int = 0
    commits: int = 0
    stopped_by: str = "end of relay log"
    prepared_runs: int = 0  # runs the preparing stage prepared, scheduled as prepared (parallel applier)
    runs_read_again: int = 0  # prepared runs or transactions that went the ordinary way instead
    started: float = field(default_factory=time.monotonic)


ProgressCallback = Callable[[ApplyStats, LoggedEvent | Transaction | None], None]
CommitCallback = Callable[[list[Transaction]], None]  # after each DuckDB commit, with what it held


PARALLEL_TYPES = ("database", "logical_clock", "writeset")
POOLS = EXECUTOR_KINDS


@dataclass(slots=True, unsafe_hash=True)
class ParallelOptions:
    """The MySQL variables of the multi-threaded applier, MySQL 8.0's defaults."""

    workers: int = 4  # replica_parallel_workers
    parallel_type: str = "writeset"  # replica_parallel_type, extended with WRITESET
    preserve_commit_order: bool = True  # replica_preserve_commit_order
    pending_jobs_size_max: int = 128 * 1024 * 1024  # replica_pending_jobs_size_max (bytes)
    checkpoint_group: int = 512  # replica_checkpoint_group (transactions)
    checkpoint_period_ms: int = 300  # replica_checkpoint_period
    history_size: int = DEFAULT_HISTORY_SIZE  # binlog_transaction_dependency_history_size
    stop_timeout_s: float = 60.0  # STOP waits this long for assigned transactions
    # where the relay log is prepared (engine/pool): "processes" (local processes, one per core),
    # "spark" (Spark tasks), "threads" (the coordinator's own thread: tiny logs, tests)
    pool: str = "processes"
    # WRITESET dependencies computed beforehand (`relaydeck analyze --schedule-out`): the after-ordinal
    # of transaction 1, 2, … of the relay log read from its start
    schedule: tuple[int, ...] | None = None
    spark_master: str | None = None  # a cluster URL; None: local mode with `workers` cores

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= 1024:
            raise ValueError("the multi-threaded applier has 1 to 1024 workers")
        if self.parallel_type not in PARALLEL_TYPES:
            raise ValueError(f"replica_parallel_type is one of {', '.join(PARALLEL_TYPES)}")
        if self.checkpoint_group < 1 or self.checkpoint_period_ms < 1:
            raise ValueError("checkpoint group and period must be positive")
        if self.pool not in POOLS:
            raise ValueError(f"the worker pool is one of {', '.join(POOLS)}")


@dataclass(slots=True)
class WaitCounters:
    """How often and how long the coordinator waited, by reason (MySQL's MTA statistics)."""

    queue_full: int = 0  # a worker's queue was at its length limit
    queue_full_s: float = 0.0
    total_size: int = 0  # replica_pending_jobs_size_max reached
    total_size_s: float = 0.0
    partition: int = 0  # DATABASE: a database held by another worker
    partition_s: float = 0.0
    sequential: int = 0  # a transaction that runs alone waited for the others
    sequential_s: float = 0.0
    worker_clock: int = 0  # workers waiting for a dependency (the clock conflicts)

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


@dataclass(slots=True)
class WorkerStatus:
    worker: int
    state: str = "idle"
    applying: str | None = None
    last_applied: str | None = None
    last_applied_at: float | None = None
    transactions: int = 0
    rows: int = 0  # row changes committed
    batches: int = 0
    conflict_retries: int = 0
    queued: int = 0
    queued_bytes: int = 0
    error: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class Checkpoint:
    """What a checkpoint writes: the LWM (relay_log_info) and every worker's row (worker_info)."""

    channel: str
    progress: ChannelProgress
    workers: tuple[WorkerCheckpoint, ...]
    worker_positions: tuple[tuple[str, int, str | None, int], ...]  # last committed, per worker
    group_size: int


def progress_after(
    progress: ChannelProgress, txn: Transaction, executed: str, transactions: int
) -> ChannelProgress:
    """The channel's position once `txn` (its `transactions`-th) is applied."""
    return replace(
        progress,
        relay_log_file=txn.end.log_name,
        relay_log_pos=txn.end.pos,
        source_log_file=txn.source_log_file,
        source_log_pos=txn.source_end_pos,
        executed_gtids=executed,
        transactions=transactions,
        last_transaction=txn.gtid or f"{txn.source_log_file}:{txn.source_end_pos}",
    )


def incident_error(channel: str, logged: LoggedEvent) -> ChannelError:
    """An INCIDENT event stops the channel (ER_SLAVE_INCIDENT), as on MySQL."""
    return ChannelError(
        channel,
        ER_INCIDENT,
        f"The incident {logged.event.info()} occurred on the source",  # type: ignore[attr-defined]
        None,
        f"{logged.log_name}:{logged.pos}",
    )


def apply_error_text(exc: Exception, txn: Transaction | TransactionPart | None = None) -> tuple[int, str]:
    """MySQL error number and message for an error applying a transaction (`txn`, where known,
    lets a value's error name the rows event and row that logged it)."""
    if isinstance(exc, InvalidString):
        found = locate_invalid_string(txn, exc) if txn is not None else None
        if found is None:
            return exc.errno, exc.message
        logged, row = found
        return exc.errno, f"{exc.message} at row {row} of the rows event at {logged.log_name}:{logged.pos}"
    if isinstance(exc, ApplyError):
        return exc.errno, exc.message
    if isinstance(exc, UntranslatableStatement):
        return exc.errno, exc.one_line()
    if isinstance(exc, RelaydeckError):
        return ER_UNKNOWN_ERROR, exc.one_line()
    if isinstance(exc, duckdb.Error):
        return ER_UNKNOWN_ERROR, f"DuckDB: {str(exc).splitlines()[0]}"
    # Not an error of the input nor of DuckDB: still located by the caller, and named by its kind
    # so that it can be reported.
    first_line = (str(exc).splitlines() or [""])[0]
    return ER_UNKNOWN_ERROR, f"the transaction could not be applied ({type(exc).__name__}: {first_line})"


def transaction_error(channel: str, txn: Transaction | TransactionPart, exc: Exception) -> ChannelError:
    """The error that stops a channel on `txn`: MySQL's number and words, the transaction, and
    where it starts in the relay log."""
    errno, message = apply_error_text(exc, txn)
    return ChannelError(channel, errno, message, txn.describe(), str(txn.start))


def gtid_set_text(text: str) -> str:
    """Normalise a GTID set given on the command line (validates it)."""
    if ":" in text:
        return str(GtidSet.parse(text)).replace(",\n", ",")
    return str(ExecutedGtids.parse(text))
