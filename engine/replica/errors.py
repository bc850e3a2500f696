"""The errors and warnings of relaydeck's replication statements, numbered and worded as MySQL's.

Numbers are MySQL's (its error reference; a non-default channel gets the channel variant of an
error where MySQL has one, e.g. 3081 instead of 1198); the wording of the channel errors follows
WL#1697, which adds " FOR CHANNEL '<name>'" to the classic messages for a non-default channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ER_SLAVE_CHANNEL_NAME_INVALID_OR_TOO_LONG as ER_SLAVE_CHANNEL_NAME_INVALID_OR_TOO_LONG
from ..errors import ChannelNameError, NumberedError
from ..relaylog.index import validate_channel_name

ER_ACCESS_DENIED_ERROR = 1045
ER_PARSE_ERROR = 1064
ER_SLAVE_MUST_STOP = 1198
ER_GLOBAL_VARIABLE = 1229
ER_WRONG_VALUE_FOR_VAR = 1231
ER_WRONG_TYPE_FOR_VAR = 1232
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_SLAVE_WAS_RUNNING = 1254
ER_SLAVE_WAS_NOT_RUNNING = 1255
ER_RELAY_LOG_INIT = 1380
ER_WRONG_ARGUMENTS = 1210
ER_MTS_CHANGE_MASTER_CANT_RUN_WITH_GAPS = 1802
ER_SLAVE_CHANNEL_DOES_NOT_EXIST = 3074
ER_SLAVE_MULTIPLE_CHANNELS_HOST_PORT = 3075
ER_SLAVE_MAX_CHANNELS_EXCEEDED = 3080
ER_SLAVE_MULTIPLE_CHANNELS_CMD = 3079
ER_SLAVE_CHANNEL_MUST_STOP = 3081
ER_SLAVE_CHANNEL_WAS_RUNNING = 3083
ER_SLAVE_CHANNEL_WAS_NOT_RUNNING = 3084
ER_UNTIL_REQUIRES_USING_GTID = 1781
ER_BAD_SLAVE_UNTIL_COND = 1277
ER_NOT_SUPPORTED_YET = 1235
ER_BAD_SLAVE = 1200
ER_ERROR_WHEN_EXECUTING_COMMAND = 1220
ER_UNKNOWN_TARGET_BINLOG = 1373
ER_MALFORMED_GTID_SET_SPECIFICATION = 1772
CR_CONNECTION_ERROR = 2002  # a client error: cannot connect through the local socket


class CommandError(NumberedError):
    """A replication statement that failed: MySQL's error number and message."""


@dataclass(frozen=True, slots=True)
class Warning_:
    """A note or warning a statement leaves behind (SHOW WARNINGS), e.g. 'already running'."""

    level: str  # "Note" or "Warning"
    code: int
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.code}: {self.message}"


def for_channel(channel: str) -> str:
    """WL#1697's suffix: nothing for the default channel."""
    return "" if channel == "" else f" FOR CHANNEL '{channel}'"


def parse_error(near: str) -> CommandError:
    return CommandError(
        ER_PARSE_ERROR,
        "You have an error in your SQL syntax; check the manual that corresponds to your MySQL "
        f"server version for the right syntax to use near '{near[:80]}' at line 1",
    )


def checked_channel_name(channel: str) -> str:
    """The name a statement gives, validated as everywhere (relaylog.index), failing with 3076."""
    try:
        return validate_channel_name(channel)
    except ChannelNameError as exc:
        raise CommandError(exc.errno, exc.message) from None


def channel_does_not_exist(channel: str) -> CommandError:
    return CommandError(ER_SLAVE_CHANNEL_DOES_NOT_EXIST, f"Slave channel '{channel}' does not exist")


def multiple_channels() -> CommandError:
    return CommandError(
        ER_SLAVE_MULTIPLE_CHANNELS_CMD,
        "Multiple channels exist. Cannot choose a channel to act. Use FOR CHANNEL clause to choose a channel",
    )


def same_host_port(channel: str) -> CommandError:
    return CommandError(
        ER_SLAVE_MULTIPLE_CHANNELS_HOST_PORT,
        f"Multiple slave channels for the same host and port combination (channel '{channel}' has them)",
    )


def must_stop(channel: str) -> CommandError:
    return CommandError(
        ER_SLAVE_CHANNEL_MUST_STOP if channel else ER_SLAVE_MUST_STOP,
        f"This operation cannot be performed. Run STOP SLAVE{for_channel(channel)} first",
    )


def already_running(channel: str) -> Warning_:
    code = ER_SLAVE_CHANNEL_WAS_RUNNING if channel else ER_SLAVE_WAS_RUNNING
    return Warning_("Note", code, f"Slave is already running{for_channel(channel)}")


def already_stopped(channel: str) -> Warning_:
    code = ER_SLAVE_CHANNEL_WAS_NOT_RUNNING if channel else ER_SLAVE_WAS_NOT_RUNNING
    return Warning_("Note", code, f"Slave is already stopped{for_channel(channel)}")
