# cython: language_level=3, boundscheck=False, wraparound=False
"""One row-only transaction read straight from the mapped relay log, for the process pool's
workers (applier/prepare.py).

The reader builds a Python object per event (header, body, event, position); a worker preparing
an OLTP segment spends a third of its time on them. This reads the usual shape of a MariaDB
transaction in one call, with the reader's checks (framing within the file, CRC32 when the
format says so) and none of its objects: a GTID event opening a multi-statement transaction
(MariaDB's; or MySQL's followed by a BEGIN the reader has decoded before, compared by its bytes),
table maps already decoded once (shared by body, as the reader shares them), rows events with
full images, and the XID. Anything else, or anything out of the ordinary, returns None and the
ordinary reader takes the transaction, so results and errors are always the reader's.
tests/test_process_pool.py compares the prepared runs with and without it.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t
from libc.string cimport memcpy

from engine.binlog._bytes cimport all_set, le
from engine.binlog._event_crc cimport event_crc32


cdef enum:
    HEADER_LEN = 19
    CHECKSUM_LEN = 4
    QUERY = 2
    XID = 16
    TABLE_MAP = 19
    MYSQL_GTID = 33
    MARIADB_GTID = 162
    # a MySQL GTID event: flags, source UUID, GNO, then the logical clock when its type byte says so
    SID_AT = 1
    GNO_AT = 17
    CLOCK_AT = 25
    LOGICAL_TIMESTAMP = 2
    QUERY_POST_HEADER = 13
    BEGIN_KEY_AT = 8  # a BEGIN's bytes from its database name's length on (see decoded_begins)
    # MariaDB GTID flags: a standalone statement, DDL, XA — none of them a row-only transaction
    NOT_ROW_ONLY = 1 | 32 | 64 | 128
    GROUP_COMMIT_ID = 2


cdef inline bint _rows_type(int code) noexcept:
    return 23 <= code <= 25 or 30 <= code <= 32


def scan_transaction(data, Py_ssize_t pos, Py_ssize_t limit, bint checksum, tuple post_lengths,
                     bint is_mariadb, dict table_maps, set begins):
    """The transaction at pos, if it has the usual shape and ends before limit, else None.

    MariaDB's: (end, server_id, domain_id, seq_no, timestamp, log_pos of its XID, rows,
    commit_id), commit_id None unless the GTID event carries a group-commit id.
    MySQL's: (end, server_id, source UUID (16 bytes), GNO, timestamp, log_pos of its XID, rows,
    last_committed, sequence_number, original_commit_timestamp), the last three None where the
    GTID event does not log them.
    rows holds (table_map, type_code, width, rows_data) per rows event, in order."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _scan(<const unsigned char*> view.buf, min(limit, view.len), pos, checksum,
                     post_lengths, is_mariadb, table_maps, begins)
    finally:
        PyBuffer_Release(&view)


cdef object _mysql_gtid(const unsigned char* p, Py_ssize_t body, Py_ssize_t n):
    """(source UUID, GNO, last_committed, sequence_number, original_commit_timestamp) of a MySQL
    GTID event's body, read as decode_gtid reads it; None where that decoder might find fault or
    where the GNO is not a usual one (the reader's way then)."""
    cdef Py_ssize_t at = CLOCK_AT
    cdef unsigned long long immediate
    cdef int first
    if n < CLOCK_AT:
        return None
    gno = le(p + body + GNO_AT, 8)
    if gno < 1 or gno >= (1 << 63):
        return None
    last_committed = sequence_number = original = None
    if at < n and p[body + at] == LOGICAL_TIMESTAMP:
        if at + 17 > n:
            return None
        last_committed = le(p + body + at + 1, 8)
        sequence_number = le(p + body + at + 9, 8)
        at += 17
    if at + 7 <= n:
        immediate = le(p + body + at, 7)
        at += 7
        if immediate & (1ULL << 55):
            if at + 7 > n:
                return None
            original = le(p + body + at, 7)
            at += 7
        else:
            original = immediate
    if at < n:
        # the transaction length, a packed integer, and what follows it: only where they are whole
        first = p[body + at]
        if first == 251 or first == 255:
            return None
        at += 1 if first < 251 else (3 if first == 252 else (4 if first == 253 else 9))
        if at > n:
            return None
        if at + 4 <= n and p[body + at + 3] & 0x80 and at + 8 > n:
            return None
    sid = PyBytes_FromStringAndSize(<const char*> p + body + SID_AT, 16)
    return (sid, gno, last_committed, sequence_number, original)


cdef bint _known_begin(const unsigned char* p, Py_ssize_t body, Py_ssize_t n, int post, set begins):
    """Whether the QUERY event's body is a BEGIN the reader has decoded before."""
    if post != QUERY_POST_HEADER or n < QUERY_POST_HEADER:
        return False
    key = PyBytes_FromStringAndSize(<const char*> p + body + BEGIN_KEY_AT, n - BEGIN_KEY_AT)
    return key in begins


