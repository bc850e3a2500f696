"""A scripted MySQL 8.4 source on 127.0.0.1, written from MySQL's client/server protocol documentation
(dev.mysql.com/doc/dev/mysql-server/latest/: Handshake v10, caching_sha2_password, OK/ERR/EOF,
text result sets, COM_REGISTER_SLAVE, COM_BINLOG_DUMP_GTID), since MySQL 8's server cannot be
installed here.

It speaks just enough for a replica: the handshake with caching_sha2_password (the fast path once
an account is in its cache, else the full one: 0x04, the client asks for the RSA public key with
0x02 and sends the password XOR the scramble, RSA-OAEP encrypted), the answers to the queries a
MySQL replica's IO thread sends (each one noted in `queries`, an unknown query is an error), and a
dump: COM_BINLOG_DUMP_GTID's GTID set is decoded and kept in `dump_sets`, then the binary logs it
holds are streamed as a MySQL source streams them (an artificial Rotate, each file's
Format_description and Previous_gtids, the transactions whose GTIDs are not in the set, a Rotate
between two files, an EOF after the last one when the dump does not block, else heartbeats). A
test can have it break a dump's connection inside a transaction (drop_dump_after).
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from engine.binlog.events.base import DecodeContext, EventHeader
from engine.binlog.events.gtid_tagged import decode_gtid_tagged
from engine.gtids import GtidSet, Sid

SERVER_VERSION = "8.4.3"
COM_QUIT, COM_QUERY, COM_PING, COM_REGISTER_SLAVE, COM_BINLOG_DUMP_GTID = 0x01, 0x03, 0x0E, 0x15, 0x1E
BINLOG_DUMP_NON_BLOCK, BINLOG_THROUGH_GTID = 1, 4
# CLIENT_LONG_PASSWORD, FOUND_ROWS, LONG_FLAG, CONNECT_WITH_DB, PROTOCOL_41, TRANSACTIONS,
# SECURE_CONNECTION, MULTI_STATEMENTS, MULTI_RESULTS, PLUGIN_AUTH, CONNECT_ATTRS,
# PLUGIN_AUTH_LENENC_CLIENT_DATA: no SSL, no DEPRECATE_EOF (result sets end with EOF packets)
CAPABILITIES = (
    0x1 | 0x2 | 0x4 | 0x8 | 0x200 | 0x2000 | 0x8000 | 1 << 16 | 1 << 17 | 1 << 19 | 1 << 20 | 1 << 21
)
CLIENT_CONNECT_WITH_DB, CLIENT_PLUGIN_AUTH_LENENC = 0x8, 1 << 21
SERVER_STATUS_AUTOCOMMIT = 0x2
UTF8MB4 = 255
TYPE_VAR_STRING, TYPE_LONGLONG = 0xFD, 0x08
ROTATE, FORMAT_DESCRIPTION, HEARTBEAT, GTID, ANONYMOUS_GTID, PREVIOUS_GTIDS = 4, 15, 27, 33, 34, 35
GTID_TAGGED = 42
LOG_EVENT_ARTIFICIAL = 0x20
HEADER = struct.Struct("<IBIIIH")


@dataclass
class Transaction:
    gtid: str | None  # 'uuid:gno'; None when anonymous
    events: list[bytes]


@dataclass
class Binlog:
    """A binlog file cut into its opening events (Format_description, Previous_gtids) and its
    transactions (from one GTID event to the next)."""

    name: str
    opening: list[bytes]
    transactions: list[Transaction]

    @property
    def checksum(self) -> bool:
        fde = self.opening[0]
        return fde[-5] == 1  # the Format_description's checksum algorithm: CRC32

    @property
    def gtids(self) -> list[str]:
        return [t.gtid for t in self.transactions if t.gtid is not None]

    def cut(self, transactions: int) -> Binlog:
        """The file as the source had it when it held only its first `transactions`."""
        return Binlog(self.name, self.opening, self.transactions[:transactions])


def read_binlog(path: Path, name: str | None = None) -> Binlog:
    data = path.read_bytes()
    assert data[:4] == b"\xfebin", f"{path} is not a binlog"
    opening: list[bytes] = []
    transactions: list[Transaction] = []
    pos = 4
    while pos + 19 <= len(data):
        _, type_code, _, size, _, _ = HEADER.unpack_from(data, pos)
        event = data[pos : pos + size]
        pos += size
        if type_code in (GTID, ANONYMOUS_GTID, GTID_TAGGED):
            gtid = None
            if type_code == GTID:
                sid = Sid(str(uuid.UUID(bytes=event[20:36])))
                gtid = f"{sid}:{struct.unpack_from('<q', event, 36)[0]}"
            elif type_code == GTID_TAGGED:  # MySQL 8.3+: a serialized message, read as the engine reads it
                tagged = decode_gtid_tagged(
                    EventHeader(*HEADER.unpack_from(event)), event[19:], DecodeContext()
                )
                gtid = f"{tagged.sid}:{tagged.gno}"
            transactions.append(Transaction(gtid, [event]))
        elif transactions:
            transactions[-1].events.append(event)
        else:
            opening.append(event)
    return Binlog(name or path.name, opening, transactions)


@dataclass
class DumpRequest:
    flags: int
    server_id: int
    file: str
    pos: int
    gtids: GtidSet


@dataclass
class ScriptedMySQL:
    """The source: its accounts, GTID_MODE, binary logs; what replicas asked and were sent."""

    binlogs: list[Binlog]
    user: str = "repl"
    password: str = "s3cret-sha2"
    gtid_mode: str = "ON"
    server_id: int = 1
    server_uuid: str = "9c1d1ba8-0a77-11ef-8a4e-0242ac120002"
    host: str = "127.0.0.1"
    port: int = 0
    queries: list[str] = field(default_factory=list)
    auth_paths: list[str] = field(default_factory=list)  # fast, full, refused
    registered: list[int] = field(default_factory=list)
    dump_sets: list[DumpRequest] = field(default_factory=list)
    sent_gtids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what went wrong in the server itself
    # The next dump's connection breaks after this many transactions and one event of the next
    drop_dump_after: int | None = None

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._cached: set[str] = set()  # accounts whose full authentication succeeded
        self._listener = socket.create_server((self.host, 0))
        self.port = self._listener.getsockname()[1]
        self._connections: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="scripted-mysql", daemon=True)
        self._thread.start()

    def forget_cached_passwords(self) -> None:
        """As after FLUSH PRIVILEGES or a restart: the next login takes the full path."""
        self._cached.clear()

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        self._thread.join(5)

    # -- connections ----------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        session = _Session(self, conn)
        try:
            session.run()
        except (ConnectionError, OSError, _Closed):
            pass
        except Exception as exc:  # the test reads it: a broken script, not a broken replica
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
            if conn in self._connections:
                self._connections.remove(conn)


class _Closed(Exception):
    pass


class _Session:
    def __init__(self, server: ScriptedMySQL, conn: socket.socket) -> None:
        self.server = server
        self.conn = conn
        self.seq = 0
        self.user_vars: dict[str, str] = {}
        self.heartbeat_ns = 0

    # -- packets --------------------------------------------------------------------------------

    def read(self) -> bytes:
        head = self._exactly(4)
        length = int.from_bytes(head[:3], "little")
        self.seq = (head[3] + 1) & 0xFF
        return self._exactly(length)

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            if not chunk:
                raise _Closed
            data += chunk
        return data

    def send(self, payload: bytes) -> None:
        self.conn.sendall(len(payload).to_bytes(3, "little") + bytes([self.seq]) + payload)
        self.seq = (self.seq + 1) & 0xFF

    def ok(self) -> None:
        self.send(b"\x00\x00\x00" + struct.pack("<HH", SERVER_STATUS_AUTOCOMMIT, 0))

    def eof(self) -> None:
        self.send(b"\xfe" + struct.pack("<HH", 0, SERVER_STATUS_AUTOCOMMIT))

    def error(self, code: int, state: str, message: str) -> None:
        self.send(b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode())

    def result_set(self, name: str, value: str | int | None) -> None:
        """One column, one row, as a text result set ends without DEPRECATE_EOF: with EOF packets."""
        self.send(b"\x01")
        numeric = isinstance(value, int)
        column = (
            _lenenc_str(b"def") + _lenenc_str(b"") + _lenenc_str(b"") + _lenenc_str(b"")
            + _lenenc_str(name.encode()) + _lenenc_str(b"") + b"\x0c"
            + struct.pack("<HIBHB", 63 if numeric else UTF8MB4, 21 if numeric else 1024,
                          TYPE_LONGLONG if numeric else TYPE_VAR_STRING, 0x80 if numeric else 0, 0)
            + b"\x00\x00"
        )  # fmt: skip
        self.send(column)
        self.eof()
        self.send(b"\xfb" if value is None else _lenenc_str(str(value).encode()))
        self.eof()

    # -- the session ----------------------------------------------------------------------------

    def run(self) -> None:
        if not self.handshake():
            return
        while True:
            packet = self.read()
            command, body = packet[0], packet[1:]
            if command == COM_QUIT:
                return
            if command == COM_PING:
                self.ok()
            elif command == COM_QUERY:
                self.query(body.decode())
            elif command == COM_REGISTER_SLAVE:
                self.server.registered.append(struct.unpack_from("<I", body)[0])
                self.ok()
            elif command == COM_BINLOG_DUMP_GTID:
                self.dump(body)
                return
            else:
                self.error(1047, "08S01", "Unknown command")

    def handshake(self) -> bool:
        server = self.server
        scramble = bytes((b % 94) + 33 for b in os.urandom(20))  # printable, no NUL
        greeting = (
            b"\x0a" + SERVER_VERSION.encode() + b"\x00" + struct.pack("<I", 8)
            + scramble[:8] + b"\x00"
            + struct.pack("<HBHH", CAPABILITIES & 0xFFFF, UTF8MB4, SERVER_STATUS_AUTOCOMMIT, CAPABILITIES >> 16)
            + bytes([21]) + b"\x00" * 10 + scramble[8:] + b"\x00"
            + b"caching_sha2_password\x00"
        )  # fmt: skip
        self.seq = 0
        self.send(greeting)
        response = self.read()
        capabilities = struct.unpack_from("<I", response)[0]
        pos = 32
        end = response.index(b"\x00", pos)
        user = response[pos:end].decode()
        pos = end + 1
        if capabilities & CLIENT_PLUGIN_AUTH_LENENC:
            length, pos = _read_lenenc(response, pos)
        else:
            length, pos = response[pos], pos + 1
        auth = response[pos : pos + length]
        known = user == server.user
        if known and user in server._cached:
            if auth == _caching_sha2_scramble(server.password.encode(), scramble):
                server.auth_paths.append("fast")
                self.send(b"\x01\x03")  # fast_auth_success
                self.ok()
                return True
            return self.refuse(user, "fast")
        # perform_full_authentication: no TLS here, so the password comes RSA-encrypted
        self.send(b"\x01\x04")
        answer = self.read()
        if answer == b"\x02":  # the client asks for the public key
            pem = server._key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            self.send(b"\x01" + pem)
            answer = self.read()
        try:
            plain = server._key.decrypt(
                answer,
                padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None),
            )
        except ValueError:
            return self.refuse(user, "full")
        password = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(plain))
        if not known or password != server.password.encode() + b"\x00":
            return self.refuse(user, "full")
        server._cached.add(user)
        server.auth_paths.append("full")
        self.ok()
        return True

    def refuse(self, user: str, path: str) -> bool:
        self.server.auth_paths.append(f"refused ({path})")
        self.error(1045, "28000", f"Access denied for user '{user}'@'localhost' (using password: YES)")
        return False

    def query(self, text: str) -> None:
        server = self.server
        server.queries.append(text)
        normal = " ".join(text.split())
        if normal.upper().startswith("SET "):
            for assignment in normal[4:].split(","):
                name, _, value = assignment.partition("=")
                value = value.strip()
                if value.lower() == "@@global.binlog_checksum":
                    value = "CRC32" if server.binlogs[0].checksum else "NONE"
                self.user_vars[name.strip().lower()] = value.strip("'")
            if "@source_heartbeat_period" in self.user_vars:
                self.heartbeat_ns = int(self.user_vars["@source_heartbeat_period"])
            self.ok()
            return
        answers = {
            "SELECT UNIX_TIMESTAMP()": lambda: int(time.time()),
            "SELECT @@GLOBAL.SERVER_ID": lambda: server.server_id,
            "SELECT @@GLOBAL.SERVER_UUID": lambda: server.server_uuid,
            "SELECT @@GLOBAL.GTID_MODE": lambda: server.gtid_mode,
            "SELECT @source_binlog_checksum": lambda: self.user_vars.get("@source_binlog_checksum"),
        }
        answer = answers.get(normal)
        if answer is None:
            self.error(1064, "42000", f"the scripted source does not know the query {text!r}")
            return
        self.result_set(normal.split(" ", 1)[1], answer())

    # -- the dump -------------------------------------------------------------------------------

    def dump(self, body: bytes) -> None:
        server = self.server
        flags, server_id, name_size = struct.unpack_from("<HII", body)
        pos = 10
        name = body[pos : pos + name_size].decode()
        pos += name_size
        (start,) = struct.unpack_from("<Q", body, pos)
        pos += 8
        gtids = GtidSet()
        if flags & BINLOG_THROUGH_GTID:
            (size,) = struct.unpack_from("<I", body, pos)
            pos += 4
            gtids = GtidSet.decode(body[pos : pos + size])
            assert pos + size == len(body), "bytes after the GTID set"
        server.dump_sets.append(DumpRequest(flags, server_id, name, start, gtids))
        files = server.binlogs
        sent = 0
        for number, binlog in enumerate(files):
            checksum = binlog.checksum
            position = 4
            if number == 0:
                self.event(_event(0, ROTATE, server.server_id, 0, LOG_EVENT_ARTIFICIAL,
                                  struct.pack("<Q", 4) + binlog.name.encode(), checksum))  # fmt: skip
            for event in binlog.opening:
                self.event(event)
                position += len(event)
            for transaction in binlog.transactions:
                size = sum(len(e) for e in transaction.events)
                if transaction.gtid is not None and _contains(gtids, transaction.gtid):
                    position += size
                    continue
                if sent == server.drop_dump_after:
                    server.drop_dump_after = None
                    self.event(transaction.events[0])  # the transaction's GTID event, and no more
                    self.conn.shutdown(socket.SHUT_RDWR)
                    return
                for event in transaction.events:
                    self.event(event)
                position += size
                sent += 1
                if transaction.gtid is not None:
                    server.sent_gtids.append(transaction.gtid)
            if number + 1 < len(files):
                body = struct.pack("<Q", 4) + files[number + 1].name.encode()
                rotate = _event(0, ROTATE, server.server_id, 0, 0, body, checksum)
                self.event(_event(0, ROTATE, server.server_id, position + len(rotate), 0, body, checksum))
        if flags & BINLOG_DUMP_NON_BLOCK:
            self.eof()
            return
        last = files[-1]
        period = max(self.heartbeat_ns / 1e9, 0.05) if self.heartbeat_ns else 1.0
        while not server._stopping.wait(period):
            self.event(_event(0, HEARTBEAT, server.server_id, 0, 0, last.name.encode(), last.checksum))

    def event(self, event: bytes) -> None:
        self.send(b"\x00" + event)


def _contains(gtids: GtidSet, gtid: str) -> bool:
    sid, _, gno = gtid.rpartition(":")
    source, _, tag = sid.partition(":")  # 'uuid:tag' for a tagged GTID
    return gtids.contains(Sid(source, tag), int(gno))


def _event(timestamp: int, type_code: int, server_id: int, log_pos: int, flags: int, body: bytes,
           checksum: bool) -> bytes:  # fmt: skip
    size = 19 + len(body) + (4 if checksum else 0)
    event = HEADER.pack(timestamp, type_code, server_id, size, log_pos, flags) + body
    return event + struct.pack("<I", zlib.crc32(event)) if checksum else event


def _caching_sha2_scramble(password: bytes, nonce: bytes) -> bytes:
    """XOR(SHA256(password), SHA256(SHA256(SHA256(password)), nonce)): what the client proves."""
    once = hashlib.sha256(password).digest()
    twice = hashlib.sha256(once).digest()
    mixed = hashlib.sha256(twice + nonce).digest()
    return bytes(a ^ b for a, b in zip(once, mixed, strict=True))


def _lenenc_str(data: bytes) -> bytes:
    return _lenenc_int(len(data)) + data


def _lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def _read_lenenc(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos]
    if first < 251:
        return first, pos + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}[first]
    return int.from_bytes(data[pos + 1 : pos + 1 + width], "little"), pos + 1 + width
