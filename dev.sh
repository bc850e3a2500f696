#!/usr/bin/env bash
# One entry point for a fresh machine: creates the virtual environment, installs what is needed
# (Python packages; mariadb-client for the tests that cross-check against mariadb-binlog, mariadb-server
# for the receiver's tests), runs.
#   ./dev.sh demo   — the operator console over the bundled example (relaydeck console)
#   ./dev.sh test   — lint and run the whole test suite
#   ./dev.sh bench  — run the benchmarks (figures go to benchmarks/results/)
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
PY=${PYTHON:-python3}

ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.installed-$1"
  # setup.py and the .pyx/.pxd/.h files: the compiled hot paths are rebuilt when their sources change
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
    || [ -n "$(find engine \( -name '*.pyx' -o -name '*.pxd' -o -name '*.h' \) -newer "$stamp")" ]; then
    ensure_compiler
    "$VENV/bin/pip" install --quiet --upgrade pip
    if [ "$1" = test ]; then
      "$VENV/bin/pip" install --quiet -e '.[test]'
    else
      "$VENV/bin/pip" install --quiet -e .
    fi
    touch "$stamp"
  fi
  # the project's bytecode written now (and again for sources changed since): every `relaydeck`
  # start loads it rather than compiling the sources, even where PYTHONDONTWRITEBYTECODE is set
  "$VENV/bin/python" -m compileall -q engine console >/dev/null
}

ensure_compiler() {
  # the compiled row decoder needs a C compiler and Python's headers (without them relaydeck
  # still runs, on the slower pure-Python decoder); the events' CRC32 uses zlib, or ISA-L
  # (libisal-dev) where it is installed
  local headers
  headers=$("$VENV/bin/python" -c 'import os, sysconfig; print(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))')
  command -v cc >/dev/null 2>&1 && [ "$headers" = True ] && [ -f /usr/include/zlib.h ] \
    && [ -f /usr/include/isa-l/crc.h ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq gcc python3-dev zlib1g-dev >/dev/null || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libisal-dev >/dev/null || true
}

ensure_mariadb_client() {
  command -v mariadb-binlog >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mariadb-client >/dev/null
}

ensure_mariadb_server() {
  # the receiver's tests replicate from a private mariadbd they start, under sysbench's load
  { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } \
    && command -v sysbench >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mariadb-server sysbench >/dev/null
}

ensure_java() {
  # Spark (the Spark worker pool, relaydeck analyze) runs on a JVM
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then return 0; fi
  command -v java >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null
}

case "${1:-demo}" in
  demo)
    # the operator console over the bundled example: generated workloads fed live into four
    # channels (plus the MariaDB capture's two), in this process; q quits
    ensure_venv run
    shift || true
    exec "$VENV/bin/relaydeck" console "$@"
    ;;
  test)
    ensure_mariadb_client
    ensure_mariadb_server
    ensure_java
    ensure_venv test
    "$VENV/bin/ruff" check engine console tests benchmarks
    "$VENV/bin/ruff" format --check engine console tests benchmarks
    shift || true
    "$VENV/bin/python" -m pytest "$@"
    ;;
  bench)
    ensure_mariadb_client
    ensure_venv test
    shift || true
    "$VENV/bin/python" benchmarks/decode_throughput.py "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo|test|bench" >&2
    exit 2
    ;;
esac
