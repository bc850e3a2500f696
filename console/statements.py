"""The replication statements the console's keys send, written as a DBA would type them."""

from __future__ import annotations


def quoted(text: str) -> str:
    """A MySQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def for_channel(channel: str | None) -> str:
    """None: no FOR CHANNEL clause (every channel, for the statements that allow it)."""
    return "" if channel is None else f" FOR CHANNEL {quoted(channel)}"


def start(channel: str | None) -> str:
    return "START REPLICA" + for_channel(channel)


def stop(channel: str | None) -> str:
    return "STOP REPLICA" + for_channel(channel)


def start_thread(thread: str, channel: str | None) -> str:
    """START REPLICA IO_THREAD or SQL_THREAD: one of the channel's two threads."""
    return f"START REPLICA {thread}" + for_channel(channel)


def stop_thread(thread: str, channel: str | None) -> str:
    return f"STOP REPLICA {thread}" + for_channel(channel)


def reset(channel: str | None) -> str:
    return "RESET REPLICA" + for_channel(channel)


def recover(channel: str) -> str:
    return "START REPLICA UNTIL SQL_AFTER_MTS_GAPS" + for_channel(channel)


def show_status(channel: str | None) -> str:
    return "SHOW REPLICA STATUS" + for_channel(channel)


def relaylog_events(channel: str, log_name: str | None, pos: int | None, limit: int) -> str:
    parts = ["SHOW RELAYLOG EVENTS"]
    if log_name is not None:
        parts.append(f"IN {quoted(log_name)}")
    if pos is not None:
        parts.append(f"FROM {pos}")
    parts.append(f"LIMIT {limit}")
    return " ".join(parts) + for_channel(channel)


def is_destructive(statement: str) -> bool:
    """RESET REPLICA forgets where a channel is: typed by hand it asks for confirmation too."""
    words = statement.split(None, 1)
    return bool(words) and words[0].rstrip(";").upper() == "RESET"
