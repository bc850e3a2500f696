"""A standalone Spark cluster on this machine: a master and one worker from the pyspark
distribution (`bin/spark-class …deploy.master.Master` / `…deploy.worker.Worker`), on 127.0.0.1,
for trying `--spark-master spark://…` without a cluster of one's own (the tests and benchmarks
use it)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import RelaydeckError


class ClusterStartError(RelaydeckError):
    """A daemon of the cluster stopped, or did not listen in time (its log's tail is in the message)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ClusterStartError(f"the Spark daemon stopped: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise ClusterStartError(
        f"the Spark daemon did not listen on {port}: {log.read_text(errors='replace')[-2000:]}"
    )


@contextlib.contextmanager
def standalone_cluster(cores: int = 2, folder: Path | None = None, timeout: float = 180) -> Iterator[str]:
    """A master and one worker of `cores` cores; yields the master's URL, stops both at the end.
    Their logs and the worker's work folder go to `folder` (a new temporary folder by default)."""
    home = spark_home()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    work = folder or Path(tempfile.mkdtemp(prefix="relaydeck-cluster-"))
    port, worker_port = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[subprocess.Popen[bytes]] = []

    def start(name: str, port: int, *args: str) -> None:
        log = work / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(home / "bin" / "spark-class"), *args], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        daemons.append(process)
        _wait_for_port(port, process, log, timeout)

    try:
        start("master", port, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
              str(port), "--webui-port", str(free_port()))  # fmt: skip
        start("worker", worker_port, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
              "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", str(cores),
              "--memory", "2g", "--work-dir", str(work / "work"), url)  # fmt: skip
        yield url
    finally:
        for process in reversed(daemons):
            process.terminate()
        for process in daemons:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
