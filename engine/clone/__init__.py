"""`relaydeck clone`: the initial data of a channel whose source's binary logs no longer reach back
to its beginning — a consistent snapshot of the source's tables copied into the slave, and the
channel positioned at exactly that snapshot (engine/clone/clone.py)."""

from .clone import CloneRefused, CloneResult, clone_channel
from .source import CloneError, SnapshotPosition

__all__ = ["CloneError", "CloneRefused", "CloneResult", "SnapshotPosition", "clone_channel"]
