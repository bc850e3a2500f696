#!/usr/bin/env bash
# One entry point for a fresh machine: creates the virtual environment, installs what is needed
# (Python packages; mariadb-client for the tests that cross-check against mariadb-binlog), runs.
#   ./dev.sh demo   — replay the bundled MariaDB multi-source capture into demo/slave.duckdb
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
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$VENV/bin/pip" install --quiet --upgrade pip
    if [ "$1" = test ]; then
      "$VENV/bin/pip" install --quiet -e '.[test]'
    else
      "$VENV/bin/pip" install --quiet -e .
    fi
    touch "$stamp"
  fi
}

ensure_mariadb_client() {
  command -v mariadb-binlog >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq mariadb-client >/dev/null
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
    ensure_venv run
    relay=fixtures/mariadb-10.11-multisource/relay
    rm -rf demo && mkdir -p demo
    echo "== the first events of channel m2's relay log (relaydeck events --rows)"
    "$VENV/bin/relaydeck" events --rows --limit 12 "$relay/relay-bin-m2.index"
    echo
    echo "== replaying both channels into demo/slave.duckdb (relaydeck replay)"
    "$VENV/bin/relaydeck" replay --slave demo/slave.duckdb --repository demo/repository.sqlite \
      --channel "m1=$relay/relay-bin-m1.index" --channel "m2=$relay/relay-bin-m2.index"
    echo
    echo "== SHOW REPLICA STATUS (relaydeck status)"
    "$VENV/bin/relaydeck" status --repository demo/repository.sqlite
    ;;
  test)
    ensure_mariadb_client
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
