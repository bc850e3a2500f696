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

import numpy as np
import pyarrow as pa

DEFAULT_HISTORY_SIZE = 25000  # binlog_transaction_dependency_history_size default

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
    ) -> int:
        """Return last_committed for the transaction and record its hashes.

        commit_parent is what commit-order tracking alone would give (sequence_number - 1 for a
        source that commits one transaction at a time); WRITESET never reports more than that.
        """
        if commit_parent is None:
            commit_parent = sequence_number - 1
        self._last_sequence_number = sequence_number
        hashes = list(dict.fromkeys(writeset)) if writeset is not None else []
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

    A key of one integer, the most common by far, is mixed arithmetically (_int_key_hash) so
    the preparing stage can hash a whole column at once; every other key goes through BLAKE2b.
    """
    if len(values) == 1 and type(values[0]) is int:
        return _int_key_hash(_int_key_seed(db, table, key_name), values[0])
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
    appended to `out` (a NULL skipped but in the primary key). The preparing stage hashes every
    row image: a column of integers without NULLs is hashed in one numpy pass (measured on the
    MariaDB capture: a third of the preparing stage's CPU went to hashing row by row), anything
    else row by row with the call inlined."""
    if len(rows) >= _VECTOR_FROM and rows.step == 1:
        hashes = _int_column_hashes(_int_key_seed(db, table, key_name), column[rows.start : rows.stop])
        if hashes is not None:
            out.extend(hashes.tolist())
            return
    prefix = _key_prefix(db, table, key_name)
    seed = _int_key_seed(db, table, key_name)
    primary = key_name == "PRIMARY"
    pack, blake2b, from_bytes, append = _LEN.pack, hashlib.blake2b, int.from_bytes, out.append
    for row in rows:
        value = column[row]
        if type(value) is int:  # what normalize leaves as it is
            append(_int_key_hash(seed, value))
            continue
        value = normalize(value)
        if value is None and not primary:
            continue  # NULLs never collide in a unique or foreign key
        if type(value) is int:
            append(_int_key_hash(seed, value))
            continue
        raw = _value_bytes(value)
        append(from_bytes(blake2b(prefix + pack(len(raw)) + raw, digest_size=8).digest(), "little"))


# A column this long or longer is tried as integers in one numpy pass (below it, converting costs
# more than it saves).
_VECTOR_FROM = 8
_MASK = (1 << 64) - 1
# The multipliers of SplitMix64's finaliser, a well-studied 64-bit mixer: every input bit moves
# about half the output bits, so distinct integers of one key practically never share a hash
# (and a shared one only costs a needless dependency, never a missed one).
_MIX_1 = 0xBF58476D1CE4E5B9
_MIX_2 = 0x94D049BB133111EB


def _mix(x: int) -> int:
    x = ((x ^ (x >> 30)) * _MIX_1) & _MASK
    x = ((x ^ (x >> 27)) * _MIX_2) & _MASK
    return x ^ (x >> 31)


def _int_key_hash(seed: int, value: int) -> int:
    """The hash of an integer key value: its 64 bits mixed, the key's seed added, mixed again.
    Integers are taken modulo 2**64, so a signed and an unsigned BIGINT of the same bits meet."""
    return _mix(_mix(value & _MASK) ^ seed)


def _mix_array(x: np.ndarray) -> np.ndarray:
    """_mix of each element (numpy's uint64 arithmetic wraps, as the mask does above)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(_MIX_1)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(_MIX_2)
    return x ^ (x >> np.uint64(31))


def _int_column_hashes(seed: int, values: Sequence[object]) -> np.ndarray | None:
    """_int_key_hash of each value when all are integers that fit 64 bits; None otherwise (the
    caller hashes them one by one)."""
    array = _integers(values)
    if array is None or array.null_count:
        return None
    return _hash_bits(seed, array)


def _integers(values: Sequence[object]) -> pa.Array | None:
    """The values as an Arrow integer array (NULLs kept), or None when they are anything else:
    Arrow infers the type, so a bool, a float or a string anywhere gives another type or fails."""
    try:
        array = pa.array(values)
    except OverflowError:  # Arrow infers int64: an unsigned BIGINT above it is tried as uint64
        try:
            array = pa.array(values, pa.uint64())
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            return None
    except (pa.ArrowException, TypeError, ValueError):
        return None
    return array if pa.types.is_integer(array.type) else None


def _hash_bits(seed: int, array: pa.Array) -> np.ndarray:
    bits = array.to_numpy().astype(np.int64, copy=False).view(np.uint64)
    with np.errstate(over="ignore"):
        return _mix_array(_mix_array(bits) ^ np.uint64(seed))


def int_key_hashes(
    db: str, table: str, key_name: str, values: Sequence[object]
) -> tuple[np.ndarray | None, np.ndarray] | None:
    """writeset_hash of each value of a key of one integer column, in one numpy pass, with the
    rows hashed (None: all of them; a unique or foreign key's NULLs are left out). None when the
    values are not all integers that fit 64 bits (hash them one by one)."""
    array = _integers(values)
    if array is None:
        return None
    seed = _int_key_seed(db, table, key_name)
    if not array.null_count:
        return None, _hash_bits(seed, array)
    if key_name == "PRIMARY":
        return None  # NULL in a primary key: hashed one by one, as writeset_hash does
    rows = np.flatnonzero(array.is_valid().to_numpy(zero_copy_only=False))
    return rows, _hash_bits(seed, array.drop_null())


@lru_cache(maxsize=4096)
def _int_key_seed(db: str, table: str, key_name: str) -> int:
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
