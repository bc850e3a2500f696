"""The log: statements run, their errors and notes, and channels changing state, with times."""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.widgets import RichLog

from . import formatting as fmt
from .palette import style

MAX_LINES = 5000


class LogView(RichLog):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, wrap=True, markup=False, highlight=False, max_lines=MAX_LINES)
        # what was logged, as written: the widget renders lines only once it is first shown
        self.entries: deque[tuple[float, str, str]] = deque(maxlen=MAX_LINES)

    def add(self, at: float, level: str, text: str) -> None:
        self.entries.append((at, level, text))
        clock = fmt.utc_clock(at).removesuffix(" UTC")
        self.write(Text.assemble((clock + " ", "dim"), (text, style(self.app, level))))
