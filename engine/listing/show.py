"""An event as a row of SHOW RELAYLOG EVENTS: the one place its six columns are built.

The statement (engine/replica/server.py, which the console's relay-log browser pages through)
and `relaydeck events` (lines.py: the row as a tab-separated line or a JSON object) take every
event's row from a maker of event_row_maker(), so they show the same row for the same event.

Info is the event's info() on one line (a statement's line breaks as spaces), as a table cell
needs it; a JSON listing, whose strings carry line breaks, asks to keep them. Each front end
then escapes the text for its terminal or for JSON.

`relaydeck events` asks for a row per event, so a row is a plain tuple (28 ns to build, a named
tuple 183 ns) and a maker formats a repeated table map's Info once: a source sends the same
table map before every transaction, and the reader gives it as one object. Even so, building the
row apart costs the listing 0.12-0.17 us an event more than formatting the columns where they
are printed: on a generated 31.5 MB OLTP log (139,187 events), a serial listing's CPU went from
0.323 to 0.342 s (text) and from 0.528 to 0.557 s (--rows --json), the price of one renderer.
"""

from __future__ import annotations

from collections.abc import Callable

from ..binlog.constants import EVENT_TYPE_NAMES, event_type_name
from ..binlog.events import TableMap
from ..binlog.reader import LoggedEvent

EVENT_COLUMNS = ("Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info")
# (Log_name, Pos, Event_type, Server_id, End_log_pos, Info)
EventRow = tuple[str, int, str, int, int, str]


def event_row_maker(*, keep_line_breaks: bool = False) -> Callable[[LoggedEvent], EventRow]:
    """A function giving each event's row (one maker per listing: it keeps its table maps' Info)."""
    type_names = EVENT_TYPE_NAMES
    table_map_info: dict[int, tuple[TableMap, str]] = {}  # id(table map) -> (it, its Info)

    def event_row(logged: LoggedEvent) -> EventRow:
        event = logged.event
        known = table_map_info.get(id(event)) if type(event) is TableMap else None
        if known is not None and known[0] is event:
            info = known[1]
        else:
            info = event.info()
            if "\n" in info and not keep_line_breaks:
                info = info.replace("\n", " ")
            if type(event) is TableMap:
                table_map_info[id(event)] = (event, info)  # type: ignore[assignment]
        header = logged.header
        code = header.type_code
        try:
            type_name = type_names[code]
        except KeyError:
            type_name = event_type_name(code)
        return (logged.log_name, logged.pos, type_name, header.server_id, header.log_pos, info)

    return event_row
