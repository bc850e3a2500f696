"""Screenshots of the console over the bundled example running for real: python -m console.screenshots

The example starts as `relaydeck console` starts it with no arguments (`open_example`: the two
generated workloads fed live into relay-log folders, beside the bundled MariaDB capture's two
channels, all applied by a ReplicaServer in this process), in a fresh folder. The Textual pilot then
walks the console through a tour, each screenshot taken once the state is worth showing: channel
oltp applying with a worker busy, after a while of throughput to plot (the channels, then the same
moment from its workers), the relay-log browser on a rows event at the applied position, SHOW
REPLICA STATUS and its result, a kill (asked first) and the recovery picture it leaves, then the
log of it all once the channel is started again.

The console does not poll by itself here: the tour takes each snapshot (as often as the console
would) and hands it to the console, then checks the condition on the very snapshot shown, so a
picture never shows the tick after the one that was waited for. Every wait is a condition with a
timeout; none is a fixed sleep.
"""

from __future__ import annotations

import asyncio
import io
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rich.text import Text
from textual import events
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from engine.api import ChannelView, RelaydeckError, Snapshot

from .app import REFRESH_S, ConsoleApp
from .command_line import CommandLine
from .recovery_view import RecoveryView
from .session import Session, open_example

CHANNEL = "oltp"  # the example's busiest channel (4 workers, LOGICAL_CLOCK), the one the tour follows
STATUS_STATEMENT = f"SHOW REPLICA STATUS FOR CHANNEL '{CHANNEL}'"
ROWS_EVENTS = ("Update_rows", "Write_rows", "Delete_rows")  # event types the browser decodes rows of
SIZE = (120, 36)
PLOT_SECONDS = 60.0  # of throughput history before the workers' plots are worth a picture
APPLIED_PAGE_TRIES = 5  # applied positions tried before giving up on a page with a rows event
TIMEOUT_S = 120.0  # for each wait; the example's feed lasts 90 s


class TourError(RelaydeckError):
    """The example never reached a state a screenshot waits for."""


@dataclass(frozen=True, slots=True)
class Shot:
    name: str
    description: str


SHOTS = (
    Shot("channels", f"Channels, {CHANNEL} selected while its workers apply what the feed appends"),
    Shot(
        "workers", f"Workers of {CHANNEL}, a worker applying, throughput and lag plotted over the last minute"
    ),
    Shot("relaylog", f"Relay-log browser of {CHANNEL} at its applied position, with a rows event decoded"),
    Shot("command-result", f"Command line: {STATUS_STATEMENT}, one column per line"),
    Shot("kill-confirmation", f"k on {CHANNEL}: the console asks first"),
    Shot("recovery", f"Recovery inspector of {CHANNEL} after the kill: low-water mark, checkpoints, plan"),
    Shot("log", f"Log: the statements, the kill and the restart of {CHANNEL}, the state changes of the run"),
)


@dataclass(frozen=True, slots=True)
class Taken:
    shot: Shot
    path: Path
    snapshot: Snapshot  # what the screenshot shows

    @property
    def channel(self) -> ChannelView:
        """The tour's channel as the screenshot shows it."""
        return next(c for c in self.snapshot.channels if c.name == CHANNEL)


@dataclass(frozen=True, slots=True)
class Pacing:
    """How long the tour waits for the state it wants; shorter in tests."""

    feed_seconds: float | None = None  # how long the example's feed lasts (None: as in the console)
    plot_seconds: float = PLOT_SECONDS
    timeout_s: float = TIMEOUT_S


