# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Row images decoded in C: the compiled form of the decoders columns.RowDecoder generates.

A RowProgram is built once per (table map, event kind, present-column bitmaps) from one opcode
per present column. The common column types (integers, FLOAT/DOUBLE, YEAR, DATE, DATETIME2,
TIMESTAMP2, strings and blobs) are read here; every other type, and every value these fast paths
do not cover exactly (zero dates, out-of-range fractions), is handed to the Python reader of that
column, so both decoders give the same values. tests/test_rowimage_compiled.py checks that they do.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.datetime cimport date_new, datetime_new, import_datetime, timedelta_new
from cpython.float cimport PyFloat_FromDouble
from cpython.list cimport PyList_Append
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.unicode cimport PyUnicode_Decode
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from engine.binlog._bytes cimport be as _be, le as _le

import_datetime()

# Opcodes; columns.py maps column types onto them (the numbers are shared through OPCODES).
cdef enum:
    OP_PYTHON = 0  # refs[i](buf, pos) -> (value, pos)
    OP_I8 = 1
    OP_U8 = 2
    OP_I16 = 3
    OP_U16 = 4
    OP_I24 = 5
    OP_U24 = 6
    OP_I32 = 7
    OP_U32 = 8
    OP_I64 = 9
    OP_U64 = 10
    OP_FLOAT = 11
    OP_DOUBLE = 12
    OP_YEAR = 13
    OP_DATE = 14
    OP_DATETIME2 = 15  # arg: fractional-second digits
    OP_TIMESTAMP2 = 16  # arg: fractional-second digits
    OP_STRING = 17  # arg: length-prefix bytes (1..4); refs[i]: codec (bytes) or None for bytes

OPCODES = {
    "python": OP_PYTHON, "i8": OP_I8, "u8": OP_U8, "i16": OP_I16, "u16": OP_U16,
    "i24": OP_I24, "u24": OP_U24, "i32": OP_I32, "u32": OP_U32, "i64": OP_I64, "u64": OP_U64,
    "float": OP_FLOAT, "double": OP_DOUBLE, "year": OP_YEAR, "date": OP_DATE,
    "datetime2": OP_DATETIME2, "timestamp2": OP_TIMESTAMP2, "string": OP_STRING,
}

cdef int[13] _DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


cdef inline bint _valid_date(long year, long month, long day):
    if year < 1 or year > 9999 or month < 1 or month > 12 or day < 1:
        return False
    if month == 2 and day == 29:
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= _DAYS_IN_MONTH[month]