cdef object _scan(const unsigned char* p, Py_ssize_t limit, Py_ssize_t pos, bint checksum,
                  tuple post_lengths, bint is_mariadb, dict table_maps, set begins):
    cdef Py_ssize_t size, body, body_end, at, n, width, nbytes, extra_len, post
    cdef int code, flags
    cdef uint32_t timestamp, server_id
    cdef unsigned long long table_id
    cdef char* k
    cdef Py_ssize_t nposts = len(post_lengths)
    cdef int table_map_post = post_lengths[TABLE_MAP - 1] if TABLE_MAP <= nposts else 8
    if not 0 <= table_map_post < 256:
        return None
    maps = {}
    rows = []
    domain = seq = commit_id = mysql = None
    server_id = 0
    timestamp = 0
    first = True
    begun = True  # a MySQL transaction is begun by its BEGIN, after its GTID
    while True:
        if pos + HEADER_LEN > limit:
            return None
        code = p[pos + 4]
        size = <Py_ssize_t> le(p + pos + 9, 4)
        if size < HEADER_LEN or pos + size > limit:
            return None
        body = pos + HEADER_LEN
        body_end = pos + size
        if checksum:
            body_end -= CHECKSUM_LEN
            if body_end < body:
                return None
            if event_crc32(p + pos, <size_t> (body_end - pos)) != <uint32_t> le(p + body_end, 4):
                return None
        n = body_end - body
        if first and code == MYSQL_GTID and not is_mariadb:
            mysql = _mysql_gtid(p, body, n)
            if mysql is None:
                return None
            timestamp = <uint32_t> le(p + pos, 4)
            server_id = <uint32_t> le(p + pos + 5, 4)
            first = begun = False
        elif not begun:
            if code != QUERY or not _known_begin(p, body, n, post_lengths[QUERY - 1] if nposts >= QUERY else -1,
                                                 begins):
                return None
            begun = True
        elif first:
            if code != MARIADB_GTID or n < 13:
                return None
            flags = p[body + 12]
            if flags & NOT_ROW_ONLY:
                return None
            at = body + 13
            if flags & GROUP_COMMIT_ID:
                at += 8
            if at > body_end or (at < body_end and p[at] != 0):  # extra flags: the reader's decoder
                return None
            seq = le(p + body, 8)
            domain = le(p + body + 8, 4)
            if flags & GROUP_COMMIT_ID:
                commit_id = le(p + body + 13, 8)
            timestamp = <uint32_t> le(p + pos, 4)
            server_id = <uint32_t> le(p + pos + 5, 4)
            first = False
        elif code == TABLE_MAP:
            key = PyBytes_FromStringAndSize(NULL, n + 2)
            k = PyBytes_AS_STRING(key)
            k[0] = <char> table_map_post
            k[1] = 1 if is_mariadb else 0
            memcpy(k + 2, p + body, n)
            table_map = table_maps.get(key)
            if table_map is None:  # not decoded yet: the reader decodes and files it
                return None
            maps[table_map.table_id] = table_map
        elif _rows_type(code):
            post = post_lengths[code - 1] if code <= nposts else (10 if code >= 30 else 8)
            if post == 6:
                if n < 6:
                    return None
                table_id = le(p + body, 4)
                at = 6
            else:
                if n < 8:
                    return None
                table_id = le(p + body, 4) | (<unsigned long long> le(p + body + 4, 2) << 32)
                at = 8
            if code >= 30 and post >= at + 2:
                if at + 2 > n:
                    return None
                extra_len = <Py_ssize_t> le(p + body + at, 2)
                if extra_len != 2:  # extra row info: the reader's decoder
                    return None
                at += extra_len
            if code < 30 and post > at:
                at = post
            if at >= n or p[body + at] >= 251:
                return None
            width = p[body + at]
            at += 1
            nbytes = (width + 7) >> 3
            if at + nbytes * (2 if code == 24 or code == 31 else 1) > n:
                return None
            if not all_set(p + body + at, width):  # a partial image: applied row by row
                return None
            at += nbytes
            if code == 24 or code == 31:
                if not all_set(p + body + at, width):
                    return None
                at += nbytes
            table_map = maps.get(table_id)
            if table_map is None:
                return None
            rows.append((table_map, code, width,
                         PyBytes_FromStringAndSize(<const char*> p + body + at, n - at)))
        elif code == XID:
            if n < 8 or not rows:
                return None
            if mysql is not None:
                return (pos + size, server_id, mysql[0], mysql[1], timestamp, <uint32_t> le(p + pos + 13, 4),
                        rows, mysql[2], mysql[3], mysql[4])
            return (pos + size, server_id, domain, seq, timestamp, <uint32_t> le(p + pos + 13, 4), rows,
                    commit_id)
        else:
            return None
        pos += size