def take(
    out: Path, work: Path | None = None, pacing: Pacing = Pacing(), progress: TextIO = sys.stderr
) -> list[Taken]:
    """Run the example in `work` (default: a temporary folder) and save the tour's SVGs into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="relaydeck-screenshots-") as temporary:
        folder = work or Path(temporary) / "relaydeck-example"
        progress.write(f"running the bundled example in {folder} …\n")
        # open_example's own note says the example is kept: in a temporary folder it is not
        session = open_example(folder, out=io.StringIO(), feed_seconds=pacing.feed_seconds)
        try:
            if session.description.startswith("attached"):  # not fed by this process: it cannot pace it
                raise TourError(
                    f"{folder}: a relaydeck serve runs on this example already; give another --work"
                )
            return asyncio.run(_run(session, folder, out, pacing, progress))
        finally:
            session.close()


async def _run(session: Session, folder: Path, out: Path, pacing: Pacing, progress: TextIO) -> list[Taken]:
    # the title as `relaydeck console` shows it, run where the example's folder is
    source = session.description.replace(str(folder), folder.name)
    app = ConsoleApp(session.replica, source=source, refresh_s=None, notes=session.notes)
    async with app.run_test(size=SIZE) as pilot:
        tour = _Tour(pilot, app, out, pacing, progress)
        await tour.run()
        return tour.taken


class _Tour:
    def __init__(self, pilot: Pilot[None], app: ConsoleApp, out: Path, pacing: Pacing, progress: TextIO):
        self.pilot = pilot
        self.app = app
        self.out = out
        self.pacing = pacing
        self.progress = progress
        self.taken: list[Taken] = []
        self._started = time.monotonic()

    async def run(self) -> None:
        await self.until(lambda: CHANNEL in self.app.channel_names(), f"channel {CHANNEL} exists")
        await self.select(CHANNEL)
        await self.until(
            lambda: self.applying() and self.history_seconds() >= self.pacing.plot_seconds,
            f"{CHANNEL} applies with a worker busy, after {self.pacing.plot_seconds:g} s of throughput",
        )
        self.save("channels")
        await self.press("2")  # the same snapshot, seen from its workers
        self.save("workers")

        await self.press("5")
        await self.browse_applied_page_with_rows()
        self.save("relaylog")

        await self.press("colon")
        await self.paste(STATUS_STATEMENT)
        await self.press("enter")
        await self.until(self.result_shown, f"{STATUS_STATEMENT} shows its result")
        self.save("command-result")
        await self.press("escape")  # leave the command line: the one-letter keys work again

        await self.press("1")
        await self.press("k")
        self.save("kill-confirmation")
        await self.press("y")
        await self.until(lambda: self.channel().state not in ("running", "waiting"), f"{CHANNEL} is killed")
        await self.press("4")
        await self.until(self.recovery_shown, f"the recovery picture of {CHANNEL}")
        self.save("recovery")
        await self.press("s")
        await self.until(lambda: self.channel().state in ("running", "waiting"), f"{CHANNEL} runs again")
        await self.press("6")
        self.save("log")

    # -- conditions --------------------------------------------------------------------------------

    def channel(self) -> ChannelView:
        view = self.app.channel_view(CHANNEL)
        if view is None:
            raise TourError(f"channel {CHANNEL} is gone from the snapshot")
        return view

    def applying(self) -> bool:
        view = self.channel()
        return view.state == "running" and view.workers_busy > 0 and view.trx_per_s > 0

    def history_seconds(self) -> float:
        samples = [s for s in self.app.history.samples(CHANNEL) if s.trx_per_s > 0]
        return samples[-1].taken_at - samples[0].taken_at if samples else 0.0

    def at_page(self, position: str) -> bool:
        log_name, _, pos = position.rpartition(":")
        title = self._static_text("#relaylog-title")
        return f"{log_name} from {pos}" in title and self._events().row_count > 0

    def recovery_shown(self) -> bool:
        picture = self.app.query_one(RecoveryView).picture
        return picture is not None and picture.channel == CHANNEL

    def result_shown(self) -> bool:
        shown = self._static_text("#result-statement").removeprefix("> ")
        return shown == STATUS_STATEMENT and self.app.query_one("#result-table", DataTable).row_count > 0

    # -- moving around -----------------------------------------------------------------------------

    async def select(self, channel: str) -> None:
        for _ in self.app.channel_names():
            if self.app.selected == channel:
                return
            await self.press("right_square_bracket")
        raise TourError(f"channel {channel} cannot be selected")

    async def browse_applied_page_with_rows(self) -> None:
        """The relay-log page at the channel's applied position, with a rows event highlighted.
        An applied position at the end of a file leaves only its last events on the page (a
        ROTATE): then wait for the channel to apply more and look again."""
        for _ in range(APPLIED_PAGE_TRIES):
            applied = self.channel().relay_applied  # where `a` goes: the position the console shows
            await self.press("a")
            await self.until(
                lambda at=applied: self.at_page(at), f"the relay-log page at {CHANNEL}'s {applied}"
            )
            if await self.highlight_rows_event():
                return
            await self.until(lambda at=applied: self.channel().relay_applied != at, f"{CHANNEL} applies more")
        raise TourError(f"no rows event on {CHANNEL}'s relay-log page at its applied position")

    async def highlight_rows_event(self) -> bool:
        """Move the cursor down the page to the first event with rows, and wait for them decoded;
        False when the page has none."""
        table = self._events()
        for _ in range(table.row_count):
            pos, event_type = (cell.plain for cell in table.get_row_at(table.cursor_row)[:2])
            if event_type in ROWS_EVENTS:
                break
            await self.press("down")
        else:
            return False
        heading = f"rows of {event_type} at "  # then log_name:pos: table
        await self.until(
            lambda: (
                self._static_text("#rows-title").startswith(heading)
                and f":{pos}: " in self._static_text("#rows-title")
            ),
            f"the rows of the {event_type} event at {pos} decoded",
        )
        return True

    async def press(self, key: str) -> None:
        await self.pilot.press(key)
        await self._settle()

    async def paste(self, text: str) -> None:
        """Paste, not type: each key waits for an idle moment, rare while the example applies."""
        self.app.query_one(CommandLine).post_message(events.Paste(text))
        await self._settle()

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        """Hand the console a snapshot at its refresh rate until `condition` holds on what it shows."""
        deadline = time.monotonic() + self.pacing.timeout_s
        while True:
            snapshot = await asyncio.to_thread(self.app.replica.snapshot)
            self.app.ingest(snapshot)
            await self._settle()
            if condition():
                return
            if time.monotonic() > deadline:
                raise TourError(f"gave up after {self.pacing.timeout_s:g} s waiting until {what}")
            await self.pilot.pause(REFRESH_S)

    async def _settle(self) -> None:
        # twice: a thread's result comes back as a callback that may start the next thread
        for _ in range(2):
            await self.app.workers.wait_for_complete()
            await self.pilot.pause()

    def save(self, name: str) -> None:
        shot = next(s for s in SHOTS if s.name == name)
        if not self.app.is_running:
            raise TourError(f"the console stopped before the {name} screenshot")
        path = self.out / f"{name}.svg"
        self.app.save_screenshot(path.name, str(self.out))
        if self.app.snapshot is None:
            raise TourError(f"no snapshot was shown before the {name} screenshot")
        self.taken.append(Taken(shot, path, self.app.snapshot))
        elapsed = time.monotonic() - self._started
        self.progress.write(f"{path} (after {elapsed:.0f} s): {shot.description}\n")
        self.progress.flush()

    def _events(self) -> DataTable[Text]:
        return self.app.query_one("#events-table", DataTable)

    def _static_text(self, selector: str) -> str:
        content = self.app.query_one(selector, Static).content
        return content.plain if isinstance(content, Text) else str(content)