cdef class RowProgram:
    """Decodes every row of a rows event into the caller's lists, one per present column."""

    cdef int ncols  # present columns over both images
    cdef int first  # of which in the first image
    cdef bint two_images  # UPDATE: a second image follows each first one
    cdef int* ops
    cdef int* args
    cdef list refs
    cdef tuple fallbacks  # (make_date, make_datetime, make_timestamp, epoch, datetime2)

    def __cinit__(
        self, list first_ops, list second_ops, bint two_images, tuple fallbacks
    ):
        cdef int i
        cdef list all_ops = first_ops + second_ops
        self.ncols = len(all_ops)
        self.first = len(first_ops)
        self.two_images = two_images
        self.ops = <int*> malloc(max(self.ncols, 1) * sizeof(int))
        self.args = <int*> malloc(max(self.ncols, 1) * sizeof(int))
        if self.ops == NULL or self.args == NULL:
            raise MemoryError()
        self.refs = []
        for i in range(self.ncols):
            op, arg, ref = all_ops[i]
            self.ops[i] = op
            self.args[i] = arg
            self.refs.append(ref)
        self.fallbacks = fallbacks

    def __dealloc__(self):
        free(self.ops)
        free(self.args)

    def decode_into(self, bytes data, list outs):
        """Every row of the event, appended to the caller's lists: outs[i] takes present column i
        (first image's, then second image's). An UPDATE's two images may share lists, which then
        hold each row's before and after values in turn. (end position, rows); ValueError if
        malformed, after appending what came before the fault."""
        if len(outs) != self.ncols:
            raise ValueError("one list per present column")
        cdef Py_ssize_t end = PyBytes_GET_SIZE(data)
        cdef Py_ssize_t pos = 0
        cdef Py_ssize_t start
        cdef long rows = 0
        while pos < end:
            start = pos
            pos = self._image(data, pos, end, 0, self.first, outs)
            if self.two_images:
                pos = self._image(data, pos, end, self.first, self.ncols, outs)
            if pos == start:
                raise ValueError("row image holds no columns")
            rows += 1
        return pos, rows

    cdef Py_ssize_t _image(
        self, bytes data, Py_ssize_t pos, Py_ssize_t end, int lo, int hi, list outs
    ) except -1:
        cdef const unsigned char* buf = <const unsigned char*> PyBytes_AS_STRING(data)
        cdef int count = hi - lo
        cdef int nbytes = (count + 7) // 8
        cdef int i, k, op, arg
        cdef const unsigned char* nulls
        cdef object value
        cdef uint64_t u
        cdef int64_t s
        cdef float f32
        cdef double f64
        cdef long year, month, day, hour, minute, second, micro, frac_bytes
        cdef Py_ssize_t n
        if pos + nbytes > end:
            raise ValueError("row image ends inside its NULL bitmap")
        nulls = buf + pos
        pos += nbytes
        for k in range(count):
            i = lo + k
            if nulls[k >> 3] & (1 << (k & 7)):
                PyList_Append(outs[i], None)
                continue
            op = self.ops[i]
            arg = self.args[i]
            if op == OP_PYTHON:
                value, pos = self.refs[i](data, pos)
                PyList_Append(outs[i], value)
                continue
            if op == OP_STRING:
                if pos + arg > end:
                    raise ValueError("row image ends inside a length")
                n = <Py_ssize_t> _le(buf + pos, arg)
                pos += arg
                if pos + n > end:
                    raise ValueError("row image ends inside a string")
                ref = self.refs[i]
                if ref is None:
                    value = PyBytes_FromStringAndSize(<const char*> buf + pos, n)
                else:
                    value = PyUnicode_Decode(<const char*> buf + pos, n, PyBytes_AS_STRING(ref), "surrogateescape")
                pos += n
                PyList_Append(outs[i], value)
                continue
            if op <= OP_U8 or op == OP_YEAR:
                n = 1
            elif op <= OP_U16:
                n = 2
            elif op <= OP_U24 or op == OP_DATE:
                n = 3
            elif op <= OP_U32 or op == OP_FLOAT:
                n = 4
            elif op == OP_DATETIME2:
                n = 5 + (arg + 1) // 2
            elif op == OP_TIMESTAMP2:
                n = 4 + (arg + 1) // 2
            else:
                n = 8
            if pos + n > end:
                raise ValueError("row image ends inside a value")
            if op == OP_I8:
                value = PyLong_FromLongLong(<signed char> buf[pos])
            elif op == OP_U8:
                value = PyLong_FromLongLong(buf[pos])
            elif op == OP_I16:
                value = PyLong_FromLongLong(<short> _le(buf + pos, 2))
            elif op == OP_U16:
                value = PyLong_FromLongLong(<long long> _le(buf + pos, 2))
            elif op == OP_I24:
                s = <int64_t> _le(buf + pos, 3)
                if s & 0x800000:
                    s -= 0x1000000
                value = PyLong_FromLongLong(s)
            elif op == OP_U24:
                value = PyLong_FromLongLong(<long long> _le(buf + pos, 3))
            elif op == OP_I32:
                value = PyLong_FromLongLong(<int> _le(buf + pos, 4))
            elif op == OP_U32:
                value = PyLong_FromLongLong(<long long> _le(buf + pos, 4))
            elif op == OP_I64:
                value = PyLong_FromLongLong(<long long> _le(buf + pos, 8))
            elif op == OP_U64:
                value = PyLong_FromUnsignedLongLong(_le(buf + pos, 8))
            elif op == OP_FLOAT:
                memcpy(&f32, buf + pos, 4)
                value = PyFloat_FromDouble(<double> f32)
            elif op == OP_DOUBLE:
                memcpy(&f64, buf + pos, 8)
                value = PyFloat_FromDouble(f64)
            elif op == OP_YEAR:
                value = PyLong_FromLongLong(1900 + buf[pos] if buf[pos] else 0)
            elif op == OP_DATE:
                u = _le(buf + pos, 3)
                year, month, day = u >> 9, (u >> 5) & 15, u & 31
                if _valid_date(year, month, day):
                    value = date_new(year, month, day)
                else:
                    value = self.fallbacks[0](year, month, day)
            elif op == OP_DATETIME2:
                s = <int64_t> _be(buf + pos, 5) - 0x8000000000
                micro = _fraction(buf + pos + 5, arg)
                if s < 0:
                    # no valid date; Python's floor division on negatives names it (C's differs)
                    value = self.fallbacks[4](s + 0x8000000000, micro)
                else:
                    u = <uint64_t> s
                    year = (u >> 22) // 13
                    month = (u >> 22) % 13
                    day = (u >> 17) & 31
                    hour = (u >> 12) & 31
                    minute = (u >> 6) & 63
                    second = u & 63
                    if (
                        _valid_date(year, month, day) and micro <= 999999 and hour <= 23
                        and minute <= 59 and second <= 59
                    ):
                        value = datetime_new(year, month, day, hour, minute, second, micro, None)
                    else:
                        value = self.fallbacks[1](year, month, day, hour, minute, second, micro)
            else:  # OP_TIMESTAMP2
                u = _be(buf + pos, 4)
                micro = _fraction(buf + pos + 4, arg)
                if (u == 0 and micro == 0) or micro > 999999:
                    value = self.fallbacks[2](u, micro)
                else:
                    value = self.fallbacks[3] + timedelta_new(u // 86400, u % 86400, micro)
            pos += n
            PyList_Append(outs[i], value)
        return pos


cdef inline long _fraction(const unsigned char* p, int fsp):
    cdef int n = (fsp + 1) // 2
    if n == 0:
        return 0
    if n == 1:
        return <long> _be(p, 1) * 10000
    if n == 2:
        return <long> _be(p, 2) * 100
    return <long> _be(p, 3)
