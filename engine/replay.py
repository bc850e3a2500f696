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

from .applier.controls import StartControls
from .applier.parallel import Checkpoint, ParallelApplier, ParallelOptions
from .applier.recovery import fill_gaps
from .applier.single import ApplyStats, BatchLimits, ChannelApplier, ChannelError, Until
from .errors import RelaydeckError
from .relaylog.index import read_index, validate_channel_name
from .repository import Repository, mysql_timestamp
from .slave.database import Slave
from .transactions import Transaction

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
    state: str = "ON"
    started: float = field(default_factory=time.monotonic)


def relay_bytes(spec: ChannelSpec) -> int:
    return sum(p.stat().st_size for p in read_index(spec.index_file).files)


class Replay:
    """Runs channels to the end of their relay logs (or UNTIL / stop), in parallel."""

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
    ) -> None:
        """parallel: the multi-threaded applier's settings; None is the single applier."""
        for spec in channels:
            validate_channel_name(spec.name)
        names = [c.name.lower() for c in channels]
        if len(set(names)) != len(names):
            raise RelaydeckError("a channel is named twice")
        self.slave = Slave(slave_path)
        self.repository = Repository(repository_path) if repository_path else None
        self.channels = channels
        self.until = until
        self.limits = limits
        self.on_tick = on_tick
        self.parallel = parallel
        self.controls = controls or StartControls()  # each channel gets its own copy (a counter)
        self.stop = threading.Event()
        self.kill = threading.Event()  # KILL: workers drop what they hold (recovery fills gaps)
        self.appliers: dict[str, ParallelApplier] = {}
        self.live = {c.name: _Live(total_bytes=relay_bytes(c)) for c in channels}

    def run(self) -> list[ChannelOutcome]:
        outcomes = {c.name: ChannelOutcome(c.name) for c in self.channels}
        threads = [
            threading.Thread(
                target=self._run_channel, args=(spec, outcomes[spec.name]), name=f"channel-{spec.name}"
            )
            for spec in self.channels
        ]
        for thread in threads:
            thread.start()
        try:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(STATUS_INTERVAL_S / max(1, len(threads)))
                self._publish_all()
                if self.on_tick is not None:
                    self.on_tick(self.live)
        except KeyboardInterrupt:
            self.stop.set()
            for t in threads:
                t.join()
            raise
        finally:
            self._publish_all()
            if self.on_tick is not None:
                self.on_tick(self.live)
            if self.repository is not None:
                self.repository.close()
            self.slave.close()
        return [outcomes[c.name] for c in self.channels]

    def _run_channel(self, spec: ChannelSpec, outcome: ChannelOutcome) -> None:
        live = self.live[spec.name]
        session = self.slave.session()
        try:
            logs = read_index(spec.index_file)
            if self.repository is not None:
                self.repository.ensure_channel(spec.name)
                self.repository.update_relay_log_info(spec.name, Relay_log_index=str(spec.index_file))
                self.repository.set_number_of_workers(
                    spec.name, self.parallel.workers if self.parallel else 0
                )
                self.repository.clear_error(spec.name)
            live.state = "RECOVERING"
            outcome.gaps_filled = fill_gaps(session, spec.name, logs)
            live.state = "ON"
            applier: ChannelApplier | ParallelApplier
            if self.parallel is None:
                applier = ChannelApplier(
                    session,
                    spec.name,
                    logs,
                    self.limits,
                    self.until,
                    on_progress=self._progress_hook(spec.name, logs),
                    stop=self.stop,
                    controls=replace(self.controls),
                )
            else:
                applier = self.appliers[spec.name] = ParallelApplier(
                    session,
                    spec.name,
                    logs,
                    self.parallel,
                    self.limits,
                    self.until,
                    on_progress=self._progress_hook(spec.name, logs),
                    stop=self.stop,
                    kill=self.kill,
                    on_checkpoint=self._write_checkpoint if self.repository is not None else None,
                    controls=replace(self.controls),
                )
            live.transactions = applier.progress.transactions
            outcome.stats = applier.run()
            live.state = "OFF"
        except RelaydeckError as exc:
            outcome.error = exc
            live.state = "ERROR"
            if self.repository is not None:
                errno = exc.errno if isinstance(exc, ChannelError) else 1594
                self.repository.record_error(spec.name, errno, exc.one_line())
        finally:
            session.close()

    def _progress_hook(self, name: str, logs) -> Callable[[ApplyStats, object], None]:  # type: ignore[no-untyped-def]
        live = self.live[name]
        sizes = {p.name: p.stat().st_size for p in logs.files}
        order = [p.name for p in logs.files]

        def hook(stats: ApplyStats, item: object) -> None:
            if isinstance(item, Transaction):
                live.relay_file, live.relay_pos = item.end.log_name, item.end.pos
                live.last_transaction = item.gtid or f"{item.source_log_file}:{item.source_end_pos}"
                live.transactions += 1
                if item.original_commit_timestamp:
                    live.last_commit_ts = item.original_commit_timestamp / 1e6
                else:
                    live.last_commit_ts = float(item.timestamp)
                done = item.end.pos
                for file_name in order:
                    if file_name == item.end.log_name:
                        break
                    done += sizes[file_name]
                live.bytes_done = done

        return hook

    def _write_checkpoint(self, checkpoint: Checkpoint) -> None:
        """relay_log_info gets the LWM, worker_info each worker's position and bitmap after it."""
        assert self.repository is not None
        lwm = checkpoint.progress
        rows = []
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

    def _publish_all(self) -> None:
        if self.repository is None:
            return
        for spec in self.channels:
            live = self.live[spec.name]
            progress = self.slave.progress(spec.name)  # the main thread's own cursor
            elapsed = max(1e-6, time.monotonic() - live.started)
            coordinator = {
                "CHANNEL_NAME": spec.name,
                "SERVICE_STATE": live.state,
                "LAST_PROCESSED_TRANSACTION": live.last_transaction or "",
            }
            stats = {
                "channel": spec.name,
                "transactions_applied": progress.transactions if progress else 0,
                "bytes_applied": live.bytes_done,
                "relay_log_file_read": live.relay_file,
                "relay_log_pos_read": live.relay_pos,
                "relay_log_file_applied": progress.relay_log_file if progress else None,
                "relay_log_pos_applied": progress.relay_log_pos if progress else None,
                "trx_per_s": round(live.transactions / elapsed, 1),
                "started_at": mysql_timestamp(time.time() - elapsed),
            }
            stats = {k: v for k, v in stats.items() if v is not None}  # unknown yet: keep what was there
            workers = []
            applier = self.appliers.get(spec.name)
            if applier is not None:
                for w in applier.worker_status():
                    workers.append(
                        {
                            "CHANNEL_NAME": spec.name,
                            "WORKER_ID": w.worker,
                            "SERVICE_STATE": "OFF" if w.state in ("stopped", "error") else "ON",
                            "LAST_ERROR_MESSAGE": w.error or "",
                            "LAST_ERROR_NUMBER": 1 if w.error else 0,
                            "LAST_APPLIED_TRANSACTION": w.last_applied or "",
                            "LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP": mysql_timestamp(
                                w.last_applied_at
                            ),
                            "APPLYING_TRANSACTION": w.applying or "",
                        }
                    )
            self.repository.publish_status(coordinator, workers, None, stats)
            if progress is not None:
                self.repository.update_relay_log_info(
                    spec.name,
                    Relay_log_name=progress.relay_log_file,
                    Relay_log_pos=progress.relay_log_pos,
                    Master_log_name=progress.source_log_file or "",
                    Master_log_pos=progress.source_log_pos,
                    Executed_gtid_set=progress.executed_gtids,
                    Applier_state=live.state,
                )
