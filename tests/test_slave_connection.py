"""The DuckDB connection relaydeck holds on a slave file: how it is set up for the applier."""

from __future__ import annotations

import duckdb
import pytest

from engine.slave.database import APPLIER_DUCKDB_THREADS, Slave


def _setting(slave: Slave, name: str) -> str:
    return str(slave.con.execute("SELECT current_setting(?)", [name]).fetchone()[0])


def test_the_applier_runs_duckdb_on_the_calling_thread_and_readers_keep_duckdbs_default(tmp_path) -> None:
    path = tmp_path / "slave.duckdb"
    writer = Slave(path)
    try:
        assert _setting(writer, "threads") == APPLIER_DUCKDB_THREADS
        # the configuration is locked: nothing replayed can give DuckDB its threads back
        with pytest.raises(duckdb.Error):
            writer.con.execute("SET threads = 4")
        assert _setting(writer, "threads") == APPLIER_DUCKDB_THREADS
    finally:
        writer.close()
    reader = Slave(path, read_only=True)
    try:
        with duckdb.connect() as plain:
            default = str(plain.execute("SELECT current_setting('threads')").fetchone()[0])
        assert _setting(reader, "threads") == default
    finally:
        reader.close()
