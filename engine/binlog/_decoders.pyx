# cython: language_level=3, boundscheck=False, wraparound=False
"""C forms of the decoders of the events every transaction carries: GTID (MySQL and MariaDB),
TABLE_MAP, the rows events' post-header, and XID.

An OLTP relay log is made of these; each Python decoder costs a few microseconds per event in
function calls, struct reads and the generated __init__ of its event class. These read a
well-formed body directly and build the same event object. Anything out of the ordinary (short
or inconsistent bodies, compressed images, XA, rare fields, a source id not seen before) is
handed to the Python decoder, so results and errors are always that decoder's.
tests/test_decoders_compiled.py compares both forms on every bundled log and on generated bodies.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy

from engine.binlog._bytes cimport all_set, le

# The Python side: configure() fills these in (events/__init__.py passes them).
cdef object _py_rows = None
cdef object _py_gtid = None
cdef object _py_maria_gtid = None
cdef object _py_table_map = None
cdef object _py_xid = None
cdef object _RowsEvent = None
cdef object _Gtid = None
cdef object _MariaGtidEvent = None
cdef object _MariaGtid = None
cdef object _Xid = None
cdef dict _rows_types = None  # ROWS_EVENT_TYPES
cdef object _update = None  # RowsKind.UPDATE
cdef int _partial_type = 0  # EventType.PARTIAL_UPDATE_ROWS
cdef int _anonymous_type = 0  # EventType.ANONYMOUS_GTID
cdef int _table_map_type = 0  # EventType.TABLE_MAP
cdef dict _bitmaps = None  # primitives.BITMAPS
cdef object _bitmap = None  # primitives.bitmap
cdef dict _sids = None  # gtid._SIDS: raw source id -> Sid
cdef dict _table_maps = None  # rows._TABLE_MAPS: the table maps already decoded, by body
cdef dict _all_columns = {}  # width -> (True,) * width: the usual full image

cdef enum:
    LOGICAL_TIMESTAMP_TYPECODE = 2
    MARIA_GROUP_COMMIT_ID = 2
    MARIA_XA = 0x40 | 0x80


def configure(kit):
    """The Python decoders and classes; returns the C decoders by name."""
    global _py_rows, _py_gtid, _py_maria_gtid, _py_table_map, _py_xid
    global _RowsEvent, _Gtid, _MariaGtidEvent, _MariaGtid, _Xid
    global _rows_types, _update, _partial_type, _anonymous_type, _table_map_type
    global _bitmaps, _bitmap, _sids, _table_maps
    _py_rows, _py_gtid, _py_maria_gtid, _py_table_map, _py_xid = kit["decoders"]
    _RowsEvent, _Gtid, _MariaGtidEvent, _MariaGtid, _Xid = kit["classes"]
    _rows_types, _update, _partial_type = kit["rows_types"], kit["update"], kit["partial_type"]
    _anonymous_type, _table_map_type = kit["anonymous_type"], kit["table_map_type"]
    _bitmaps, _bitmap, _sids, _table_maps = kit["bitmaps"], kit["bitmap"], kit["sids"], kit["table_maps"]
    return {
        "rows": decode_rows,
        "gtid": decode_gtid,
        "maria_gtid": decode_maria_gtid,
        "table_map": decode_table_map,
        "xid": decode_xid,
    }


# -- rows events -------------------------------------------------------------------------------


cdef object _columns(bytes body, const unsigned char* p, Py_ssize_t pos, Py_ssize_t width):
    """The bitmap at pos as a tuple of bools, shared with the Python decoder's cache."""
    if all_set(p + pos, width):
        bits = _all_columns.get(width)
        if bits is None:
            bits = _all_columns[width] = (True,) * width
        return bits
    nbytes = (width + 7) >> 3
    bits = _bitmaps.get((body[pos : pos + nbytes], width))
    if bits is None:
        bits = _bitmap(body, pos, width)[0]
    return bits


