"""What the views ask of the application: they show things, the application acts."""

from __future__ import annotations

from textual.message import Message


class ChannelSelected(Message):
    def __init__(self, channel: str) -> None:
        super().__init__()
        self.channel = channel


class StatementRequested(Message):
    """Run a statement typed on the command line; its result goes back to the command view."""

    def __init__(self, statement: str) -> None:
        super().__init__()
        self.statement = statement


class RecoveryRequested(Message):
    """Run recovery (START REPLICA UNTIL SQL_AFTER_MTS_GAPS) on a channel and follow it."""

    def __init__(self, channel: str) -> None:
        super().__init__()
        self.channel = channel


class Reported(Message):
    """Something for the log (and the message line): level is ok, note or error."""

    def __init__(self, level: str, text: str) -> None:
        super().__init__()
        self.level = level
        self.text = text
