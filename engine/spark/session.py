"""The process's one SparkSession: created on first use, quiet, and bound to this machine when local.

Spark prints a log4j banner, WARN lines and progress bars on the terminal by default; relaydeck's
commands print their own results, so the JVM's output goes to a log file instead (its path is in
any start-up error) and Spark logs only errors. RELAYDECK_SPARK_LOG=INFO (or WARN, DEBUG…) gives
Spark's own console output back, at that level.

A process forked while the session is open (the local processes that prepare segments until Spark
is ready fork from the applier's thread while other threads talk to the JVM) must leave the
session's Py4J connections alone. Each thread's connection sits in the client's pool between
calls, reachable only from there and from that thread's thread-local storage; in the child CPython
discards the other threads' states, their thread-local storage with them, and Py4J's finalizer
then removes the connection from the child's copy of the pool and, as its last reference goes,
shuts its socket down: a socket the child shares with the parent. The parent's next call on that
thread's connection failed with "Connection reset by peer" (one full test run in four, when the
fork fell between two calls of the thread starting Spark). So every fork first takes a reference to
the pooled connections, which the child keeps for its whole life, their sockets forgotten (see
_hold_connections_in_children).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import RelaydeckError
from ..leftovers import remove_folders_of_ended

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG_LEVEL_VARIABLE = "RELAYDECK_SPARK_LOG"
ENGINE_PACKAGE = Path(__file__).resolve().parent.parent

_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

_ENGINE_ARCHIVE = "relaydeck-engine"  # the engine's folder in a cluster executor's working directory
_lock = threading.Lock()
_session: SparkSession | None = None
# The session's folder in the temporary folder: + the pid of the driver that made it + "-…"
WORK_DIR_PREFIX = "relaydeck-spark-"
# In a folder kept after a failed start (its error names the JVM's log): the next driver leaves it
KEPT_MARKER = "kept"
_work_dir: Path | None = None  # the JVM's log and the quiet log4j configuration
_keep_work_dir = False  # a start failed: its error names the JVM's log in _work_dir
_work_dir_pid = 0  # the process that made _work_dir: a forked child that exits leaves it
_fork_hooks_registered = False
_held_for_fork: tuple[object, ...] = ()  # the pooled Py4J connections, while a fork is under way
_inherited_connections: list[object] = []  # in a forked child: the parent's, never released


class JavaNotFound(RelaydeckError):
    """Spark needs a Java runtime and none was found."""


class SparkStartError(RelaydeckError):
    """The JVM behind Spark did not start."""


def find_java() -> str:
    """The java executable Spark will run: JAVA_HOME's, else the first on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found:
        return found
    where = f"JAVA_HOME={java_home!r} has no bin/java and " if java_home else "JAVA_HOME is not set and "
    raise JavaNotFound(
        f"Spark needs Java 17 or later: {where}no 'java' is on PATH; install a JDK and set JAVA_HOME"
    )


def spark_log_file() -> Path | None:
    """Where the JVM's own output went (None before the first session, or when it goes to the terminal)."""
    if _work_dir is None or os.environ.get(LOG_LEVEL_VARIABLE):
        return None
    return _work_dir / "spark-jvm.log"


def spark_session(master: str | None = None, cores: int | None = None) -> SparkSession:
    """The SparkSession of this process, created on the first call.

    master: a cluster URL (spark://…, yarn, k8s://…); by default local[cores] with cores defaulting
    to the machine's CPU count. Later calls return the same session whatever they pass.
    """
    global _session
    with _lock:
        if _session is not None:
            return _session
        find_java()  # before anything starts: the message from a missing JVM is much less clear
        local = master is None or master.startswith("local")
        _session = _start(master or f"local[{cores or os.cpu_count() or 1}]", local)
        return _session


def stop_spark() -> None:
    """Stop the session and its JVM; the next spark_session() starts afresh."""
    global _session
    with _lock:
        if _session is None:
            return
        from pyspark import SparkContext

        _session.stop()
        _session = None
        gateway = SparkContext._gateway
        if gateway is not None:
            # SparkSession.stop leaves the JVM running for a later context; nothing here reuses it.
            process = getattr(gateway, "proc", None)
            gateway.shutdown()
            if process is not None:
                process.stdin.close()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
            SparkContext._gateway = None
            SparkContext._jvm = None
        _remove_work_dir()


def _remove_work_dir() -> None:
    """The session's folder (the JVM's log, the quiet configuration, a cluster's engine archive)
    goes with the session, or with the process that never stopped it: each run made one in the
    temporary folder and left it there. Not after a failed start, whose error names the log."""
    global _work_dir
    if _work_dir is not None and not _keep_work_dir and os.getpid() == _work_dir_pid:
        shutil.rmtree(_work_dir, ignore_errors=True)
        _work_dir = None


atexit.register(_remove_work_dir)


