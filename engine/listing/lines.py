"""Relay-log events as `relaydeck events` lists them: each event's SHOW RELAYLOG EVENTS row
(show.py) as a tab-separated line or a JSON object, with a rows event's decoded rows (--rows).

One loop formats a whole stream (the serial listing) and one segment of it (the pool's task), so
both give the same text by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..binlog.columns import ROW_IMAGE_FAULTS, RowDecoder, row_decoder
from ..binlog.constants import EVENT_TYPE_NAMES, RowsKind
from ..binlog.events import RowsEvent, TableMap
from ..binlog.reader import LoggedEvent
from ..errors import BinlogError
from ..render import json_value, json_visible, quoted, rows_json_text, value_json, visible
from ..render import row_lines as render_row_lines
from ..transactions import row_kind_name
from .show import EVENT_COLUMNS, event_row_maker

TEXT_HEADER = "\t".join(EVENT_COLUMNS) + "\n"
# Lines are gathered and written a few thousand at a time: one write per event costs more than
# formatting the event.
FLUSH_LINES = 4096

# json.dumps(..., ensure_ascii=False)'s form of a string, without the call's per-document set-up
_json_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class ListingOptions:
    as_json: bool = False  # one JSON object per line, else tab-separated text under TEXT_HEADER
    rows: bool = False  # a rows event's decoded rows too


class EarlierTableMapNeeded(Exception):
    """A rows event whose table map is not among the events formatted so far but was read before
    them: only a reader holding the stream before can format it as the serial listing does."""

    def __init__(self, table_id: int) -> None:
        super().__init__(f"table_id {table_id} was mapped before this part of the stream")
        self.table_id = table_id


def format_events(
    events: Iterable[LoggedEvent],
    options: ListingOptions,
    table_maps: dict[int, TableMap],
    pending: list[str],
    flush: Callable[[], None] | None = None,
    limit: int | None = None,
    check: Callable[[LoggedEvent], None] | None = None,
    unmapped: set[int] | None = None,
    mapped_before: set[int] | frozenset[int] = frozenset(),
) -> None:
    """Append each event's lines to `pending` (flush() empties it every FLUSH_LINES lines).

    table_maps: the table maps read so far, by table id (updated here). check: called with each
    event first (the continuity check). unmapped: collects the table ids of rows events whose
    table map was missing. mapped_before: ids mapped before `events` by maps not in table_maps;
    a rows event needing one raises EarlierTableMapNeeded. limit: stop before the event past the
    first `limit` (it is still read and checked, as the serial listing always did: an error
    there is reported).
    """
    write = pending.append
    rows, as_json = options.rows, options.as_json  # locals: read once per event
    event_row = event_row_maker(keep_line_breaks=as_json)  # JSON strings carry line breaks
    log_name, shown_log_name = None, ""  # the relay file's name as printed, for its events
    shown = 0
    for logged in events:
        if check is not None:
            check(logged)
        if flush is not None and len(pending) >= FLUSH_LINES:
            flush()
        if limit is not None and shown >= limit:
            break
        shown += 1
        event = logged.event
        kind = type(event)
        if kind is TableMap:
            table_maps[event.table_id] = event  # type: ignore[attr-defined]
        rows_text = None
        rows_error = None
        if rows and kind is RowsEvent:
            table_map = table_maps.get(event.table_id)  # type: ignore[attr-defined]
            if table_map is None:
                table_id = event.table_id  # type: ignore[attr-defined]
                if table_id in mapped_before:
                    raise EarlierTableMapNeeded(table_id)
                if unmapped is not None:
                    unmapped.add(table_id)
                rows_error = f"no table map for table_id {table_id} before this event"
            else:
                try:
                    if as_json:
                        rows_text = rows_json_of(event, table_map)  # type: ignore[arg-type]
                    else:
                        rows_text = rows_lines_of(event, table_map)  # type: ignore[arg-type]
                except ValueError as exc:
                    raise BinlogError(logged.log_name, logged.pos, str(exc)) from None
        name, pos, type_name, server_id, end_log_pos, info = event_row(logged)
        if name != log_name:
            log_name = name
            shown_log_name = _json_string(name) if as_json else visible(name)
        if as_json:
            try:
                type_name = _JSON_TYPE_NAMES[type_name]
            except KeyError:  # Unknown(code)
                type_name = _json_string(type_name)
            line = (
                f'{{"log_name": {shown_log_name}, "pos": {pos}, "event_type": {type_name}, '
                f'"server_id": {server_id}, "end_log_pos": {end_log_pos}, "info": {_json_string(info)}'
            )
            if rows and kind is RowsEvent:
                if rows_text is not None:
                    # the rows apart: the longest part of the line, not copied into it
                    write(json_visible(line + ', "rows": '))
                    write(json_visible(rows_text))
                    write("}\n")
                    continue
                line += ', "rows": null'
                if rows_error:
                    line += f', "rows_error": {_json_string(rows_error)}'
            write(json_visible(line + "}\n"))
        else:
            # statements and names from the log may hold terminal escape sequences: shown escaped
            if not info.isprintable():
                info = visible(info)
            write(f"{shown_log_name}\t{pos}\t{type_name}\t{server_id}\t{end_log_pos}\t{info}\n")
            if rows_text is not None:
                write(rows_text)
            elif rows_error:
                write(f"### ({rows_error})\n")


_JSON_TYPE_NAMES = {name: _json_string(name) for name in EVENT_TYPE_NAMES.values()}


def _row_head(kind: RowsKind, table_map: TableMap) -> str:
    return f"### {row_kind_name(kind)} `{visible(table_map.schema)}`.`{visible(table_map.table)}` "


def row_lines(images) -> str:  # type: ignore[no-untyped-def]
    """A rows event's rows as mysqlbinlog -v shows them, one line per row."""
    head = _row_head(images.kind, images.table_map)
    columns = images.columns
    if not all(c.name.isprintable() for c in columns):
        columns = [_ShownColumn(visible(c.name)) for c in columns]
    # straight from the column lists: RowImages.rows() would build two dicts per row
    return render_row_lines(head, columns, (images.before, images.after), images.count)


