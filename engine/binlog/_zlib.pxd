# cython: language_level=3
"""zlib's CRC32, over the mapped bytes without copying them: the C modules that verify events."""


cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char* buf, unsigned int length) nogil
