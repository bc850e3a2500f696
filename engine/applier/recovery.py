"""Recovery of gaps after a multi-threaded applier stopped without draining (WL#5569 / WL#5599).

The channel's progress row in the slave is its low-water mark (LWM): every transaction up to it
has committed. A parallel worker commits its transactions together with their commit records, so
the records after the LWM name the transactions some worker committed while others had not yet:
the gaps are the ones between them that have no record. Starting again, the channel reads from
the LWM, skips what has a record, applies the rest one at a time, and moves the LWM to the last
recorded transaction: MySQL's START REPLICA UNTIL SQL_AFTER_MTS_GAPS, done before every start.

Transactions are recognised by their relay-log end position; their ordinals follow from reading
the relay log again in the same order, with the same GTID skipping, from the same LWM.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import RelaydeckError
from ..gtids import ExecutedGtids
from ..relaylog.index import RelayLogSet
from ..relaylog.stream import stream_events
from ..slave.database import ChannelProgress, CommitRecord, Slave
from ..transactions import Transaction, TransactionAssembler


@dataclass(frozen=True, slots=True)
class WorkerCheckpointRow:
    """One worker's row of worker_info as the last checkpoint left it."""

    worker: int
    relay_log: str
    checkpoint_relay_log: str
    checkpoint_seqno: int
    checkpoint_group_size: int
    bitmap: str  # '1' for each group after the checkpoint the worker committed, oldest first


@dataclass(frozen=True, slots=True)
class GroupAfterLwm:
    """A transaction after the LWM, up to the last one any worker committed."""

    ordinal: int
    transaction: str
    relay_start: str
    relay_end: str
    committed_by: int | None  # the worker whose commit record names it; None: a gap

    @property
    def is_gap(self) -> bool:
        return self.committed_by is None


@dataclass(frozen=True, slots=True)
class RecoveryPicture:
    channel: str
    lwm: int  # ordinal of the low-water mark
    lwm_relay_position: str | None
    lwm_source_position: str | None
    committed_after_lwm: int
    groups: tuple[GroupAfterLwm, ...]  # empty when nothing was committed after the LWM
    workers: tuple[WorkerCheckpointRow, ...] = ()
    problem: str | None = None  # why the gaps could not be named (e.g. relay logs missing)
    plan: tuple[str, ...] = field(default=())

    @property
    def gaps(self) -> list[GroupAfterLwm]:
        return [g for g in self.groups if g.is_gap]

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "lwm": self.lwm,
            "lwm_relay_position": self.lwm_relay_position,
            "lwm_source_position": self.lwm_source_position,
            "committed_after_lwm": self.committed_after_lwm,
            "gaps": [g.ordinal for g in self.gaps],
            "groups": [
                {
                    "ordinal": g.ordinal,
                    "transaction": g.transaction,
                    "relay_start": g.relay_start,
                    "relay_end": g.relay_end,
                    "committed_by": g.committed_by,
                }
                for g in self.groups
            ],
            "workers": [
                {
                    "worker": w.worker,
                    "relay_log": w.relay_log,
                    "checkpoint_relay_log": w.checkpoint_relay_log,
                    "checkpoint_seqno": w.checkpoint_seqno,
                    "checkpoint_group_size": w.checkpoint_group_size,
                    "bitmap": w.bitmap,
                }
                for w in self.workers
            ],
            "problem": self.problem,
            "plan": list(self.plan),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecoveryPicture:
        """The inverse of to_json() (a picture sent over the control socket)."""
        return cls(
            data["channel"],
            data["lwm"],
            data["lwm_relay_position"],
            data["lwm_source_position"],
            data["committed_after_lwm"],
            tuple(GroupAfterLwm(**g) for g in data["groups"]),
            tuple(WorkerCheckpointRow(**w) for w in data["workers"]),
            data["problem"],
            tuple(data["plan"]),
        )


class RecoveryError(RelaydeckError):
    pass


