"""A small bar plot of one series over time, scaled from zero (a sparkline scaled from its own
minimum would make a steady 500 trx/s look like a collapse to nothing).

Each column is a fixed slice of time (newest on the right) holding the largest value of the
samples in it, so the picture does not jump as the history grows; each bar takes the colour of
its value's level (lag: green, yellow, red).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from .formatting import seconds

_EIGHTHS = " ▁▂▃▄▅▆▇█"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 4, 5, 6 or 8 times a power of ten not below value: a scale top
    people read, and one that leaves little of the plot empty."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 3, 4, 5, 6, 8, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # unreachable: step 10 always fits


def columns(
    points: Sequence[tuple[float, float]], now: float, width: int, step_s: float
) -> list[float | None]:
    """The largest value in each of `width` slices of step_s seconds ending at now (None: no sample)."""
    out: list[float | None] = [None] * width
    for taken_at, value in points:
        age = now - taken_at
        if age < 0:
            continue
        slot = width - 1 - int(age // step_s)
        if 0 <= slot < width:
            current = out[slot]
            out[slot] = value if current is None else max(current, value)
    return out


def bars(values: Sequence[float | None], height: int, top: float) -> list[str]:
    """Rows of block characters, top row first, drawing each value as a bar from the bottom."""
    rows = []
    for row in range(height - 1, -1, -1):
        line = []
        for value in values:
            if value is None:
                line.append(" ")
                continue
            eighths = round(max(0.0, min(value, top)) / top * height * 8) - row * 8
            line.append(_EIGHTHS[max(0, min(8, eighths))])
        rows.append("".join(line))
    return rows


class TimePlot(Widget):
    """Draws (taken_at, value) points under a title line that gives the scale and the time shown."""

    DEFAULT_CSS = """
    TimePlot { height: 4; }
    """

    points: reactive[tuple[tuple[float, float], ...]] = reactive((), layout=False)

    def __init__(
        self,
        name: str,
        unit: str,
        *,
        step_s: float = 2.0,
        level_style: Callable[[float], Style] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.title = name
        self.unit = unit
        self.step_s = step_s
        self.level_style = level_style
        self.now = 0.0
        self.top = 1.0
        self.current = ""

    def plot(
        self, points: Sequence[tuple[float, float]], now: float, current: str, minimum_top: float = 0.0
    ) -> None:
        """now: the time at the right edge; current: the value now, as the title shows it."""
        self.now = now
        self.current = current
        values = [v for _, v in points]
        self.top = nice_ceiling(max([minimum_top, *values]) if values else minimum_top)
        self.points = tuple(points)
        self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, self.size.height - 1
        span = seconds(width * self.step_s)
        text = Text.assemble(
            (self.title, "bold"),
            f"  now {self.current}",
            (f"   scale 0–{self.top:g} {self.unit}, last {span}", Style(dim=True)),
            no_wrap=True,
            overflow="crop",
        )
        values = columns(self.points, self.now, width, self.step_s)
        for row in bars(values, height, self.top):
            text.append("\n")
            for value, cell in zip(values, row, strict=True):
                colour = self.level_style(value) if self.level_style and value is not None else Style()
                text.append(cell, colour)
        return text
