"""LOGICAL_CLOCK scheduling: the source's commit clock turned into a dependency on channel ordinals.

MySQL logs last_committed / sequence_number with each GTID: a transaction may start once every
transaction with sequence_number <= last_committed has committed. MariaDB logs a commit_id: the
transactions of one group commit share it and may run together, after every earlier group.

Both clocks count within one source binary log (MySQL restarts sequence numbers at 1 in every
file). MySQL's applier stops with error 1755 when a transaction of a new file arrives while the
old one's are still running; here the boundary is simply a dependency on everything before it.
The result is an ordinal D: the transaction waits until every ordinal <= D has committed.
"""

from __future__ import annotations

from ..transactions import Transaction


class LogicalClock:
    def __init__(self) -> None:
        self._file: str | None = None
        self._file_base = 0  # the last ordinal before the current source file's first transaction
        self._last_sequence = 0
        self._first_sequence = 0
        self._ordinal_of: dict[int, int] = {}  # sequence_number -> ordinal, current file only
        self._commit_id: int | None = None
        self._group_base = 0  # the last ordinal before the current MariaDB group

    def dependency(self, txn: Transaction, ordinal: int) -> int:
        """The ordinal the transaction depends on (it and everything before must have committed)."""
        if txn.sequence_number:  # MySQL 5.7+ logical clock
            sequence = txn.sequence_number
            if txn.source_log_file != self._file or sequence <= self._last_sequence:
                self._new_file(txn.source_log_file, ordinal)
            if not self._ordinal_of:
                self._first_sequence = sequence
            self._last_sequence = sequence
            self._ordinal_of[sequence] = ordinal
            self._commit_id = None
            last_committed = txn.last_committed or 0
            if last_committed >= sequence:
                return ordinal - 1  # a malformed clock: play safe
            # Sequence numbers before the first one read here (the relay log began mid-file, or
            # the applier restarted) belong to transactions already committed: the file base.
            known = self._ordinal_of.get(last_committed)
            if known is not None:
                return known
            if last_committed < self._first_sequence:
                return self._file_base
            return max(o for s, o in self._ordinal_of.items() if s <= last_committed)
        if txn.commit_id:  # MariaDB group commit
            if txn.source_log_file != self._file:
                self._new_file(txn.source_log_file, ordinal)
            if txn.commit_id != self._commit_id:
                self._commit_id = txn.commit_id
                self._group_base = ordinal - 1
            return self._group_base
        # Nothing logged (MySQL 5.6, anonymous MariaDB transactions outside a group): in order.
        self._commit_id = None
        return ordinal - 1

    def skipped(self, txn: Transaction, last_ordinal: int) -> None:
        """A transaction already applied (skipped by GTID): later ones may still name its number."""
        if txn.sequence_number:
            if txn.source_log_file != self._file or txn.sequence_number <= self._last_sequence:
                self._new_file(txn.source_log_file, last_ordinal + 1)
            if not self._ordinal_of:
                self._first_sequence = txn.sequence_number
            self._last_sequence = txn.sequence_number
            self._ordinal_of[txn.sequence_number] = last_ordinal

    def _new_file(self, name: str | None, first_ordinal: int) -> None:
        self._file = name
        self._file_base = first_ordinal - 1
        self._last_sequence = 0
        self._first_sequence = 0
        self._ordinal_of = {}
        self._commit_id = None