class _ShownColumn(NamedTuple):
    """A column as a row line names it (its name escaped for the terminal)."""

    name: str


def rows_json(images) -> str:  # type: ignore[no-untyped-def]
    """A rows event's rows as the JSON list `[{"before": {...}, "after": {...}}, ...]` that
    json.dumps(ensure_ascii=False) writes for rows_json_values(images)."""
    columns = images.columns
    keys = _column_keys.get(id(columns))
    if keys is None or keys[0] is not columns:
        names = [c.name for c in columns]
        # a row is a JSON object by column name: of a name given twice, json.dumps keeps one
        unique = len(set(names)) == len(names)
        keys = (columns, [_json_string(name) for name in names] if unique else None)
        if len(_column_keys) >= 4096:
            _column_keys.clear()
        _column_keys[id(columns)] = keys
    if keys[1] is None:
        return json.dumps(rows_json_values(images), ensure_ascii=False)
    return rows_json_text(keys[1], images.before, images.after, images.count)


# id(columns) -> (columns, their names as JSON strings or None when a name repeats): the decoder
# shares one columns tuple per table structure (binlog/columns.py)
_column_keys: dict[int, tuple[Any, list[str] | None]] = {}


def rows_json_of(event: RowsEvent, table_map: TableMap) -> str:
    """rows_json() of the event's decoded rows; where its decoder is compiled, written in C
    straight from the row images (RowProgram.json_rows), without a Python object per integer,
    UTF-8 string or DECIMAL. ValueError, worded, for malformed row images."""
    decoder = row_decoder(event, table_map)
    program = decoder.compiled_program
    if program is not None:
        layout = _layouts(decoder)[1]
        if layout is not None:
            try:
                return program.json_rows(event.rows_data, *layout, value_json)
            except ROW_IMAGE_FAULTS:
                pass  # decoded below, which words the fault
    return rows_json(decoder.decode(event, table_map))


