# cython: language_level=3
"""The CRC32 of an event (zlib's polynomial), over the mapped bytes without copying them: the C
modules that verify events. event_crc.h picks the implementation when the module is built."""

from libc.stdint cimport uint32_t


cdef extern from "event_crc.h":
    uint32_t event_crc32(const unsigned char* buf, size_t length) nogil
