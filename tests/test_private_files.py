"""The control socket and the files relaydeck creates belong to their user alone.

The socket sits in a folder only its user can enter; a client talks only to a socket of its own
user, served by its own user (SO_PEERCRED), and sends nothing otherwise; the server answers only
its own user. Another user is simulated by a child process that drops to `nobody` (the tests that
need it run as root, else they are skipped). The slave and the repository, and the write-ahead
logs their databases create, are 0600.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.replica.control import MAX_SOCKET_PATH, ControlSocket, ControlSocketRefused, connect, socket_path
from engine.replica.errors import CR_CONNECTION_ERROR
from engine.replica.server import ReplicaServer
from engine.repository import Repository
from engine.slave.database import Slave

ROOT = Path(__file__).resolve().parent.parent
# The other user's process needs only the standard library, from a Python it may execute.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3"

# Only relaydeck's own lines on stderr (a stale compiled module would add a RuntimeWarning).
QUIET = {**os.environ, "PYTHONWARNINGS": "ignore::RuntimeWarning"}

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="simulating another user needs root")


def mode(path: str | Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would leave files readable by everyone, restored afterwards."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


# ---------------------------------------------------------------------------
# Where the socket is, and its modes
# ---------------------------------------------------------------------------


def test_the_socket_sits_beside_the_repository_in_a_folder_only_its_user_can_enter(
    tmp_path: Path, loose_umask: None
) -> None:
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    control = ControlSocket(replica)
    try:
        path = Path(control.path)
        assert path == tmp_path / ".r.sqlite.relaydeck" / "control.sock"
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
        assert mode(path.parent) == 0o700
        assert mode(path) == 0o600
        remote = connect(tmp_path / "r.sqlite")
        assert remote is not None
        remote.close()
    finally:
        control.close()
        replica.close()
    assert not path.parent.exists(), "the repository's socket folder is removed with the socket"


def test_a_socket_path_too_long_for_af_unix_goes_to_the_runtime_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = socket_path(deep / "r.sqlite")
    assert Path(path).parent == runtime / "relaydeck"
    assert len(os.fsencode(path)) <= MAX_SOCKET_PATH
    replica = ReplicaServer(tmp_path / "s.duckdb", deep / "r.sqlite", follow=False)
    control = ControlSocket(replica)
    try:
        assert control.path == path
        assert mode(runtime / "relaydeck") == 0o700
    finally:
        control.close()
        replica.close()


def test_a_runtime_folder_of_another_user_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sudo keeps XDG_RUNTIME_DIR: a folder that is not this user's must not hold its socket
    if os.geteuid() == 0:
        foreign = tmp_path / "run"
        foreign.mkdir()
        os.chown(foreign, pwd.getpwnam("nobody").pw_uid, -1)
    else:
        foreign = Path("/")  # root's
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(foreign))
    path = socket_path(tmp_path / ("d" * 120) / "r.sqlite")
    assert Path(path).parent == Path(tempfile.gettempdir()) / f"relaydeck-{os.geteuid()}"


# ---------------------------------------------------------------------------
# File modes
# ---------------------------------------------------------------------------


def test_a_new_repository_and_its_wal_are_owner_only(tmp_path: Path, loose_umask: None) -> None:
    with Repository(tmp_path / "r.sqlite") as repository:
        repository.ensure_channel("m1")
        created = [p for p in tmp_path.iterdir() if p.name.startswith("r.sqlite")]
        assert {p.name for p in created} >= {"r.sqlite", "r.sqlite-wal", "r.sqlite-shm"}
        for path in created:
            assert mode(path) == 0o600, path.name


def test_a_new_slave_and_its_wal_are_owner_only(tmp_path: Path, loose_umask: None) -> None:
    slave = Slave(tmp_path / "s.duckdb")
    try:
        slave.con.execute("CREATE TABLE probe (id INTEGER)")
        slave.con.execute("INSERT INTO probe VALUES (1)")
        assert (tmp_path / "s.duckdb.wal").exists()
        for path in tmp_path.iterdir():
            assert mode(path) == 0o600, path.name
    finally:
        slave.close()


def test_replay_creates_the_slave_and_the_repository_owner_only(tmp_path: Path) -> None:
    index = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay" / "relay-bin-m2.index"
    proc = subprocess.run(
        [sys.executable, "-m", "console.cli", "replay", "--slave", tmp_path / "s.duckdb"]
        + [
            "--repository",
            tmp_path / "r.sqlite",
            "--channel",
            f"m2={index}",
            "--until-pos",
            "relay-bin-m2.000002:4",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("s.duckdb", "r.sqlite"):
        assert mode(tmp_path / name) == 0o600, name


def test_an_existing_repository_keeps_its_mode(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "r.sqlite").close()
    os.chmod(tmp_path / "r.sqlite", 0o640)
    with Repository(tmp_path / "r.sqlite"):
        pass
    assert mode(tmp_path / "r.sqlite") == 0o640


# ---------------------------------------------------------------------------
# Another user at the socket's path
# ---------------------------------------------------------------------------

# Binds `path` (making its folder first when asked), then reports every connection and every byte
# received, until its standard input closes.
SQUATTER = r"""
import os, selectors, socket, sys
path, make_folder = sys.argv[1], sys.argv[2] == "folder"
if make_folder:
    os.mkdir(os.path.dirname(path), 0o700)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