def walk_after_lwm(
    slave: Slave,
    channel: str,
    logs: RelayLogSet,
    read: tuple[ChannelProgress, list[CommitRecord]] | None = None,
) -> Iterator[tuple[int, Transaction, CommitRecord | None]]:
    """(ordinal, transaction, its commit record or None) for every transaction after the LWM up to
    the last one with a commit record. Nothing when there is nothing after the LWM.

    read: the LWM and the commit records after it, when the caller read them already (they must be
    read together: a running applier moves the LWM in between)."""
    progress, records = read if read is not None else lwm_and_commits_after(slave, channel)
    if not records:
        return
    by_position = {(r.relay_log_file, r.relay_log_pos): r for r in records}
    last = records[-1].seqno
    executed = ExecutedGtids.parse(progress.executed_gtids)
    ordinal = progress.transactions
    assembler = TransactionAssembler()
    events = stream_events(logs, start_file=progress.relay_log_file, start_pos=progress.relay_log_pos)
    try:
        for logged in events:
            for item in assembler.feed(logged):
                if not isinstance(item, Transaction):
                    continue
                if item.gtid and executed.contains(item.gtid):
                    continue
                if item.gtid:
                    executed.add(item.gtid)
                ordinal += 1
                record = by_position.get((item.end.log_name, item.end.pos))
                if record is not None and record.seqno != ordinal:
                    raise RecoveryError(
                        f"channel {channel!r}: the transaction ending at {item.end} was committed as "
                        f"number {record.seqno} but reads as number {ordinal}: the relay log changed"
                    )
                yield ordinal, item, record
                if ordinal >= last:
                    return
    finally:
        events.close()
    raise RecoveryError(
        f"channel {channel!r}: transaction number {last}, committed by worker {records[-1].worker} at "
        f"relay log {records[-1].relay_log_file}:{records[-1].relay_log_pos}, is not in the relay log "
        f"after the low-water mark ({progress.relay_log_file}:{progress.relay_log_pos})"
    )


def lwm_and_commits_after(slave: Slave, channel: str) -> tuple[ChannelProgress, list[CommitRecord]]:
    """The channel's LWM and the commit records after it, read in one DuckDB snapshot: read apart,
    a running applier could move the LWM past records already read, and the picture would name
    transactions that are no longer after it."""
    slave.begin()
    try:
        progress = slave.progress(channel) or ChannelProgress(channel)
        return progress, slave.commits_after(channel, progress.transactions)
    finally:
        slave.rollback()


def recovery_picture(
    slave: Slave, channel: str, logs: RelayLogSet | None, worker_rows: list[dict[str, Any]] | None = None
) -> RecoveryPicture:
    """What recovery would do, changing nothing."""
    progress, records = lwm_and_commits_after(slave, channel)
    workers = tuple(_worker_row(w) for w in worker_rows or [])
    relay = f"{progress.relay_log_file}:{progress.relay_log_pos}" if progress.relay_log_file else None
    source = f"{progress.source_log_file}:{progress.source_log_pos}" if progress.source_log_file else None
    groups: list[GroupAfterLwm] = []
    problem = None
    if records and logs is None:
        problem = "the channel's relay log index is unknown: gaps cannot be named"
    elif records:
        try:
            for ordinal, txn, record in walk_after_lwm(slave, channel, logs, (progress, records)):  # type: ignore[arg-type]
                groups.append(
                    GroupAfterLwm(
                        ordinal,
                        txn.describe(),
                        str(txn.start),
                        str(txn.end),
                        None if record is None else record.worker,
                    )
                )
        except RelaydeckError as exc:
            problem = exc.one_line()
    gaps = [g for g in groups if g.is_gap]
    plan: list[str] = []
    if not records:
        plan.append(f"no gaps: resume from the low-water mark ({relay or 'the start of the relay log'})")
    elif problem is not None:
        plan.append(f"cannot recover automatically: {problem}")
    else:
        plan.append(
            f"read from the low-water mark {relay or 'at the start of the relay log'}; skip the "
            f"{len(records)} transactions committed after it"
        )
        for g in gaps:
            plan.append(f"apply gap #{g.ordinal} ({g.transaction}, relay log {g.relay_start}) alone")
        plan.append(
            f"move the low-water mark to #{groups[-1].ordinal} ({groups[-1].relay_end}), then resume in parallel"
        )
    return RecoveryPicture(
        channel,
        progress.transactions,
        relay,
        source,
        len(records),
        tuple(groups),
        workers,
        problem,
        tuple(plan),
    )


