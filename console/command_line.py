"""The statement line: up and down recall earlier statements, Tab completes the word being typed."""

from __future__ import annotations

from collections.abc import Callable

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from .completion import complete
from .statement_history import StatementHistory


class CommandLine(Input):
    BINDINGS = [
        Binding("up", "older", "Older", show=False, tooltip="previous statement of the history"),
        Binding("down", "newer", "Newer", show=False, tooltip="next statement of the history"),
        Binding(
            "tab", "complete", "Complete", show=False, tooltip="complete keyword, channel, variable or option"
        ),
        Binding(
            "escape", "leave", "Leave", show=False, tooltip="leave the line: the one-letter keys work again"
        ),
    ]

    class Completed(Message):
        """Tab found several candidates (or none): the command view lists them."""

        def __init__(self, candidates: tuple[str, ...]) -> None:
            super().__init__()
            self.candidates = candidates

    def __init__(self, channels: Callable[[], list[str]], *, id: str | None = None) -> None:
        super().__init__(
            placeholder="replication statement; ↑↓ history, Tab completes, Enter runs",
            id=id,
        )
        self.cursor_blink = False  # steady: a blinking cursor makes every screenshot depend on timing
        self.history = StatementHistory()
        self._channels = channels  # the channel names of the newest snapshot, for completion

    def action_older(self) -> None:
        self._show(self.history.older(self.value))

    def action_newer(self) -> None:
        self._show(self.history.newer())

    def action_complete(self) -> None:
        completion = complete(self.value[: self.cursor_position], self._channels())
        self._show(completion.text + self.value[self.cursor_position :], cursor=len(completion.text))
        self.post_message(self.Completed(completion.candidates))

    def action_leave(self) -> None:
        self.screen.set_focus(None)

    def _show(self, text: str, cursor: int | None = None) -> None:
        self.value = text
        self.cursor_position = len(text) if cursor is None else cursor
