"""How another process on the host drives a running `relaydeck serve`: a local Unix socket.

The socket carries statements, one JSON line each way: {"statement": "START REPLICA"} in,
{"ok": true, "result": {...}} or {"ok": false, "errno": N, "message": "..."} out. A socket (not
a command table in the repository) gives the caller the statement's own answer and error at
once, as a MySQL client gets them. Status is not read through it: the serving process writes
status to the repository several times a second and anyone may read it there (WAL mode), even
while the server is busy or after it died.

The socket lives in the system's temporary folder under a name derived from the repository's
absolute path (Unix socket paths are limited to about 100 bytes), and the server records it, with
its pid, in the repository. Only the owning user may connect (the file is made 0600).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import socketserver
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

from ..applier.recovery import RecoveryPicture
from ..errors import RelaydeckError
from ..repository import ChannelStatus, Repository
from .errors import CommandError
from .monitor import Snapshot, read_snapshot
from .server import ReplicaServer, Result

MAX_LINE = 1 << 20


def socket_path(repository_path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256(str(Path(repository_path).resolve()).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"relaydeck-{digest}.sock")


class ReplicaControl(Protocol):
    """What the console needs of a replica, in this process or behind a socket."""

    def execute(self, statement: str) -> Result: ...

    def status(self, channel: str | None = None) -> list[ChannelStatus]: ...


class _Handler(socketserver.StreamRequestHandler):
    server: _SocketServer

    def handle(self) -> None:
        for line in self.rfile:
            if len(line) > MAX_LINE:
                reply: dict[str, Any] = {"ok": False, "errno": 1105, "message": "statement too long"}
            else:
                reply = self.server.answer(line)
            self.wfile.write(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
            self.wfile.flush()


class _SocketServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, replica: ReplicaServer) -> None:
        self.replica = replica
        super().__init__(path, _Handler)

    def answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            op = request.get("op", "execute")
            argument = request["statement"] if op == "execute" else request.get("channel")
            if op not in ("execute", "recovery", "kill", "relay_log_index") or not (
                argument is None or isinstance(argument, str)
            ):
                raise ValueError(f"unknown request {op!r}")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return {"ok": False, "errno": 1105, "message": f"bad request: {exc}"}
        try:
            if op == "recovery":
                return {"ok": True, "result": self.replica.recovery(argument).to_json()}
            if op == "kill":
                self.replica.kill(argument)
                return {"ok": True, "result": None}
            if op == "relay_log_index":
                return {"ok": True, "result": self.replica.relay_log_index(argument)}
            return {"ok": True, "result": self.replica.execute(argument).to_json()}
        except CommandError as exc:
            return {"ok": False, "errno": exc.errno, "message": exc.message}
        except RelaydeckError as exc:
            return {"ok": False, "errno": 1105, "message": exc.one_line()}


class ControlSocket:
    """Serves a ReplicaServer's statements on its repository's socket until close()."""

    def __init__(self, replica: ReplicaServer) -> None:
        self.replica = replica
        self.path = socket_path(replica.repository.path)
        if _answers(self.path):
            raise RelaydeckError(
                f"{replica.repository.path}: another relaydeck serve runs on this repository ({self.path})"
            )
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # left by a server that was killed
        old_umask = os.umask(0o177)
        try:
            self._server = _SocketServer(self.path, replica)
        finally:
            os.umask(old_umask)
        self._thread = threading.Thread(target=self._server.serve_forever, name="control-socket", daemon=True)
        self._thread.start()
        replica.repository.register_server(os.getpid(), self.path, str(replica.slave_path))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        with contextlib.suppress(RelaydeckError):
            self.replica.repository.unregister_server(os.getpid())


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


class RemoteReplica:
    """A running `relaydeck serve`, reached through its socket; status read from the repository."""

    def __init__(self, repository_path: str | os.PathLike[str], path: str, timeout: float = 120.0) -> None:
        self.repository_path = Path(repository_path)
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)  # STOP waits for the applier, as in MySQL
        self._sock.connect(path)
        self._reader = self._sock.makefile("rb")
        self._lock = threading.Lock()

    def _ask(self, request: dict[str, Any]) -> Any:
        with self._lock:
            self._sock.sendall(json.dumps(request).encode() + b"\n")
            line = self._reader.readline()
        if not line:
            raise RelaydeckError(f"the relaydeck server on {self.path} closed the connection")
        reply = json.loads(line)
        if not reply["ok"]:
            raise CommandError(reply["errno"], reply["message"])
        return reply["result"]

    def execute(self, statement: str) -> Result:
        return Result.from_json(self._ask({"statement": statement}))

    def recovery(self, channel: str) -> RecoveryPicture:
        return RecoveryPicture.from_json(self._ask({"op": "recovery", "channel": channel}))

    def kill(self, channel: str | None = None) -> None:
        self._ask({"op": "kill", "channel": channel})

    def relay_log_index(self, channel: str) -> str:
        return str(self._ask({"op": "relay_log_index", "channel": channel}))

    def status(self, channel: str | None = None) -> list[ChannelStatus]:
        with Repository(self.repository_path) as repository:
            return repository.status(channel)

    def snapshot(self) -> Snapshot:
        with Repository(self.repository_path) as repository:
            return read_snapshot(repository)

    def close(self) -> None:
        self._reader.close()
        self._sock.close()


def connect(repository_path: str | os.PathLike[str]) -> RemoteReplica | None:
    """The server running on this repository, or None when there is none (or it died)."""
    path = socket_path(repository_path)
    if not _answers(path):
        return None
    return RemoteReplica(repository_path, path)
