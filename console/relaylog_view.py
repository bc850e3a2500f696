"""The relay-log browser: SHOW RELAYLOG EVENTS of the selected channel, a page at a time, and
the decoded rows of the event under the cursor."""

from __future__ import annotations

import json
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from engine.api import CommandError, EventRows, RelaydeckError, ReplicaHandle, event_rows

from . import formatting as fmt
from . import statements
from .messages import Reported
from .palette import ACCENT, ERROR, MUTED, NOTE, style
from .relaylog_pages import Pager, PageStart

EVENT_COLUMNS = ("Pos", "Event_type", "Server_id", "End_log_pos", "Info")
ER_UNKNOWN_TARGET_BINLOG = 1373  # SHOW RELAYLOG EVENTS IN a file the index does not list


class RelayLogView(Vertical):
    BINDINGS = [
        Binding("n", "next_page", "Next page", tooltip="next page (the next file after the last)"),
        Binding("p", "previous_page", "Prev page", tooltip="previous page"),
        Binding("g", "first_page", "First", tooltip="first page of the first relay-log file"),
        Binding("a", "applied_page", "Applied", tooltip="the page at the channel's applied position"),
    ]

    def __init__(self, replica: ReplicaHandle, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.replica = replica
        self.channel: str | None = None
        self.applied_position = ""  # the channel's relay applied file:pos, for `a`
        self.pager = Pager()
        self._index_file = ""
        self._events: list[tuple[Any, ...]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="relaylog-title")
        events: DataTable[Text] = DataTable(id="events-table", cursor_type="row", zebra_stripes=True)
        events.add_columns(*EVENT_COLUMNS)
        yield events
        yield Static(id="rows-title")
        yield DataTable(id="rows-table", zebra_stripes=True, show_cursor=False)

    def browse(self, channel: str | None) -> None:
        """Show the channel's relay log from its first event (a new channel starts over)."""
        if channel == self.channel and self._events:
            return
        self.channel = channel
        self.pager = Pager(page_size=self.pager.page_size)
        self._events = []
        self._index_file = ""
        self._clear_rows()
        if channel is None:
            self._title(Text("no channel selected", style(self.app, MUTED)))
            return
        self._load(PageStart(None, None), "first")

    # -- keys --------------------------------------------------------------------------------------

    def action_next_page(self) -> None:
        start = self.pager.forward()
        if start is None:
            self.post_message(Reported(NOTE, "no page after this one"))
        else:
            self._load(start, "forward")

    def action_previous_page(self) -> None:
        start = self.pager.back()
        if start is not None:
            self._load(start, "back")

    def action_first_page(self) -> None:
        self.pager.earlier.clear()
        self._load(PageStart(None, None), "first")

    def action_applied_page(self) -> None:
        log_name, _, pos = self.applied_position.rpartition(":")
        if not log_name or not pos.isdigit():
            self.post_message(Reported(NOTE, "the channel has not applied anything yet"))
            return
        self._load(PageStart(log_name, int(pos)), "forward")

    # -- loading (in threads: a page reads a relay-log file) ---------------------------------------

    def _load(self, start: PageStart, how: str) -> None:
        channel = self.channel
        if channel is None:
            return
        statement = statements.relaylog_events(channel, start.log_name, start.pos, self.pager.page_size + 1)
        self.run_worker(lambda: self._fetch(channel, statement, start, how), thread=True, group="relaylog")

    def _fetch(self, channel: str, statement: str, start: PageStart, how: str) -> None:
        try:
            rows: list[tuple[Any, ...]] | CommandError = self.replica.execute(statement).rows
            index = self._index_file or self.replica.relay_log_index(channel)
        except CommandError as exc:
            rows, index = exc, self._index_file
        except (RelaydeckError, OSError) as exc:  # the server went away: shown, not fatal
            rows, index = CommandError(0, str(exc)), self._index_file
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._loaded, channel, start, how, rows, index)

    def _loaded(
        self, channel: str, start: PageStart, how: str, rows: list[tuple[Any, ...]] | CommandError, index: str
    ) -> None:
        if channel != self.channel or not self.is_running:
            return
        if isinstance(rows, CommandError):
            if how == "back":
                self.pager.earlier.append(start)  # the page was not left after all
            if rows.errno == ER_UNKNOWN_TARGET_BINLOG and how == "forward":
                self.post_message(Reported(NOTE, f"end of the relay log of {fmt.channel_label(channel)}"))
            else:
                self.post_message(Reported(ERROR, str(rows)))
            return
        self._index_file = index
        if how == "first":
            self.pager.earlier.clear()
            self.pager.current = start
        else:
            self.pager.moved_to(start, remember=how == "forward")
        self._events = self.pager.accept(rows)
        table: DataTable[Text] = self.query_one("#events-table", DataTable)
        table.clear()
        for row in self._events:
            # Text cells: Info holds statements and brackets, which DataTable would read as markup
            table.add_row(*(Text(str(v), no_wrap=True) for v in row[1:]), key=f"{row[0]}:{row[1]}")
        self._title(self._page_title())
        if not self._events:
            self._clear_rows()

    def _page_title(self) -> Text:
        pager = self.pager
        where = pager.log_name or "(no events)"
        return Text.assemble(
            ("relay log of ", "bold"),
            (fmt.channel_label(self.channel or ""), "bold"),
            f"  {where}",
            f" from {pager.current.pos}" if pager.current.pos is not None else "",
            f"  page {pager.number}, {len(self._events)} events",
            ("" if pager.forward() else "  (end)", style(self.app, MUTED)),
        )

    def _title(self, text: Text) -> None:
        self.query_one("#relaylog-title", Static).update(text)

    # -- decoded rows of the highlighted event -----------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "events-table" or event.row_key.value is None:
            return
        event.stop()
        log_name, _, pos = event.row_key.value.rpartition(":")
        index = self._index_file
        self.run_worker(
            lambda: self._decode(index, log_name, int(pos)), thread=True, exclusive=True, group="rows"
        )

    def _decode(self, index: str, log_name: str, pos: int) -> None:
        try:
            rows: EventRows | None | str = event_rows(index, log_name, pos)
        except (RelaydeckError, OSError) as exc:
            rows = str(exc)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_rows, log_name, pos, rows)

    def _show_rows(self, log_name: str, pos: int, rows: EventRows | None | str) -> None:
        if not self.is_running:
            return
        table: DataTable[Text] = self.query_one("#rows-table", DataTable)
        table.clear(columns=True)
        where = f"{log_name}:{pos}"
        if rows is None:
            self._rows_title(Text(f"{where}: not a rows event", style(self.app, MUTED)))
            table.display = False
            return
        if isinstance(rows, str):
            self._rows_title(Text(f"{where}: {rows}", style(self.app, ERROR)))
            table.display = False
            return
        count = len(rows.rows)
        self._rows_title(
            Text.assemble(
                ("rows ", "bold"),
                f"of {rows.kind} at {where}: ",
                (rows.table or "?", "bold"),
                f", {count} row{'' if count == 1 else 's'}",
                (f"  {rows.note}" if rows.note else "", style(self.app, NOTE)),
            )
        )
        names: list[str] = []
        for before, after in rows.rows:
            for image in (before, after):
                names.extend(k for k in image or {} if k not in names)
        table.display = bool(names)
        table.add_column("image")
        table.add_columns(*names)
        changed = style(self.app, ACCENT) + Style(bold=True)
        for before, after in rows.rows:
            if before is not None:
                table.add_row(Text("before", style(self.app, MUTED)), *(_value(before.get(n)) for n in names))
            if after is not None:
                cells = [_value(after.get(n)) for n in names]
                if before is not None:  # an update: what it changed stands out
                    for cell, name in zip(cells, names, strict=True):
                        if before.get(name) != after.get(name):
                            cell.stylize(changed)
                table.add_row(Text("after", style(self.app, MUTED)), *cells)

    def _rows_title(self, text: Text) -> None:
        self.query_one("#rows-title", Static).update(text)

    def _clear_rows(self) -> None:
        self.query_one("#rows-table", DataTable).clear(columns=True)
        self.query_one("#rows-table", DataTable).display = False
        self._rows_title(Text("rows: select a rows event", style(self.app, MUTED)))


def _value(value: Any) -> Text:
    # one line per row image: line breaks and tabs in values shown escaped, as mysqlbinlog -v does
    if value is None:
        return Text("NULL")
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)
    text = text.replace("\n", "\\n").replace("\t", "\\t")
    return Text(text, no_wrap=True)
