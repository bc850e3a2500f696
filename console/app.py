"""The operator console: channels, workers, command line, recovery, relay logs and the log, over
any ReplicaHandle (a server in this process or a running `relaydeck serve`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from engine.api import ChannelView, CommandError, RelaydeckError, ReplicaHandle, Snapshot

from . import statements
from .channels_view import ChannelsView, visible_channels
from .command_line import CommandLine
from .command_view import CommandView
from .confirm import ConfirmScreen
from .formatting import channel_label
from .help_screen import LINE_KEYS, TABLE_KEYS, HelpScreen, key_rows
from .history import RollingHistory
from .log_view import LogView
from .messages import ChannelSelected, RecoveryRequested, Reported, StatementRequested
from .outcome import Outcome
from .palette import ERROR, NOTE, OK, PLAIN, style
from .recovery_follow import ACTIVE_STATES, RecoveryFollow
from .recovery_view import RecoveryView
from .relaylog_view import RelayLogView
from .thresholds import LagThresholds
from .title_bar import TitleBar
from .transitions import changes
from .workers_view import WorkersView

PartT = TypeVar("PartT", bound=Widget)
REFRESH_S = 0.25  # four snapshots a second
LIGHT, DARK = "textual-light", "textual-dark"


class MessageLine(Static):
    """The outcome of the last action, in every view."""


class ConsoleApp(App[None]):
    TITLE = "relaydeck console"
    CSS_PATH = Path(__file__).with_name("console.tcss")
    BINDINGS = [
        Binding("1", "view('channels')", "Channels", show=False, tooltip="channels: one row each"),
        Binding("2", "view('workers')", "Workers", show=False, tooltip="workers of the channel, plots"),
        Binding("3", "view('command')", "Command", show=False, tooltip="command line and results"),
        Binding("4", "view('recovery')", "Recovery", show=False, tooltip="recovery inspector"),
        Binding("5", "view('relaylog')", "Relay log", show=False, tooltip="relay-log browser"),
        Binding("6", "view('log')", "Log", show=False, tooltip="log of statements, errors, changes"),
        Binding("colon", "view('command')", "Command line", show=False, tooltip="type a statement"),
        Binding(
            "left_square_bracket",
            "cycle_channel(-1)",
            "Previous channel",
            show=False,
            tooltip="select the previous channel",
        ),
        Binding(
            "right_square_bracket",
            "cycle_channel(1)",
            "Next channel",
            show=False,
            tooltip="select the next channel",
        ),
        Binding(
            "s",
            "start(False)",
            "Start",
            tooltip="START REPLICA FOR CHANNEL: both threads of the selected channel",
        ),
        Binding("S", "start(True)", "Start all", show=False, tooltip="START REPLICA (every channel)"),
        Binding(
            "x",
            "stop(False)",
            "Stop",
            tooltip="STOP REPLICA FOR CHANNEL: both threads of the selected channel",
        ),
        Binding("X", "stop(True)", "Stop all", show=False, tooltip="STOP REPLICA (every channel)"),
        Binding(
            "i",
            "start_thread('IO_THREAD')",
            "Start IO",
            show=False,
            tooltip="START REPLICA IO_THREAD FOR CHANNEL: the receiver alone",
        ),
        Binding(
            "o",
            "stop_thread('IO_THREAD')",
            "Stop IO",
            show=False,
            tooltip="STOP REPLICA IO_THREAD FOR CHANNEL: the receiver alone",
        ),
        Binding(
            "e",
            "start_thread('SQL_THREAD')",
            "Start SQL",
            show=False,
            tooltip="START REPLICA SQL_THREAD FOR CHANNEL: the applier alone",
        ),
        Binding(
            "w",
            "stop_thread('SQL_THREAD')",
            "Stop SQL",
            show=False,
            tooltip="STOP REPLICA SQL_THREAD FOR CHANNEL: the applier alone",
        ),
        Binding("k", "kill(False)", "Kill", tooltip="kill the selected channel's applier (asks first)"),
        Binding(
            "K", "kill(True)", "Kill all", show=False, tooltip="kill every channel's applier (asks first)"
        ),
        Binding("R", "reset", "Reset", show=False, tooltip="RESET REPLICA FOR CHANNEL (asks first)"),
        Binding("d", "toggle_theme", "Light/dark", show=False, tooltip="light or dark theme"),
        Binding("question_mark,f1", "help", "Help", tooltip="this screen"),
        Binding("q", "quit", "Quit", tooltip="quit (an in-process replica stops its channels)"),
    ]

    def __init__(
        self,
        replica: ReplicaHandle,
        *,
        source: str = "",
        thresholds: LagThresholds | None = None,
        refresh_s: float | None = REFRESH_S,
        clock: Callable[[], float] = time.time,
        notes: Sequence[str] = (),
    ) -> None:
        """refresh_s None: no polling (tests and screenshots feed snapshots with ingest())."""
        super().__init__()
        self.replica = replica
        self.source = source
        self.thresholds = thresholds or LagThresholds()
        self.refresh_s = refresh_s
        self.clock = clock
        self.snapshot: Snapshot | None = None
        self.selected: str | None = None
        self.history = RollingHistory()
        self.following: RecoveryFollow | None = None
        self._polling = False
        self._notes = notes  # what configuring the replica said, logged once the log exists

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title-bar")
        with TabbedContent(id="views", initial="channels"):
            with TabPane("1 Channels", id="channels"):
                yield ChannelsView(self.thresholds, id="channels-view")
            with TabPane("2 Workers", id="workers"):
                yield WorkersView(self.thresholds, id="workers-view")
            with TabPane("3 Command", id="command"):
                yield CommandView(self.channel_names, id="command-view")
            with TabPane("4 Recovery", id="recovery"):
                yield RecoveryView(self.replica, id="recovery-view")
            with TabPane("5 Relay log", id="relaylog"):
                yield RelayLogView(self.replica, id="relaylog-view")
            with TabPane("6 Log", id="log"):
                yield LogView(id="log-view")
        yield MessageLine(id="message-line")
        yield Footer()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, lambda _theme: self.redraw())
        for note in self._notes:
            self.log_line(NOTE, note)
        try:
            self.ingest(self.replica.snapshot())  # at once: the first screen shows the real state
        except (RelaydeckError, OSError) as exc:
            self.show_message(ERROR, f"status unavailable: {exc}")
        if self.refresh_s:
            self.set_interval(self.refresh_s, self.poll)
        self.query_one("#channels-table", DataTable).focus()

    # -- snapshots ---------------------------------------------------------------------------------

    def poll(self) -> None:
        """Take a snapshot in a thread (the repository may be busy); skipped while one is under way."""
        if not self._polling:
            self._polling = True
            self.run_worker(self._poll, thread=True, group="snapshot")

    def _poll(self) -> None:
        try:
            self.call_from_thread(self._polled, self.replica.snapshot(), "")
        except (RelaydeckError, OSError) as exc:
            self.call_from_thread(self._polled, None, f"status unavailable: {exc}")

    def _polled(self, snapshot: Snapshot | None, error: str) -> None:
        self._polling = False
        if not self.is_running:
            return  # the console closed while the snapshot was read
        if snapshot is not None:
            self.ingest(snapshot)
        else:
            self.show_message(ERROR, error)

    def ingest(self, snapshot: Snapshot) -> None:
        """Show a snapshot: every view, the history behind the plots, and what changed in the log."""
        for level, text in changes(self.snapshot, snapshot):
            self.log_line(level, text, at=snapshot.taken_at)
        self.snapshot = snapshot
        self.history.add(snapshot)
        names = self.channel_names()
        if self.selected not in names:
            self.selected = names[0] if names else None
            self._channel_changed()
        self._follow_recovery(snapshot)
        self.redraw()

    def redraw(self) -> None:
        snapshot = self.snapshot
        if snapshot is None:
            return
        self._part(TitleBar).show(self.source, self.selected, snapshot.taken_at)
        self._part(ChannelsView).show(snapshot, self.selected)
        samples = self.history.samples(self.selected) if self.selected is not None else []
        self._part(WorkersView).show(snapshot, self.selected, samples)
        view = self.channel_view(self.selected)
        self._part(RelayLogView).applied_position = view.relay_applied if view else ""
        recovery = self._part(RecoveryView)
        recovery.channel_state = view.state if view else ""
        recovery.redraw()

    def channel_names(self) -> list[str]:
        return [c.name for c in visible_channels(self.snapshot)] if self.snapshot else []

    def channel_view(self, name: str | None) -> ChannelView | None:
        """The channel as the newest snapshot shows it."""
        channels = self.snapshot.channels if self.snapshot else ()
        return next((c for c in channels if c.name == name), None)

    # -- selection and views -----------------------------------------------------------------------

    def on_channel_selected(self, message: ChannelSelected) -> None:
        if message.channel != self.selected:
            self.selected = message.channel
            self._channel_changed()
            self.redraw()

    def action_cycle_channel(self, step: int) -> None:
        names = self.channel_names()
        if not names:
            return
        position = names.index(self.selected) if self.selected in names else 0
        self.selected = names[(position + step) % len(names)]
        self._channel_changed()
        self.redraw()

    def _channel_changed(self) -> None:
        """The views that fetch per channel fetch again, if they are the one shown."""
        active = self._part(TabbedContent).active
        if active == "recovery":
            self._part(RecoveryView).inspect(self.selected)
        elif active == "relaylog":
            self._part(RelayLogView).browse(self.selected)

    def action_view(self, name: str) -> None:
        self._part(TabbedContent).active = name

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        name = event.pane.id
        if name == "recovery":
            self._part(RecoveryView).inspect(self.selected)
        elif name == "relaylog":
            self._part(RelayLogView).browse(self.selected)
        focus = {
            "channels": "#channels-table",
            "workers": "#workers-table",
            "command": "#command-line",
            "recovery": "#recovery-view",
            "relaylog": "#events-table",
            "log": "#log-view",
        }
        for widget in self.screen_stack[0].query(focus.get(name, "#none")):  # none while starting
            widget.focus()

    def action_toggle_theme(self) -> None:
        self.theme = LIGHT if self.current_theme.dark else DARK

    def action_help(self) -> None:
        sections = [
            ("everywhere (except while typing a statement)", key_rows(self.BINDINGS)),
            ("tables", list(TABLE_KEYS)),
            ("recovery (4)", key_rows(RecoveryView.BINDINGS)),
            ("relay log (5)", key_rows(RelayLogView.BINDINGS)),
            ("command line (3 or :)", [*key_rows(CommandLine.BINDINGS), *LINE_KEYS]),
            ("confirmation", key_rows(ConfirmScreen.BINDINGS)),
        ]
        self.push_screen(HelpScreen(sections))

    # -- actions on channels -----------------------------------------------------------------------

    def _target(self, every: bool) -> str | None:
        """None: every channel (the statement without FOR CHANNEL)."""
        return None if every else self.selected

    def action_start(self, every: bool) -> None:
        if every or self.selected is not None:
            self.run_statement(statements.start(self._target(every)))

    def action_stop(self, every: bool) -> None:
        if every or self.selected is not None:
            self.run_statement(statements.stop(self._target(every)))

    def action_start_thread(self, thread: str) -> None:
        if self.selected is not None:
            self.run_statement(statements.start_thread(thread, self.selected))

    def action_stop_thread(self, thread: str) -> None:
        if self.selected is not None:
            self.run_statement(statements.stop_thread(thread, self.selected))

    def action_kill(self, every: bool) -> None:
        if not every and self.selected is None:
            return
        channel = self._target(every)
        what = "every channel" if channel is None else f"channel {channel_label(channel)}"
        self.push_screen(
            ConfirmScreen(
                f"Kill {what}?",
                "Workers drop the transactions they hold, without waiting; the next START fills the gaps "
                "this leaves (recovery).",
                "Kill",
            ),
            lambda yes: self._kill(channel) if yes else self.show_message(NOTE, f"kill of {what} cancelled"),
        )

    def action_reset(self) -> None:
        if self.selected is not None:
            self.confirm_statement(statements.reset(self.selected))

    def confirm_statement(self, statement: str, *, to_results: bool = False) -> None:
        self.push_screen(
            ConfirmScreen(
                f"Run {statement}?",
                "The channel forgets its position and reads its relay log from the start again "
                "(executed GTIDs stay, so applied GTID transactions are skipped).",
                "Reset",
            ),
            lambda yes: (
                self.run_statement(statement, to_results=to_results)
                if yes
                else self.show_message(NOTE, f"{statement} cancelled")
            ),
        )

    def on_statement_requested(self, message: StatementRequested) -> None:
        if statements.is_destructive(message.statement):
            self.confirm_statement(message.statement, to_results=True)
        else:
            self.run_statement(message.statement, to_results=True)

    def on_recovery_requested(self, message: RecoveryRequested) -> None:
        view = self.channel_view(message.channel)
        if view is not None and view.state in ACTIVE_STATES:
            # START … UNTIL on a running channel only says "already running": there is nothing to follow
            self.show_message(
                NOTE,
                f"channel {channel_label(message.channel)} is {view.state}: stop (x) or kill (k) it first",
            )
            return
        self.following = RecoveryFollow(message.channel, self.clock())
        self._part(RecoveryView).follow("recovery starting …")
        self.run_statement(statements.recover(message.channel))

    def on_reported(self, message: Reported) -> None:
        self.log_line(message.level, message.text)
        self.show_message(message.level, message.text)

    # -- running statements (in threads: STOP waits for the applier) --------------------------------

    def run_statement(self, statement: str, *, to_results: bool = False) -> None:
        self.log_line(PLAIN, f"> {statement}")
        self.show_message(PLAIN, f"{statement} …")
        self.run_worker(partial(self._execute, statement, to_results), thread=True, group="statements")

    def _execute(self, statement: str, to_results: bool) -> None:
        started = self.clock()
        result, error = None, ""
        try:
            result = self.replica.execute(statement)
        except CommandError as exc:
            error = str(exc)  # ERROR n: message, as the mysql client prints it
        except (RelaydeckError, OSError) as exc:  # the server went away, the repository is locked, …
            error = f"relaydeck: {exc}"
        finished = self.clock()
        notes = tuple(result.warnings) if result is not None else ()
        outcome = Outcome(statement, finished, finished - started, result, error, notes)
        self.call_from_thread(self._finished, outcome, to_results)

    def _kill(self, channel: str | None) -> None:
        action = "kill " + ("every channel" if channel is None else f"channel {channel_label(channel)}")
        self.log_line(PLAIN, f"> {action}")

        def kill() -> None:
            started = self.clock()
            error = ""
            try:
                self.replica.kill(channel)
            except (RelaydeckError, OSError) as exc:
                error = str(exc)
            finished = self.clock()
            self.call_from_thread(
                self._finished, Outcome(action, finished, finished - started, error=error), False
            )

        self.run_worker(kill, thread=True, group="statements")

    def _finished(self, outcome: Outcome, to_results: bool) -> None:
        if not self.is_running:
            return  # the console closed while the statement ran
        for note in outcome.notes:
            self.log_line(NOTE, str(note), at=outcome.finished_at)
        level = ERROR if outcome.failed else OK
        self.log_line(level, f"  {outcome.summary()}", at=outcome.finished_at)
        self.show_message(level, f"{outcome.action}: {outcome.summary()}")
        if to_results:
            self._part(CommandView).show(outcome)
        if self.following is not None and outcome.action == statements.recover(self.following.channel):
            if outcome.failed:
                self.following = None
                self._part(RecoveryView).follow("")
            else:
                self.following.start_returned(outcome.finished_at)
        if self.refresh_s:
            self.poll()  # show what the statement did without waiting for the next tick

    def _follow_recovery(self, snapshot: Snapshot) -> None:
        follow = self.following
        if follow is None:
            return
        view = self.channel_view(follow.channel)
        finished, text = follow.observe(view, snapshot.taken_at)
        recovery = self._part(RecoveryView)
        if not finished:
            recovery.follow(text)
            return
        self.following = None
        recovery.follow("")
        level = ERROR if view is not None and view.last_error else OK
        self.log_line(level, text, at=snapshot.taken_at)
        self.show_message(level, text)
        if recovery.channel == follow.channel:
            recovery.inspect(follow.channel)  # the picture after recovery: no gaps left, or why

    # -- log and message line ----------------------------------------------------------------------

    def _part(self, kind: type[PartT]) -> PartT:
        """A widget of the main screen, also while a dialog (help, confirmation) is on top of it."""
        return self.screen_stack[0].query_one(kind)

    def log_line(self, level: str, text: str, *, at: float | None = None) -> None:
        self._part(LogView).add(self.clock() if at is None else at, level, text)

    def show_message(self, level: str, text: str) -> None:
        self._part(MessageLine).update(Text(text, style(self, level), no_wrap=True, overflow="ellipsis"))