def decode_rows(header, body, ctx):
    if type(body) is not bytes:
        return _py_rows(header, body, ctx)
    cdef int type_code = header[1]
    kind, version_obj, compressed = _rows_types[type_code]
    if compressed:
        return _py_rows(header, body, ctx)
    cdef int version = version_obj
    lengths = ctx.post_header_lengths
    cdef Py_ssize_t post
    if type_code <= len(lengths):
        post = lengths[type_code - 1]
    else:
        post = 10 if version == 2 else 8
    cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(body)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body)
    cdef Py_ssize_t pos, extra_len, width, nbytes
    cdef unsigned long long table_id
    cdef unsigned int flags
    if post == 6:
        if n < 6:
            return _py_rows(header, body, ctx)
        table_id = le(p, 4)
        flags = le(p + 4, 2)
        pos = 6
    else:
        if n < 8:
            return _py_rows(header, body, ctx)
        table_id = le(p, 4) | (<unsigned long long> le(p + 4, 2) << 32)
        flags = le(p + 6, 2)
        pos = 8
    extra = b""
    if version == 2 and post >= pos + 2:
        if pos + 2 > n:
            return _py_rows(header, body, ctx)
        extra_len = le(p + pos, 2)
        if extra_len < 2 or pos + extra_len > n:
            return _py_rows(header, body, ctx)
        if extra_len > 2:
            extra = PyBytes_FromStringAndSize(<const char*> p + pos + 2, extra_len - 2)
        pos += extra_len
    if version != 2 and post > pos:
        pos = post
    if pos >= n or p[pos] >= 251:
        return _py_rows(header, body, ctx)
    width = p[pos]
    pos += 1
    nbytes = (width + 7) >> 3
    is_update = kind is _update
    if pos + nbytes * (2 if is_update else 1) > n:
        return _py_rows(header, body, ctx)
    before = _columns(body, p, pos, width)
    pos += nbytes
    after = None
    if is_update:
        after = _columns(body, p, pos, width)
        pos += nbytes
    event = _RowsEvent.__new__(_RowsEvent)
    event.header = header
    event.kind = kind
    event.version = version_obj
    event.table_id = table_id
    event.flags = flags
    event.extra_data = extra
    event.column_count = width
    event.columns_before = before
    event.columns_after = after
    event.rows_data = PyBytes_FromStringAndSize(<const char*> p + pos, n - pos)
    event.partial = type_code == _partial_type
    return event


# -- GTIDs -------------------------------------------------------------------------------------


def decode_gtid(header, body, ctx):
    """MySQL GTID / ANONYMOUS_GTID (not the tagged form, which has its own decoder)."""
    if type(body) is not bytes:
        return _py_gtid(header, body, ctx)
    cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(body)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body)
    if n < 25:
        return _py_gtid(header, body, ctx)
    sid = _sids.get(body[1:17])
    if sid is None:  # a source not seen before: the Python decoder formats and remembers it
        return _py_gtid(header, body, ctx)
    cdef long long gno = <long long> le(p + 17, 8)
    cdef Py_ssize_t pos = 25
    last_committed = sequence_number = None
    if pos < n and p[pos] == LOGICAL_TIMESTAMP_TYPECODE:
        if pos + 17 > n:
            return _py_gtid(header, body, ctx)
        last_committed = le(p + pos + 1, 8)
        sequence_number = le(p + pos + 9, 8)
        pos += 17
    immediate = original = None
    cdef unsigned long long stamp
    if pos + 7 <= n:
        stamp = le(p + pos, 7)
        pos += 7
        if stamp & (1ULL << 55):
            if pos + 7 > n:
                return _py_gtid(header, body, ctx)
            immediate = stamp & ~(1ULL << 55)
            original = le(p + pos, 7)
            pos += 7
        else:
            immediate = original = stamp
    length = None
    cdef int first, width
    if pos < n:  # the transaction length, a packed integer (NULL: the Python decoder's error)
        first = p[pos]
        width = 0 if first < 251 else 2 if first == 252 else 3 if first == 253 else 8 if first >= 254 else -1
        if width < 0 or pos + 1 + width > n:
            return _py_gtid(header, body, ctx)
        length = first if width == 0 else le(p + pos + 1, width)
        pos += 1 + width
    immediate_version = original_version = None
    cdef unsigned long long version
    if pos + 4 <= n:
        version = le(p + pos, 4)
        pos += 4
        if version & (1ULL << 31):
            if pos + 4 > n:
                return _py_gtid(header, body, ctx)
            immediate_version = version & ~(1ULL << 31)
            original_version = le(p + pos, 4)
            pos += 4
        else:
            immediate_version = original_version = version
    ticket = le(p + pos, 8) if pos + 8 <= n else None
    event = _Gtid.__new__(_Gtid)
    event.header = header
    event.flags = p[0]
    event.sid = None if header[1] == _anonymous_type else sid
    event.gno = gno
    event.last_committed = last_committed
    event.sequence_number = sequence_number
    event.immediate_commit_timestamp = immediate
    event.original_commit_timestamp = original
    event.transaction_length = length
    event.immediate_server_version = immediate_version
    event.original_server_version = original_version
    event.commit_group_ticket = ticket
    return event


