"""The replication repository: one SQLite file of per-channel replica state, laid out as MySQL lays it out.

- ``tables``: the tables (MySQL's replication metadata, performance_schema's live status,
  relaydeck's own), their columns and defaults, timestamps and channel names.
- ``migrations``: creating them, and adding the columns a file from an earlier relaydeck lacks.
- ``store``: the connection, its one-statement transactions and the row operations.
- ``metadata``: master_info, relay_log_info, worker_info, channel options; the global variables and
  the serving process.
- ``status``: live status, and SHOW REPLICA STATUS (``ChannelStatus``) built from it.

``Repository`` joins them: one object, one file.
"""

from __future__ import annotations

from .errors import InvalidChannelName, RepositoryError, TooManyChannels, UnknownChannel, UnknownField
from .metadata import Metadata
from .status import ChannelStatus, LiveStatus
from .tables import DEFAULT_CHANNEL, MAX_CHANNELS, ZERO_TIMESTAMP, mysql_timestamp

__all__ = [
    "DEFAULT_CHANNEL",
    "MAX_CHANNELS",
    "ZERO_TIMESTAMP",
    "ChannelStatus",
    "InvalidChannelName",
    "Repository",
    "RepositoryError",
    "TooManyChannels",
    "UnknownChannel",
    "UnknownField",
    "mysql_timestamp",
]


class Repository(Metadata, LiveStatus):
    """Channel-keyed replica metadata and live status in one SQLite file.

    Opening creates whatever tables are missing and the default channel; opening an existing
    file writes nothing, so readers can open it freely. One object may be shared by threads.
    """
