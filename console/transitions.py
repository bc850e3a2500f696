"""What changed between two snapshots that an operator should find in the log afterwards."""

from __future__ import annotations

from engine.api import ReceiverView, Snapshot

from .formatting import channel_label
from .palette import ERROR, NOTE


def changes(previous: Snapshot | None, current: Snapshot) -> list[tuple[str, str]]:
    """(level, text) for channels that appeared, vanished, changed state or got a new error, in
    either thread."""
    if previous is None:
        return []
    before = {c.name: c for c in previous.channels}
    after = {c.name: c for c in current.channels}
    found: list[tuple[str, str]] = []
    for name, channel in after.items():
        label = f"channel {channel_label(name)}"
        old = before.get(name)
        if old is None:
            found.append((NOTE, f"{label} appeared ({channel.state})"))
            continue
        if channel.last_error and channel.last_error != old.last_error:
            found.append((ERROR, f"{label}: {channel.last_error}"))
        if channel.state != old.state:
            level = ERROR if channel.state == "error" else NOTE
            found.append((level, f"{label}: {old.state} → {channel.state}"))
        found.extend(_receiver_changes(label, old.receiver, channel.receiver))
    for name in before.keys() - after.keys():
        found.append((NOTE, f"channel {channel_label(name)} was removed"))
    return found


def _receiver_changes(
    label: str, old: ReceiverView | None, new: ReceiverView | None
) -> list[tuple[str, str]]:
    if new is None:
        return []
    found: list[tuple[str, str]] = []
    if new.last_error and new.last_error != (old.last_error if old else ""):
        found.append((ERROR, f"{label} IO thread: {new.last_error}"))
    before = old.state if old else "none"
    if new.state != before:
        level = ERROR if new.state == "error" else NOTE
        found.append((level, f"{label} IO thread: {before} → {new.state}"))
    return found
