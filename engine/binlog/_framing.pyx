# cython: language_level=3, boundscheck=False, wraparound=False
"""The reader's event loop in C: the compiled form of reader.BinlogFile._events.

The same steps in the same order, with the same errors: common header, bounds, CRC32
(event_crc.h, over the mapped bytes, without copying them), one copy of the body, the event's
decoder, the positions. Only the per-event work of the loop moves to C; the decoders and
everything that happens once per file (format descriptions, transaction payloads) stay the
Python ones.
tests/test_framing_compiled.py checks that both forms give the same events and errors.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, realloc

from engine.binlog._bytes cimport le
from engine.binlog._event_crc cimport event_crc32


cdef enum:
    HEADER_LEN = 19
    CHECKSUM_LEN = 4
    FDE = 15
    ROTATE = 4
    IGNORABLE = 0x80
    ARTIFICIAL = 0x20
    CRC32 = 1


cdef struct Frame:
    uint32_t timestamp
    int type_code
    uint32_t server_id
    uint32_t size
    uint32_t log_pos
    int flags


cdef inline Py_ssize_t _size_at(const unsigned char* p) noexcept nogil:
    """The event length in the common header at p."""
    return <Py_ssize_t> (p[9] | (p[10] << 8) | (p[11] << 16) | (<uint32_t> p[12] << 24))


cdef Py_ssize_t _walk_over(object data, Py_ssize_t pos, Py_ssize_t start, Py_ssize_t end) except -1:
    """Where a walk over the headers before `start` must look closer: the first event from pos
    on that is a format description or a rotation, that does not frame, or that starts at or
    after `start` (or `end`). The interpreter lock is released meanwhile: the coordinator walks
    whole relay files this way while the workers apply."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t size
    cdef int code
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    p = <const unsigned char*> view.buf
    with nogil:
        while pos < start and end - pos >= HEADER_LEN:
            size = _size_at(p + pos)
            code = p[pos + 4]
            if size < HEADER_LEN or pos + size > end or code == FDE or code == ROTATE:
                break
            pos += size
    PyBuffer_Release(&view)
    return pos


cdef int _header(object data, Py_ssize_t pos, Frame* frame) except -1:
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef const unsigned char* p = <const unsigned char*> view.buf + pos
    frame.timestamp = <uint32_t> le(p, 4)
    frame.type_code = p[4]
    frame.server_id = <uint32_t> le(p + 5, 4)
    frame.size = <uint32_t> le(p + 9, 4)
    frame.log_pos = <uint32_t> le(p + 13, 4)
    frame.flags = p[17] | (p[18] << 8)
    PyBuffer_Release(&view)
    return 0


