# cython: language_level=3
"""A growing UTF-8 text buffer and the forms written into it that more than one C module prints:
integers, and strings as JSON quotes them (binlog/_jsontext.pyx, binlog/_rowimage.pyx)."""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport realloc
from libc.string cimport memcpy


cdef struct Text:
    char* data  # malloc'd: whoever fills a Text frees it
    Py_ssize_t length
    Py_ssize_t capacity


cdef inline int put(Text* out, const char* p, Py_ssize_t n) except -1:
    cdef Py_ssize_t size
    cdef void* grown
    if out.length + n > out.capacity:
        size = max(256, out.capacity * 2, out.length + n)
        grown = realloc(out.data, size)
        if grown == NULL:
            raise MemoryError()
        out.data = <char*> grown
        out.capacity = size
    memcpy(out.data + out.length, p, n)
    out.length += n
    return 0


cdef inline int put_unsigned(Text* out, uint64_t value) except -1:
    cdef char digits[24]
    cdef int n = 24
    while True:
        n -= 1
        digits[n] = <char> (48 + value % 10)
        value //= 10
        if value == 0:
            break
    return put(out, digits + n, 24 - n)


cdef inline int put_signed(Text* out, int64_t value) except -1:
    if value < 0:
        put(out, b"-", 1)
        return put_unsigned(out, <uint64_t> 0 - <uint64_t> value)
    return put_unsigned(out, <uint64_t> value)


cdef inline int put_json_string(Text* out, const unsigned char* p, Py_ssize_t n) except -1:
    """Valid UTF-8 between double quotes as JSON writes a string (json.dumps with ensure_ascii
    off, and MySQL's JSON text alike): the quote, the backslash and the C0 controls escaped
    (backspace, tab, newline, form feed and carriage return by their letters, the others as
    u00XX with lowercase hex digits), every other character as it is."""
    cdef const char* hex_digits = b"0123456789abcdef"
    cdef const char* letters = b"btn?fr"  # for 8, 9, 10, 12 and 13
    cdef Py_ssize_t i, run = 0
    cdef unsigned char c
    cdef char escape[6]
    escape[0], escape[1], escape[2], escape[3] = 92, 117, 48, 48  # a backslash-u00XX escape
    put(out, b'"', 1)
    for i in range(n):
        c = p[i]
        if c >= 0x20 and c != 34 and c != 92:
            continue
        put(out, <const char*> p + run, i - run)
        run = i + 1
        if c == 34 or c == 92:
            put(out, b"\\", 1)
            put(out, <const char*> p + i, 1)
        elif c == 8 or c == 9 or c == 10 or c == 12 or c == 13:
            put(out, b"\\", 1)
            put(out, letters + (c - 8), 1)
        else:
            escape[4] = hex_digits[c >> 4]
            escape[5] = hex_digits[c & 15]
            put(out, escape, 6)
    put(out, <const char*> p + run, n - run)
    return put(out, b'"', 1)
