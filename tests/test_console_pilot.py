"""The console driving a real in-process ReplicaServer over the bundled m2 relay log: keys pressed,
then what the engine did checked in the engine itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from console.app import ConsoleApp
from console.confirm import ConfirmScreen
from console.recovery_view import RecoveryView
from console.relaylog_view import RelayLogView
from engine.relaylog.index import read_index
from engine.replica.server import ReplicaServer
from engine.slave.database import CommitRecord

from .conftest import MULTISOURCE
from .paused_pool import paused_pool
from .test_replica_server import transactions_of

M1 = MULTISOURCE / "relay" / "relay-bin-m1.index"
M2 = MULTISOURCE / "relay" / "relay-bin-m2.index"
M2_TRANSACTIONS = len(transactions_of(M2))
SIZE = (100, 30)


def server(tmp_path: Path, *, follow: bool, workers: int = 0) -> ReplicaServer:
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repository.sqlite", follow=follow)
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M2}', REPLICA_PARALLEL_WORKERS = {workers} "
        "FOR CHANNEL 'm2'"
    )
    return replica


def applied(replica: ReplicaServer) -> int:
    progress = replica.slave.progress("m2")
    return progress.transactions if progress else 0


async def until(pilot, condition: Callable[[], bool], what: str, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}")
        await pilot.pause(0.1)


async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def type_text(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    names = {" ": "space", "'": "apostrophe", "=": "equals_sign", ",": "comma"}
    for character in text:
        await pilot.press(names.get(character, character))


def log_text(app: ConsoleApp) -> str:
    return "\n".join(text for _, _, text in app.query_one("#log-view").entries)


def rendered(renderable: object) -> str:
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_the_channel_is_the_selected_one_and_s_starts_it(tmp_path):
    replica = server(tmp_path, follow=False)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            assert app.selected == "m2"  # the unused default channel is not offered
            await pilot.press("s")
            await until(pilot, lambda: replica.run_of("m2") is not None, "the channel started")
            assert replica.wait(120)
            await until(pilot, lambda: app.snapshot.channels[-1].transactions == M2_TRANSACTIONS, "shown")
            table = app.query_one("#channels-table")
            assert str(table.get_cell("m2", "transactions")) == f"{M2_TRANSACTIONS:,}"
            assert "> START REPLICA FOR CHANNEL 'm2'" in log_text(app)

    try:
        asyncio.run(scenario())
        assert applied(replica) == M2_TRANSACTIONS
        assert replica.run_of("m2").outcome.error is None
    finally:
        replica.close()


def test_the_workers_view_shows_the_live_process_pool_of_a_replay(tmp_path):
    """--workers 2 --pool processes over the bundled m1 relay log: the pool's processes, each with
    the segment it prepares (held there by pausing them), then what they did once the run ended."""
    replica = ReplicaServer(
        tmp_path / "slave.duckdb", tmp_path / "repository.sqlite", follow=False, pool="processes"
    )
    replica.execute(
        f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{M1}', REPLICA_PARALLEL_WORKERS = 2 FOR CHANNEL 'm1'"
    )
    relay_files = {p.name for p in read_index(M1).files}

    def pool_rows(app: ConsoleApp) -> dict[str, tuple[str, str]]:
        table = app.query_one("#pool-table")
        return {
            str(table.get_cell(row.key, "slot")): (
                str(table.get_cell(row.key, "state")),
                str(table.get_cell(row.key, "segment")),
            )
            for row in table.ordered_rows
        }

    def pool_title(app: ConsoleApp) -> str:
        return str(app.query_one("#pool-title").content)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            assert app.selected == "m1"
            await pilot.press("2")
            await settle(pilot)
            assert "none: the single applier" in pool_title(app)  # never started: no pool yet
            with paused_pool(2) as stopped:
                await pilot.press("s")
                await until(pilot, stopped.is_set, "the pool's processes were started and paused")
                await until(
                    pilot,
                    lambda: "preparing" in {state for state, _ in pool_rows(app).values()},
                    "preparing shown",
                )
                rows = pool_rows(app)
                assert list(rows)[:2] == ["process 1", "process 2"]
                assert "2 local processes" in pool_title(app)
                for state, segment in rows.values():
                    if state == "preparing":
                        name, _, pos = segment.rpartition(":")
                        assert name in relay_files and int(pos) >= 4
            assert replica.wait(180)
            await until(pilot, lambda: app.snapshot.channels[-1].state == "stopped", "the end shown")
            await settle(pilot)
            assert pool_rows(app) == {"process 1": ("stopped", "—"), "process 2": ("stopped", "—")}
            done = replica.snapshot().pools["m1"].segments_done
            assert done >= 2 and f"{done} segments done" in pool_title(app)

    try:
        asyncio.run(scenario())
        assert replica.run_of("m1").outcome.error is None
    finally:
        replica.close()


def test_x_stops_a_running_channel(tmp_path):
    replica = server(tmp_path, follow=True)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("s")
            await until(pilot, lambda: applied(replica) == M2_TRANSACTIONS, "the channel caught up")
            assert replica.running("m2")  # following: it waits for more
            await pilot.press("x")
            await settle(pilot)
            await until(pilot, lambda: not replica.running("m2"), "the channel stopped")
            await until(pilot, lambda: app.snapshot.channels[-1].state == "stopped", "the stop is shown")

    try:
        asyncio.run(scenario())
        assert replica.run_of("m2").outcome.stats.stopped_by == "STOP"
    finally:
        replica.close()


def test_kill_asks_first_and_cancelling_leaves_the_channel_running(tmp_path):
    replica = server(tmp_path, follow=True, workers=2)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("s")
            await until(pilot, lambda: applied(replica) == M2_TRANSACTIONS, "the channel caught up")
            await pilot.press("k")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            await pilot.pause(0.5)
            assert replica.running("m2") and not replica.run_of("m2").kill.is_set()
            assert "kill of channel m2 cancelled" in log_text(app) + str(
                app.query_one("#message-line").content
            )
            await pilot.press("k")
            await settle(pilot)
            await pilot.press("y")
            await settle(pilot)
            await until(pilot, lambda: not replica.running("m2"), "the channel was killed")

    try:
        asyncio.run(scenario())
        run = replica.run_of("m2")
        assert run.kill.is_set() and run.outcome.stats.stopped_by == "KILL"
    finally:
        replica.close()


def test_reset_asks_first_and_then_forgets_the_position(tmp_path):
    replica = server(tmp_path, follow=False)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("s")
            await until(
                pilot, lambda: applied(replica) == M2_TRANSACTIONS and not replica.running("m2"), "done"
            )
            await pilot.press("R")
            await settle(pilot)
            await pilot.press("escape")  # cancels, as n does
            await settle(pilot)
            assert replica.slave.progress("m2").relay_log_file is not None
            await pilot.press("R")
            await settle(pilot)
            await pilot.press("y")
            await settle(pilot)

    try:
        asyncio.run(scenario())
        assert replica.slave.progress("m2").relay_log_file is None  # reads its relay log from the start again
    finally:
        replica.close()


def test_recovery_shows_the_gaps_and_u_fills_them(tmp_path):
    replica = server(tmp_path, follow=False)
    fifth = transactions_of(M2)[4]
    session = replica.slave.session()
    session.begin()
    # as a worker that committed transaction 5 before a crash, while 1-4 were still pending
    session.record_commits([CommitRecord("m2", 5, fifth.gtid, fifth.end.log_name, fifth.end.pos, None, 0, 1)])
    session.commit()
    session.close()

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("4")
            await settle(pilot)
            view = app.query_one(RecoveryView)
            assert [g.ordinal for g in view.picture.gaps] == [1, 2, 3, 4]
            shown = rendered(app.query_one("#recovery-picture").content)
            assert "4 gaps" in shown and "✗✗✗✗1" in shown
            await pilot.press("u")
            await settle(pilot)
            await until(pilot, lambda: app.following is None, "recovery was followed to its end")
            await settle(pilot)
            assert view.picture is not None and view.picture.gaps == []
            assert "recovery of m2 finished" in log_text(app)

    try:
        asyncio.run(scenario())
        assert replica.run_of("m2").outcome.stats.stopped_by == "UNTIL SQL_AFTER_MTS_GAPS"
        assert applied(replica) == 5  # the LWM moved past the gaps and the transaction committed after them
        assert replica.recovery("m2").gaps == []
    finally:
        replica.close()


def test_the_command_line_runs_statements_shows_errors_recalls_and_completes(tmp_path):
    replica = server(tmp_path, follow=False)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("colon")
            line = app.query_one("#command-line")
            assert line.has_focus
            await type_text(pilot, "SHOW REPLICA STATUS FOR CHANNEL 'm2'")
            await pilot.press("enter")
            await settle(pilot)
            table = app.query_one("#result-table")
            fields = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert str(table.get_row_at(fields.index("Channel_Name"))[1]) == "m2"

            await type_text(pilot, "START REPLICA FOR CHANNEL 'nope'")
            await pilot.press("enter")
            await settle(pilot)
            status = str(app.query_one("#result-status").content)
            assert status.startswith("ERROR 3074: ") and "'nope'" in status
            assert not app.query_one("#result-table").display
            assert "ERROR 3074" in log_text(app)

            await type_text(pilot, "half typed")
            await pilot.press("up")
            assert line.value == "START REPLICA FOR CHANNEL 'nope'"
            await pilot.press("up")
            assert line.value == "SHOW REPLICA STATUS FOR CHANNEL 'm2'"
            await pilot.press("down", "down")
            assert line.value == "half typed"

            line.value = ""
            await type_text(pilot, "START REPLICA FOR CHANNEL ")
            await pilot.press("tab")
            assert line.value == "START REPLICA FOR CHANNEL 'm2' "
            await pilot.press("enter")
            await settle(pilot)
            assert replica.wait(120)

            await pilot.press("escape", "1")  # off the line, the one-key commands work again
            assert not line.has_focus and app.query_one("#views").active == "channels"

    try:
        asyncio.run(scenario())
        assert applied(replica) == M2_TRANSACTIONS  # the completed statement ran
    finally:
        replica.close()


def test_reset_typed_on_the_command_line_asks_first(tmp_path):
    replica = server(tmp_path, follow=False)
    replica.execute("START REPLICA FOR CHANNEL 'm2'")
    assert replica.wait(120)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("colon")
            await type_text(pilot, "RESET REPLICA FOR CHANNEL 'm2'")
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("n")
            await settle(pilot)

    try:
        asyncio.run(scenario())
        assert replica.slave.progress("m2").relay_log_file is not None
    finally:
        replica.close()


def test_the_relay_log_browser_pages_into_the_next_file_and_decodes_rows(tmp_path):
    replica = server(tmp_path, follow=False)

    async def scenario() -> None:
        app = ConsoleApp(replica, source="test")
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("5")
            await settle(pilot)
            events = app.query_one("#events-table")
            assert [str(events.get_row_at(i)[1]) for i in range(events.row_count)] == [
                "Format_desc",
                "Rotate",
            ]
            await pilot.press("n")
            await settle(pilot)
            assert app.query_one(RelayLogView).pager.log_name == "relay-bin-m2.000002"
            write_rows = next(
                i for i in range(events.row_count) if str(events.get_row_at(i)[1]).startswith("Write")
            )
            for _ in range(write_rows):
                await pilot.press("down")
            await settle(pilot)
            rows = app.query_one("#rows-table")
            headings = [str(c.label) for c in rows.columns.values()]
            assert headings[:3] == ["image", "id", "email"] and rows.row_count >= 1
            assert "shop.customers" in str(app.query_one("#rows-title").content)
            await pilot.press("p")
            await settle(pilot)
            assert app.query_one(RelayLogView).pager.log_name == "relay-bin-m2.000001"

    try:
        asyncio.run(scenario())
    finally:
        replica.close()
