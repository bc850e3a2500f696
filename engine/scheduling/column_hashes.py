"""Writeset hashes of a whole column of integer key values, in one numpy pass.

The preparing stage hashes every row image of a run. An OLTP transaction's rows event holds a row
or two, too few to hash other than one by one; a run's column of a key holds thousands. Each hash
is writeset.int_key_hash of the value, so a key hashed here and one hashed by the coordinator from
a single transaction meet (measured on the MariaDB capture: hashing row by row was a third of the
preparing stage's CPU under WRITESET).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..binlog.columns import ColumnBuffer
from .writeset import MIX_1, MIX_2, int_key_seed


def int_key_hashes(
    db: str, table: str, key_name: str, values: Sequence[object]
) -> tuple[np.ndarray | None, np.ndarray] | None:
    """The hash of each value of a key of one integer column, and the rows hashed (None: all of
    them; a unique or foreign key's NULLs are left out). None when the values are not all
    integers that fit 64 bits: the caller hashes them one by one."""
    array = _integers(values)
    if array is None:
        return None
    seed = int_key_seed(db, table, key_name)
    if not array.null_count:
        return None, _hashes(seed, array)
    if key_name == "PRIMARY":
        return None  # a NULL in a primary key: hashed one by one, as writeset_hash does
    rows = np.flatnonzero(array.is_valid().to_numpy(zero_copy_only=False))
    return rows, _hashes(seed, array.drop_null())


def _integers(values: Sequence[object]) -> pa.Array | None:
    """The values as an Arrow integer array (NULLs kept), or None when they are anything else:
    Arrow infers the type, so a bool, a float or a string anywhere gives another type or fails."""
    if ColumnBuffer is not None and type(values) is ColumnBuffer:
        return values.integers()  # decoded into Arrow's layout: no Python values to convert
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


def _hashes(seed: int, array: pa.Array) -> np.ndarray:
    """int_key_hash(seed, v) of each value: numpy's uint64 arithmetic wraps as the mask does."""
    bits = array.to_numpy().astype(np.int64, copy=False).view(np.uint64)
    with np.errstate(over="ignore"):
        return _mix(_mix(bits) ^ np.uint64(seed))


def _mix(x: np.ndarray) -> np.ndarray:
    x = (x ^ (x >> np.uint64(30))) * np.uint64(MIX_1)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(MIX_2)
    return x ^ (x >> np.uint64(31))
