"""The channels: one row each, and everything about the selected one below the table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from engine.replica.monitor import ChannelView, Snapshot

from . import formatting as fmt
from .messages import ChannelSelected
from .palette import ERROR, MUTED, state_level, style
from .thresholds import LagThresholds

# (key, heading): the columns that matter most first, so 80 columns show them without scrolling
COLUMNS = (
    ("channel", "Channel"),
    ("state", "State"),
    ("lag", "Lag"),
    ("rate", "trx/s"),
    ("transactions", "Applied trx"),
    ("workers", "Busy"),
    ("queue", "Queue"),
    ("read", "Relay read"),
    ("applied", "Relay applied"),
    ("source", "Source"),
    ("gtids", "Executed GTIDs"),
    ("error", "Last error"),
)


def visible_channels(snapshot: Snapshot) -> list[ChannelView]:
    """Every channel, except the default channel while it was never configured nor used and
    others exist: it is always there, and would be an empty row in every multi-source replica."""
    channels = list(snapshot.channels)
    if len(channels) > 1:
        channels = [
            c for c in channels if c.name or c.source or c.relay_read or c.relay_applied or c.transactions
        ]
    return channels


class ChannelsView(Vertical):
    def __init__(self, thresholds: LagThresholds, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.thresholds = thresholds
        self._names: list[str] = []

    def compose(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="channels-table", cursor_type="row", zebra_stripes=True)
        for key, heading in COLUMNS:
            table.add_column(heading, key=key)
        yield table
        with VerticalScroll(id="channel-detail-scroll"):
            yield Static(id="channel-detail")

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#channels-table", DataTable)

    def show(self, snapshot: Snapshot, selected: str | None) -> None:
        channels = visible_channels(snapshot)
        names = [c.name for c in channels]
        table = self.table
        if names != self._names:
            table.clear()
            for channel in channels:
                table.add_row(*self._cells(channel), key=channel.name)
            self._names = names
        else:
            for channel in channels:
                for (key, _), cell in zip(COLUMNS, self._cells(channel), strict=True):
                    table.update_cell(channel.name, key, cell, update_width=True)
        if selected in names and table.cursor_row != names.index(selected):
            table.move_cursor(row=names.index(selected))
        current = next((c for c in channels if c.name == selected), None)
        self.query_one("#channel-detail", Static).update(self._detail(current) if current else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # only the operator's moves select: rebuilding the table moves the cursor too
        if event.row_key.value is not None and self.table.has_focus:
            self.post_message(ChannelSelected(event.row_key.value))

    def _cells(self, c: ChannelView) -> list[Text]:
        app = self.app
        busy = f"{c.workers_busy}/{c.workers_total}" if c.workers_total else "single"
        return [
            Text(fmt.channel_label(c.name), style="bold"),
            Text(c.state, style(app, state_level(c.state))),
            Text(fmt.seconds(c.lag_s), style(app, self.thresholds.level(c.lag_s)), justify="right"),
            Text(fmt.rate(c.trx_per_s), justify="right"),
            Text(fmt.count(c.transactions), justify="right"),
            Text(busy, justify="right"),
            Text(fmt.percent(c.queue_fill) if c.workers_total else fmt.NONE, justify="right"),
            Text(fmt.or_none(c.relay_read)),
            Text(fmt.or_none(c.relay_applied)),
            Text(fmt.or_none(c.source)),
            Text(fmt.or_none(c.executed_gtids)),
            Text(fmt.or_none(c.last_error), style(app, ERROR) if c.last_error else style(app, MUTED)),
        ]

    def _detail(self, c: ChannelView) -> Group:
        app = self.app
        heading = Text.assemble(
            (fmt.channel_label(c.name), "bold"),
            "  ",
            (c.state, style(app, state_level(c.state))),
            "  lag ",
            (fmt.seconds(c.lag_s), style(app, self.thresholds.level(c.lag_s))),
            f"  (warn {fmt.seconds(self.thresholds.warn_s)}, crit {fmt.seconds(self.thresholds.crit_s)})",
        )
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        workers = (
            f"{c.workers_busy} busy of {c.workers_total}, queue {fmt.percent(c.queue_fill)} full"
            if c.workers_total
            else "single applier"
        )
        for label, value in (
            ("source", fmt.or_none(c.source)),
            ("relay read", fmt.or_none(c.relay_read)),
            ("relay applied", fmt.or_none(c.relay_applied)),
            ("executed GTIDs", fmt.or_none(c.executed_gtids)),
            ("applied", f"{fmt.count(c.transactions)} transactions, {fmt.rate(c.trx_per_s)} trx/s"),
            ("workers", workers),
        ):
            grid.add_row(label, Text(value))
        grid.add_row(
            "last error",
            Text(fmt.or_none(c.last_error), style(app, ERROR) if c.last_error else style(app, MUTED)),
        )
        return Group(heading, grid)
