"""Following a recovery run (START REPLICA UNTIL SQL_AFTER_MTS_GAPS) until the channel stops."""

from __future__ import annotations

from dataclasses import dataclass

from engine.api import ChannelView

from . import formatting as fmt

ACTIVE_STATES = ("running", "recovering", "waiting")
# Status is published a few times a second: a snapshot this long after the START returned that
# still shows the channel stopped means the run already ended, even if no snapshot saw it running.
# Counted from the START's return, not from the request: on a loaded machine the statement itself
# may take longer than this to start the channel.
GRACE_S = 1.0


@dataclass(slots=True)
class RecoveryFollow:
    channel: str
    started_at: float
    seen_running: bool = False
    start_returned_at: float | None = None  # when START … UNTIL SQL_AFTER_MTS_GAPS returned

    def start_returned(self, at: float) -> None:
        self.start_returned_at = at

    def observe(self, view: ChannelView | None, taken_at: float) -> tuple[bool, str]:
        """(finished, what to show) for the channel as a snapshot taken at taken_at shows it."""
        if view is None:
            return True, f"channel {fmt.channel_label(self.channel)} is gone"
        if view.state in ACTIVE_STATES:
            self.seen_running = True
            return (
                False,
                f"recovery running: {view.state}, {fmt.count(view.transactions)} transactions applied",
            )
        returned = self.start_returned_at
        if self.seen_running or (returned is not None and taken_at >= returned + GRACE_S):
            ending = f"ended with {view.last_error}" if view.last_error else f"finished ({view.state})"
            return True, f"recovery of {fmt.channel_label(self.channel)} {ending}"
        return False, "recovery starting …"
