"""Replaying channels into one slave (fan-in), reporting to the repository while they run.

Each channel gets its own applier thread and DuckDB cursor; one channel's error stops only that
channel (WL#1697 R5). The repository is told where each channel stands several times a second, so
another process (`relaydeck status`, the console) can watch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from .applier.controls import StartControls
from .applier.parallel import ParallelApplier
from .applier.prepared import PreparedRun
from .applier.reading import AnyEvent
from .applier.recovery import fill_gaps
from .applier.single import ChannelApplier
from .applier.vocabulary import (
    ER_UNKNOWN_ERROR,
    ApplyStats,
    BatchLimits,
    ChannelError,
    Checkpoint,
    CommitCallback,
    ParallelOptions,
    Until,
)
from .arrow_memory import use_applier_allocator
from .errors import RelaydeckError, RelayIndexError, RelayLogGap
from .gc_tuning import relax_garbage_collector
from .pool import Executor, make_executor
from .pool.handover import sweep_orphans
from .relaylog.index import RelayLogSet, read_index, validate_channel_name
from .repository import Repository, RepositoryError, mysql_timestamp
from .slave.database import ChannelProgress, Slave
from .transactions import Transaction, TransactionRecord
from .without_pandas import settle_arrow_without_pandas

STATUS_INTERVAL_S = 0.25


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    name: str
    index_file: Path


@dataclass(slots=True)
class ChannelOutcome:
    name: str
    stats: ApplyStats | None = None
    error: RelaydeckError | None = None
    gaps_filled: int = 0  # recovered at start: transactions a previous run's workers left out


@dataclass(slots=True)
class _Live:
    """Progress of one channel as the status publisher and the progress bar read it."""

    total_bytes: int
    bytes_done: int = 0
    transactions: int = 0
    last_transaction: str | None = None
    last_commit_ts: float | None = None
    relay_file: str | None = None
    relay_pos: int = 0
    applied_commit_ts: float | None = None  # source commit time of the newest transaction committed
    last_applied: str | None = None  # the last transaction committed: its GTID, else its relay position
    last_applied_at: float | None = None
    state: str = "ON"
    started: float = field(default_factory=time.monotonic)


def _commit_ts(txn: Transaction) -> float:
    return txn.original_commit_timestamp / 1e6 if txn.original_commit_timestamp else float(txn.timestamp)


def relay_bytes(spec: ChannelSpec) -> int:
    return sum(p.stat().st_size for p in read_index(spec.index_file).files)


@dataclass(slots=True)
class RunSettings:
    """How one START runs a channel."""

    until: Until | None = None
    limits: BatchLimits | None = None
    parallel: ParallelOptions | None = None  # None: the single applier
    controls: StartControls = field(default_factory=StartControls)
    follow: bool = False  # keep applying as the relay logs grow, until STOP
    after_gaps_only: bool = False  # UNTIL SQL_AFTER_MTS_GAPS: fill the gaps a crash left, then stop
    on_commit: CommitCallback | None = None


class ChannelRun:
    """One START of one channel: its applier thread, STOP/KILL events and live progress.

    The thread takes its own DuckDB cursor from the slave; errors end up in `outcome` and, with a
    repository, in the channel's Last_SQL_Error.
    """

    def __init__(
        self,
        slave: Slave,
        repository: Repository | None,
        spec: ChannelSpec,
        settings: RunSettings,
        stop: threading.Event | None = None,
        kill: threading.Event | None = None,
    ) -> None:
        relax_garbage_collector()  # an applier in this process: see gc_tuning
        settle_arrow_without_pandas()  # and no pandas for pyarrow to load: see without_pandas
        use_applier_allocator()  # and Arrow's batches on jemalloc: see arrow_memory
        validate_channel_name(spec.name)
        self.slave = slave
        self.repository = repository
        self.spec = spec
        self.settings = settings
        self.stop = stop or threading.Event()
        self.kill = kill or threading.Event()
        self.outcome = ChannelOutcome(spec.name)
        self.live = _Live(total_bytes=_bytes_if_any(spec))  # errors show when the thread reads the index
        self.applier: ChannelApplier | ParallelApplier | None = None
        self._checkpoint_seqnos: dict[int, int] = {}
        self._rates: dict[int, tuple[float, int]] = {}  # worker -> (when, transactions) at last publish
        self._smoothed: dict[int, float] = {}
        self.thread = threading.Thread(target=self._run, name=f"channel-{spec.name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        spec, settings, outcome, live = self.spec, self.settings, self.outcome, self.live
        session = self.slave.session()
        try:
            logs = self._wait_for_index() if settings.follow else read_index(spec.index_file)
            if logs is None:  # stopped while waiting
                outcome.stats = ApplyStats(stopped_by="STOP")
                live.state = "OFF"
                return
            if self.repository is not None:
                self.repository.ensure_channel(spec.name)
                self.repository.update_relay_log_info(spec.name, Relay_log_index=str(spec.index_file))
                self.repository.set_number_of_workers(
                    spec.name, settings.parallel.workers if settings.parallel else 0
                )
                self.repository.clear_error(spec.name)
            live.state = "RECOVERING"
            outcome.gaps_filled = fill_gaps(session, spec.name, logs)
            live.state = "ON"
            if settings.after_gaps_only:
                outcome.stats = ApplyStats(stopped_by="UNTIL SQL_AFTER_MTS_GAPS")
                live.state = "OFF"
                return
            # A replay killed before may have left results in /dev/shm (memory) that its
            # preparing processes handed over: they go now, whatever this one runs; the pools of
            # processes and Spark sweep them as well, the single applier and threads would not.
            sweep_orphans()
            hook = self._progress_hook(logs)
            applier: ChannelApplier | ParallelApplier
            pool: Executor | None = None
            if settings.parallel is None:
                applier = ChannelApplier(
                    session,
                    spec.name,
                    logs,
                    settings.limits,
                    settings.until,
                    on_progress=hook,
                    stop=self.stop,
                    controls=replace(settings.controls),
                    follow=settings.follow,
                    on_commit=self._committed,
                )
            else:
                options = settings.parallel
                pool = make_executor(options.pool, options.workers, options.spark_master, for_applier=True)
                applier = ParallelApplier(
                    session,
                    spec.name,
                    logs,
                    settings.parallel,
                    settings.limits,
                    settings.until,
                    on_progress=hook,
                    stop=self.stop,
                    kill=self.kill,
                    on_checkpoint=self._write_checkpoint if self.repository is not None else None,
                    controls=replace(settings.controls),
                    follow=settings.follow,
                    on_commit=self._committed,
                    executor=pool,
                )
            self.applier = applier
            live.transactions = applier.progress.transactions
            try:
                outcome.stats = applier.run()
            finally:
                if pool is not None:
                    pool.close()
            live.state = "OFF"
        except RelayLogGap as exc:
            # MySQL's relay log read failure, as the channel's last SQL error
            where = f"{exc.file}:{exc.pos}"
            self._failed(ChannelError(spec.name, exc.errno, exc.message, None, where), exc.errno)
        except RelaydeckError as exc:
            self._failed(exc, exc.errno if isinstance(exc, ChannelError) else 1594)
        except Exception as exc:  # not while applying a transaction (those are located there)
            self._failed(self._unlocated_error(exc, session), ER_UNKNOWN_ERROR)
        finally:
            session.close()

    def _unlocated_error(self, exc: Exception, session: Slave) -> ChannelError:
        """One line for a failure outside any transaction (those name theirs): what it was, and
        where the channel stood when it came."""
        first_line = (str(exc).splitlines() or [""])[0]
        if isinstance(exc, duckdb.Error):
            message = f"DuckDB: {first_line}"
        else:
            message = f"the channel stopped on an unexpected {type(exc).__name__}: {first_line}"
        progress = self.applier.progress if self.applier is not None else None
        if progress is None:
            try:
                progress = session.progress(self.spec.name)
            except duckdb.Error:
                progress = None  # the slave itself failing: the message says so
        position = None
        if self.live.relay_file is not None:
            position = f"{self.live.relay_file}:{self.live.relay_pos}"
        elif progress is not None and progress.relay_log_file is not None:
            position = f"{progress.relay_log_file}:{progress.relay_log_pos}"
        return ChannelError(self.spec.name, ER_UNKNOWN_ERROR, message, None, position)

    def _failed(self, error: RelaydeckError, errno: int) -> None:
        self.outcome.error = error
        self.live.state = "ERROR"
        if self.repository is not None:
            self.repository.record_error(self.spec.name, errno, error.one_line())

    def _committed(self, transactions: list[Transaction]) -> None:
        newest = max(_commit_ts(t) for t in transactions)
        live = self.live
        if live.applied_commit_ts is None or newest > live.applied_commit_ts:
            live.applied_commit_ts = newest
        last = transactions[-1]
        live.last_applied, live.last_applied_at = last.gtid or str(last.end), time.time()
        if self.settings.on_commit is not None:
            self.settings.on_commit(transactions)
        applier = self.applier
        if self.repository is not None and applier is not None:
            try:
                self._publish_applied(applier.applied_progress(), applier.progress)
            except RepositoryError:
                pass  # status only: the next commit or publish() writes it; the apply goes on

    def _publish_applied(self, applied: ChannelProgress, durable: ChannelProgress) -> None:
        """Status as it happens: at each commit, what the channel executed (every transaction
        committed) and where it stands. relay_log_info's positions stay the durable ones, the
        multi-threaded applier's last checkpoint, as MySQL shows them: the receiver purges relay
        files by them, and a restart after a crash reads on from there. The full status, workers
        and pool, stays with publish(), a few times a second."""
        assert self.repository is not None
        self.repository.publish_applied(
            self.spec.name,
            {
                "Relay_log_name": durable.relay_log_file,
                "Relay_log_pos": durable.relay_log_pos,
                "Master_log_name": durable.source_log_file or "",
                "Master_log_pos": durable.source_log_pos,
                "Executed_gtid_set": applied.executed_gtids,
            },
            {
                "transactions_applied": applied.transactions,
                "relay_log_file_applied": applied.relay_log_file,
                "relay_log_pos_applied": applied.relay_log_pos,
                "lag_s": _lag(self.live),
            },
        )

    def _wait_for_index(self) -> RelayLogSet | None:
        """Following may start before the relay log does: wait (on file-system events) for an index
        that lists a file; None if STOP or KILL came first."""
        either = AnyEvent(self.stop, self.kill)
        index = Path(self.spec.index_file)
        while not either.is_set():
            try:
                return read_index(index)
            except RelayIndexError:
                self.live.state = "WAITING FOR RELAY LOG"
            folder = next((p for p in (index.parent, *index.parents) if p.is_dir()), None)
            if folder is None:
                either.events[0].wait(0.5)
                continue
            import watchfiles  # following only: not loaded by every replay's start

            for _ in watchfiles.watch(
                folder, stop_event=either, rust_timeout=500, yield_on_timeout=True, recursive=False
            ):
                break
        return None

    def _progress_hook(self, logs: RelayLogSet) -> Callable[[ApplyStats, object], None]:
        live = self.live
        finished_sizes: dict[str, int] = {}  # files behind the reader do not grow any more
        order = [p.name for p in logs.files]
        folder = logs.files[0].parent

        def hook(stats: ApplyStats, item: object) -> None:
            count = 1
            if isinstance(item, PreparedRun):  # many transactions at once: record the last
                count = len(item.transactions)
                item = item.transactions[-1]
            if isinstance(item, (Transaction, TransactionRecord)):
                live.relay_file, live.relay_pos = item.end.log_name, item.end.pos
                live.last_transaction = item.gtid or f"{item.source_log_file}:{item.source_end_pos}"
                live.transactions += count
                live.last_commit_ts = _commit_ts(item)
                if item.end.log_name not in order:
                    order.append(item.end.log_name)  # added to the index while following
                done = item.end.pos
                for file_name in order:
                    if file_name == item.end.log_name:
                        break
                    if file_name not in finished_sizes:
                        finished_sizes[file_name] = _size(folder / file_name)
                    done += finished_sizes[file_name]
                live.bytes_done = done
                live.total_bytes = max(live.total_bytes, done)

        return hook

    def _write_checkpoint(self, checkpoint: Checkpoint) -> None:
        """relay_log_info gets the LWM, worker_info each worker's position and bitmap after it."""
        assert self.repository is not None
        lwm = checkpoint.progress
        rows = []
        for worker in checkpoint.workers:
            self._checkpoint_seqnos[worker.worker] = worker.seqno
        for worker, (relay_file, relay_pos, source_file, source_pos) in zip(
            checkpoint.workers, checkpoint.worker_positions, strict=True
        ):
            rows.append(
                {
                    "Id": worker.worker,
                    "Relay_log_name": relay_file,
                    "Relay_log_pos": relay_pos,
                    "Master_log_name": source_file or "",
                    "Master_log_pos": source_pos,
                    "Checkpoint_relay_log_name": lwm.relay_log_file or "",
                    "Checkpoint_relay_log_pos": lwm.relay_log_pos,
                    "Checkpoint_master_log_name": lwm.source_log_file or "",
                    "Checkpoint_master_log_pos": lwm.source_log_pos,
                    "Checkpoint_seqno": worker.seqno,
                    "Checkpoint_group_size": checkpoint.group_size,
                    "Checkpoint_group_bitmap": worker.bitmap,
                }
            )
        relay_log_info = (
            {
                "Relay_log_name": lwm.relay_log_file,
                "Relay_log_pos": lwm.relay_log_pos,
                "Master_log_name": lwm.source_log_file or "",
                "Master_log_pos": lwm.source_log_pos,
                "Executed_gtid_set": lwm.executed_gtids,
            }
            if lwm.relay_log_file is not None  # nothing committed yet
            else {}
        )
        self.repository.write_checkpoint(checkpoint.channel, relay_log_info, rows)

    def publish(self, reader: Slave) -> None:
        """Write the channel's live status to the repository; `reader` is the caller's own cursor."""
        if self.repository is None:
            return
        spec, live = self.spec, self.live
        progress = reader.committed_progress(spec.name)
        # what the applier committed (the multi-threaded one's LWM, ahead of its last checkpoint
        # in `progress`), as _publish_applied writes it at each commit
        newest = self.applier.applied_progress() if self.applier is not None else progress
        now = time.monotonic()
        elapsed = max(1e-6, now - live.started)
        applied = newest.transactions if newest else 0
        coordinator = {
            "CHANNEL_NAME": spec.name,
            "SERVICE_STATE": "ON" if live.state in ("ON", "RECOVERING", "WAITING FOR RELAY LOG") else "OFF",
            "LAST_PROCESSED_TRANSACTION": live.last_transaction or "",
        }
        lag = _lag(live)
        stats: dict[str, object] = {
            "channel": spec.name,
            "transactions_applied": applied,
            "bytes_applied": live.bytes_done,
            "relay_log_file_read": live.relay_file,
            "relay_log_pos_read": live.relay_pos,
            "relay_log_file_applied": newest.relay_log_file if newest else None,
            "relay_log_pos_applied": newest.relay_log_pos if newest else None,
            "trx_per_s": round(self._rate(-1, now, applied), 1),
            "started_at": mysql_timestamp(time.time() - elapsed),
            "state": live.state,
            "lag_s": lag,
            "workers_total": 0,
            "workers_busy": 0,
            "queue_fill": 0.0,
            "pool_kind": "",
        }
        stats = {k: v for k, v in stats.items() if v is not None or k == "lag_s"}
        workers: list[dict[str, object]] = []
        worker_stats: list[dict[str, object]] = []
        pool_slots: list[dict[str, object]] = []
        applier = self.applier
        if isinstance(applier, ChannelApplier):
            stats["rows_applied"] = applier.stats.row_changes
            if live.last_applied is not None:
                # performance_schema's by-worker table holds the single applier thread as worker 0
                workers.append(
                    {
                        "CHANNEL_NAME": spec.name,
                        "WORKER_ID": 0,
                        "SERVICE_STATE": "ON" if live.state == "ON" else "OFF",
                        "LAST_APPLIED_TRANSACTION": live.last_applied,
                        "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP": mysql_timestamp(live.last_applied_at),
                    }
                )
        if isinstance(applier, ParallelApplier):
            statuses = applier.worker_status()
            stats["rows_applied"] = sum(w.rows for w in statuses)
            queued_bytes = 0
            for w in statuses:
                workers.append(
                    {
                        "CHANNEL_NAME": spec.name,
                        "WORKER_ID": w.worker,
                        "SERVICE_STATE": "OFF" if w.state in ("stopped", "error") else "ON",
                        "LAST_ERROR_MESSAGE": w.error or "",
                        "LAST_ERROR_NUMBER": 1 if w.error else 0,
                        "LAST_APPLIED_TRANSACTION": w.last_applied or "",
                        "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP": mysql_timestamp(w.last_applied_at),
                        "APPLYING_TRANSACTION": w.applying or "",
                    }
                )
                queued_bytes += w.queued_bytes
                worker_stats.append(
                    {
                        "channel": spec.name,
                        "worker": w.worker,
                        "state": w.state,
                        "applying": w.applying or "",
                        "queued": w.queued,
                        "queued_bytes": w.queued_bytes,
                        "transactions": w.transactions,
                        "batches": w.batches,
                        "trx_per_s": round(self._rate(w.worker, now, w.transactions), 1),
                        "last_applied": w.last_applied or "",
                        "last_applied_at": w.last_applied_at,
                        "checkpoint_seqno": self._checkpoint_seqnos.get(w.worker, 0),
                        "error": w.error or "",
                    }
                )
            stats["workers_total"] = len(statuses)
            stats["workers_busy"] = sum(1 for w in statuses if w.applying)
            stats["queue_fill"] = round(min(1.0, queued_bytes / applier.options.pending_jobs_size_max), 4)
            pool = applier.executor
            stats.update(
                pool_kind=pool.kind,
                pool_workers=pool.workers,
                pool_segments_done=pool.segments_done,
                prepared_runs=applier.stats.prepared_runs,
                runs_read_again=applier.stats.runs_read_again,
            )
            pool_slots = [
                {
                    "channel": spec.name,
                    "slot_no": i,
                    "slot": a.slot,
                    "state": a.state,
                    "segment": a.segment or "",
                }
                for i, a in enumerate(pool.activity(), start=1)
            ]
        relay_log_info = None
        if progress is not None:
            relay_log_info = {
                "Relay_log_name": progress.relay_log_file,
                "Relay_log_pos": progress.relay_log_pos,
                "Master_log_name": progress.source_log_file or "",
                "Master_log_pos": progress.source_log_pos,
                "Executed_gtid_set": (newest or progress).executed_gtids,
                "Applier_state": live.state if live.state in ("ON", "OFF", "ERROR") else "ON",
            }
        self.repository.publish_status(
            coordinator, workers, None, stats, worker_stats, relay_log_info, pool_slots
        )

    def _rate(self, key: int, now: float, count: int) -> float:
        """Transactions per second since the previous publish, smoothed (key -1: the channel)."""
        previous = self._rates.get(key)
        if previous is None:
            self._rates[key] = (now, count)
            return 0.0
        when, before = previous
        if now - when < 0.05:
            return self._smoothed.get(key, 0.0)
        instant = max(0, count - before) / (now - when)
        rate = 0.5 * instant + 0.5 * self._smoothed.get(key, instant)
        self._rates[key] = (now, count)
        self._smoothed[key] = rate
        return rate


