"""The listing of one segment of a relay log, as a task of the preparing stage's executors.

A segment starts at a GTID event, so the lines of its events depend on the stream before it in
two ways only, both settled by whoever reads the results in stream order:

- the continuity check: the segment is checked on its own, and its start against the end of the
  segment before (relaylog/continuity.py, Continuity.follows);
- table maps: a rows event's map is normally in its own transaction; one whose map is not in the
  segment is listed as the serial listing lists it only if no segment before mapped that id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..binlog.events import TableMap
from ..errors import RelaydeckError
from ..relaylog.continuity import Continuity, continuity_as_plain, continuity_from_plain
from ..relaylog.segments import Segment, segment_events
from .lines import ListingOptions, format_events

_METADATA_KEY = b"relaydeck.listing"


@dataclass(slots=True)
class ListedSegment:
    text: str  # the lines of its events
    table_ids: list[int]  # the tables it mapped
    unmapped: list[int]  # tables of its rows events that had no map in it
    continuity: Continuity | None  # its check: what its start must follow, its state at its end
    # Bad input or a gap in it: whoever reads the results lists this segment itself, which
    # reports the error where and as the serial listing does (after the lines before it).
    stopped: bool = False


def stream_check(segment: Segment, chained: Continuity | None) -> Continuity:
    """The continuity check to read `segment` with: the serial listing's own for the first
    segment of an input; else `chained` (the stream before it) when given, or the segment's own."""
    if segment.number == 0:
        check = Continuity()
        check.starting_in(segment.files[0], segment.start_pos)
        return check
    if chained is not None:
        return chained
    return Continuity.segment(segment.files[0], segment.start_pos)


def list_segment(
    segment: Segment,
    options: ListingOptions,
    check: Continuity,
    table_maps: dict[int, TableMap],
    pending: list[str],
    unmapped: set[int] | None = None,
    mapped_before: set[int] | frozenset[int] = frozenset(),
) -> None:
    """Append the segment's lines to `pending`, its events checked with `check`."""
    format_events(
        segment_events(segment),
        options,
        table_maps,
        pending,
        check=check.event,
        unmapped=unmapped,
        mapped_before=mapped_before,
    )


@dataclass(frozen=True, slots=True)
class ListingTask:
    """Lists a segment (a SegmentTask: pickled to where it runs, so settings only)."""

    options: ListingOptions

    def run(self, segment: Segment) -> ListedSegment:
        check = stream_check(segment, None)
        table_maps: dict[int, TableMap] = {}
        unmapped: set[int] = set()
        pending: list[str] = []
        try:
            list_segment(segment, self.options, check, table_maps, pending, unmapped)
        except RelaydeckError:
            return ListedSegment("", [], [], None, stopped=True)
        return ListedSegment("".join(pending), list(table_maps), sorted(unmapped), check)

    def to_arrow(self, result: ListedSegment) -> bytes:
        """The lines as a one-row string column (binary when the log's text holds lone surrogates,
        which UTF-8 cannot carry), the rest as the schema's metadata."""
        import pyarrow as pa  # here: listing on local processes needs no Arrow

        try:
            column = pa.array([result.text], pa.large_string())
        except UnicodeEncodeError:
            column = pa.array([result.text.encode("utf-8", "surrogatepass")], pa.large_binary())
        facts = {
            "table_ids": result.table_ids,
            "unmapped": result.unmapped,
            "stopped": result.stopped,
            "continuity": None if result.continuity is None else continuity_as_plain(result.continuity),
        }
        table = pa.table({"text": column}).replace_schema_metadata({_METADATA_KEY: json.dumps(facts)})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def from_arrow(self, data: bytes, segment: Segment) -> ListedSegment:
        import pyarrow as pa

        table = pa.ipc.open_stream(data).read_all()
        facts = json.loads(table.schema.metadata[_METADATA_KEY])
        text = table.column("text")[0].as_py()
        if isinstance(text, bytes):
            text = text.decode("utf-8", "surrogatepass")
        plain = facts["continuity"]
        return ListedSegment(
            text,
            facts["table_ids"],
            facts["unmapped"],
            None if plain is None else continuity_from_plain(plain),
            facts["stopped"],
        )
