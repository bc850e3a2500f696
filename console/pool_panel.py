"""The selected channel's preparing pool: a summary line, then one row per slot (a process, a Spark
task slot, or the in-process one), its state and where the segment of relay log it works on
starts. No header row: the view fits 80x24 with the workers' table and both plots."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from engine.api import PoolView

from . import formatting as fmt
from .palette import MUTED, state_level, style

COLUMNS = (("slot", "Slot"), ("state", "State"), ("segment", "Segment from"))


class PoolPanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[str | None, list[str]] = (None, [])

    def compose(self) -> ComposeResult:
        yield Static(id="pool-title")
        table: DataTable[Text] = DataTable(
            id="pool-table", cursor_type="none", zebra_stripes=True, show_header=False
        )
        for key, heading in COLUMNS:
            table.add_column(heading, key=key)
        yield table

    def show(self, channel: str | None, pool: PoolView | None) -> None:
        self.query_one("#pool-title", Static).update(self._title(channel, pool))
        table: DataTable[Text] = self.query_one("#pool-table", DataTable)
        table.display = pool is not None and bool(pool.slots)
        slots = pool.slots if pool is not None else ()
        names = [s.slot for s in slots]
        # rows are keyed by position: slot names come from the executor, which may repeat one
        if (channel, names) != self._shown:
            table.clear()
            for number, slot in enumerate(slots):
                table.add_row(*self._cells(slot.slot, slot.state, slot.segment), key=str(number))
            self._shown = (channel, names)
            return
        for number, slot in enumerate(slots):
            for (key, _), cell in zip(COLUMNS, self._cells(slot.slot, slot.state, slot.segment), strict=True):
                table.update_cell(str(number), key, cell, update_width=True)

    def _title(self, channel: str | None, pool: PoolView | None) -> Text:
        title = Text("preparing pool", "bold")
        if channel is None:
            return title
        if pool is None:
            title.append("  none: the single applier reads the relay log itself", style(self.app, MUTED))
            return title
        title.append(
            f"  {_kind(pool)} · {fmt.count(pool.segments_done)} segments done · "
            f"runs {fmt.count(pool.prepared_runs)} ({fmt.count(pool.runs_read_again)} read again)"
        )
        return title

    def _cells(self, slot: str, state: str, segment: str) -> list[Text]:
        return [
            Text(slot),
            Text(state, style(self.app, state_level(state))),
            Text(fmt.or_none(segment), style(self.app, MUTED) if not segment else ""),
        ]


def _kind(pool: PoolView) -> str:
    """What an operator reads for each --pool."""
    if pool.kind == "threads":
        return "in-process (threads)"
    if pool.kind == "processes":
        return f"{pool.workers} local processes"
    if pool.kind == "spark":
        return f"Spark, {pool.workers} task slots"
    return f"{pool.kind}, {pool.workers} workers"
