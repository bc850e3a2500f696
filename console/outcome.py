"""What an operator's action did: a statement's result or error, or a kill, and when."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.api import Result, Warning_


@dataclass(frozen=True, slots=True)
class Outcome:
    action: str  # the statement as sent, or "kill channel 'x'"
    finished_at: float
    elapsed_s: float
    result: Result | None = None
    error: str = ""  # "ERROR 3074: …" as MySQL's client prints it
    notes: tuple[Warning_, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return bool(self.error)

    def summary(self) -> str:
        if self.error:
            return self.error
        rows = len(self.result.rows) if self.result is not None and self.result.columns else None
        done = "OK" if rows is None else f"{rows} row{'' if rows == 1 else 's'} in set"
        notes = f", {len(self.notes)} note{'' if len(self.notes) == 1 else 's'}" if self.notes else ""
        return f"{done}{notes} ({self.elapsed_s:.2f} s)"