def _hold_connections_in_children() -> None:
    """Make every later fork of this process keep the Py4J connections alive in the child (see the
    module's docstring): a connection the child never frees is never shut down by it, and the
    child ends with os._exit (a process pool's worker, multiprocessing's process) or exec."""
    global _fork_hooks_registered
    if _fork_hooks_registered or not hasattr(os, "register_at_fork"):
        return
    _fork_hooks_registered = True
    os.register_at_fork(
        before=_hold_pooled_connections,
        after_in_parent=_release_pooled_connections,
        after_in_child=_keep_pooled_connections_for_life,
    )


def _hold_pooled_connections() -> None:
    global _held_for_fork
    from pyspark import SparkContext

    client = getattr(SparkContext._gateway, "_gateway_client", None)
    # the connections of threads between two calls; a thread inside a call holds its own in a
    # frame, which the child never frees
    _held_for_fork = tuple(getattr(client, "deque", ()))


def _release_pooled_connections() -> None:
    global _held_for_fork
    _held_for_fork = ()


def _keep_pooled_connections_for_life() -> None:
    global _held_for_fork
    for connection in _held_for_fork:
        # the child's copy forgets the socket it shares with the parent: closing a Py4J connection
        # shuts its socket down, for both processes, where closing a descriptor would not
        connection.socket = connection.stream = None  # type: ignore[attr-defined]
    # and keeps them past its own forks, whose hook replaces _held_for_fork with the child's pool
    _inherited_connections.extend(_held_for_fork)
    _held_for_fork = ()


def _start(master: str, local: bool) -> SparkSession:
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    global _work_dir, _keep_work_dir, _work_dir_pid
    if _work_dir is None:
        # a driver killed with SIGKILL left its folder: the next one removes it
        remove_folders_of_ended(WORK_DIR_PREFIX, KEPT_MARKER)
        _work_dir = Path(tempfile.mkdtemp(prefix=f"{WORK_DIR_PREFIX}{os.getpid()}-"))
        _work_dir_pid = os.getpid()
    level = os.environ.get(LOG_LEVEL_VARIABLE, "").upper()
    if local:
        # Workers must run this interpreter (with this venv's engine, pyarrow…). A cluster's
        # nodes have their own Python: an explicit setting there is left alone.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = _local_cores(master)
    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("relaydeck")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "true" if level else "false")
        .set("spark.sql.execution.arrow.pyspark.enabled", "true")
        # relay logs make small tables: Spark's 200 shuffle partitions would be 200 tiny tasks
        .set("spark.sql.shuffle.partitions", str(max(2, 2 * (cores or 4))))
        .set("spark.sql.session.timeZone", "UTC")
    )
    if local:
        conf.set("spark.driver.bindAddress", "127.0.0.1").set("spark.driver.host", "127.0.0.1")
    else:
        # the engine's archive, unpacked in each executor's working directory (see _engine_zip)
        conf.set("spark.executorEnv.PYTHONPATH", _ENGINE_ARCHIVE)
    popen: dict[str, object] = {}
    log_file = None
    if not level:
        config = _work_dir / "log4j2-quiet.properties"
        config.write_text(_QUIET_LOG4J)
        conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={config.as_uri()}")
        log_file = open(_work_dir / "spark-jvm.log", "ab")  # noqa: SIM115 - the JVM writes it for its life
        popen = {"stdout": log_file, "stderr": log_file}
    try:
        gateway = launch_gateway(conf, popen_kwargs=popen)
    except PySparkRuntimeError as exc:
        where = f"; its output is in {_work_dir / 'spark-jvm.log'}" if log_file else ""
        _keep_work_dir = bool(log_file)
        if _keep_work_dir:
            (_work_dir / KEPT_MARKER).touch()
        raise SparkStartError(f"the Spark JVM did not start ({exc}){where}") from None
    finally:
        if log_file is not None:
            log_file.close()  # the JVM holds its own descriptor
    _hold_connections_in_children()
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel(level or "ERROR")
    if not local:
        context.addArchive(f"{_engine_zip(_work_dir)}#{_ENGINE_ARCHIVE}")
    return SparkSession(context)


def _local_cores(master: str) -> int | None:
    if master.startswith("local[") and master.endswith("]"):
        inside = master[len("local[") : -1].split(",")[0]
        return os.cpu_count() if inside == "*" else int(inside) if inside.isdigit() else None
    return 1 if master == "local" else None


def _engine_zip(folder: Path) -> Path:
    """The engine package as a zip, for a cluster's executors to import it. It is unpacked there
    rather than imported from the zip, so that its compiled modules load where the executors run
    the same Python on the same platform (elsewhere their pure-Python twins run). Their sources
    stay home: unpacked later than the modules, they would read as edited since the build."""
    target = folder / "relaydeck-engine.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for pattern in ("*.py", "*.so"):
            for path in ENGINE_PACKAGE.rglob(pattern):
                archive.write(path, path.relative_to(ENGINE_PACKAGE.parent))
    return target
