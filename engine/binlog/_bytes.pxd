# cython: language_level=3
"""Unsigned integers of n bytes (1-8) read from raw binlog bytes, column bitmaps and the UTF-8
check, shared by the C modules."""

from libc.stdint cimport uint64_t
from libc.string cimport memcpy


cdef inline uint64_t le(const unsigned char* p, int n) noexcept:
    """Little-endian: the byte order of every binlog field but a few temporal encodings."""
    cdef uint64_t v = 0
    cdef int i
    for i in range(n - 1, -1, -1):
        v = (v << 8) | p[i]
    return v


cdef inline uint64_t be(const unsigned char* p, int n) noexcept:
    """Big-endian: DATETIME2, TIMESTAMP2, TIME2 and DECIMAL images."""
    cdef uint64_t v = 0
    cdef int i
    for i in range(n):
        v = (v << 8) | p[i]
    return v


cdef inline bint all_set(const unsigned char* p, Py_ssize_t width) noexcept:
    """Whether a column bitmap of `width` bits has every bit set (a full row image)."""
    cdef Py_ssize_t full = width >> 3, i
    for i in range(full):
        if p[i] != 0xFF:
            return False
    cdef int rest = width & 7
    if rest:
        return (p[full] & ((1 << rest) - 1)) == ((1 << rest) - 1)
    return True


cdef inline bint valid_utf8(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether Python's strict UTF-8 decoder takes the bytes: no overlong forms, no surrogates,
    nothing above U+10FFFF."""
    cdef Py_ssize_t i = 0
    cdef int length, j
    cdef unsigned char c, lo, hi
    cdef uint64_t word
    while i < n:
        if i + 8 <= n:
            memcpy(&word, p + i, 8)
            if not (word & <uint64_t> 0x8080808080808080):
                i += 8
                continue
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        # the sequence's length, and the range of its second byte that keeps it shortest-form,
        # off the surrogates and at most U+10FFFF; every later byte is a plain continuation
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            length = 2
        elif 0xE0 <= c <= 0xEF:
            length = 3
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            length = 4
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            return False
        if i + length > n or not (lo <= p[i + 1] <= hi):
            return False
        for j in range(2, length):
            if not (0x80 <= p[i + j] <= 0xBF):
                return False
        i += length
    return True
