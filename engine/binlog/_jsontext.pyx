# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A JSON column's binary document printed as MySQL prints it, in C: the compiled form of
json_text(decode_json(...)) (json_binary/decoder.py and text.py), for the compiled row decoder.

On a MySQL log with a JSON column the two Python steps were most of a row's cost (12 us for a
document of five members, 67 us for one of 600 bytes). Here the document is walked once and its
text written straight into a buffer, with no Python object per member.

What is read here is what real documents hold: objects and arrays of both sizes, strings,
integers, doubles (in MySQL's my_gcvt form, as text.format_double prints them) and literals. Anything
else hands the whole document to the Python forms, which then give its text or its error, so both
decoders agree by construction: an opaque value (a DECIMAL or a temporal inside JSON), a document
Python would refuse (bounds, nesting, overlapping data, bad UTF-8, unknown types), and an object
whose keys are not in MySQL's order (shortest first, then by bytes), which is the one way to hold
a key twice (Python keeps one of them, as a dict does).
tests/test_jsontext_compiled.py compares the two.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdio cimport snprintf
from libc.math cimport fabs, isinf, isnan, signbit
from libc.stdlib cimport atoi, free, realloc
from libc.string cimport memcmp, memcpy


cdef extern from "Python.h":
    char* PyOS_double_to_string(double value, char format_code, int precision, int flags, int* kind)

from engine.binlog._bytes cimport le as _le, valid_utf8
from engine.binlog._text cimport Text, put, put_json_string, put_signed, put_unsigned

# The binary format's value types (json_binary/decoder.py)
cdef enum:
    SMALL_OBJECT = 0x00
    LARGE_OBJECT = 0x01
    SMALL_ARRAY = 0x02
    LARGE_ARRAY = 0x03
    LITERAL = 0x04
    INT16 = 0x05
    UINT16 = 0x06
    INT32 = 0x07
    UINT32 = 0x08
    INT64 = 0x09
    UINT64 = 0x0A
    DOUBLE = 0x0B
    STRING = 0x0C

cdef enum:
    MAX_DEPTH = 150  # decoder.MAX_DEPTH: deeper documents are refused
    HANDED_BACK = -1  # a walker's answer: the Python forms take the document


cdef int _double(Text* out, const unsigned char* p) except -2:
    """text.format_double: MySQL's my_gcvt layout of the shortest digits that read back as the
    value (Python's repr gives those digits)."""
    cdef double value
    cdef char* shown
    cdef char digits[32]
    cdef char text[400]
    cdef int n = 0, decpt = 0, whole = 0, exponent = 0, i = 0, k = 0, zeros = 0, width, exp_len
    cdef int f_len
    cdef bint seen_point = False, have_space, force_e, use_f
    memcpy(&value, p, 8)
    if isnan(value) or isinf(value):
        return put(out, b"0.0", 3)  # dtoa reports an overflow and my_gcvt prints 0
    shown = PyOS_double_to_string(fabs(value), b"r", 0, 0, NULL)
    if shown == NULL:
        raise MemoryError()
    try:
        # repr's digits without leading and trailing zeros, and where the point goes
        while shown[i] and shown[i] != b"e":
            if shown[i] == b".":
                seen_point = True
            else:
                if not seen_point:
                    whole += 1
                if n == 0 and shown[i] == b"0":
                    zeros += 1
                elif n < 31:
                    digits[n] = shown[i]
                    n += 1
            i += 1
        if shown[i] == b"e":
            exponent = atoi(shown + i + 1)
    finally:
        PyMem_Free(shown)
    decpt = whole + exponent - zeros
    while n and digits[n - 1] == b"0":
        n -= 1
    if n == 0:
        digits[0], n, decpt = b"0", 1, 1
    if signbit(value):
        text[k] = b"-"
        k += 1
    width = 34 - (1 if value < 0 else 0)
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    if decpt <= 0:
        f_len = n - decpt + 2
    elif decpt < n:
        f_len = n + 1
    else:
        f_len = decpt
    have_space = f_len <= width
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    use_f = (
        have_space
        or (decpt <= width and (decpt >= -1 or (decpt == -2 and (n > 1 or not force_e))) and not force_e)
    ) and (not have_space or (decpt >= -14 and (decpt <= 15 or n > decpt)))
    if use_f:
        if decpt <= 0:
            text[k], text[k + 1] = b"0", b"."
            k += 2
            for i in range(-decpt):
                text[k] = b"0"
                k += 1
            memcpy(text + k, digits, n)
            k += n
        elif decpt < n:
            memcpy(text + k, digits, decpt)
            k += decpt
            text[k] = b"."
            memcpy(text + k + 1, digits + decpt, n - decpt)
            k += n - decpt + 1
        else:
            memcpy(text + k, digits, n)
            k += n
            for i in range(decpt - n):
                text[k] = b"0"
                k += 1
            text[k], text[k + 1] = b".", b"0"  # a whole number keeps its '.0'
            k += 2
        return put(out, text, k)
    text[k] = digits[0]
    k += 1
    if n > 1:
        text[k] = b"."
        memcpy(text + k + 1, digits + 1, n - 1)
        k += n
    k += snprintf(text + k, 16, "e%d", decpt - 1)
    return put(out, text, k)


cdef int _literal(Text* out, unsigned int code) except -2:
    if code == 0:
        return put(out, b"null", 4)
    if code == 1:
        return put(out, b"true", 4)
    if code == 2:
        return put(out, b"false", 5)
    return HANDED_BACK


cdef class _Walk:
    """One document's walk: its bytes and what is left of its budget (decoder._Decoder.budget:
    entries, keys and strings of a real document never add up to more than its size)."""

    cdef const unsigned char* buf
    cdef Py_ssize_t budget

    cdef int spend(self, Py_ssize_t amount) noexcept:
        self.budget -= amount
        return HANDED_BACK if self.budget < 0 else 0

    cdef int string(self, Text* out, Py_ssize_t pos, Py_ssize_t end) except -2:
        """A string with its length in 7-bit groups (at most 5 bytes, at most 32 bits)."""
        cdef uint64_t n = 0
        cdef int i
        cdef unsigned char b
        if pos >= end:
            return HANDED_BACK
        for i in range(5):
            if pos + i >= end:
                return HANDED_BACK
            b = self.buf[pos + i]
            n |= <uint64_t> (b & 0x7F) << (7 * i)
            if not b & 0x80:
                break
        else:
            return HANDED_BACK
        if n > 0xFFFFFFFF:
            return HANDED_BACK
        pos += i + 1
        if <uint64_t> (end - pos) < n or self.spend(<Py_ssize_t> n) or not valid_utf8(self.buf + pos, <Py_ssize_t> n):
            return HANDED_BACK
        return put_json_string(out, self.buf + pos, <Py_ssize_t> n)

    cdef int value(self, Text* out, int kind, Py_ssize_t pos, Py_ssize_t end, int depth) except -2:
        """The value of type `kind` at pos (end: its container's end)."""
        cdef const unsigned char* p = self.buf + pos
        if kind <= LARGE_ARRAY:
            return self.container(out, kind, pos, end, depth)
        if kind == STRING:
            return self.string(out, pos, end)
        if kind == LITERAL:
            return _literal(out, p[0]) if pos < end else HANDED_BACK
        if kind == INT16 or kind == UINT16:
            if pos + 2 > end:
                return HANDED_BACK
            return put_signed(out, <int16_t> _le(p, 2) if kind == INT16 else <int64_t> _le(p, 2))
        if kind == INT32 or kind == UINT32:
            if pos + 4 > end:
                return HANDED_BACK
            return put_signed(out, <int32_t> _le(p, 4) if kind == INT32 else <int64_t> _le(p, 4))
        if kind == INT64 or kind == UINT64 or kind == DOUBLE:
            if pos + 8 > end:
                return HANDED_BACK
            if kind == INT64:
                return put_signed(out, <int64_t> _le(p, 8))
            if kind == UINT64:
                return put_unsigned(out, _le(p, 8))
            return _double(out, p)
        return HANDED_BACK  # opaque values, unknown types

    cdef int container(self, Text* out, int kind, Py_ssize_t pos, Py_ssize_t end, int depth) except -2:
        cdef bint large = kind & 1, is_object = kind <= LARGE_OBJECT
        cdef int width = 4 if large else 2  # of a count, a size, an offset
        cdef int key_entry = width + 2, value_entry = 1 + width
        cdef Py_ssize_t count, size, keys_start, values_start, header, cend, i, at, stop, entry
        cdef Py_ssize_t key_offset, key_length, previous_offset = 0, previous_length = -1
        cdef int entry_kind, order
        cdef uint64_t inline_value
        cdef const unsigned char* buf = self.buf
        if depth >= MAX_DEPTH or pos + 2 * width > end:
            return HANDED_BACK
        count = <Py_ssize_t> _le(buf + pos, width)
        size = <Py_ssize_t> _le(buf + pos + width, width)
        if size > end - pos:
            return HANDED_BACK
        keys_start = pos + 2 * width
        values_start = keys_start + (count * key_entry if is_object else 0)
        header = values_start + count * value_entry - pos
        if header > size or self.spend(count):
            return HANDED_BACK
        cend = pos + size
        put(out, b"{" if is_object else b"[", 1)
        for i in range(count):
            if i:
                put(out, b", ", 2)
            if is_object:
                entry = keys_start + i * key_entry
                key_offset = <Py_ssize_t> _le(buf + entry, width)
                key_length = <Py_ssize_t> _le(buf + entry + width, 2)
                if key_offset < header or key_offset + key_length > size or self.spend(key_length):
                    return HANDED_BACK
                # MySQL's order: shorter keys first, equal lengths by their bytes; a key out of
                # that order (or twice) is the Python decoder's to settle
                if key_length == previous_length:
                    order = memcmp(buf + pos + previous_offset, buf + pos + key_offset, key_length)
                    if order >= 0:
                        return HANDED_BACK
                elif key_length < previous_length:
                    return HANDED_BACK
                previous_offset, previous_length = key_offset, key_length
                if not valid_utf8(buf + pos + key_offset, key_length):
                    return HANDED_BACK
                put_json_string(out, buf + pos + key_offset, key_length)
                put(out, b": ", 2)
            entry = values_start + i * value_entry
            entry_kind = buf[entry]
            inline_value = _le(buf + entry + 1, width)
            if entry_kind == INT16:
                put_signed(out, <int16_t> (inline_value & 0xFFFF))
            elif entry_kind == LITERAL:
                if _literal(out, inline_value & 0xFF) == HANDED_BACK:
                    return HANDED_BACK
            elif entry_kind == UINT16:
                put_signed(out, inline_value & 0xFFFF)
            elif large and entry_kind == INT32:
                put_signed(out, <int32_t> inline_value)
            elif large and entry_kind == UINT32:
                put_signed(out, <int64_t> inline_value)
            else:
                if inline_value < <uint64_t> header or inline_value > <uint64_t> size:
                    return HANDED_BACK
                at = pos + <Py_ssize_t> inline_value
                if entry_kind == STRING and at < cend and buf[at] < 0x80:
                    # short strings, most of a real document: their length in one byte
                    stop = at + 1 + buf[at]
                    if stop > cend or self.spend(stop - at - 1) or not valid_utf8(buf + at + 1, stop - at - 1):
                        return HANDED_BACK
                    put_json_string(out, buf + at + 1, stop - at - 1)
                elif self.value(out, entry_kind, at, cend, depth + 1) == HANDED_BACK:
                    return HANDED_BACK
        put(out, b"}" if is_object else b"]", 1)
        return 0


cdef object document_text(const unsigned char* p, Py_ssize_t n):
    """The document's text, or None where the Python forms must take it."""
    cdef Text out
    cdef _Walk walk
    if n == 0:
        return "null"  # an empty value is JSON null (INSERT IGNORE of NULL into NOT NULL JSON)
    walk = _Walk.__new__(_Walk)
    walk.buf = p
    walk.budget = n
    out.data = NULL
    out.length = out.capacity = 0
    try:
        if walk.value(&out, p[0], 1, n, 0) == HANDED_BACK:
            return None
        return PyUnicode_DecodeUTF8(out.data, out.length, NULL)
    finally:
        free(out.data)


def json_document_text(bytes document):
    """json_text(decode_json(document)) where this module reads the document, else None."""
    return document_text(<const unsigned char*> PyBytes_AS_STRING(document), PyBytes_GET_SIZE(document))


cdef class JsonColumnReader:
    """A JSON column's reader for the compiled row decoder (an OP_PYTHON reader: (buf, pos) ->
    (value, pos)): its length in `length_bytes` (1-4) little-endian bytes, then the document.
    `fallback`, the column's Python reader, reads what this one hands back, and a value cut short."""

    cdef int length_bytes
    cdef object fallback

    def __cinit__(self, int length_bytes, fallback):
        if not 1 <= length_bytes <= 4:
            raise ValueError("a JSON column's length takes 1 to 4 bytes")
        self.length_bytes = length_bytes
        self.fallback = fallback

    def __call__(self, bytes buf, Py_ssize_t pos):
        cdef Py_ssize_t end = PyBytes_GET_SIZE(buf)
        cdef const unsigned char* p = <const unsigned char*> PyBytes_AS_STRING(buf)
        cdef Py_ssize_t n, start
        if 0 <= pos and pos + self.length_bytes <= end:
            n = <Py_ssize_t> _le(p + pos, self.length_bytes)
            start = pos + self.length_bytes
            if n <= end - start:
                text = document_text(p + start, n)
                if text is not None:
                    return text, start + n
        return self.fallback(buf, pos)
