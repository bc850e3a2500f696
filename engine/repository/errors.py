"""The replication repository's errors."""

from __future__ import annotations

from ..errors import RelaydeckError


class RepositoryError(RelaydeckError):
    """A replication-repository operation that could not be done."""


class InvalidChannelName(RepositoryError):
    """A channel name WL#1697 does not allow (over 64 characters, or not a file-name part)."""


class TooManyChannels(RepositoryError):
    """Creating the channel would exceed the 256 channels a replica may have."""


class UnknownChannel(RepositoryError):
    """The channel does not exist."""


class UnknownField(RepositoryError):
    """A row names a column its table does not have."""
