"""The command line's history: statements run, recalled with up and down as in the mysql client."""

from __future__ import annotations


class StatementHistory:
    def __init__(self, limit: int = 500) -> None:
        self.limit = limit
        self._entries: list[str] = []
        self._cursor = 0  # == len(entries): at the line being typed
        self._draft = ""  # what was typed before moving into the history, given back at the end

    @property
    def entries(self) -> list[str]:
        return list(self._entries)

    def record(self, statement: str) -> None:
        statement = statement.strip()
        if statement and (not self._entries or self._entries[-1] != statement):
            self._entries.append(statement)
            del self._entries[: -self.limit]
        self._cursor = len(self._entries)
        self._draft = ""

    def older(self, current: str) -> str:
        """The entry before the one shown (the oldest stays); `current` is what the line holds."""
        if self._cursor == len(self._entries):
            self._draft = current
        if self._cursor > 0:
            self._cursor -= 1
        return self._entries[self._cursor] if self._entries else current

    def newer(self) -> str:
        """The entry after the one shown; past the newest, the draft that was being typed."""
        if self._cursor < len(self._entries):
            self._cursor += 1
        return self._entries[self._cursor] if self._cursor < len(self._entries) else self._draft
