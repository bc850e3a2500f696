"""Asking before a destructive action (kill, reset): Cancel has the focus, so Enter does no harm."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", tooltip="yes, do it"),
        Binding("n,escape", "answer(False)", "No", tooltip="no (Enter too: Cancel has the focus)"),
    ]

    def __init__(self, question: str, consequence: str, verb: str) -> None:
        super().__init__()
        self.question = question
        self.consequence = consequence
        self.verb = verb

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Static(self.question, id="confirm-question", markup=False)
            yield Static(self.consequence, id="confirm-consequence", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.verb} (y)", variant="error", id="confirm-yes")
                yield Button("Cancel (n)", variant="primary", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