cdef object _checked_body(object data, Py_ssize_t pos, Py_ssize_t body_end, bint checksum):
    """The body's bytes; None when the stored CRC32 (after body_end) does not match."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef const unsigned char* p = <const unsigned char*> view.buf
    cdef object body
    try:
        if checksum and event_crc32(p + pos, <size_t> (body_end - pos)) != <uint32_t> le(p + body_end, 4):
            return None
        body = PyBytes_FromStringAndSize(<const char*> p + pos + HEADER_LEN, body_end - pos - HEADER_LEN)
    finally:
        PyBuffer_Release(&view)
    return body


def events(binlog, state, Py_ssize_t start, Py_ssize_t end, bint partial_tail_ok, bint resume, tuple kit):
    """BinlogFile._events, compiled; `kit` carries the Python objects it builds and raises."""
    (
        LoggedEvent, EventHeader, decoders, event_type_name, BinlogError, ChecksumMismatch,
        TruncatedEvent, UnknownEvent, IgnoredEvent, Rotate, TransactionPayload, decode_errors,
        failure_text,
    ) = kit
    cdef Frame f
    cdef Py_ssize_t pos, next_pos, body_end
    cdef bint artificial
    data, name, path = binlog._data, binlog.name, str(binlog.path)
    new_tuple = tuple.__new__
    if resume and state.read_file == path and state.read_pos <= start:
        pos, own_server_id = state.read_pos, state.read_file_server_id
    else:
        pos, own_server_id = 4, None
        state.read_file, state.read_file_server_id = path, None
    context = state.context
    while pos < end:
        if pos < start:
            pos = _walk_over(data, pos, start, end)
            if pos >= end:
                break
        state.read_pos = pos
        if end - pos < HEADER_LEN:
            if partial_tail_ok:
                return
            raise TruncatedEvent(name, pos, f"file ends {end - pos} bytes into an event header")
        _header(data, pos, &f)
        if f.size < HEADER_LEN:
            raise BinlogError(name, pos, f"event length {f.size} is shorter than the event header")
        if pos + f.size > end:
            if partial_tail_ok:
                return
            raise TruncatedEvent(
                name,
                pos,
                f"{event_type_name(f.type_code)} event of {f.size} bytes runs past the end of the file ({end - pos} bytes left)",
            )
        next_pos = pos + f.size
        if pos < start and f.type_code != FDE and f.type_code != ROTATE:
            pos = next_pos  # walked over for the format and source file name only
            continue
        header = new_tuple(EventHeader, (f.timestamp, f.type_code, f.server_id, f.size, f.log_pos, f.flags))
        if f.type_code == FDE:
            event = binlog._format_description(header, pos, state)
            context = state.context
            if pos == 4:
                own_server_id = state.read_file_server_id = f.server_id
            if pos >= start:
                yield LoggedEvent(
                    event, header, name, pos, next_pos, state.source_log_file or name, copied_fde=pos != 4
                )
            pos = next_pos
            continue
        body_end = next_pos
        checksum = context.checksum_alg == CRC32
        if checksum:
            body_end -= CHECKSUM_LEN
            if body_end < pos + HEADER_LEN:
                raise BinlogError(name, pos, f"event length {f.size} leaves no room for its checksum")
        body = _checked_body(data, pos, body_end, checksum)
        if body is None:
            raise ChecksumMismatch(
                name, pos, f"{event_type_name(f.type_code)} event fails its CRC32 check (corrupt data)"
            )
        decoder = decoders.get(f.type_code)
        if decoder is None:
            if f.flags & IGNORABLE:
                state.ignored_events += 1
                if pos >= start:
                    yield LoggedEvent(
                        IgnoredEvent(header, body), header, name, pos, next_pos, state.source_log_file or name
                    )
                pos = next_pos
                continue
            raise UnknownEvent(name, pos, f"unknown event type {f.type_code} without the ignorable flag")
        try:
            event = decoder(header, body, context)
        except decode_errors as exc:
            raise BinlogError(
                name, pos, f"bad {event_type_name(f.type_code)} event: {failure_text(exc, len(body))}"
            ) from None
        artificial = (f.flags & ARTIFICIAL) != 0 or (f.type_code == ROTATE and f.log_pos == 0)
        if isinstance(event, Rotate):
            from_source = f.server_id != own_server_id
            if artificial:
                state.source_log_file = event.next_file
            if pos >= start:
                yield LoggedEvent(event, header, name, pos, next_pos, state.source_log_file or name, artificial)
            if from_source and not artificial:
                state.source_log_file = event.next_file
            pos = next_pos
            continue
        if pos >= start:
            yield new_tuple(
                LoggedEvent,
                (event, header, name, pos, next_pos, state.source_log_file or name, artificial, False, False),
            )
            if isinstance(event, TransactionPayload):
                yield from binlog._inner_events(event, pos, next_pos, state)
        pos = next_pos
    state.read_pos = pos



def transaction_starts(data, Py_ssize_t start, Py_ssize_t end, object codes):
    """Positions of the events in [start, end) whose type is in `codes` (the GTID events that
    open transactions). Headers only: nothing is decoded or verified here (whoever reads the
    segments between them does that); a header that does not frame ends the walk."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef Py_ssize_t pos = start, size
    cdef unsigned char wanted[256]
    cdef int code
    for code in range(256):
        wanted[code] = 0
    for code in codes:
        wanted[code] = 1
    cdef Py_ssize_t* found = NULL
    cdef Py_ssize_t count = 0, room = 0, i
    cdef void* grown
    cdef bint failed = False
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*> view.buf
        with nogil:  # the coordinator plans segments this way while the workers apply
            while pos + HEADER_LEN <= end:
                size = _size_at(p + pos)
                if size < HEADER_LEN or pos + size > end:
                    break
                if wanted[p[pos + 4]]:
                    if count == room:
                        room = 1024 if room == 0 else room * 2
                        grown = realloc(found, room * sizeof(Py_ssize_t))
                        if grown == NULL:
                            failed = True
                            break
                        found = <Py_ssize_t*> grown
                    found[count] = pos
                    count += 1
                pos += size
        if failed:
            raise MemoryError()
        return [found[i] for i in range(count)]
    finally:
        free(found)
        PyBuffer_Release(&view)


def source_positions_follow(
    data, Py_ssize_t at, Py_ssize_t end, long long expected, bint resync, int table_map
):
    """The relay-log continuity check of the source positions of the events in [at, end), as
    Continuity._source_event makes it event by event: each event that logs its end_log_pos must
    start where the one before ended (a table map may start later, MariaDB leaving out the
    Annotate_rows before it; after a resync, any later start). expected -1: nothing expected yet.

    Returns (-1, the position the next event must start at) when every event follows, else the
    offset of the first one that does not (or whose header does not frame) with what was expected
    there: the Python check goes on from that event and reports it as it always has."""
    cdef Py_buffer view
    cdef const unsigned char* p
    cdef long long size, log_pos, start
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*> view.buf
        while at < end:
            if at + HEADER_LEN > end:
                return (at, expected)
            size = <long long> le(p + at + 9, 4)
            if size < HEADER_LEN or at + size > end:
                return (at, expected)
            log_pos = <long long> le(p + at + 13, 4)
            if log_pos:
                start = log_pos - size
                if (
                    expected >= 0
                    and start != expected
                    and not (start > expected and (resync or p[at + 4] == table_map))
                ):
                    return (at, expected)
                expected = log_pos
            at += size
    finally:
        PyBuffer_Release(&view)
    return (-1, expected)
