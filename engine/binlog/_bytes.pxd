# cython: language_level=3
"""Unsigned integers of n bytes (1-8) read from raw binlog bytes, shared by the C modules."""

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
