"""The command line and what the last statement returned."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from .command_line import CommandLine
from .messages import StatementRequested
from .outcome import Outcome
from .palette import MUTED, style
from .result_view import ResultView

HINT = "e.g. SHOW REPLICA STATUS FOR CHANNEL 'm1'   START REPLICA   SET GLOBAL replica_parallel_workers = 4"


class CommandView(Vertical):
    def __init__(self, channels: Callable[[], list[str]], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._channels = channels

    def compose(self) -> ComposeResult:
        yield ResultView(id="result")
        yield Static(id="completions")
        yield CommandLine(self._channels, id="command-line")

    def on_mount(self) -> None:
        self.query_one("#completions", Static).update(Text(HINT, style(self.app, MUTED)))

    @property
    def command_line(self) -> CommandLine:
        return self.query_one(CommandLine)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        statement = event.value.strip()
        if not statement:
            return
        self.command_line.history.record(statement)
        self.command_line.value = ""
        self.post_message(StatementRequested(statement))

    def on_command_line_completed(self, event: CommandLine.Completed) -> None:
        event.stop()
        if len(event.candidates) == 1:
            text = Text("")
        elif event.candidates:
            text = Text("  ".join(event.candidates), style(self.app, MUTED))
        else:
            text = Text("no completion", style(self.app, MUTED))
        self.query_one("#completions", Static).update(text)

    def show(self, outcome: Outcome) -> None:
        self.query_one(ResultView).show(outcome)