def _worker_row(row: dict[str, Any]) -> WorkerCheckpointRow:
    bitmap = row.get("Checkpoint_group_bitmap") or b""
    seqno = int(row.get("Checkpoint_seqno") or 0)
    bits = "".join("1" if bitmap[i // 8] >> (i % 8) & 1 else "0" for i in range(min(seqno, len(bitmap) * 8)))
    return WorkerCheckpointRow(
        int(row["Id"]),
        f"{row.get('Relay_log_name', '')}:{row.get('Relay_log_pos', 0)}",
        f"{row.get('Checkpoint_relay_log_name', '')}:{row.get('Checkpoint_relay_log_pos', 0)}",
        seqno,
        int(row.get("Checkpoint_group_size") or 0),
        bits,
    )


def fill_gaps(slave: Slave, channel: str, logs: RelayLogSet, batch_size: int = 1000) -> int:
    """Apply the gaps after the LWM and move the LWM past every transaction committed after it.

    Gaps are applied in relay-log order, several per DuckDB transaction (each with its commit
    record) because DuckDB commits are expensive; if a batch fails, its gaps are applied one per
    commit so the error names the failing one and every gap before it stays applied. An apply
    error stops the channel like any other (ChannelError); the LWM stays where it was. Returns how
    many gaps were filled.
    """
    from .executor import TransactionExecutor, is_structural
    from .vocabulary import progress_after

    progress = slave.progress(channel) or ChannelProgress(channel)
    executed = ExecutedGtids.parse(progress.executed_gtids)
    executor = TransactionExecutor(slave)
    last: tuple[int, Transaction] | None = None
    filled = 0
    pending: list[tuple[int, Transaction]] = []
    for ordinal, txn, record in walk_after_lwm(slave, channel, logs):
        if record is None:
            if is_structural(txn):
                _apply_gaps(slave, channel, executor, pending)
                pending = []
            pending.append((ordinal, txn))
            if is_structural(txn) or len(pending) >= batch_size:
                _apply_gaps(slave, channel, executor, pending)
                pending = []
            filled += 1
        if txn.gtid:
            executed.add(txn.gtid)
        last = (ordinal, txn)
    _apply_gaps(slave, channel, executor, pending)
    if last is None:
        return 0
    ordinal, txn = last
    slave.begin()
    slave.record_progress(progress_after(progress, txn, str(executed), ordinal))
    slave.commit()
    return filled


def _apply_gaps(slave: Slave, channel: str, executor, gaps: list[tuple[int, Transaction]]) -> None:  # type: ignore[no-untyped-def]
    from .executor import is_structural
    from .vocabulary import transaction_error

    if not gaps:
        return
    try:
        slave.begin(changes_definitions=any(is_structural(t) for _, t in gaps))
        for _, txn in gaps:
            executor.apply(txn)
        executor.flush()
        slave.record_commits([_record(channel, ordinal, txn) for ordinal, txn in gaps])
        slave.commit()
    except Exception as exc:  # narrowed down to its transaction, whatever it is
        slave.rollback()
        executor.discard()
        if len(gaps) > 1:
            for gap in gaps:
                _apply_gaps(slave, channel, executor, [gap])
            return
        raise transaction_error(channel, gaps[0][1], exc) from None


def _record(channel: str, ordinal: int, txn: Transaction) -> CommitRecord:
    return CommitRecord(
        channel, ordinal, txn.gtid, txn.end.log_name, txn.end.pos, txn.source_log_file, txn.source_end_pos, 0
    )


def inspect_recovery(
    slave_path: str | Path, repository_path: str | Path, channel: str | None = None
) -> list[RecoveryPicture]:
    """The recovery picture of every channel (or one), read without changing the slave or the
    repository: what the next start would apply before resuming. None for a channel that does
    not exist."""
    from ..repository import Repository

    if not Path(slave_path).exists():
        raise RecoveryError(f"{slave_path}: slave does not exist")
    if not Path(repository_path).exists():
        raise RecoveryError(f"{repository_path}: repository does not exist")
    slave = Slave(slave_path, read_only=True)
    try:
        with Repository(repository_path) as repository:
            return recovery_pictures(slave, repository, channel)
    finally:
        slave.close()


def recovery_pictures(slave: Slave, repository, channel: str | None = None) -> list[RecoveryPicture]:  # type: ignore[no-untyped-def]
    """inspect_recovery() over an open slave and repository (a running server's own)."""
    from ..relaylog.index import read_index

    names = {p.channel.lower(): p.channel for p in slave.all_progress()}
    names.update({n.lower(): n for n in repository.channels()})
    if channel is not None:
        # none for a channel that does not exist: the caller words that error (MySQL's 3074)
        names = {channel.lower(): names[channel.lower()]} if channel.lower() in names else {}
    pictures = []
    for name in sorted(names.values()):
        info = repository.relay_log_info(name) or {}
        index = info.get("Relay_log_index")
        logs = None
        problem = None
        if index:
            try:
                logs = read_index(Path(index))
            except RelaydeckError as exc:
                problem = exc.one_line()
        picture = recovery_picture(slave, name, logs, repository.worker_infos(name))
        if problem is not None and picture.problem is not None:
            picture = replace(picture, problem=problem)
        pictures.append(picture)
    return pictures
