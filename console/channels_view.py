"""The channels: one row each, and everything about the selected one below the table.

A channel is two threads, as SHOW REPLICA STATUS shows them: the SQL thread (the applier, the
channel's own state) and the IO thread (the receiver). The detail sets them side by side where
they can be compared: the source's binary log read against executed, GTIDs retrieved against
executed. A channel without a receiver (relay logs captured, or written by another replica) says
so in words, in the plain colour: it lacks nothing.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from engine.api import ChannelView, ReceiverView, Snapshot

from . import formatting as fmt
from .messages import ChannelSelected
from .palette import ERROR, MUTED, state_level, style
from .thresholds import LagThresholds

# (key, heading): the columns that matter most first, so 80 columns show them without scrolling
COLUMNS = (
    ("channel", "Channel"),
    ("state", "SQL"),
    ("io", "IO"),
    ("lag", "Lag"),
    ("rate", "trx/s"),
    ("transactions", "Applied trx"),
    ("workers", "Busy"),
    ("queue", "Queue"),
    ("read", "Relay read"),
    ("applied", "Relay applied"),
    ("source_read", "Source read"),
    ("source_executed", "Source executed"),
    ("source", "Source"),
    ("retrieved", "Retrieved GTIDs"),
    ("gtids", "Executed GTIDs"),
    ("io_error", "Last IO error"),
    ("error", "Last SQL error"),
)
NO_RECEIVER = "none"  # the IO cell of a channel whose relay logs are written elsewhere
NO_RECEIVER_DETAIL = "none: its relay logs are read as they are (captured, or another replica's)"
LABEL_WIDTH = 15


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
        receiver = c.receiver
        return [
            Text(fmt.channel_label(c.name), style="bold"),
            Text(c.state, style(app, state_level(c.state))),
            Text(receiver.state, style(app, state_level(receiver.state)))
            if receiver
            else Text(NO_RECEIVER, style(app, MUTED)),
            Text(fmt.seconds(c.lag_s), style(app, self.thresholds.level(c.lag_s)), justify="right"),
            Text(fmt.rate(c.trx_per_s), justify="right"),
            Text(fmt.count(c.transactions), justify="right"),
            Text(busy, justify="right"),
            Text(fmt.percent(c.queue_fill) if c.workers_total else fmt.NONE, justify="right"),
            Text(fmt.or_none(c.relay_read)),
            Text(fmt.or_none(c.relay_applied)),
            Text(fmt.or_none(receiver.read if receiver else "")),
            Text(fmt.or_none(c.source_executed)),
            Text(fmt.or_none(c.source)),
            Text(fmt.or_none(receiver.retrieved_gtids if receiver else "")),
            Text(fmt.or_none(c.executed_gtids)),
            self._error(receiver.last_error if receiver else ""),
            self._error(c.last_error),
        ]

    def _error(self, error: str, at: str = "") -> Text:
        """An IO or SQL error, both coloured alike; with `at`, when it happened on a line of its own."""
        if not error:
            return Text(fmt.NONE, style(self.app, MUTED))
        text = Text(error, style(self.app, ERROR))
        if at:
            text.append(f"\nat {fmt.mysql_time(at)}", style(self.app, MUTED))
        return text

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
        workers = (
            f"{c.workers_busy} busy of {c.workers_total}, queue {fmt.percent(c.queue_fill)} full"
            if c.workers_total
            else "single applier"
        )
        source = _grid()
        source.add_row("source", Text(fmt.or_none(c.source)))
        rest = _grid()
        rest.add_row(
            "applied", Text(f"{fmt.count(c.transactions)} transactions, {fmt.rate(c.trx_per_s)} trx/s")
        )
        rest.add_row("workers", Text(workers))
        if c.receiver is None:
            threads = _grid()
            threads.add_row("IO thread", Text(NO_RECEIVER_DETAIL))
            for label, value in (
                ("relay read", c.relay_read),
                ("relay applied", c.relay_applied),
                ("source executed", c.source_executed),
                ("executed GTIDs", c.executed_gtids),
            ):
                threads.add_row(label, Text(fmt.or_none(value)))
            rest.add_row("last error", self._error(c.last_error, c.last_error_at))
        else:
            threads = self._threads(c, c.receiver)
        return Group(heading, source, threads, rest)

    def _threads(self, c: ChannelView, receiver: ReceiverView) -> Table:
        """The receiver and the applier side by side: what one has received against what the other
        has applied of it."""
        app = self.app
        grid = Table.grid(padding=(0, 2), expand=True)
        grid.add_column(style="dim", no_wrap=True, min_width=LABEL_WIDTH)
        grid.add_column(ratio=1, overflow="fold")  # the two threads share the width evenly
        grid.add_column(ratio=1, overflow="fold")
        grid.add_row("", Text("IO thread (receiver)", "bold"), Text("SQL thread (applier)", "bold"))
        io_state = Text(receiver.state, style(app, state_level(receiver.state)))
        if receiver.io_state:
            io_state.append(f"\n{receiver.io_state}", style(app, MUTED))
        grid.add_row("state", io_state, Text(c.state, style(app, state_level(c.state))))
        grid.add_row(
            "source binlog",
            Text(f"read {fmt.or_none(receiver.read)}"),
            Text(f"executed {fmt.or_none(c.source_executed)}"),
        )
        grid.add_row(
            "GTIDs",
            Text(f"retrieved {fmt.or_none(receiver.retrieved_gtids)}"),
            Text(f"executed {fmt.or_none(c.executed_gtids)}"),
        )
        grid.add_row(
            "relay log",
            Text(""),
            Text(f"read {fmt.or_none(c.relay_read)}\napplied {fmt.or_none(c.relay_applied)}"),
        )
        grid.add_row(
            "last error",
            self._error(receiver.last_error, receiver.last_error_at),
            self._error(c.last_error, c.last_error_at),
        )
        return grid


def _grid() -> Table:
    """Label, value: the labels of every part of the detail one width, so the values line up."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True, min_width=LABEL_WIDTH)
    grid.add_column(overflow="fold")
    return grid
