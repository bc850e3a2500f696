"""The receiver's connection to its source: PyMySQL's connect, and the source's and the network's
errors turned into MySQL's Last_IO_Errno / Last_IO_Error, with the password never in them.

A replica's IO thread tells two kinds of failure apart: the connection went away (the network,
the source shut down, a stalled connection noticed by the heartbeat, and any failure to connect,
wrong passwords included) is retried per SOURCE_CONNECT_RETRY / SOURCE_RETRY_COUNT; the source
refusing the dump (a purged binlog, 1236) is fatal at once.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import pymysql

from ..errors import NumberedError

ER_ACCESS_DENIED_ERROR = 1045
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
CR_UNKNOWN_HOST = 2005
CR_CONN_HOST_ERROR = 2003
CR_SERVER_LOST = 2013
CR_AUTH_PLUGIN_CANNOT_LOAD = 2059

# Server errors that mean the connection, not the request, failed: too many connections, server
# shutdown, aborted connection, the network read/write errors, connection killed.
_CONNECTION_SERVER_ERRORS = frozenset({1040, 1053, 1152, 1158, 1159, 1160, 1161, 1927})


class ReceiverError(NumberedError):
    """The receiver stopped: MySQL's Last_IO_Errno and Last_IO_Error."""


class ConnectionLost(ReceiverError):
    """The connection to the source failed or went away: a reconnection may cure it."""

    phase = "read"  # what the receiver was doing: registration, dump or read (Replica_IO_State)


@dataclass(frozen=True)
class SourceAccount:
    host: str
    port: int
    user: str
    password: str = ""

    def __repr__(self) -> str:  # the password never shows
        return f"SourceAccount({self.user}@{self.host}:{self.port})"

    @property
    def where(self) -> str:
        return f"'{self.user}@{self.host}:{self.port}'"

    def scrub(self, text: str) -> str:
        """The text without the password, should any library ever repeat it."""
        return text.replace(self.password, "***") if self.password else text


def connect(account: SourceAccount, *, read_timeout: float | None):
    """A PyMySQL connection whose reads give up after read_timeout seconds of silence; a
    ConnectionLost (with MySQL's number: 2003, 2005, 1045, …) when it cannot be had."""
    try:
        return pymysql.connect(
            host=account.host,
            port=account.port,
            user=account.user,
            password=account.password.encode("utf-8"),  # bytes: PyMySQL would encode str as latin-1
            autocommit=True,
            connect_timeout=10,
            read_timeout=read_timeout,
            write_timeout=read_timeout,
        )
    except pymysql.err.MySQLError as exc:
        errno, message = _numbered(exc, account)
        raise ConnectionLost(errno, message) from None
    except UnicodeError:  # a host name that cannot be a DNS name (an empty or too long label)
        raise ConnectionLost(CR_UNKNOWN_HOST, f"Unknown MySQL server host '{account.host}' (-2)") from None
    except RuntimeError as exc:  # PyMySQL without what an authentication method needs
        raise ConnectionLost(
            CR_AUTH_PLUGIN_CANNOT_LOAD, account.scrub(f"Authentication plugin: {exc}")
        ) from None


def source_error(exc: Exception, account: SourceAccount) -> ReceiverError:
    """An error met on an open connection: ConnectionLost when the connection is what failed,
    else the source's refusal (a purged binlog: 1236, fatal)."""
    errno, message = _numbered(exc, account)
    if is_connection_error(errno):
        return ConnectionLost(errno, message)
    if errno == ER_MASTER_FATAL_ERROR_READING_BINLOG:
        message = f"Got fatal error {errno} from source when reading data from binary log: '{message}'"
    return ReceiverError(errno, message)


def is_connection_error(errno: int) -> bool:
    return 2000 <= errno < 3000 or errno in _CONNECTION_SERVER_ERRORS


def _numbered(exc: Exception, account: SourceAccount) -> tuple[int, str]:
    errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else CR_SERVER_LOST
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    cause = getattr(exc, "original_exception", None)
    if isinstance(cause, socket.gaierror):
        errno, message = CR_UNKNOWN_HOST, f"Unknown MySQL server host '{account.host}' ({cause.errno})"
    return errno, account.scrub(message)
