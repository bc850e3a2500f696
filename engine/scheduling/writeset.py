"""WRITESET dependency tracking (WL#9556, the seed's algorithm AL1): last_committed from row hashes.

A transaction may run in parallel with every earlier transaction whose rows it does not touch.
The history maps each writeset hash to the sequence number of the last transaction that touched
it; a transaction's last_committed is the newest such number among its hashes, but never older
than the start of the current window. Transactions without a writeset (DDL, statement format,
empty) cannot be checked, so they depend on their predecessor and open a new window; so does a
history that would overflow its bounded size.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import lru_cache

from . import DEFAULT_HISTORY_SIZE

_LEN = struct.Struct("<I")


class WritesetHistory:
    """Bounded history of writeset hashes for one stream of sequence numbers."""

    def __init__(self, history_size: int = DEFAULT_HISTORY_SIZE, window_start: int = 0) -> None:
        if history_size < 1:
            raise ValueError("history_size must be at least 1")
        self._capacity = history_size
        self._history: dict[int, int] = {}
        self._window_start = window_start
        self._last_sequence_number = window_start

    @property
    def window_start(self) -> int:
        """No transaction gets a last_committed older than this."""
        return self._window_start

    def __len__(self) -> int:
        return len(self._history)

    def dependency(
        self,
        sequence_number: int,
        writeset: Iterable[int] | None,
        commit_parent: int | None = None,
        distinct: bool = False,
    ) -> int:
        """Return last_committed for the transaction and record its hashes.

        commit_parent is what commit-order tracking alone would give (sequence_number - 1 for a
        source that commits one transaction at a time); WRITESET never reports more than that.
        distinct: the writeset is a list without repeats (the preparing stage's), taken as it is.
        """
        if commit_parent is None:
            commit_parent = sequence_number - 1
        self._last_sequence_number = sequence_number
        if writeset is None:
            hashes: list[int] = []
        elif distinct:
            hashes = writeset  # type: ignore[assignment]
        else:
            hashes = list(dict.fromkeys(writeset))
        if not hashes:
            # Nothing to compare against: depend on the predecessor and start a new window.
            self._open_window(sequence_number)
            return commit_parent
        exceeds_capacity = len(self._history) + len(hashes) > self._capacity
        last_parent = self._window_start
        for h in hashes:
            seen = self._history.get(h)
            if seen is not None:
                if last_parent < seen < sequence_number:
                    last_parent = seen
                self._history[h] = sequence_number
            elif not exceeds_capacity:
                self._history[h] = sequence_number
        if exceeds_capacity:
            # The transaction was judged against the full history; later ones start afresh.
            self._open_window(sequence_number)
        return min(last_parent, commit_parent)

    def reset(self, window_start: int | None = None) -> None:
        """Forget every hash; later transactions depend on at least window_start.

        Without an argument the window starts at the last sequence number seen (a history purge,
        the seed's EX6); a new binary log passes 0 because its sequence numbers restart at 1.
        """
        self._open_window(self._last_sequence_number if window_start is None else window_start)

    def _open_window(self, start: int) -> None:
        self._history.clear()
        self._window_start = start
        self._last_sequence_number = start


def writeset_hash(db: str, table: str, key_name: str, values: tuple[object, ...]) -> int:
    """Stable unsigned 64-bit hash of one key value of one row (same inputs, same hash, any run).

    A key of one integer, the most common by far, is mixed arithmetically (int_key_hash) so
    the preparing stage can hash a whole column at once; every other key goes through BLAKE2b.
    """
    if len(values) == 1 and type(values[0]) is int:
        return int_key_hash(int_key_seed(db, table, key_name), values[0])
    parts = [_key_prefix(db, table, key_name)]
    for value in values:
        raw = _value_bytes(value)
        parts.append(_LEN.pack(len(raw)))
        parts.append(raw)
    return int.from_bytes(hashlib.blake2b(b"".join(parts), digest_size=8).digest(), "little")


def one_column_hashes(
    db: str,
    table: str,
    key_name: str,
    column: Sequence[object],
    rows: range,
    out: list[int],
    normalize: Callable[[object], object],
) -> None:
    """writeset_hash(db, table, key_name, (normalize(value),)) of each row of a key of one column,
    appended to `out` (a NULL skipped but in the primary key), with the call inlined. (The
    preparing stage hashes a whole run's column of integers at once: column_hashes.py.)"""
    prefix = _key_prefix(db, table, key_name)
    seed = int_key_seed(db, table, key_name)
    primary = key_name == "PRIMARY"
    pack, blake2b, from_bytes, append = _LEN.pack, hashlib.blake2b, int.from_bytes, out.append
    for row in rows:
        value = column[row]
        if type(value) is not int:
            value = normalize(value)
            if value is None and not primary:
                continue  # NULLs never collide in a unique or foreign key
        if type(value) is int:  # what normalize leaves as it is
            append(int_key_hash(seed, value))
            continue
        raw = _value_bytes(value)
        append(from_bytes(blake2b(prefix + pack(len(raw)) + raw, digest_size=8).digest(), "little"))


_MASK_64 = (1 << 64) - 1
# The multipliers of SplitMix64's finaliser, a well-studied 64-bit mixer: every input bit moves
# about half the output bits, so distinct integers of one key practically never share a hash
# (and a shared one only costs a needless dependency, never a missed one).
MIX_1 = 0xBF58476D1CE4E5B9
MIX_2 = 0x94D049BB133111EB


def _mix(x: int) -> int:
    x = ((x ^ (x >> 30)) * MIX_1) & _MASK_64
    x = ((x ^ (x >> 27)) * MIX_2) & _MASK_64
    return x ^ (x >> 31)


def int_key_hash(seed: int, value: int) -> int:
    """The hash of an integer key value: its 64 bits mixed, the key's seed added, mixed again.
    Integers are taken modulo 2**64, so a signed and an unsigned BIGINT of the same bits meet."""
    return _mix(_mix(value & _MASK_64) ^ seed)


@lru_cache(maxsize=4096)
def int_key_seed(db: str, table: str, key_name: str) -> int:
    """What tells one key's integers from another's: 64 bits of the key's names, hashed."""
    digest = hashlib.blake2b(_key_prefix(db, table, key_name) + b"I", digest_size=8).digest()
    return int.from_bytes(digest, "little")


@lru_cache(maxsize=4096)
def _key_prefix(db: str, table: str, key_name: str) -> bytes:
    out = bytearray()
    for part in (key_name, db, table):
        raw = part.encode()
        out += _LEN.pack(len(raw)) + raw
    return bytes(out)


def _value_bytes(value: object) -> bytes:
    # A type tag keeps 1, "1" and b"1" apart; bool is tested before int because it is an int.
    if type(value) is int:
        return b"I%d" % value
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"B1" if value else b"B0"
    if isinstance(value, int):
        return b"I%d" % value
    if isinstance(value, str):
        return b"S" + value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return b"Y" + bytes(value)
    if isinstance(value, Decimal):
        return b"D" + str(value.normalize()).encode()
    if isinstance(value, float):
        return b"F" + value.hex().encode()
    if isinstance(value, datetime | date):
        return b"T" + value.isoformat().encode()
    if isinstance(value, timedelta):
        return b"E" + str(value).encode()
    raise TypeError(f"cannot hash a key value of type {type(value).__name__}")