os.chmod(path, 0o666)
listener.listen()
events = selectors.DefaultSelector()
events.register(listener, selectors.EVENT_READ, "listener")
events.register(sys.stdin, selectors.EVENT_READ, "stdin")
print("ready", flush=True)
connections, received = 0, b""
while True:
    for key, _ in events.select():
        if key.data == "listener":
            conn, _ = listener.accept()
            connections += 1
            events.register(conn, selectors.EVENT_READ, "conn")
        elif key.data == "conn":
            chunk = key.fileobj.recv(65536)
            received += chunk
            if not chunk:
                events.unregister(key.fileobj)
        else:
            print(connections, received.hex(), flush=True)
            sys.exit(0)
"""


def _as_nobody() -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


class Squatter:
    """Another user's process listening at a path."""

    def __init__(self, path: Path, make_folder: bool) -> None:
        self.proc = subprocess.Popen(
            [SYSTEM_PYTHON, "-I", "-S", "-c", SQUATTER, str(path), "folder" if make_folder else "file"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=_as_nobody,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def report(self) -> tuple[int, bytes]:
        """How many connections it got and what was sent to it."""
        out, _ = self.proc.communicate(timeout=10)
        connections, received = out.split()[:1] + (out.split()[1:] or [""])
        return int(connections), bytes.fromhex(received)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder every user may write to, like /tmp (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="relaydeck-shared-"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _sql(repository: Path, slave: Path, statement: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console.cli", "sql", "--repository", repository, "--slave", slave, statement],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=QUIET,
    )


def _assert_refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"ERROR {CR_CONNECTION_ERROR}" in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


STATEMENT = "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db1', SOURCE_PASSWORD = 'secret' FOR CHANNEL ''"


@needs_root
def test_a_client_sends_nothing_to_a_socket_folder_squatted_by_another_user(shared_folder: Path) -> None:
    repository, slave = shared_folder / "r.sqlite", shared_folder / "s.duckdb"
    Repository(repository).close()
    squatter = Squatter(Path(socket_path(repository)), make_folder=True)
    proc = _sql(repository, slave, STATEMENT)
    connections, received = squatter.report()
    nobody = pwd.getpwnam("nobody").pw_uid
    _assert_refused(proc, socket_path(repository), f"belongs to uid {nobody}")
    assert (connections, received) == (0, b"")
    with Repository(repository) as repo:
        assert (repo.master_info("") or {}).get("Host") != "db1", "the statement must not run here either"
    # The squatter gone and its folder removed, the same statement runs.
    shutil.rmtree(Path(socket_path(repository)).parent)
    again = _sql(repository, slave, STATEMENT)
    assert again.returncode == 0, again.stderr
    with Repository(repository) as repo:
        assert (repo.master_info("") or {}).get("Host") == "db1"


@needs_root
def test_a_client_sends_nothing_to_a_socket_of_another_user_in_its_own_folder(shared_folder: Path) -> None:
    repository, slave = shared_folder / "r.sqlite", shared_folder / "s.duckdb"
    Repository(repository).close()
    path = Path(socket_path(repository))
    path.parent.mkdir(mode=0o700)
    os.chmod(path.parent, 0o777)  # a mistake that let the other user in
    squatter = Squatter(path, make_folder=False)
    proc = _sql(repository, slave, STATEMENT)
    connections, received = squatter.report()
    _assert_refused(proc, f"belongs to uid {pwd.getpwnam('nobody').pw_uid}")
    assert (connections, received) == (0, b"")


@needs_root
def test_a_client_checks_the_peer_and_sends_nothing_to_another_users_server(shared_folder: Path) -> None:
    # The socket file looks like ours (root chowned it): only SO_PEERCRED tells who listens.
    repository = shared_folder / "r.sqlite"
    Repository(repository).close()
    path = Path(socket_path(repository))
    elsewhere = shared_folder / "elsewhere.sock"
    squatter = Squatter(elsewhere, make_folder=False)
    path.parent.mkdir(mode=0o700)
    os.rename(elsewhere, path)
    os.chown(path, os.geteuid(), os.getegid())
    with pytest.raises(ControlSocketRefused, match=f"served by uid {pwd.getpwnam('nobody').pw_uid}"):
        connect(repository)
    connections, received = squatter.report()
    assert connections == 1 and received == b""


@needs_root
def test_serve_says_what_is_wrong_with_a_squatted_socket_folder(shared_folder: Path) -> None:
    config = shared_folder / "replica.toml"
    config.write_text('slave = "s.duckdb"\nrepository = "r.sqlite"\n')
    repository = shared_folder / "r.sqlite"
    squatter = Squatter(Path(socket_path(repository)), make_folder=True)
    proc = subprocess.run(
        [sys.executable, "-m", "console.cli", "serve", config, "--no-follow"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=QUIET,
    )
    connections, _ = squatter.report()
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"cannot serve statements on {socket_path(repository)}" in proc.stderr, proc.stderr
    assert f"belongs to uid {pwd.getpwnam('nobody').pw_uid}" in proc.stderr, proc.stderr
    assert connections == 0


NOBODY_CLIENT = r"""
import json, socket, sys
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
client.connect(sys.argv[1])
try:
    client.sendall(json.dumps({"statement": sys.argv[2]}).encode() + b"\n")
except BrokenPipeError:
    pass  # the server refused without reading: its answer is waiting all the same
print(client.makefile("rb").readline().decode(), end="")
"""


@needs_root
def test_the_server_answers_no_other_user(shared_folder: Path) -> None:
    replica = ReplicaServer(shared_folder / "s.duckdb", shared_folder / "r.sqlite", follow=False)
    control = ControlSocket(replica)
    try:
        os.chmod(os.path.dirname(control.path), 0o711)  # let the other user reach the socket
        os.chmod(control.path, 0o666)
        proc = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-S", "-c", NOBODY_CLIENT, control.path, STATEMENT],
            capture_output=True,
            text=True,
            timeout=30,
            preexec_fn=_as_nobody,
        )
        assert proc.stdout, proc.stderr
        reply = json.loads(proc.stdout)
        assert reply["ok"] is False and reply["errno"] == 1045, reply
        assert "answers only its own user" in reply["message"]
        assert (replica.repository.master_info("") or {}).get("Host") != "db1"
    finally:
        control.close()
        replica.close()