def decode_maria_gtid(header, body, ctx):
    if type(body) is not bytes:
        return _py_maria_gtid(header, body, ctx)
    cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(body)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body)
    if n < 13:
        return _py_maria_gtid(header, body, ctx)
    cdef int flags = p[12]
    cdef Py_ssize_t pos = 13
    commit_id = None
    if flags & MARIA_GROUP_COMMIT_ID:
        if pos + 8 > n:
            return _py_maria_gtid(header, body, ctx)
        commit_id = le(p + pos, 8)
        pos += 8
    # XA, and extra flags of newer servers: the Python decoder. A zero extra-flags byte (the
    # padding MariaDB writes after the flags or the commit id) means no extras.
    if flags & MARIA_XA or (pos < n and p[pos] != 0):
        return _py_maria_gtid(header, body, ctx)
    event = _MariaGtidEvent.__new__(_MariaGtidEvent)
    event.header = header
    event.gtid = _MariaGtid(le(p + 8, 4), header[2], le(p, 8))
    event.flags = flags
    event.commit_id = commit_id
    event.xa_format_id = None
    event.xa_gtrid = None
    event.xa_bqual = None
    event.flags_extra = 0
    event.extra_engines = None
    event.start_alter_seq_no = None
    event.thread_id = None
    return event


# -- table maps and XID ------------------------------------------------------------------------


def decode_table_map(header, body, ctx):
    """A table map seen before is shared (rows._TABLE_MAPS); a new one is decoded in Python."""
    if type(body) is not bytes:
        return _py_table_map(header, body, ctx)
    lengths = ctx.post_header_lengths
    cdef Py_ssize_t post = lengths[_table_map_type - 1] if _table_map_type <= len(lengths) else 8
    if not 0 <= post < 256:
        return _py_table_map(header, body, ctx)
    # the key rows.decode_table_map files it under: post-header length, MariaDB flag, body
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body)
    key = PyBytes_FromStringAndSize(NULL, n + 2)
    cdef char* k = PyBytes_AS_STRING(key)
    k[0] = <char> post
    k[1] = 1 if ctx.is_mariadb else 0
    memcpy(k + 2, PyBytes_AS_STRING(body), n)
    shared = _table_maps.get(key)
    if shared is not None:
        return shared
    return _py_table_map(header, body, ctx)


def decode_xid(header, body, ctx):
    if type(body) is not bytes or PyBytes_GET_SIZE(body) < 8:
        return _py_xid(header, body, ctx)
    event = _Xid.__new__(_Xid)
    event.header = header
    event.xid = le(<const unsigned char*> PyBytes_AS_STRING(body), 8)
    return event
