"""Typed errors carrying what a DBA needs to find the problem: file, position, and why."""

from __future__ import annotations


def escaped(text: str) -> str:
    """The text on one line, nothing hidden: what does not print as itself (line breaks, control
    bytes, bidi overrides…) written as Python escapes (\\n, \\x1b, \\u202e)."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class RelaydeckError(Exception):
    """Base of every error relaydeck reports in one line."""

    def one_line(self) -> str:
        """The message on one line: names from the log may hold line breaks and control bytes."""
        return escaped(str(self))


class BinlogError(RelaydeckError):
    """Bad or unreadable relay/binary log input at a known file and position."""

    def __init__(self, file: str, pos: int | None, message: str) -> None:
        self.file = file
        self.pos = pos
        self.message = message
        where = f"{file}" if pos is None else f"{file} at position {pos}"
        super().__init__(f"{where}: {message}")


class ChecksumMismatch(BinlogError):
    """The CRC32 stored in an event does not match its bytes (flipped bits, torn write)."""


class TruncatedEvent(BinlogError):
    """The file ends inside an event: cut off, or (when following a live log) not arrived yet."""


class UnknownEvent(BinlogError):
    """An event type this decoder does not know, without the IGNORABLE flag."""


class RelayLogGap(BinlogError):
    """The relay logs are not continuous: events, transactions or files the source logged are
    missing at this file and position (MySQL's relay log read failure)."""

    errno = 1594  # ER_SLAVE_RELAY_LOG_READ_FAILURE

    def __init__(self, file: str, pos: int | None, message: str) -> None:
        super().__init__(file, pos, f"Relay log read failure: {message}")
        self.detail = message


class RelayIndexError(BinlogError):
    """An index file that is empty, dangling, or names a file that does not exist."""


class NumberedError(RelaydeckError):
    """An error with MySQL's number, worded as the mysql client prints it: `ERROR n: message`."""

    def __init__(self, errno: int, message: str) -> None:
        self.errno = errno
        self.message = message
        super().__init__(f"ERROR {errno}: {message}")


# MySQL's numbers for the errors below
ER_CANT_LOCK = 1015
ER_CANT_OPEN_FILE = 1016
ER_SLAVE_CHANNEL_NAME_INVALID_OR_TOO_LONG = 3076


class ChannelNameError(NumberedError, ValueError):
    """A channel name WL#1697 or relaydeck refuses (too long, or characters a file name or a
    terminal should not hold); a ValueError too, as a bad argument."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            ER_SLAVE_CHANNEL_NAME_INVALID_OR_TOO_LONG,
            f"Couldn't create channel: Channel name is either invalid or too long ({detail})",
        )


class SlaveFileError(NumberedError):
    """The slave's DuckDB file cannot be opened: held by another process, or not a database."""
