"""The recovery inspector: where a stopped or crashed channel's low-water mark is, what each worker
committed after its checkpoint (the bitmaps, drawn as grids), the gaps, and the plan recovery follows.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.worker import get_current_worker

from engine.api import GroupAfterLwm, RecoveryPicture, RelaydeckError, ReplicaHandle, WorkerCheckpointRow

from . import formatting as fmt
from .messages import RecoveryRequested
from .palette import ACCENT, ERROR, MUTED, NOTE, OK, style
from .recovery_follow import ACTIVE_STATES

BITS_PER_ROW = 32
BITS_PER_GROUP = 8  # a space every 8 bits, as a byte of the stored bitmap
COMMITTED, NOT_COMMITTED, GAP = "■", "□", "✗"


def bitmap_rows(bits: str, per_row: int = BITS_PER_ROW) -> list[str]:
    """A worker's bitmap ('1' committed, oldest first) as grid rows of squares, spaced by byte."""
    rows = []
    for start in range(0, len(bits), per_row):
        chunk = bits[start : start + per_row]
        squares = "".join(COMMITTED if bit == "1" else NOT_COMMITTED for bit in chunk)
        rows.append(" ".join(squares[i : i + BITS_PER_GROUP] for i in range(0, len(squares), BITS_PER_GROUP)))
    return rows


class RecoveryView(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding(
            "u",
            "recover",
            "Run recovery",
            tooltip="START REPLICA UNTIL SQL_AFTER_MTS_GAPS, followed to its end",
        ),
        Binding("r", "reload", "Reload", tooltip="read the recovery picture again"),
    ]

    def __init__(self, replica: ReplicaHandle, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.replica = replica
        self.channel: str | None = None
        self.picture: RecoveryPicture | None = None
        self.following = ""  # what a running recovery is doing, while the application follows it
        self.channel_state = ""  # as the newest snapshot shows it

    def compose(self) -> ComposeResult:
        yield Static(id="recovery-picture")

    def inspect(self, channel: str | None) -> None:
        """Fetch the channel's picture (in a thread: it reads the relay log after the LWM)."""
        self.channel = channel
        if channel is None:
            self._draw(Text("no channel selected", style(self.app, MUTED)))
            return
        self._draw(
            Text(f"reading the recovery picture of {fmt.channel_label(channel)} …", style(self.app, MUTED))
        )
        self.run_worker(lambda: self._fetch(channel), thread=True, exclusive=True, group="recovery")

    def _fetch(self, channel: str) -> None:
        try:
            picture: RecoveryPicture | str = self.replica.recovery(channel)
        except RelaydeckError as exc:
            picture = exc.one_line()
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._received, channel, picture)

    def _received(self, channel: str, picture: RecoveryPicture | str) -> None:
        if channel != self.channel or not self.is_running:
            return
        if isinstance(picture, str):
            self.picture = None
            self._draw(Text(picture, style(self.app, ERROR)))
        else:
            self.picture = picture
            self.redraw()

    def follow(self, text: str) -> None:
        self.following = text
        self.redraw()

    def redraw(self) -> None:
        if self.picture is not None:
            self._draw(self._render_picture(self.picture))

    def action_reload(self) -> None:
        self.inspect(self.channel)

    def action_recover(self) -> None:
        if self.channel is not None:
            self.post_message(RecoveryRequested(self.channel))

    def _draw(self, renderable: RenderableType) -> None:
        self.query_one("#recovery-picture", Static).update(renderable)

    def _render_picture(self, p: RecoveryPicture) -> Group:
        app = self.app
        parts: list[RenderableType] = []
        gaps = p.gaps
        heading = Text.assemble(
            ("recovery of ", "bold"),
            (fmt.channel_label(p.channel), "bold"),
            "   ",
            (f"{len(gaps)} gap{'' if len(gaps) == 1 else 's'}", style(app, ERROR if gaps else OK)),
            f", {fmt.count(p.committed_after_lwm)} committed after the low-water mark",
        )
        parts.append(heading)
        if self.following:
            parts.append(Text(self.following, style(app, NOTE)))
        elif self.channel_state in ACTIVE_STATES:
            parts.append(
                Text(
                    f"the channel is {self.channel_state}: this is what a crash now would leave "
                    "(x stops it, k kills it; r reads the picture again)",
                    style(app, NOTE),
                )
            )
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(
            "low-water mark", f"#{fmt.count(p.lwm)} at relay log {p.lwm_relay_position or '(start)'}"
        )
        grid.add_row("source position", fmt.or_none(p.lwm_source_position or ""))
        if p.problem:
            grid.add_row("problem", Text(p.problem, style(app, ERROR)))
        parts.append(grid)
        if p.groups:
            parts.append(Text(""))
            parts.append(Text("after the low-water mark (worker that committed it, ✗ gap)", "bold"))
            parts.append(self._groups_strip(p.groups))
        if p.workers:
            parts.append(Text(""))
            parts.append(Text(f"worker checkpoints ({COMMITTED} committed since the checkpoint)", "bold"))
            parts.append(self._workers_table(p.workers))
        if gaps:
            parts.append(Text(""))
            parts.append(Text("gaps", "bold"))
            table = Table.grid(padding=(0, 2))
            for gap in gaps:
                table.add_row(
                    Text(f"#{gap.ordinal}", style(app, ERROR)), Text(gap.transaction), Text(gap.relay_start)
                )
            parts.append(table)
        parts.append(Text(""))
        parts.append(Text("plan (u runs it: START REPLICA UNTIL SQL_AFTER_MTS_GAPS)", "bold"))
        for number, step in enumerate(p.plan, start=1):
            parts.append(Text(f"{number}. {step}"))
        return Group(*parts)

    def _groups_strip(self, groups: tuple[GroupAfterLwm, ...]) -> Text:
        app = self.app
        strip = Text(f"#{groups[0].ordinal} ", style(app, MUTED))
        for group in groups:
            if group.is_gap:
                strip.append(GAP, style(app, ERROR))
            else:
                # one character per transaction: the worker's number (its last digit past 9)
                strip.append(str(group.committed_by % 10), style(app, OK))
        strip.append(f" #{groups[-1].ordinal}", style(app, MUTED))
        return strip

    def _workers_table(self, workers: tuple[WorkerCheckpointRow, ...]) -> Table:
        app = self.app
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="dim")
        table.add_column("#", justify="right")
        table.add_column("checkpoint at", no_wrap=True)
        table.add_column("seqno", justify="right")
        table.add_column("bitmap", no_wrap=True)
        for w in workers:
            bitmap = Text("\n".join(bitmap_rows(w.bitmap)) or "(empty)", style(app, MUTED))
            for index, square in enumerate(bitmap.plain):
                if square == COMMITTED:
                    bitmap.stylize(style(app, ACCENT), index, index + 1)
            table.add_row(
                str(w.worker),
                w.checkpoint_relay_log,
                f"{w.checkpoint_seqno}/{w.checkpoint_group_size}",
                bitmap,
            )
        return table
