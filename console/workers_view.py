"""The selected channel's workers, one row each, the preparing pool that feeds them, and the
channel's throughput and lag plotted over time."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from engine.api import ChannelView, Snapshot, WorkerView

from . import formatting as fmt
from .history import Sample
from .palette import ACCENT, ERROR, MUTED, state_level, style
from .plot import TimePlot
from .pool_panel import PoolPanel
from .thresholds import LagThresholds

COLUMNS = (  # numbers before the long transaction names, so 80 columns show them
    ("worker", "#"),
    ("state", "State"),
    ("queued", "Queue"),
    ("queued_bytes", "Bytes"),
    ("transactions", "Applied"),
    ("rate", "trx/s"),
    ("applying", "Applying"),
    ("last", "Last applied"),
    ("last_at", "Applied at (UTC)"),
    ("checkpoint", "Ckpt seqno"),
    ("error", "Last error"),
)
PLOT_STEP_S = 2.0  # seconds of history per plot column


class WorkersView(Vertical):
    def __init__(self, thresholds: LagThresholds, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.thresholds = thresholds
        self._shown: tuple[str | None, list[int]] = (None, [])

    def compose(self) -> ComposeResult:
        yield Static(id="workers-title")
        table: DataTable[Text] = DataTable(id="workers-table", cursor_type="row", zebra_stripes=True)
        for key, heading in COLUMNS:
            table.add_column(heading, key=key)
        yield table
        yield PoolPanel(id="pool-panel")
        yield TimePlot(
            "throughput",
            "trx/s",
            step_s=PLOT_STEP_S,
            level_style=self._throughput_style,
            id="throughput-plot",
        )
        yield TimePlot("lag", "s", step_s=PLOT_STEP_S, level_style=self._lag_style, id="lag-plot")

    def show(self, snapshot: Snapshot, channel: str | None, samples: list[Sample]) -> None:
        view = next((c for c in snapshot.channels if c.name == channel), None)
        workers = snapshot.workers.get(channel, ()) if channel is not None else ()
        self.query_one("#workers-title", Static).update(self._title(view, workers))
        self._fill(channel, workers)
        self.query_one(PoolPanel).show(channel, snapshot.pools.get(channel) if channel is not None else None)
        throughput = [(s.taken_at, s.trx_per_s) for s in samples]
        lag = [(s.taken_at, s.lag_s) for s in samples if s.lag_s is not None]
        self.query_one("#throughput-plot", TimePlot).plot(
            throughput, snapshot.taken_at, f"{fmt.rate(view.trx_per_s)} trx/s" if view else fmt.NONE
        )
        # the lag scale reaches at least the warning threshold, so a calm channel looks calm
        self.query_one("#lag-plot", TimePlot).plot(
            lag, snapshot.taken_at, fmt.seconds(view.lag_s) if view else fmt.NONE, self.thresholds.warn_s
        )

    def _fill(self, channel: str | None, workers: tuple[WorkerView, ...]) -> None:
        table: DataTable[Text] = self.query_one("#workers-table", DataTable)
        ids = [w.worker for w in workers]
        if (channel, ids) != self._shown:
            table.clear()
            for worker in workers:
                table.add_row(*self._cells(worker), key=str(worker.worker))
            self._shown = (channel, ids)
            return
        for worker in workers:
            for (key, _), cell in zip(COLUMNS, self._cells(worker), strict=True):
                table.update_cell(str(worker.worker), key, cell, update_width=True)

    def _title(self, view: ChannelView | None, workers: tuple[WorkerView, ...]) -> Text:
        if view is None:
            return Text("no channel selected", style(self.app, MUTED))
        title = Text.assemble(
            "workers of ",
            (fmt.channel_label(view.name), "bold"),
            "  ",
            (view.state, style(self.app, state_level(view.state))),
        )
        if not workers:
            title.append(
                "  single applier: no workers (replica_parallel_workers = 0)", style(self.app, MUTED)
            )
        else:
            title.append(
                f"  {view.workers_busy} busy of {view.workers_total}, queue {fmt.percent(view.queue_fill)}"
            )
        return title

    def _cells(self, w: WorkerView) -> list[Text]:
        app = self.app
        return [
            Text(str(w.worker), justify="right"),
            Text(w.state, style(app, state_level(w.state))),
            Text(fmt.count(w.queued), justify="right"),
            Text(fmt.size(w.queued_bytes), justify="right"),
            Text(fmt.count(w.transactions), justify="right"),
            Text(fmt.rate(w.trx_per_s), justify="right"),
            Text(fmt.or_none(w.applying)),
            Text(fmt.or_none(w.last_applied)),
            Text(fmt.or_none(w.last_applied_at)),
            Text(fmt.count(w.checkpoint_seqno), justify="right"),
            Text(fmt.or_none(w.error), style(app, ERROR) if w.error else style(app, MUTED)),
        ]

    def _throughput_style(self, value: float) -> Style:
        return style(self.app, ACCENT)

    def _lag_style(self, value: float) -> Style:
        return style(self.app, self.thresholds.level(value))