def _lag(live: _Live) -> float | None:
    """Seconds between the source commits of the last transaction read and the last applied."""
    if live.last_commit_ts is None or live.applied_commit_ts is None:
        return None
    return max(0.0, live.last_commit_ts - live.applied_commit_ts)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _bytes_if_any(spec: ChannelSpec) -> int:
    """Following may start before the relay logs (or their index) exist."""
    try:
        return relay_bytes(spec)
    except RelaydeckError:
        return 0


class Replay:
    """Runs channels into one slave in parallel (fan-in) until each reaches the end of its relay
    logs, its UNTIL, or stop (with follow: until stop only), publishing status meanwhile."""

    def __init__(
        self,
        slave_path: str | Path,
        repository_path: str | Path | None,
        channels: list[ChannelSpec],
        until: Until | None = None,
        limits: BatchLimits | None = None,
        on_tick: Callable[[dict[str, _Live]], None] | None = None,
        parallel: ParallelOptions | None = None,
        controls: StartControls | None = None,
        follow: bool = False,
        on_commit: CommitCallback | None = None,
        schedules: dict[str, tuple[int, ...]] | None = None,
    ) -> None:
        """parallel: the multi-threaded applier's settings; None is the single applier.
        schedules: per channel, WRITESET dependencies computed beforehand (relaydeck analyze)."""
        for spec in channels:
            validate_channel_name(spec.name)
        names = [c.name.lower() for c in channels]
        if len(set(names)) != len(names):
            raise RelaydeckError("a channel is named twice")
        self.slave = Slave(slave_path)
        self.repository = Repository(repository_path) if repository_path else None
        if self.repository is not None:
            self.repository.set_slave_path(str(Path(slave_path).resolve()))
        self.channels = channels
        self.on_tick = on_tick
        self.stop = threading.Event()
        self.kill = threading.Event()  # KILL: workers drop what they hold (recovery fills gaps)
        settings = RunSettings(
            until, limits, parallel, controls or StartControls(), follow, on_commit=on_commit
        )
        self.runs = {}
        for c in channels:
            own = settings
            if schedules and c.name in schedules and parallel is not None:
                own = replace(settings, parallel=replace(parallel, schedule=schedules[c.name]))
            self.runs[c.name] = ChannelRun(self.slave, self.repository, c, own, self.stop, self.kill)
        self.live = {name: run.live for name, run in self.runs.items()}

    @property
    def appliers(self) -> dict[str, ParallelApplier]:
        """The running multi-threaded appliers by channel (for inspection while it runs)."""
        return {n: r.applier for n, r in self.runs.items() if isinstance(r.applier, ParallelApplier)}

    def run(self) -> list[ChannelOutcome]:
        runs = list(self.runs.values())
        for run in runs:
            run.start()
        try:
            while any(r.is_alive() for r in runs):
                for r in runs:
                    r.join(STATUS_INTERVAL_S / max(1, len(runs)))
                self._publish_all()
                if self.on_tick is not None:
                    self.on_tick(self.live)
        except KeyboardInterrupt:
            self.stop.set()
            for r in runs:
                r.join()
            raise
        finally:
            self._publish_all()
            if self.on_tick is not None:
                self.on_tick(self.live)
            if self.repository is not None:
                self.repository.close()
            self.slave.close()
        return [r.outcome for r in runs]

    def _publish_all(self) -> None:
        for run in self.runs.values():
            run.publish(self.slave)  # the main thread's own cursor
