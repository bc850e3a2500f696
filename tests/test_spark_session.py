"""The SparkSession helper without a JVM: finding Java, and starting nothing until asked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import RelaydeckError
from engine.spark import session

from .conftest import ROOT


def _fake_java(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    java = folder / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    return java


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    environ.pop(session.LOG_LEVEL_VARIABLE, None)
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=600
    )


def test_missing_java_is_a_clear_one_line_error_and_starts_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk-here"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(session, "_session", None)  # as in a process that has no session yet

    def must_not_start(*args: object) -> None:
        pytest.fail("a JVM start was attempted without Java")

    monkeypatch.setattr(session, "_start", must_not_start)
    with pytest.raises(session.JavaNotFound) as caught:
        session.spark_session()
    assert isinstance(caught.value, RelaydeckError)
    message = caught.value.one_line()
    assert "\n" not in str(caught.value)
    assert "JAVA_HOME" in message and "no-jdk-here" in message and "PATH" in message


def test_missing_java_without_java_home_says_it_is_not_set(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(session.JavaNotFound, match="JAVA_HOME is not set"):
        session.find_java()


def test_java_home_wins_over_path(monkeypatch, tmp_path):
    home_java = _fake_java(tmp_path / "jdk" / "bin")
    _fake_java(tmp_path / "elsewhere")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    assert session.find_java() == str(home_java)


def test_java_on_path_when_java_home_has_none(monkeypatch, tmp_path):
    path_java = _fake_java(tmp_path / "bin")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "broken-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert session.find_java() == str(path_java)


def test_importing_the_spark_modules_starts_no_jvm():
    code = (
        "import engine.spark.analyze, engine.spark.decode, engine.spark.session, console.cli.analyze\n"
        "from pyspark import SparkContext\n"
        "assert SparkContext._gateway is None and SparkContext._active_spark_context is None\n"
        "assert engine.spark.session._session is None\n"
        "print('no jvm')\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "no jvm"


def test_a_process_that_started_spark_leaves_no_folder_behind_stopped_or_not():
    code = (
        "import os\n"
        "from engine.spark.session import spark_session, spark_log_file, stop_spark\n"
        "spark_session(cores=1)\n"
        "first = spark_log_file().parent\n"
        "assert first.is_dir() and first.name.startswith('relaydeck-spark-')\n"
        "stop_spark()\n"
        "print(first, first.exists())\n"
        "spark_session(cores=1)\n"  # a second session, never stopped: the process's exit removes it
        "second = spark_log_file().parent\n"
        "print(second, second.exists())\n"
        "if os.fork() == 0:\n"  # a forked child's exit leaves its parent's folder alone
        "    raise SystemExit(0)\n"
        "os.wait()\n"
        "print(second.exists())\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr[-3000:]
    first, first_exists, second, second_exists, after_child = result.stdout.split()
    assert first_exists == "False"  # stop_spark removed it
    assert second_exists == "True" and after_child == "True"
    assert first != second
    assert not Path(second).exists()  # removed when the process ended


def test_a_failed_start_keeps_the_log_its_error_names(tmp_path):
    # a java that exits at once: launch_gateway fails, and the error names the JVM's log
    java_home = tmp_path / "jdk"
    _fake_java(java_home / "bin")
    code = (
        "from engine.spark.session import spark_session, SparkStartError\n"
        "try:\n"
        "    spark_session(cores=1)\n"
        "except SparkStartError as exc:\n"
        "    print(str(exc).rpartition('its output is in ')[2])\n"
    )
    result = _run_python(code, JAVA_HOME=str(java_home))
    assert result.returncode == 0, result.stderr[-3000:]
    log = Path(result.stdout.strip())
    assert log.name == "spark-jvm.log", result.stdout
    try:
        assert log.is_file()
    finally:
        shutil.rmtree(log.parent, ignore_errors=True)


def test_a_driver_killed_with_sigkill_leaves_its_folder_and_the_next_driver_removes_it(tmp_path):
    """A SIGKILL runs no atexit handler: the driver's folder stays. It carries the driver's pid,
    and the next driver to start Spark removes it; a folder kept after a failed start (its error
    named the log inside) stays."""
    java_home = tmp_path / "jdk"
    _fake_java(java_home / "bin")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"JAVA_HOME": str(java_home), "TMPDIR": str(temporary)}
    killed_while_starting = (
        "import os, signal\n"
        "import pyspark.java_gateway\n"
        "from engine.spark.session import spark_session\n"
        "pyspark.java_gateway.launch_gateway = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        "spark_session(cores=1)\n"
    )
    failed_start = (
        "from engine.spark.session import spark_session, SparkStartError\n"
        "try:\n"
        "    spark_session(cores=1)\n"
        "except SparkStartError as exc:\n"
        "    print(str(exc).rpartition('its output is in ')[2])\n"
    )
    first_failed = _run_python(failed_start, **env)
    assert first_failed.returncode == 0, first_failed.stderr[-3000:]
    kept = Path(first_failed.stdout.strip()).parent
    assert _run_python(killed_while_starting, **env).returncode == -9
    left = {p for p in temporary.iterdir() if p.name.startswith(session.WORK_DIR_PREFIX)} - {kept}
    assert len(left) == 1  # the killed driver's
    unrelated = temporary / f"{session.WORK_DIR_PREFIX}not-a-pid"
    unrelated.mkdir()
    second_failed = _run_python(failed_start, **env)
    assert second_failed.returncode == 0, second_failed.stderr[-3000:]
    now = {p for p in temporary.iterdir() if p.name.startswith(session.WORK_DIR_PREFIX)}
    assert now == {kept, unrelated, Path(second_failed.stdout.strip()).parent}
    assert (kept / "spark-jvm.log").is_file()
