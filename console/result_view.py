"""A statement's outcome as the mysql client shows it: the error, the notes, the result set.

Result sets with many columns (SHOW REPLICA STATUS) are shown turned on their side, one line per
column, as \\G does: 60 columns never fit a terminal's width.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from engine.api import Result

from .outcome import Outcome
from .palette import ERROR, MUTED, NOTE, OK, style

SIDEWAYS_AFTER = 8  # columns; more are shown one per line


class ResultView(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="result-statement")
        yield Static(id="result-status")
        yield Static(id="result-notes")
        yield DataTable(id="result-table", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#result-notes").display = False
        self.query_one("#result-table").display = False

    def show(self, outcome: Outcome) -> None:
        app = self.app
        self.query_one("#result-statement", Static).update(Text.assemble(("> ", "bold"), outcome.action))
        status = Text(outcome.summary(), style(app, ERROR if outcome.failed else OK))
        self.query_one("#result-status", Static).update(status)
        notes = self.query_one("#result-notes", Static)
        notes.display = bool(outcome.notes)
        notes.update(Text("\n".join(str(n) for n in outcome.notes), style(app, NOTE)))
        table: DataTable[Any] = self.query_one("#result-table", DataTable)
        table.clear(columns=True)
        result = outcome.result
        table.display = result is not None and bool(result.columns)
        if result is None or not result.columns:
            return
        if len(result.columns) > SIDEWAYS_AFTER:
            self._sideways(table, result)
        else:
            table.add_columns(*result.columns)
            for row in result.rows:
                table.add_row(*(_cell(v) for v in row))

    def _sideways(self, table: DataTable[Any], result: Result) -> None:
        table.add_column("Field")
        for number in range(1, len(result.rows) + 1):
            table.add_column(f"row {number}")
        for position, column in enumerate(result.columns):
            table.add_row(
                Text(column, style(self.app, MUTED)), *(_cell(row[position]) for row in result.rows)
            )


def _cell(value: Any) -> Text:
    # Text, never a string: DataTable reads strings as markup, and relay-log text holds brackets
    return Text("NULL" if value is None else str(value), no_wrap=True)
