# cython: language_level=3
"""Unsigned integers of n bytes (1-8) read from raw binlog bytes, and column bitmaps, shared by
the C modules."""

from libc.stdint cimport uint64_t


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
