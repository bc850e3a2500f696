"""The top line: what the console is connected to, the selected channel, and the snapshot's time."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from . import formatting as fmt


class TitleBar(Static):
    def show(self, source: str, channel: str | None, taken_at: float | None) -> None:
        text = Text.assemble(("relaydeck ", "bold"), source)
        if channel is not None:
            text.append("  channel ")
            text.append(fmt.channel_label(channel), "bold")
        if taken_at is not None:
            text.append(f"  {fmt.utc_clock(taken_at)}")
        self.update(text)
