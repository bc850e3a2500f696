"""How another process on the host drives a running `relaydeck serve`: a local Unix socket.

The socket carries statements, one JSON line each way: {"statement": "START REPLICA"} in,
{"ok": true, "result": {...}} or {"ok": false, "errno": N, "message": "..."} out. A socket (not
a command table in the repository) gives the caller the statement's own answer and error at
once, as a MySQL client gets them. Status is not read through it: the serving process writes
status to the repository several times a second and anyone may read it there (WAL mode), even
while the server is busy or after it died.

The socket lives in a folder only its user can enter (0700): beside the repository
(`.<repository file name>.relaydeck/control.sock`), or, when that path is too long for a Unix socket
(108 bytes), in the user's runtime folder ($XDG_RUNTIME_DIR/relaydeck, else
<temporary folder>/relaydeck-<uid>) under a name derived from the repository's absolute path. The
server records it, with its pid, in the repository. Neither side trusts the other's user blindly:
the client talks only to a socket file of its own user inside a folder of its own user, and checks
the peer's uid (SO_PEERCRED) after connecting, before it sends anything; the server answers only
peers of its own uid. A folder or socket of another user's at the path is refused with the reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import socketserver
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

from ..applier.recovery import RecoveryPicture
from ..errors import RelaydeckError
from ..private_files import NotPrivate, check_own_socket, private_directory
from ..repository import ChannelStatus, Repository
from .errors import CR_CONNECTION_ERROR, ER_ACCESS_DENIED_ERROR, CommandError
from .monitor import read_snapshot
from .server import ReplicaServer
from .views import Result, Snapshot

MAX_LINE = 1 << 20
SOCKET_NAME = "control.sock"
MAX_SOCKET_PATH = 107  # bytes: sun_path holds 108 with the terminating NUL


def socket_path(repository_path: str | os.PathLike[str]) -> str:
    repository = Path(repository_path).resolve()
    beside = os.path.join(repository.parent, f".{repository.name}.relaydeck", SOCKET_NAME)
    if len(os.fsencode(beside)) <= MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(str(repository).encode()).hexdigest()[:16]
    return os.path.join(_runtime_folder(), f"{digest}.sock")


def _runtime_folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # sudo keeps the invoking user's variable: only a runtime folder of this user's own counts
    with contextlib.suppress(OSError):
        if os.path.isabs(runtime) and os.stat(runtime).st_uid == os.geteuid():
            return os.path.join(runtime, "relaydeck")
    return os.path.join(tempfile.gettempdir(), f"relaydeck-{os.geteuid()}")


class ControlSocketRefused(CommandError):
    """To a client: a control socket or its folder that another user owns or serves; nothing was
    sent to it."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            CR_CONNECTION_ERROR, f"Can't connect to local relaydeck server through socket '{path}': {why}"
        )


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (None where the system does not tell)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]  # pid, uid, gid


class ReplicaControl(Protocol):
    """What the console needs of a replica, in this process or behind a socket."""

    def execute(self, statement: str) -> Result: ...

    def status(self, channel: str | None = None) -> list[ChannelStatus]: ...


class _Handler(socketserver.StreamRequestHandler):
    server: _SocketServer

    def handle(self) -> None:
        uid = peer_uid(self.request)
        if uid is not None and uid != os.geteuid():
            refusal = f"Access denied: this relaydeck server answers only its own user (uid {os.geteuid()}), not uid {uid}"
            self.wfile.write(
                json.dumps({"ok": False, "errno": ER_ACCESS_DENIED_ERROR, "message": refusal}).encode()
                + b"\n"
            )
            return
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
        try:
            private_directory(os.path.dirname(self.path), create=True)
            if check_own_socket(self.path):
                if _answers(self.path):
                    raise RelaydeckError(
                        f"{replica.repository.path}: another relaydeck serve runs on this repository ({self.path})"
                    )
                os.unlink(self.path)  # left by a server that was killed
        except NotPrivate as exc:
            raise RelaydeckError(
                f"{replica.repository.path}: cannot serve statements on {self.path}: {exc}"
            ) from None
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
        if os.path.basename(self.path) == SOCKET_NAME:  # the repository's own folder, not a shared one
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(self.path))
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

    def __init__(
        self,
        repository_path: str | os.PathLike[str],
        path: str,
        timeout: float = 120.0,
        connection: socket.socket | None = None,
    ) -> None:
        self.repository_path = Path(repository_path)
        self.path = path
        self._sock = connection if connection is not None else _connect_to_own_server(path, timeout)
        self._sock.settimeout(timeout)  # STOP waits for the applier, as in MySQL
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
    """The server running on this repository, or None when there is none (or it died); raises
    ControlSocketRefused when the socket or its folder is another user's."""
    path = socket_path(repository_path)
    try:
        if not private_directory(os.path.dirname(path), create=False) or not check_own_socket(path):
            return None
    except NotPrivate as exc:
        raise ControlSocketRefused(path, f"refusing to send statements there: {exc}") from None
    try:
        connection = _connect_to_own_server(path, timeout=1.0)
    except OSError:
        return None  # a socket left by a killed server
    return RemoteReplica(repository_path, path, connection=connection)


def _connect_to_own_server(path: str, timeout: float) -> socket.socket:
    """A connection to path, after making sure the process listening is this user's."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(timeout)
        connection.connect(path)
        uid = peer_uid(connection)
    except BaseException:
        connection.close()
        raise
    if uid is not None and uid != os.geteuid():
        connection.close()
        raise ControlSocketRefused(
            path,
            f"refusing to send statements there: it is served by uid {uid}, not by this user (uid {os.geteuid()})",
        )
    return connection
