"""Paging through a channel's relay log with SHOW RELAYLOG EVENTS [IN file] [FROM pos] LIMIT n.

A page asks for one event more than it shows: that event's position is where the next page
starts (FROM), so no page is read twice. Past a file's last event comes the next file, named as
MySQL names relay logs (the number after the last dot, plus one, same width).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_NUMBERED = re.compile(r"^(.*\.)(\d+)$")


@dataclass(frozen=True, slots=True)
class PageStart:
    log_name: str | None  # None: the channel's first relay-log file
    pos: int | None  # None: its first event


@dataclass(slots=True)
class Pager:
    page_size: int = 50
    current: PageStart = PageStart(None, None)
    earlier: list[PageStart] = field(default_factory=list)  # the pages before, for going back
    next_in_file: PageStart | None = None  # where the page after this one starts, in this file
    log_name: str | None = None  # the file the current page shows

    def accept(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """Take the answer to the current page's statement (page_size + 1 rows); return the rows to show."""
        shown = rows[: self.page_size]
        self.log_name = str(shown[0][0]) if shown else self.current.log_name
        extra = rows[self.page_size : self.page_size + 1]
        self.next_in_file = PageStart(str(extra[0][0]), int(extra[0][1])) if extra else None
        return shown

    def forward(self) -> PageStart | None:
        """Where the next page starts: later in this file, else at the next file (None: no name for it)."""
        if self.next_in_file is not None:
            return self.next_in_file
        following = next_file_name(self.log_name) if self.log_name else None
        return PageStart(following, None) if following else None

    def moved_to(self, start: PageStart, *, remember: bool = True) -> None:
        if remember:
            self.earlier.append(self.current)
        self.current = start

    def back(self) -> PageStart | None:
        return self.earlier.pop() if self.earlier else None

    @property
    def number(self) -> int:
        return len(self.earlier) + 1


def next_file_name(log_name: str) -> str | None:
    match = _NUMBERED.match(log_name)
    if match is None:
        return None
    prefix, digits = match.groups()
    return f"{prefix}{int(digits) + 1:0{len(digits)}d}"
