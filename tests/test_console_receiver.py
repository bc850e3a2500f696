"""The console over a channel that receives from a real MariaDB source: both threads shown side by
side, each started and stopped on its own with its key, the receiver's errors shown as the
applier's are. Keys pressed, then what the engine did checked in the engine itself and on screen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.text import Text

from console.app import ConsoleApp
from console.palette import ERROR, style
from engine.replica.server import ReplicaServer

from .test_console_pilot import log_text, rendered, settle, until
from .test_receiver import gtid_binlog_pos, source_binlog_end, write_load
from .test_receiver_faults import change_source

SIZE = (120, 40)


def received_channel(tmp_path: Path, server, password: str, **options: object) -> ReplicaServer:  # type: ignore[no-untyped-def]
    """A following replica with channel 'live' that receives from `server`, from its binlog's end."""
    file, pos = source_binlog_end(server)
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repository.sqlite", follow=True)
    change_source(replica, "live", server.host, server.port, password, tmp_path / "relay",
                  SOURCE_LOG_FILE=f"'{file}'", SOURCE_LOG_POS=pos, **options)  # fmt: skip
    return replica


def cell(app: ConsoleApp, column: str) -> Text:
    return app.query_one("#channels-table").get_cell("live", column)


def detail(app: ConsoleApp) -> str:
    return rendered(app.query_one("#channel-detail").content)


def threads(app: ConsoleApp) -> tuple[str, str]:
    """(SQL, IO) as the channels table shows them."""
    return str(cell(app, "state")), str(cell(app, "io"))


def test_each_thread_stops_and_starts_on_its_own_key_and_the_view_follows(mariadb_source, tmp_path):
    server = mariadb_source
    replica = received_channel(tmp_path, server, server.repl_password)

    def view():  # type: ignore[no-untyped-def]
        return next(c for c in replica.snapshot().channels if c.name == "live")

    async def until_applied(pilot, gtids: str, what: str) -> None:  # type: ignore[no-untyped-def]
        try:
            await until(pilot, lambda: view().executed_gtids == gtids, what, timeout=60)
        except pytest.fail.Exception:
            status = replica.execute("SHOW REPLICA STATUS FOR CHANNEL 'live'")
            pytest.fail(
                f"{what}: {gtids} never executed; {dict(zip(status.columns, status.rows[0], strict=True))}"
            )

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            assert app.selected == "live"
            assert threads(app) == ("stopped", "stopped")  # it has a receiver: not "none"
            await pilot.press("s")
            await until(pilot, lambda: replica.receiving("live") and replica.running("live"), "both started")
            write_load(server, "console_io1", 10, seed=101)
            first = gtid_binlog_pos(server)
            await until_applied(pilot, first, "the load applied")
            await until(pilot, lambda: f"executed {first}" in detail(app), "the applied GTIDs shown")
            assert str(cell(app, "io")) == "running" and str(cell(app, "state")) in ("running", "waiting")
            file, pos = source_binlog_end(server)
            # the receiver records its position at least every heartbeat
            await until(pilot, lambda: f"read {file}:{pos}" in detail(app), "the position received shown")
            shown = detail(app)
            assert f"retrieved {first}" in shown and "Waiting for source to send event" in shown
            assert str(cell(app, "source_read")) == f"{file}:{pos}"
            assert str(cell(app, "source_executed")) == f"{file}:{pos}"  # the applier is level with it

            # o: the IO thread stops, the SQL thread goes on; what the source logs now is not received
            await pilot.press("o")
            await settle(pilot)
            await until(pilot, lambda: not replica.receiving("live"), "the receiver stopped")
            await until(pilot, lambda: str(cell(app, "io")) == "stopped", "the IO thread shown stopped")
            assert replica.running("live") and str(cell(app, "state")) in ("running", "waiting")
            write_load(server, "console_io1", 5, seed=102)
            second = gtid_binlog_pos(server)
            await pilot.pause(1.0)
            assert str(cell(app, "retrieved")) == first and str(cell(app, "source_read")) == f"{file}:{pos}"

            # i: the IO thread again, from where it stopped; the applier applies what it receives
            await pilot.press("i")
            await until_applied(pilot, second, "received and applied after i")
            await until(pilot, lambda: str(cell(app, "io")) == "running", "the IO thread shown running")

            # w: the SQL thread stops, the IO thread goes on: retrieved runs ahead of executed
            await pilot.press("w")
            await settle(pilot)
            await until(pilot, lambda: not replica.running("live"), "the applier stopped")
            assert replica.receiving("live")
            write_load(server, "console_io1", 5, seed=103)
            third = gtid_binlog_pos(server)
            await until(pilot, lambda: str(cell(app, "retrieved")) == third, "the new GTIDs retrieved")
            assert threads(app) == ("stopped", "running")
            assert str(cell(app, "gtids")) == second  # executed stays where the applier stopped
            shown = detail(app)
            assert f"retrieved {third}" in shown and f"executed {second}" in shown

            # e: the SQL thread again, which catches up with what was received
            await pilot.press("e")
            await until_applied(pilot, third, "applied after e")
            await until(pilot, lambda: str(cell(app, "gtids")) == third, "the applied GTIDs shown")
            log = log_text(app)
            for statement in (
                "STOP REPLICA IO_THREAD FOR CHANNEL 'live'",
                "START REPLICA IO_THREAD FOR CHANNEL 'live'",
                "STOP REPLICA SQL_THREAD FOR CHANNEL 'live'",
                "START REPLICA SQL_THREAD FOR CHANNEL 'live'",
            ):
                assert f"> {statement}" in log
            assert "channel live IO thread: running → stopped" in log

    try:
        asyncio.run(scenario())
    finally:
        replica.close()


def test_a_refused_password_shows_1045_as_the_io_thread_s_error(mariadb_source, tmp_path):
    """The receiver's Last_IO_Errno in the channels table and the detail, coloured as a SQL error
    is, and never the password; the applier never ran: stopped, not in error."""
    wrong = "n0t-the-Repl-pa55word"
    replica = received_channel(tmp_path, mariadb_source, wrong, SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=2)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("i")
            await until(pilot, lambda: "Error 1045" in str(cell(app, "io_error")), "the refusal shown")
            error = cell(app, "io_error")
            assert str(error).startswith("Error 1045: ") and "Access denied for user 'repl'" in str(error)
            assert error.style == style(app, ERROR)
            await until(pilot, lambda: not replica.receiving("live"), "the receiver gave up")
            await until(
                pilot, lambda: str(cell(app, "io")) == "error", "the IO thread shown stopped in error"
            )
            assert str(cell(app, "state")) == "stopped" and str(cell(app, "error")) == "—"
            shown = detail(app)
            assert "Error 1045" in shown and "retries: 2" in shown and " UTC" in shown
            log = log_text(app)
            assert "channel live IO thread: Error 1045" in log
            assert wrong not in shown + log + str(error)

    try:
        asyncio.run(scenario())
    finally:
        replica.close()