def rows_lines_of(event: RowsEvent, table_map: TableMap) -> str:
    """row_lines() of the event's decoded rows; where its decoder is compiled, written in C
    straight from the row images (RowProgram.text_rows). ValueError, worded, for malformed row
    images."""
    decoder = row_decoder(event, table_map)
    program = decoder.compiled_program
    if program is not None:
        head = _row_head(decoder.kind, table_map).encode("utf-8", "surrogatepass")
        try:
            return program.text_rows(event.rows_data, head, *_layouts(decoder)[2], quoted)
        except ROW_IMAGE_FAULTS:
            pass  # decoded below, which words the fault
    return row_lines(decoder.decode(event, table_map))


# A decoder's layout of its rows as text: (what precedes each present column's value, what opens
# each of its two images, None for an image without columns), encoded once
_Layout = tuple[list[bytes], bytes | None, bytes | None]
# id(decoder) -> (decoder, its JSON layout, its text layout); the JSON one None where a column
# name repeats (rows_json then leaves the rows to json.dumps, which keeps one of them). Decoders
# are cached (binlog/columns.py), so these are few.
_known_layouts: dict[int, tuple[RowDecoder, _Layout | None, _Layout]] = {}


def _layouts(decoder: RowDecoder) -> tuple[RowDecoder, _Layout | None, _Layout]:
    known = _known_layouts.get(id(decoder))
    if known is not None and known[0] is decoder:
        return known
    names = [c.name for c in decoder.columns]
    first, second = decoder.present
    # a WRITE's one image is its after image, a DELETE's its before image
    images = (("after" if decoder.kind is RowsKind.WRITE else "before", first), ("after", second))
    json_layout: _Layout | None = None
    if len(set(names)) == len(names):
        json_layout = _layout(
            images,
            [_json_string(name) + ": " for name in names],
            lambda label, opens_row: f'"{label}": {{' if opens_row else f', "{label}": {{',
        )
    text_layout = _layout(
        images,
        [visible(name) + "=" for name in names],
        lambda label, opens_row: "(" if opens_row else " -> (",
    )
    known = (decoder, json_layout, text_layout)
    if len(_known_layouts) >= 4096:
        _known_layouts.clear()
    _known_layouts[id(decoder)] = known
    return known


def _layout(
    images: tuple[tuple[str, list[int]], ...], keys: list[str], opening: Callable[[str, bool], str]
) -> _Layout:
    prefixes: list[bytes] = []
    labels: list[bytes | None] = []
    for label, indexes in images:
        if not indexes:
            labels.append(None)
            continue
        labels.append(opening(label, all(shown is None for shown in labels)).encode("utf-8", "surrogatepass"))
        for position, index in enumerate(indexes):
            prefixes.append(
                (", " + keys[index] if position else keys[index]).encode("utf-8", "surrogatepass")
            )
    return (prefixes, labels[0], labels[1])


# (before, after): an image by column name, or None where the event has no such image
RowValues = tuple[dict[str, Any] | None, dict[str, Any] | None]


def row_values(images) -> list[RowValues]:  # type: ignore[no-untyped-def]
    """A rows event's rows as JSON-ready values: the rows `events --rows --json` writes, and the
    ones the console's relay-log browser shows for the event under its cursor."""
    return [
        (
            None if before is None else {k: json_value(v) for k, v in before.items()},
            None if after is None else {k: json_value(v) for k, v in after.items()},
        )
        for before, after in images.rows()
    ]


def rows_json_values(images) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The rows as the JSON list holds them: {"before": …, "after": …}, an absent image left out."""
    out = []
    for before, after in row_values(images):
        row: dict[str, object] = {}
        if before is not None:
            row["before"] = before
        if after is not None:
            row["after"] = after
        out.append(row)
    return out
