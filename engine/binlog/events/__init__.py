"""Typed binlog events and the table of body decoders, one family per module."""

from __future__ import annotations

from collections.abc import Callable

from ...gtids import MariaGtid
from .. import primitives
from ..compiled import load
from ..constants import ROWS_EVENT_TYPES, EventType, RowsKind
from . import gtid as gtid_module
from . import rows as rows_module
from .base import HEADER, BinlogEvent, DecodeContext, EventHeader
from .control import (
    FormatDescription,
    Heartbeat,
    IgnoredEvent,
    Incident,
    LoadBlock,
    Opaque,
    Rotate,
    StartV3,
    Stop,
    ViewChange,
    decode_format_description,
    decode_heartbeat,
    decode_heartbeat_v2,
    decode_incident,
    decode_load_block,
    decode_opaque,
    decode_rotate,
    decode_start_v3,
    decode_stop,
    decode_view_change,
)
from .gtid import (
    BinlogCheckpoint,
    Gtid,
    GtidList,
    MariaGtidEvent,
    PreviousGtids,
    TransactionContext,
    decode_binlog_checkpoint,
    decode_gtid,
    decode_gtid_list,
    decode_maria_gtid,
    decode_previous_gtids,
    decode_transaction_context,
)
from .gtid_tagged import decode_gtid_tagged
from .payload import TransactionPayload, decode_transaction_payload
from .query import (
    ExecuteLoadQuery,
    Intvar,
    Query,
    QueryStatusVars,
    Rand,
    RowsQuery,
    UserVar,
    XaPrepare,
    Xid,
    decode_annotate_rows,
    decode_intvar,
    decode_query,
    decode_rand,
    decode_rows_query,
    decode_user_var,
    decode_xa_prepare,
    decode_xid,
)
from .rows import RowsEvent, TableMap, decode_rows, decode_table_map

Decoder = Callable[[EventHeader, bytes, DecodeContext], BinlogEvent]

DECODERS: dict[int, Decoder] = {
    EventType.START_V3: decode_start_v3,
    EventType.QUERY: decode_query,
    EventType.QUERY_COMPRESSED: decode_query,
    EventType.EXECUTE_LOAD_QUERY: decode_query,
    EventType.STOP: decode_stop,
    EventType.ROTATE: decode_rotate,
    EventType.INTVAR: decode_intvar,
    EventType.RAND: decode_rand,
    EventType.USER_VAR: decode_user_var,
    EventType.XID: decode_xid,
    EventType.XA_PREPARE: decode_xa_prepare,
    EventType.TABLE_MAP: decode_table_map,
    EventType.INCIDENT: decode_incident,
    EventType.HEARTBEAT: decode_heartbeat,
    EventType.HEARTBEAT_V2: decode_heartbeat_v2,
    EventType.IGNORABLE: decode_opaque,
    EventType.ROWS_QUERY: decode_rows_query,
    EventType.ANNOTATE_ROWS: decode_annotate_rows,
    EventType.GTID: decode_gtid,
    EventType.ANONYMOUS_GTID: decode_gtid,
    EventType.GTID_TAGGED: decode_gtid_tagged,
    EventType.PREVIOUS_GTIDS: decode_previous_gtids,
    EventType.TRANSACTION_CONTEXT: decode_transaction_context,
    EventType.VIEW_CHANGE: decode_view_change,
    EventType.TRANSACTION_PAYLOAD: decode_transaction_payload,
    EventType.MARIADB_GTID: decode_maria_gtid,
    EventType.GTID_LIST: decode_gtid_list,
    EventType.BINLOG_CHECKPOINT: decode_binlog_checkpoint,
    EventType.START_ENCRYPTION: decode_opaque,
    EventType.BEGIN_LOAD_QUERY: decode_load_block,
    EventType.APPEND_BLOCK: decode_load_block,
    EventType.DELETE_FILE: decode_load_block,
    EventType.EXEC_LOAD: decode_load_block,
    EventType.CREATE_FILE: decode_opaque,
    EventType.LOAD: decode_opaque,
    EventType.NEW_LOAD: decode_opaque,
    EventType.SLAVE: decode_opaque,
}
DECODERS.update(dict.fromkeys(ROWS_EVENT_TYPES, decode_rows))


def _compiled_decoders() -> dict[str, Decoder] | None:
    """The C forms of the per-transaction decoders (engine/binlog/_decoders.pyx), where built."""
    compiled = load("_decoders")
    if compiled is None:
        return None
    return compiled.configure(  # type: ignore[no-any-return]
        {
            "decoders": (decode_rows, decode_gtid, decode_maria_gtid, decode_table_map, decode_xid),
            "classes": (RowsEvent, Gtid, MariaGtidEvent, MariaGtid, Xid),
            "rows_types": ROWS_EVENT_TYPES,
            "update": RowsKind.UPDATE,
            "partial_type": EventType.PARTIAL_UPDATE_ROWS,
            "anonymous_type": EventType.ANONYMOUS_GTID,
            "table_map_type": EventType.TABLE_MAP,
            "bitmaps": primitives.BITMAPS,
            "bitmap": primitives.bitmap,
            "sids": gtid_module._SIDS,
            "table_maps": rows_module._TABLE_MAPS,
        }
    )


# The reader uses the C decoders where they are built; they hand anything unusual to the Python
# decoders above, so results and errors are the same either way.
COMPILED_DECODERS = _compiled_decoders()
if COMPILED_DECODERS is not None:
    DECODERS.update(dict.fromkeys(ROWS_EVENT_TYPES, COMPILED_DECODERS["rows"]))
    DECODERS[EventType.GTID] = DECODERS[EventType.ANONYMOUS_GTID] = COMPILED_DECODERS["gtid"]
    DECODERS[EventType.MARIADB_GTID] = COMPILED_DECODERS["maria_gtid"]
    DECODERS[EventType.TABLE_MAP] = COMPILED_DECODERS["table_map"]
    DECODERS[EventType.XID] = COMPILED_DECODERS["xid"]

__all__ = [
    "DECODERS",
    "HEADER",
    "BinlogCheckpoint",
    "BinlogEvent",
    "DecodeContext",
    "EventHeader",
    "ExecuteLoadQuery",
    "FormatDescription",
    "Gtid",
    "GtidList",
    "Heartbeat",
    "IgnoredEvent",
    "Incident",
    "Intvar",
    "LoadBlock",
    "MariaGtidEvent",
    "Opaque",
    "PreviousGtids",
    "Query",
    "QueryStatusVars",
    "Rand",
    "Rotate",
    "RowsEvent",
    "RowsQuery",
    "StartV3",
    "Stop",
    "TableMap",
    "TransactionContext",
    "TransactionPayload",
    "UserVar",
    "ViewChange",
    "XaPrepare",
    "Xid",
    "decode_format_description",
]
