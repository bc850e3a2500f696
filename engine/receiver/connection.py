"""The receiver's connection to its source: PyMySQL's connect, and the source's and the network's
errors turned into MySQL's Last_IO_Errno / Last_IO_Error, with the password never in them.

A replica's IO thread tells two kinds of failure apart: the connection went away (the network,
the source shut down, a stalled connection noticed by the heartbeat, and any failure to connect,
wrong passwords included) is retried per SOURCE_CONNECT_RETRY / SOURCE_RETRY_COUNT; the source
refusing the dump (a purged binlog, 1236) is fatal at once.

A channel's TLS follows MySQL's replica (SOURCE_SSL and its options, SourceTls): SOURCE_SSL = 0
never encrypts, even where the source offers it; SOURCE_SSL = 1 requires encryption and checks
the source's certificate as far as asked: against SOURCE_SSL_CA/CAPATH when given (MySQL's
ssl-mode VERIFY_CA), and its host name too with SOURCE_SSL_VERIFY_SERVER_CERT = 1
(VERIFY_IDENTITY); with neither it encrypts without checking (REQUIRED). Every TLS failure is
MySQL's 2026, "SSL connection error: ...", a connection error retried like the others. An account
without TLS settings (`relaydeck receive`'s) keeps PyMySQL's default: TLS when the source offers
it, the certificate unchecked.

Authentication is PyMySQL's, in whatever method the source's account asks for: mysql_native_password,
MariaDB's client_ed25519 (with PyNaCl, a dependency), caching_sha2_password (its full exchange over
TLS, or RSA with the cryptography package). A method it cannot use is 2059.
"""

from __future__ import annotations

# Loaded here, before any receiver thread: a host name's first lookup imports this codec, and an
# import of it racing another thread's imports was seen to fail with "unknown encoding: idna".
import encodings.idna  # noqa: F401
import re
import socket
import ssl
from dataclasses import dataclass

import pymysql

from ..errors import NumberedError

ER_ACCESS_DENIED_ERROR = 1045
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
CR_UNKNOWN_HOST = 2005
CR_CONN_HOST_ERROR = 2003
CR_SERVER_LOST = 2013
CR_SSL_CONNECTION_ERROR = 2026
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
class SourceTls:
    """SOURCE_SSL and its options, as master_info keeps them (paths and a cipher list; '' = not
    given)."""

    enabled: bool = False  # SOURCE_SSL
    ca: str = ""  # SOURCE_SSL_CA
    capath: str = ""  # SOURCE_SSL_CAPATH
    cert: str = ""  # SOURCE_SSL_CERT
    key: str = ""  # SOURCE_SSL_KEY
    cipher: str = ""  # SOURCE_SSL_CIPHER (TLS 1.2 ciphers; TLS 1.3's suites are OpenSSL's defaults)
    verify_server_cert: bool = False  # SOURCE_SSL_VERIFY_SERVER_CERT

    def context(self) -> ssl.SSLContext:
        """The client context for this channel; ConnectionLost (2026) when a file or the cipher
        list cannot be used."""
        try:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = self.verify_server_cert
            if self.ca or self.capath:
                context.load_verify_locations(cafile=self.ca or None, capath=self.capath or None)
            elif self.verify_server_cert:
                context.load_default_certs()  # asked to verify with no CA: the system's own
            else:
                context.verify_mode = ssl.CERT_NONE
            if self.cert:
                context.load_cert_chain(self.cert, keyfile=self.key or None)
            elif self.key:
                raise ValueError("SOURCE_SSL_KEY is given without SOURCE_SSL_CERT")
            if self.cipher:
                context.set_ciphers(self.cipher)
        except ssl.SSLError as exc:
            raise ConnectionLost(CR_SSL_CONNECTION_ERROR, _ssl_message(exc, self._given())) from None
        except OSError as exc:  # a file missing or unreadable
            raise ConnectionLost(
                CR_SSL_CONNECTION_ERROR, f"SSL connection error: {exc.strerror} ({self._given()})"
            ) from None
        except ValueError as exc:
            raise ConnectionLost(CR_SSL_CONNECTION_ERROR, f"SSL connection error: {exc}") from None
        return context

    def _given(self) -> str:
        named = [("SOURCE_SSL_CA", self.ca), ("SOURCE_SSL_CAPATH", self.capath), ("SOURCE_SSL_CERT", self.cert),
                 ("SOURCE_SSL_KEY", self.key), ("SOURCE_SSL_CIPHER", self.cipher)]  # fmt: skip
        return ", ".join(f"{option} = '{value}'" for option, value in named if value)


@dataclass(frozen=True)
class SourceAccount:
    host: str
    port: int
    user: str
    password: str = ""
    tls: SourceTls | None = None  # None: PyMySQL's default, TLS when the source offers it, unchecked

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
    if account.tls is None:
        tls = {}
    elif account.tls.enabled:
        tls = {"ssl": account.tls.context()}  # an SSLContext: PyMySQL requires TLS (2026 without)
    else:
        tls = {"ssl_disabled": True}
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
            **tls,
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
    elif isinstance(cause, ssl.SSLError):  # the handshake: a certificate refused, no common cipher
        errno, message = CR_SSL_CONNECTION_ERROR, _ssl_message(cause)
    elif errno == CR_SSL_CONNECTION_ERROR and not message.startswith("SSL connection error"):
        message = f"SSL connection error: {message}"  # PyMySQL's: the source does not offer TLS
    return errno, account.scrub(message)


def _ssl_message(exc: ssl.SSLError, given: str = "") -> str:
    """MySQL's 2026 text from an ssl error: OpenSSL's reason, without Python's '[SSL: …]' tag and
    source line."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = f"certificate verify failed: {exc.verify_message}"
    else:
        text = str(exc.args[1] if len(exc.args) > 1 else exc.args[0] if exc.args else exc)
        reason = re.sub(r"^\[[^\]]*\]\s*|\s*\(_ssl\.c:\d+\)$", "", text)
    return f"SSL connection error: {reason}" + (f" ({given})" if given else "")
