"""Numbers of the binlog v4 format: event type codes, column type codes, flags.

Values are facts of the on-disk format as MySQL (5.x–9.x) and MariaDB (10.x–11.x) write it.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

BINLOG_MAGIC = b"\xfebin"
COMMON_HEADER_LEN = 19
CHECKSUM_LEN = 4


class EventType(IntEnum):
    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    PRE_GA_WRITE_ROWS = 20
    PRE_GA_UPDATE_ROWS = 21
    PRE_GA_DELETE_ROWS = 22
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS = 30
    UPDATE_ROWS = 31
    DELETE_ROWS = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    # MariaDB
    ANNOTATE_ROWS = 160
    BINLOG_CHECKPOINT = 161
    MARIADB_GTID = 162
    GTID_LIST = 163
    START_ENCRYPTION = 164
    QUERY_COMPRESSED = 165
    WRITE_ROWS_COMPRESSED_V1 = 166
    UPDATE_ROWS_COMPRESSED_V1 = 167
    DELETE_ROWS_COMPRESSED_V1 = 168
    WRITE_ROWS_COMPRESSED = 169
    UPDATE_ROWS_COMPRESSED = 170
    DELETE_ROWS_COMPRESSED = 171


# The names SHOW RELAYLOG EVENTS / SHOW BINLOG EVENTS print in Event_type.
EVENT_TYPE_NAMES: dict[int, str] = {
    EventType.START_V3: "Start_v3",
    EventType.QUERY: "Query",
    EventType.STOP: "Stop",
    EventType.ROTATE: "Rotate",
    EventType.INTVAR: "Intvar",
    EventType.LOAD: "Load",
    EventType.SLAVE: "Slave",
    EventType.CREATE_FILE: "Create_file",
    EventType.APPEND_BLOCK: "Append_block",
    EventType.EXEC_LOAD: "Exec_load",
    EventType.DELETE_FILE: "Delete_file",
    EventType.NEW_LOAD: "New_load",
    EventType.RAND: "RAND",
    EventType.USER_VAR: "User var",
    EventType.FORMAT_DESCRIPTION: "Format_desc",
    EventType.XID: "Xid",
    EventType.BEGIN_LOAD_QUERY: "Begin_load_query",
    EventType.EXECUTE_LOAD_QUERY: "Execute_load_query",
    EventType.TABLE_MAP: "Table_map",
    EventType.PRE_GA_WRITE_ROWS: "Write_rows_v0",
    EventType.PRE_GA_UPDATE_ROWS: "Update_rows_v0",
    EventType.PRE_GA_DELETE_ROWS: "Delete_rows_v0",
    EventType.WRITE_ROWS_V1: "Write_rows_v1",
    EventType.UPDATE_ROWS_V1: "Update_rows_v1",
    EventType.DELETE_ROWS_V1: "Delete_rows_v1",
    EventType.INCIDENT: "Incident",
    EventType.HEARTBEAT: "Heartbeat",
    EventType.IGNORABLE: "Ignorable",
    EventType.ROWS_QUERY: "Rows_query",
    EventType.WRITE_ROWS: "Write_rows",
    EventType.UPDATE_ROWS: "Update_rows",
    EventType.DELETE_ROWS: "Delete_rows",
    EventType.GTID: "Gtid",
    EventType.ANONYMOUS_GTID: "Anonymous_Gtid",
    EventType.PREVIOUS_GTIDS: "Previous_gtids",
    EventType.TRANSACTION_CONTEXT: "Transaction_context",
    EventType.VIEW_CHANGE: "View_change",
    EventType.XA_PREPARE: "XA_prepare",
    EventType.PARTIAL_UPDATE_ROWS: "Update_rows_partial",
    EventType.TRANSACTION_PAYLOAD: "Transaction_payload",
    EventType.HEARTBEAT_V2: "Heartbeat_v2",
    EventType.GTID_TAGGED: "Gtid_tagged_log",
    EventType.ANNOTATE_ROWS: "Annotate_rows",
    EventType.BINLOG_CHECKPOINT: "Binlog_checkpoint",
    EventType.MARIADB_GTID: "Gtid",
    EventType.GTID_LIST: "Gtid_list",
    EventType.START_ENCRYPTION: "Start_encryption",
    EventType.QUERY_COMPRESSED: "Query_compressed",
    EventType.WRITE_ROWS_COMPRESSED_V1: "Write_rows_compressed_v1",
    EventType.UPDATE_ROWS_COMPRESSED_V1: "Update_rows_compressed_v1",
    EventType.DELETE_ROWS_COMPRESSED_V1: "Delete_rows_compressed_v1",
    EventType.WRITE_ROWS_COMPRESSED: "Write_rows_compressed",
    EventType.UPDATE_ROWS_COMPRESSED: "Update_rows_compressed",
    EventType.DELETE_ROWS_COMPRESSED: "Delete_rows_compressed",
}


def event_type_name(code: int) -> str:
    name = EVENT_TYPE_NAMES.get(code)
    return name if name is not None else f"Unknown({code})"


class RowsKind(IntEnum):
    """What a rows event does, whatever its version or compression."""

    WRITE = 1
    UPDATE = 2
    DELETE = 3


# type code -> (kind, version, compressed); version 0 = pre-GA 5.1, 1 = v1, 2 = v2 (extra data)
ROWS_EVENT_TYPES: dict[int, tuple[RowsKind, int, bool]] = {
    EventType.PRE_GA_WRITE_ROWS: (RowsKind.WRITE, 0, False),
    EventType.PRE_GA_UPDATE_ROWS: (RowsKind.UPDATE, 0, False),
    EventType.PRE_GA_DELETE_ROWS: (RowsKind.DELETE, 0, False),
    EventType.WRITE_ROWS_V1: (RowsKind.WRITE, 1, False),
    EventType.UPDATE_ROWS_V1: (RowsKind.UPDATE, 1, False),
    EventType.DELETE_ROWS_V1: (RowsKind.DELETE, 1, False),
    EventType.WRITE_ROWS: (RowsKind.WRITE, 2, False),
    EventType.UPDATE_ROWS: (RowsKind.UPDATE, 2, False),
    EventType.DELETE_ROWS: (RowsKind.DELETE, 2, False),
    EventType.PARTIAL_UPDATE_ROWS: (RowsKind.UPDATE, 2, False),
    EventType.WRITE_ROWS_COMPRESSED_V1: (RowsKind.WRITE, 1, True),
    EventType.UPDATE_ROWS_COMPRESSED_V1: (RowsKind.UPDATE, 1, True),
    EventType.DELETE_ROWS_COMPRESSED_V1: (RowsKind.DELETE, 1, True),
    EventType.WRITE_ROWS_COMPRESSED: (RowsKind.WRITE, 2, True),
    EventType.UPDATE_ROWS_COMPRESSED: (RowsKind.UPDATE, 2, True),
    EventType.DELETE_ROWS_COMPRESSED: (RowsKind.DELETE, 2, True),
}


class EventFlag(IntFlag):
    """Flags of the common header."""

    BINLOG_IN_USE = 0x1
    THREAD_SPECIFIC = 0x4
    SUPPRESS_USE = 0x8
    ARTIFICIAL = 0x20
    RELAY_LOG = 0x40
    IGNORABLE = 0x80
    NO_FILTER = 0x100
    MTS_ISOLATE = 0x200


class ChecksumAlg(IntEnum):
    OFF = 0
    CRC32 = 1
    UNDEFINED = 255


class ColumnType(IntEnum):
    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


# Rows-event flags (post-header)
ROWS_FLAG_STMT_END = 0x1
ROWS_FLAG_NO_FOREIGN_KEY_CHECKS = 0x2
ROWS_FLAG_RELAXED_UNIQUE_CHECKS = 0x4
ROWS_FLAG_COMPLETE_ROWS = 0x8


class TableMapMetadata(IntEnum):
    """Optional metadata field types of TABLE_MAP (binlog_row_metadata)."""

    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


class QueryStatus(IntEnum):
    """Status variable codes of QUERY events."""

    FLAGS2 = 0
    SQL_MODE = 1
    CATALOG = 2
    AUTO_INCREMENT = 3
    CHARSET = 4
    TIME_ZONE = 5
    CATALOG_NZ = 6
    LC_TIME_NAMES = 7
    CHARSET_DATABASE = 8
    TABLE_MAP_FOR_UPDATE = 9
    MASTER_DATA_WRITTEN = 10
    INVOKER = 11
    UPDATED_DB_NAMES = 12
    MICROSECONDS = 13
    COMMIT_TS = 14
    COMMIT_TS2 = 15
    EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16
    DDL_LOGGED_WITH_XID = 17
    DEFAULT_COLLATION_FOR_UTF8MB4 = 18
    SQL_REQUIRE_PRIMARY_KEY = 19
    DEFAULT_TABLE_ENCRYPTION = 20
    ENABLE_CASCADE_TRIGGERS = 21
    # MariaDB
    HRNOW = 128
    XID = 129
    GTID_FLAGS3 = 130
    CHARACTER_SET_COLLATIONS = 131


# Q_UPDATED_DB_NAMES: this many databases means "too many to list" (WL#5754)
OVER_MAX_DBS_IN_EVENT_MTS = 254


class MariaGtidFlag(IntFlag):
    STANDALONE = 1
    GROUP_COMMIT_ID = 2
    TRANSACTIONAL = 4
    ALLOW_PARALLEL = 8
    WAITED = 16
    DDL = 32
    PREPARED_XA = 64
    COMPLETED_XA = 128


class MariaGtidExtraFlag(IntFlag):
    MULTI_ENGINE_E1 = 1
    START_ALTER_E1 = 2
    COMMIT_ALTER_E1 = 4
    ROLLBACK_ALTER_E1 = 8


# INTVAR types
INTVAR_LAST_INSERT_ID = 1
INTVAR_INSERT_ID = 2

# USER_VAR value types (Item_result)
USER_VAR_STRING = 0
USER_VAR_REAL = 1
USER_VAR_INT = 2
USER_VAR_ROW = 3
USER_VAR_DECIMAL = 4

# Character set ids that mean "binary": their strings are bytes, not text.
BINARY_CHARSET = 63
