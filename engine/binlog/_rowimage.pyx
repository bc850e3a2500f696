# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Row images decoded in C: the compiled form of the decoders columns.RowDecoder generates.

A RowProgram is built once per (table map, event kind, present-column bitmaps) from one opcode
per present column. The common column types (integers, FLOAT/DOUBLE, YEAR, DATE, DATETIME2,
TIMESTAMP2, TIME2, DECIMAL of up to 38 digits, BIT, ENUM, SET, strings and blobs) are read here;
every other type (JSON, GEOMETRY, VECTOR, the old temporal forms), and
every value these fast paths do not cover exactly (zero dates, out-of-range fractions, a DECIMAL's
corrupt groups or negative zero), is handed to the Python reader of that column, so both decoders
give the same values. tests/test_rowimage_compiled.py checks that they do.

Where the caller hands a ColumnBuffer instead of a list (the preparing stage, for integer,
DECIMAL and UTF-8 or binary string columns), the values go straight into Arrow's layout: no Python
object per value, and no conversion of a list afterwards. json_rows and text_rows write an event's
rows as `relaydeck events --rows` prints them (JSON, or SQL literals), integers, strings and
DECIMALs straight from their bytes, every other value through its Python form.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.datetime cimport date_new, datetime_new, import_datetime, timedelta_new
from cpython.float cimport PyFloat_FromDouble
from cpython.list cimport PyList_Append
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.unicode cimport PyUnicode_Decode, PyUnicode_DecodeASCII, PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from engine.binlog._bytes cimport be as _be, le as _le, valid_utf8
from engine.binlog._text cimport Text, put, put_json_string, put_signed, put_unsigned

from decimal import Decimal

import_datetime()

# A DECIMAL of up to 38 digits held as its unscaled integer (Arrow's decimal128 layout: 16 bytes,
# little-endian two's complement). GCC and Clang have 128-bit integers on every 64-bit target.
cdef extern from "Python.h":
    bint Py_UNICODE_ISPRINTABLE(Py_UCS4 ch)

cdef extern from *:
    ctypedef long long int128_t "__int128"
    ctypedef unsigned long long uint128_t "unsigned __int128"

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
    OP_DECIMAL = 18  # arg: precision << 8 | scale (precision 1..38); refs[i]: the Python reader
    OP_BIT = 19  # arg: bytes (1..8), big-endian
    OP_ENUM_TEXT = 20  # arg: bytes (1, 2); refs[i]: the member names (index 1 is the first)
    OP_SET_TEXT = 21  # arg: bytes (1..8); refs[i]: the member names (bit 0 is the first)
    OP_TIME2 = 22  # arg: fractional-second digits (0..6)

OPCODES = {
    "python": OP_PYTHON, "i8": OP_I8, "u8": OP_U8, "i16": OP_I16, "u16": OP_U16,
    "i24": OP_I24, "u24": OP_U24, "i32": OP_I32, "u32": OP_U32, "i64": OP_I64, "u64": OP_U64,
    "float": OP_FLOAT, "double": OP_DOUBLE, "year": OP_YEAR, "date": OP_DATE,
    "datetime2": OP_DATETIME2, "timestamp2": OP_TIMESTAMP2, "string": OP_STRING,
    "decimal": OP_DECIMAL, "bit": OP_BIT, "enum_text": OP_ENUM_TEXT, "set_text": OP_SET_TEXT,
    "time2": OP_TIME2,
}
# The widest DECIMAL read here: its unscaled value (below 10**38) fits in 128 bits and in Arrow's
# decimal128. Wider ones (MySQL allows 65 digits) are read by Python.
DECIMAL_MAX_PRECISION = 38

cdef int[13] _DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


cdef inline bint _valid_date(long year, long month, long day):
    if year < 1 or year > 9999 or month < 1 or month > 12 or day < 1:
        return False
    if month == 2 and day == 29:
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return day <= _DAYS_IN_MONTH[month]


# The kinds of ColumnBuffer
cdef enum:
    INTEGERS = 1  # 64-bit integers (every integer column type but BIGINT UNSIGNED, and YEAR)
    TEXT = 2  # UTF-8 strings
    BYTES = 3  # binary strings
    DECIMALS = 4  # DECIMAL values of up to 38 digits, as 128-bit unscaled integers

BUFFER_KINDS = {"integers": INTEGERS, "text": TEXT, "bytes": BYTES, "decimals": DECIMALS}

# Bytes of a group of 0..9 decimal digits in MySQL's binary DECIMAL, and 10**n
cdef int[10] _DIGIT_BYTES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
cdef uint64_t[20] _POW10 = [
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
    10000000000, 100000000000, 1000000000000, 10000000000000, 100000000000000,
    1000000000000000, 10000000000000000, 100000000000000000, 1000000000000000000,
    10000000000000000000,
]


cdef inline int _decimal_size(int precision, int scale) noexcept:
    cdef int integral = precision - scale
    return (integral // 9) * 4 + _DIGIT_BYTES[integral % 9] + (scale // 9) * 4 + _DIGIT_BYTES[scale % 9]


cdef bint _decimal_read(
    const unsigned char* p, int precision, int scale, uint128_t* magnitude, bint* negative
) noexcept:
    """MySQL's binary DECIMAL(precision <= 38, scale): base-10**9 groups, big-endian, the sign in
    the top bit and a negative's bytes inverted. Its unscaled magnitude and sign; False where a
    group holds more digits than it may (only corrupt bytes do), which values.decode_decimal reads
    its own way: those are left to it, so both forms give the same value."""
    cdef unsigned char raw[24]
    cdef int size = _decimal_size(precision, scale)
    cdef int integral = precision - scale
    cdef int i, lead = integral % 9, tail = scale % 9, offset = 0, width
    cdef uint64_t group
    cdef uint128_t value = 0
    memcpy(raw, p, size)
    negative[0] = not (raw[0] & 0x80)
    raw[0] ^= 0x80
    if negative[0]:
        for i in range(size):
            raw[i] ^= 0xFF
    width = _DIGIT_BYTES[lead]
    if width:
        group = _be(raw, width)
        if group >= _POW10[lead]:
            return False
        value = group
        offset = width
    for i in range(integral // 9 + scale // 9):
        group = _be(raw + offset, 4)
        if group >= 1000000000:
            return False
        value = value * 1000000000 + group
        offset += 4
    width = _DIGIT_BYTES[tail]
    if width:
        group = _be(raw + offset, width)
        if group >= _POW10[tail]:
            return False
        value = value * _POW10[tail] + group
    magnitude[0] = value
    return True


cdef inline bint _decimal_in_c(
    const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, int arg, uint128_t* magnitude,
    bint* negative
) noexcept:
    """Whether the DECIMAL (arg: precision << 8 | scale) at pos is read here, its unscaled
    magnitude and sign set: not one cut short, corrupt or a negative zero, which its Python
    reader gives its value or its error."""
    return (
        pos + _decimal_size(arg >> 8, arg & 0xFF) <= end
        and _decimal_read(buf + pos, arg >> 8, arg & 0xFF, magnitude, negative)
        and (magnitude[0] != 0 or not negative[0])
    )


cdef object _decimal_object(uint128_t magnitude, bint negative, int scale):
    """The Decimal values.decode_decimal gives for an unscaled magnitude (see _decimal_text)."""
    cdef char text[48]
    return Decimal(PyUnicode_DecodeASCII(text, _decimal_text(magnitude, negative, scale, text), NULL))


cdef object _utf8(str value):
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not valid UTF-8
        return None


cdef class ColumnBuffer:
    """A column's values decoded straight into Arrow's layout, without a Python object per value:
    64-bit integers, DECIMALs of up to 38 digits (128-bit unscaled integers, `scale` digits after
    the point), or strings (UTF-8 text, or bytes) with their offsets, and which are NULL.

    RowProgram.decode_into fills it where a list would take the values. A text value whose bytes
    are not valid UTF-8 turns the buffer into a list of Python values, decoded as RowProgram
    decodes them into lists (undecodable bytes kept as lone surrogates), so that whoever converts
    the column meets them exactly as before. It behaves as a sequence of the Python values for
    whoever reads a few of them (len, indexing, `del column[n:]`)."""

    cdef readonly int kind
    cdef readonly int precision  # DECIMALS: the column's digits (at most 38)
    cdef readonly int scale  # DECIMALS: of which after the point
    cdef Py_ssize_t length
    cdef Py_ssize_t capacity
    cdef Py_ssize_t null_count
    cdef unsigned char* valid  # one byte per value: 1 present, 0 NULL
    cdef int64_t* ints  # INTEGERS: the values
    cdef int128_t* wide  # DECIMALS: the unscaled values
    cdef int64_t* offsets  # TEXT, BYTES: where each value starts in data; offsets[length] its end
    cdef char* data
    cdef Py_ssize_t data_capacity
    cdef list objects  # not None: the column as Python values from then on

    def __cinit__(self, int kind, int precision=0, int scale=0):
        if kind not in (INTEGERS, TEXT, BYTES, DECIMALS):
            raise ValueError(f"no column buffer of kind {kind}")
        if kind == DECIMALS and not 0 <= scale <= precision <= DECIMAL_MAX_PRECISION:
            raise ValueError(f"no column buffer for DECIMAL({precision},{scale})")
        self.kind = kind
        self.precision = precision
        self.scale = scale
        self.offsets = <int64_t*> malloc(sizeof(int64_t))
        if self.offsets == NULL:
            raise MemoryError()
        self.offsets[0] = 0

    def __dealloc__(self):
        free(self.valid)
        free(self.ints)
        free(self.wide)
        free(self.offsets)
        free(self.data)

    cdef int _room(self) except -1:
        cdef Py_ssize_t size
        cdef void* grown
        if self.length < self.capacity:
            return 0
        size = max(64, self.capacity * 2)
        grown = realloc(self.valid, size)
        if grown == NULL:
            raise MemoryError()
        self.valid = <unsigned char*> grown
        if self.kind == INTEGERS:
            grown = realloc(self.ints, size * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self.ints = <int64_t*> grown
        elif self.kind == DECIMALS:
            grown = realloc(self.wide, size * sizeof(int128_t))
            if grown == NULL:
                raise MemoryError()
            self.wide = <int128_t*> grown
        else:
            grown = realloc(self.offsets, (size + 1) * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self.offsets = <int64_t*> grown
        self.capacity = size
        return 0

    cdef int push_null(self) except -1:
        if self.objects is not None:
            self.objects.append(None)
            return 0
        self._room()
        self.valid[self.length] = 0
        if self.kind == INTEGERS:
            self.ints[self.length] = 0
        elif self.kind == DECIMALS:
            self.wide[self.length] = 0
        else:
            self.offsets[self.length + 1] = self.offsets[self.length]
        self.length += 1
        self.null_count += 1
        return 0

    cdef int push_int(self, int64_t value) except -1:
        if self.objects is not None:
            self.objects.append(value)
            return 0
        self._room()
        self.valid[self.length] = 1
        self.ints[self.length] = value
        self.length += 1
        return 0

    cdef int push_decimal(self, uint128_t magnitude, bint negative) except -1:
        if self.objects is not None:
            self.objects.append(_decimal_object(magnitude, negative, self.scale))
            return 0
        self._room()
        self.valid[self.length] = 1
        self.wide[self.length] = -<int128_t> magnitude if negative else <int128_t> magnitude
        self.length += 1
        return 0

    cdef int push_bytes(self, const char* p, Py_ssize_t n) except -1:
        cdef Py_ssize_t used, size
        cdef void* grown
        if self.objects is None and self.kind == TEXT and not valid_utf8(<const unsigned char*> p, n):
            self.objects = self._values(0, self.length)
        if self.objects is not None:
            if self.kind == TEXT:
                self.objects.append(PyUnicode_Decode(p, n, "utf-8", "surrogateescape"))
            else:
                self.objects.append(PyBytes_FromStringAndSize(p, n))
            return 0
        self._room()
        used = self.offsets[self.length]
        if used + n > self.data_capacity:
            size = max(4096, self.data_capacity * 2, used + n)
            grown = realloc(self.data, size)
            if grown == NULL:
                raise MemoryError()
            self.data = <char*> grown
            self.data_capacity = size
        memcpy(self.data + used, p, n)
        self.valid[self.length] = 1
        self.offsets[self.length + 1] = used + n
        self.length += 1
        return 0

    def append(self, value):
        """One Python value (what a Python column reader gives)."""
        if value is None:
            self.push_null()
        elif self.objects is not None:
            self.objects.append(value)
        elif self.kind == INTEGERS and type(value) is int:
            self.push_int(value)
        elif self.kind == BYTES and type(value) is bytes:
            self.push_bytes(PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))
        else:
            encoded = _utf8(value) if self.kind == TEXT and type(value) is str else None
            if encoded is not None:
                self.push_bytes(PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded))
            else:  # anything else: the column goes on as Python values
                self.objects = self._values(0, self.length)
                self.objects.append(value)

    cdef object _value(self, Py_ssize_t i):
        cdef int64_t start
        cdef int128_t unscaled
        if not self.valid[i]:
            return None
        if self.kind == INTEGERS:
            return self.ints[i]
        if self.kind == DECIMALS:
            unscaled = self.wide[i]
            if unscaled < 0:
                return _decimal_object(<uint128_t> -unscaled, True, self.scale)
            return _decimal_object(<uint128_t> unscaled, False, self.scale)
        start = self.offsets[i]
        if self.kind == TEXT:
            return PyUnicode_Decode(self.data + start, self.offsets[i + 1] - start, "utf-8", "strict")
        return PyBytes_FromStringAndSize(self.data + start, self.offsets[i + 1] - start)

    cdef list _values(self, Py_ssize_t start, Py_ssize_t stop):
        cdef Py_ssize_t i
        return [self._value(i) for i in range(start, stop)]

    def __len__(self):
        return len(self.objects) if self.objects is not None else self.length

    def __getitem__(self, index):
        if self.objects is not None:
            return self.objects[index]
        if isinstance(index, slice):
            return [self._value(i) for i in range(*index.indices(self.length))]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("column buffer index out of range")
        return self._value(index)

    def __delitem__(self, index):
        """Only `del column[n:]`: the values from n on dropped (a transaction taken back)."""
        cdef Py_ssize_t keep, i
        if not isinstance(index, slice) or index.stop is not None or index.step is not None:
            raise TypeError("a column buffer drops its values from an index to its end only")
        if self.objects is not None:
            del self.objects[index]
            return
        keep = index.indices(self.length)[0]
        for i in range(keep, self.length):
            if not self.valid[i]:
                self.null_count -= 1
        self.length = keep

    @property
    def as_objects(self):
        """Whether the column went on as Python values (text that is not valid UTF-8)."""
        return self.objects is not None

    def integers(self):
        """The values as an Arrow int64 array, or None unless this is a column of integers."""
        if self.kind != INTEGERS or self.objects is not None:
            return None
        import pyarrow as pa

        return self.to_arrow(pa.int64())

    def to_arrow(self, arrow_type):
        """The column as an Arrow array of `arrow_type` (the values converted as pa.array would
        convert the Python values; ArrowInvalid or ValueError where it would refuse them)."""
        import pyarrow as pa

        cdef Py_ssize_t i, nbytes = (self.length + 7) // 8
        cdef bytearray bitmap
        cdef unsigned char* bits
        cdef int32_t* small
        if self.objects is not None:
            return pa.array(self.objects, type=arrow_type)
        validity = None
        if self.null_count:
            bitmap = bytearray(nbytes)
            bits = <unsigned char*> (<char*> bitmap)
            for i in range(self.length):
                if self.valid[i]:
                    bits[i >> 3] |= 1 << (i & 7)
            validity = pa.py_buffer(bitmap)
        if self.kind == INTEGERS:
            values = pa.py_buffer(PyBytes_FromStringAndSize(<const char*> self.ints, self.length * sizeof(int64_t)))
            array = pa.Array.from_buffers(pa.int64(), self.length, [validity, values], self.null_count)
            return array if arrow_type == pa.int64() else array.cast(arrow_type)
        if self.kind == DECIMALS:
            if not (
                pa.types.is_decimal128(arrow_type)
                and arrow_type.scale == self.scale
                and arrow_type.precision >= self.precision
            ):
                return pa.array(self._values(0, self.length), type=arrow_type)
            values = pa.py_buffer(
                PyBytes_FromStringAndSize(<const char*> self.wide, self.length * sizeof(int128_t))
            )
            # every value fits: _decimal_read takes no more digits than the column's precision
            return pa.Array.from_buffers(arrow_type, self.length, [validity, values], self.null_count)
        used = self.offsets[self.length]
        data = pa.py_buffer(PyBytes_FromStringAndSize(self.data, used))
        large = pa.large_string() if self.kind == TEXT else pa.large_binary()
        if arrow_type == large:
            offsets = pa.py_buffer(
                PyBytes_FromStringAndSize(<const char*> self.offsets, (self.length + 1) * sizeof(int64_t))
            )
            return pa.Array.from_buffers(large, self.length, [validity, offsets, data], self.null_count)
        small_type = pa.string() if self.kind == TEXT else pa.binary()
        if used > 0x7FFFFFFF:
            raise OverflowError("a column of strings too large for 32-bit offsets")
        narrow = bytearray((self.length + 1) * sizeof(int32_t))
        small = <int32_t*> (<char*> narrow)
        for i in range(self.length + 1):
            small[i] = <int32_t> self.offsets[i]
        array = pa.Array.from_buffers(small_type, self.length, [validity, pa.py_buffer(narrow), data], self.null_count)
        return array if arrow_type == small_type else array.cast(arrow_type)


cdef class RowProgram:
    """Decodes every row of a rows event into the caller's lists, one per present column."""

    cdef int ncols  # present columns over both images
    cdef int first  # of which in the first image
    cdef bint two_images  # UPDATE: a second image follows each first one
    cdef int* ops
    cdef int* args
    cdef list refs
    cdef tuple fallbacks  # (make_date, make_datetime, make_timestamp, epoch, datetime2)
    cdef unsigned char* utf8  # per column: a string column of UTF-8 text

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
        self.utf8 = <unsigned char*> malloc(max(self.ncols, 1))
        if self.ops == NULL or self.args == NULL or self.utf8 == NULL:
            raise MemoryError()
        self.refs = []
        for i in range(self.ncols):
            op, arg, ref = all_ops[i]
            precision, scale = arg >> 8, arg & 0xFF
            if op == OP_DECIMAL and not (1 <= precision <= DECIMAL_MAX_PRECISION and scale <= precision):
                raise ValueError(f"no compiled reader for DECIMAL({precision},{scale})")
            if (
                op == OP_BIT and not 1 <= arg <= 8
                or op == OP_ENUM_TEXT and not (arg in (1, 2) and type(ref) is tuple)
                or op == OP_SET_TEXT and not (1 <= arg <= 8 and type(ref) is tuple)
                or op == OP_TIME2 and not 0 <= arg <= 6
            ):
                raise ValueError(f"no compiled reader for opcode {op} with argument {arg}")
            self.ops[i] = op
            self.args[i] = arg
            self.utf8[i] = op == OP_STRING and ref == b"utf-8"
            self.refs.append(ref)
        self.fallbacks = fallbacks

    def __dealloc__(self):
        free(self.ops)
        free(self.args)
        free(self.utf8)

    def column_buffers(self):
        """For each column of the first image, an empty ColumnBuffer its values can be decoded
        into (INTEGERS, TEXT, BYTES, DECIMALS), or a list where they must stay Python objects."""
        cdef int i, op
        buffers = []
        for i in range(self.first):
            op = self.ops[i]
            if OP_I8 <= op <= OP_I64 and op != OP_U64 or op == OP_YEAR:
                buffers.append(ColumnBuffer(INTEGERS))
            elif op == OP_STRING and self.refs[i] is None:
                buffers.append(ColumnBuffer(BYTES))
            elif op == OP_STRING and self.refs[i] == b"utf-8":
                buffers.append(ColumnBuffer(TEXT))
            elif op == OP_DECIMAL:
                buffers.append(ColumnBuffer(DECIMALS, self.args[i] >> 8, self.args[i] & 0xFF))
            else:
                buffers.append([])
        return buffers

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
        cdef object value, out
        cdef ColumnBuffer column
        cdef Py_ssize_t n
        cdef uint128_t magnitude
        cdef bint negative
        if pos + nbytes > end:
            raise ValueError("row image ends inside its NULL bitmap")
        nulls = buf + pos
        pos += nbytes
        for k in range(count):
            i = lo + k
            out = outs[i]
            column = <ColumnBuffer> out if type(out) is ColumnBuffer else None
            if nulls[k >> 3] & (1 << (k & 7)):
                if column is not None:
                    column.push_null()
                else:
                    PyList_Append(out, None)
                continue
            if column is not None:
                # straight into Arrow's layout where the buffer takes the value as it is logged
                op = self.ops[i]
                arg = self.args[i]
                if op == OP_DECIMAL and column.kind == DECIMALS:
                    if _decimal_in_c(buf, pos, end, arg, &magnitude, &negative):
                        column.push_decimal(magnitude, negative)
                        pos += _decimal_size(arg >> 8, arg & 0xFF)
                        continue
                elif op == OP_STRING and column.kind != INTEGERS:
                    n = _string_length(buf, pos, end, arg)
                    pos += arg
                    column.push_bytes(<const char*> buf + pos, n)
                    pos += n
                    continue
                elif (OP_I8 <= op <= OP_I64 and op != OP_U64 or op == OP_YEAR) and column.kind == INTEGERS:
                    n = _int_size(op)
                    if pos + n > end:
                        raise ValueError("row image ends inside a value")
                    column.push_int(_integer(op, buf + pos))
                    pos += n
                    continue
            value = self._value(data, buf, &pos, end, i)
            if column is not None:
                column.append(value)
            else:
                PyList_Append(out, value)
        return pos

    def json_rows(
        self, bytes data, list prefixes, object first_label, object second_label, object value_json
    ):
        """The event's rows as `events --rows --json` writes them, straight from the row images:
        the JSON list [{"before": {...}, "after": {...}}, ...] that lines.rows_json gives for
        the values decode_into() reads (tests/test_rowimage_compiled.py compares the two).

        prefixes: per present column (first image's, then second's), what precedes its value:
        its key as a JSON string and ': ', after ', ' for all but an image's first column, as
        UTF-8 (lone surrogates as surrogatepass writes them). first_label, second_label: what
        opens each image ('"before": {' ...), None for an image without columns. value_json:
        render.value_json, for the values written here through their Python form (any but
        integers, UTF-8 strings and DECIMALs in plain notation). Malformed images raise a
        ValueError without words, or what a column's Python reader raises (columns.
        ROW_IMAGE_FAULTS): the caller decodes the Python way, which words it."""
        return self._rows(data, _JSON, None, prefixes, first_label, second_label, value_json)

    def text_rows(
        self, bytes data, bytes head, list prefixes, object first_label, object second_label, object quoted
    ):
        """The event's rows as `events --rows` writes them: one line per row, `head` and then each
        image as (name=value, ...), the text render.row_lines gives for the values decode_into()
        reads. prefixes: per present column, its name as shown and '=', after ', ' for all but
        an image's first column; first_label, second_label: '(' or ' -> (', None for an image
        without columns; quoted: render.quoted, for the values written through their Python
        form (any but integers, strings of UTF-8 columns shown as they are, and DECIMALs in
        plain notation).
        Faults as json_rows."""
        return self._rows(data, _SQL, head, prefixes, first_label, second_label, quoted)

    cdef str _rows(
        self, bytes data, int style, bytes head, list prefixes, object first_label,
        object second_label, object fallback
    ):
        if len(prefixes) != self.ncols:
            raise ValueError("one prefix per present column")
        cdef const unsigned char* buf = <const unsigned char*> PyBytes_AS_STRING(data)
        cdef Py_ssize_t end = PyBytes_GET_SIZE(data)
        cdef Py_ssize_t pos = 0, start
        cdef long rows = 0
        cdef const char* image_close = b"}" if style == _JSON else b")"
        cdef Text text
        text.data = NULL
        text.length = 0
        text.capacity = 0
        try:
            if style == _JSON:
                put(&text, b"[", 1)
            while pos < end:
                start = pos
                if style == _JSON:
                    put(&text, b"{" if rows == 0 else b", {", 1 if rows == 0 else 3)
                else:
                    put_bytes(&text, head)
                if first_label is not None:
                    put_bytes(&text, first_label)
                pos = self._image_text(
                    data, buf, pos, end, 0, self.first, style, prefixes, first_label is not None, &text, fallback
                )
                if first_label is not None:
                    put(&text, image_close, 1)
                if self.two_images:
                    if second_label is not None:
                        put_bytes(&text, second_label)
                    pos = self._image_text(
                        data, buf, pos, end, self.first, self.ncols, style, prefixes,
                        second_label is not None, &text, fallback,
                    )
                    if second_label is not None:
                        put(&text, image_close, 1)
                put(&text, b"}" if style == _JSON else b"\n", 1)
                if pos == start:
                    raise ValueError("row image holds no columns")
                rows += 1
            if pos != end:
                raise ValueError("row image runs past its event")
            if style == _JSON:
                put(&text, b"]", 1)
            return PyUnicode_DecodeUTF8(text.data, text.length, "surrogatepass")
        finally:
            free(text.data)

    cdef Py_ssize_t _image_text(
        self, bytes data, const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, int lo, int hi,
        int style, list prefixes, bint shown, Text* text, object fallback
    ) except -1:
        cdef int count = hi - lo
        cdef int nbytes = (count + 7) // 8
        cdef int i, k, op, arg
        cdef const unsigned char* nulls
        cdef Py_ssize_t n
        cdef uint128_t magnitude
        cdef bint negative
        if pos + nbytes > end:
            raise ValueError("row image ends inside its NULL bitmap")
        if count and not shown:
            raise ValueError("an image with columns must be shown")
        nulls = buf + pos
        pos += nbytes
        for k in range(count):
            i = lo + k
            put_bytes(text, prefixes[i])
            if nulls[k >> 3] & (1 << (k & 7)):
                if style == _JSON:
                    put(text, b"null", 4)
                else:
                    put(text, b"NULL", 4)
                continue
            op = self.ops[i]
            arg = self.args[i]
            if OP_I8 <= op <= OP_I64 and op != OP_U64 or op == OP_YEAR:
                n = _int_size(op)
                if pos + n > end:
                    raise ValueError("row image ends inside a value")
                put_signed(text, _integer(op, buf + pos))
                pos += n
                continue
            if op == OP_U64:
                if pos + 8 > end:
                    raise ValueError("row image ends inside a value")
                put_unsigned(text, _le(buf + pos, 8))
                pos += 8
                continue
            if op == OP_STRING and self.utf8[i]:
                n = _string_length(buf, pos, end, arg)
                if style == _JSON and valid_utf8(buf + pos + arg, n):
                    put_json_string(text, buf + pos + arg, n)
                    pos += arg + n
                    continue
                if style == _SQL and _shown_as_it_is(buf + pos + arg, n):
                    put_sql_string(text, buf + pos + arg, n)
                    pos += arg + n
                    continue
            elif op == OP_DECIMAL:
                if _decimal_in_c(buf, pos, end, arg, &magnitude, &negative) and _decimal_plain(
                    magnitude, arg & 0xFF
                ):
                    if style == _JSON:
                        put(text, b'"', 1)
                    put_decimal(text, magnitude, negative, arg & 0xFF)
                    if style == _JSON:
                        put(text, b'"', 1)
                    pos += _decimal_size(arg >> 8, arg & 0xFF)
                    continue
            put_str(text, fallback(self._value(data, buf, &pos, end, i)))
        return pos

    cdef object _value(
        self, bytes data, const unsigned char* buf, Py_ssize_t* at, Py_ssize_t end, int i
    ):
        """The Python value of column i, not NULL, at at[0]; at[0] moves past it."""
        cdef Py_ssize_t pos = at[0]
        cdef int op = self.ops[i]
        cdef int arg = self.args[i]
        cdef object value
        cdef uint64_t u
        cdef int64_t s
        cdef float f32
        cdef double f64
        cdef long year, month, day, hour, minute, second, micro
        cdef Py_ssize_t n
        cdef uint128_t magnitude
        cdef bint negative
        if op == OP_DECIMAL:
            if _decimal_in_c(buf, pos, end, arg, &magnitude, &negative):
                at[0] = pos + _decimal_size(arg >> 8, arg & 0xFF)
                return _decimal_object(magnitude, negative, arg & 0xFF)
            op = OP_PYTHON
        if op == OP_PYTHON:
            value, at[0] = self.refs[i](data, pos)
            return value
        if op == OP_STRING:
            n = _string_length(buf, pos, end, arg)
            pos += arg
            at[0] = pos + n
            ref = self.refs[i]
            if ref is None:
                return PyBytes_FromStringAndSize(<const char*> buf + pos, n)
            return PyUnicode_Decode(<const char*> buf + pos, n, PyBytes_AS_STRING(ref), "surrogateescape")
        if op >= OP_BIT:
            n = _small_size(op, arg)
            if pos + n > end:
                raise ValueError("row image ends inside a value")
            at[0] = pos + n
            if op == OP_BIT:
                return PyLong_FromUnsignedLongLong(_be(buf + pos, arg))
            if op == OP_ENUM_TEXT:
                return _enum_text(_le(buf + pos, arg), <tuple> self.refs[i])
            if op == OP_SET_TEXT:
                return _set_text(_le(buf + pos, arg), <tuple> self.refs[i])
            return _time2(buf + pos, arg)
        if op <= OP_U64 or op == OP_YEAR:
            n = _int_size(op)
        elif op == OP_FLOAT:
            n = 4
        elif op == OP_DATE:
            n = 3
        elif op == OP_DATETIME2:
            n = 5 + (arg + 1) // 2
        elif op == OP_TIMESTAMP2:
            n = 4 + (arg + 1) // 2
        else:
            n = 8
        if pos + n > end:
            raise ValueError("row image ends inside a value")
        at[0] = pos + n
        if op <= OP_I64 and op != OP_U64 or op == OP_YEAR:
            return PyLong_FromLongLong(_integer(op, buf + pos))
        if op == OP_U64:
            return PyLong_FromUnsignedLongLong(_le(buf + pos, 8))
        if op == OP_FLOAT:
            memcpy(&f32, buf + pos, 4)
            return PyFloat_FromDouble(<double> f32)
        if op == OP_DOUBLE:
            memcpy(&f64, buf + pos, 8)
            return PyFloat_FromDouble(f64)
        if op == OP_DATE:
            u = _le(buf + pos, 3)
            year, month, day = u >> 9, (u >> 5) & 15, u & 31
            if _valid_date(year, month, day):
                return date_new(year, month, day)
            return self.fallbacks[0](year, month, day)
        if op == OP_DATETIME2:
            s = <int64_t> _be(buf + pos, 5) - 0x8000000000
            micro = _fraction(buf + pos + 5, arg)
            if s < 0:
                # no valid date; Python's floor division on negatives names it (C's differs)
                return self.fallbacks[4](s + 0x8000000000, micro)
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
                return datetime_new(year, month, day, hour, minute, second, micro, None)
            return self.fallbacks[1](year, month, day, hour, minute, second, micro)
        # OP_TIMESTAMP2
        u = _be(buf + pos, 4)
        micro = _fraction(buf + pos + 4, arg)
        if (u == 0 and micro == 0) or micro > 999999:
            return self.fallbacks[2](u, micro)
        return self.fallbacks[3] + timedelta_new(u // 86400, u % 86400, micro)


cdef inline Py_ssize_t _string_length(
    const unsigned char* buf, Py_ssize_t pos, Py_ssize_t end, int length_bytes
) except -1:
    """The length of the string at pos (its length_bytes-byte prefix), checked to end by end."""
    cdef Py_ssize_t n
    if pos + length_bytes > end:
        raise ValueError("row image ends inside a length")
    n = <Py_ssize_t> _le(buf + pos, length_bytes)
    if pos + length_bytes + n > end:
        raise ValueError("row image ends inside a string")
    return n


cdef inline int _int_size(int op) noexcept:
    """Bytes of an integer column's value (every integer opcode, and YEAR)."""
    if op <= OP_U8 or op == OP_YEAR:
        return 1
    if op <= OP_U16:
        return 2
    if op <= OP_U24:
        return 3
    if op <= OP_U32:
        return 4
    return 8


cdef inline int64_t _integer(int op, const unsigned char* p) noexcept:
    """The value of an integer column (every integer opcode but OP_U64, and YEAR)."""
    cdef int64_t s
    if op == OP_I8:
        return <signed char> p[0]
    if op == OP_U8:
        return p[0]
    if op == OP_I16:
        return <short> _le(p, 2)
    if op == OP_U16:
        return <int64_t> _le(p, 2)
    if op == OP_I24:
        s = <int64_t> _le(p, 3)
        if s & 0x800000:
            s -= 0x1000000
        return s
    if op == OP_U24:
        return <int64_t> _le(p, 3)
    if op == OP_I32:
        return <int> _le(p, 4)
    if op == OP_U32:
        return <int64_t> _le(p, 4)
    if op == OP_I64:
        return <long long> _le(p, 8)
    # OP_YEAR
    return 1900 + p[0] if p[0] else 0


cdef inline int _small_size(int op, int arg) noexcept:
    """Bytes of a BIT, ENUM, SET or TIME2 value."""
    if op == OP_TIME2:
        return 3 + (arg + 1) // 2
    return arg  # BIT, ENUM and SET: their byte count


cdef object _enum_text(uint64_t index, tuple names):
    # index 0 is the '' MySQL stores for a value that was not a member (columns.enum_text)
    if 0 < index <= <uint64_t> len(names):
        return names[index - 1]
    return ""


cdef object _set_text(uint64_t bits, tuple names):
    cdef list chosen = []
    cdef Py_ssize_t i
    for i in range(min(len(names), 64)):
        if bits >> i & 1:
            chosen.append(names[i])
    return ",".join(chosen)


cdef object _time2(const unsigned char* p, int fsp):
    """TIME2 (columns.time2): hh:mm:ss packed over the integer part's 3 bytes, then 0-3 bytes of
    fraction; a negative value's fraction counts down from the next whole second."""
    cdef int64_t whole = <int64_t> _be(p, 3) - 0x800000
    cdef int64_t frac, packed
    if fsp == 0:
        packed = whole * 0x1000000
    elif fsp <= 2:
        frac = p[3]
        if whole < 0 and frac:
            whole += 1
            frac -= 0x100
        packed = whole * 0x1000000 + frac * 10000
    elif fsp <= 4:
        frac = <int64_t> _be(p + 3, 2)
        if whole < 0 and frac:
            whole += 1
            frac -= 0x10000
        packed = whole * 0x1000000 + frac * 100
    else:
        packed = <int64_t> _be(p, 6) - 0x800000000000
    return _time_from_packed(packed)


cdef object _time_from_packed(int64_t packed):
    """columns.time_from_packed: the hours, minutes and seconds fields taken as they are (a
    corrupt minute of 63 adds 63 minutes), the microseconds likewise, the sign applied last."""
    cdef bint negative = packed < 0
    cdef int64_t magnitude = -packed if negative else packed
    cdef int64_t hms = magnitude >> 24
    cdef int64_t micros = (((hms >> 12 & 0x3FF) * 60 + (hms >> 6 & 63)) * 60 + (hms & 63)) * 1000000
    micros += magnitude & 0xFFFFFF
    if negative:
        micros = -micros
    # timedelta's normal form: whole days (floored), then seconds and microseconds below a day
    cdef int64_t days = micros // 86400000000
    if micros < 0 and days * 86400000000 != micros:
        days -= 1
    micros -= days * 86400000000
    return timedelta_new(<int> days, <int> (micros // 1000000), <int> (micros % 1000000))


cdef inline long _fraction(const unsigned char* p, int fsp):
    cdef int n = (fsp + 1) // 2
    if n == 0:
        return 0
    if n == 1:
        return <long> _be(p, 1) * 10000
    if n == 2:
        return <long> _be(p, 2) * 100
    return <long> _be(p, 3)


# -- the rows as text (RowProgram.json_rows and text_rows) -----------------------------------------


# The two forms of rows RowProgram writes as text
cdef enum:
    _JSON = 1  # events --rows --json
    _SQL = 2  # events --rows: values as SQL literals


cdef int put_bytes(Text* text, bytes value) except -1:
    return put(text, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))


cdef int put_str(Text* text, str value) except -1:
    # lone surrogates (bytes of a string that were not UTF-8) go through as surrogatepass writes
    # them, and json_rows decodes them back the same way
    return put_bytes(text, value.encode("utf-8", "surrogatepass"))


cdef const char* _HEX = b"0123456789abcdef"


cdef bint _shown_as_it_is(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether render.quoted shows the UTF-8 text as put_sql_string writes it: valid, and
    beyond ASCII only characters Python calls printable (the others, C1 controls, format
    characters, separators, are escaped by render.visible, or kept, by category)."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c
    cdef Py_UCS4 code
    if not valid_utf8(p, n):
        return False
    while i < n:
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xE0:
            code = (c & 0x1F) << 6 | (p[i + 1] & 0x3F)
            i += 2
        elif c < 0xF0:
            code = (c & 0x0F) << 12 | (p[i + 1] & 0x3F) << 6 | (p[i + 2] & 0x3F)
            i += 3
        else:
            code = (c & 0x07) << 18 | (p[i + 1] & 0x3F) << 12 | (p[i + 2] & 0x3F) << 6 | (p[i + 3] & 0x3F)
            i += 4
        if not Py_UNICODE_ISPRINTABLE(code):
            return False
    return True


cdef int put_sql_string(Text* text, const unsigned char* p, Py_ssize_t n) except -1:
    """UTF-8 text (_shown_as_it_is) as render.quoted writes the string: between single quotes,
    the quote and the backslash escaped with a backslash, ASCII's controls as xNN escapes."""
    cdef Py_ssize_t i, run = 0
    cdef unsigned char c
    cdef char escape[4]
    put(text, b"'", 1)
    for i in range(n):
        c = p[i]
        if c >= 0x20 and c != 0x27 and c != 0x5C and c != 0x7F:
            continue
        put(text, <const char*> p + run, i - run)
        run = i + 1
        escape[0] = 92  # '\'
        if c == 0x27 or c == 0x5C:
            escape[1] = c
            put(text, escape, 2)
        else:
            escape[1] = 120  # x
            escape[2] = _HEX[c >> 4]
            escape[3] = _HEX[c & 15]
            put(text, escape, 4)
    put(text, <const char*> p + run, n - run)
    return put(text, b"'", 1)


cdef inline int _digit_count(uint128_t magnitude) noexcept:
    cdef int n = 1
    while magnitude >= 10:
        magnitude //= 10
        n += 1
    return n


cdef inline bint _decimal_plain(uint128_t magnitude, int scale) noexcept:
    """Whether str() of the Decimal _decimal_object builds is its digits as they are ('0.50'):
    Python writes one whose adjusted exponent is below -6 in E notation ('1E-7')."""
    return _digit_count(magnitude) - 1 - scale >= -6


cdef int _decimal_text(uint128_t magnitude, bint negative, int scale, char* text) noexcept:
    """The text of a DECIMAL's unscaled magnitude: every digit of the scale written out ('0.50',
    '-3.000'), the integral part without leading zeros. Its length (at most 41)."""
    cdef char digits[48]
    cdef int n = 0, k = 0, i
    cdef uint64_t high = <uint64_t> (magnitude // <uint128_t> _POW10[19])
    cdef uint64_t low = <uint64_t> (magnitude % <uint128_t> _POW10[19])
    # the digits, lowest first: the low 19, then the high part's (magnitude < 10**38)
    if high:
        for i in range(19):
            digits[n] = <char> (48 + low % 10)
            low //= 10
            n += 1
        while high:
            digits[n] = <char> (48 + high % 10)
            high //= 10
            n += 1
    else:
        while low:
            digits[n] = <char> (48 + low % 10)
            low //= 10
            n += 1
    while n <= scale:
        digits[n] = 48
        n += 1
    if negative:
        text[k] = 45  # '-'
        k += 1
    for i in range(n - 1, -1, -1):
        if i == scale - 1:
            text[k] = 46  # '.'
            k += 1
        text[k] = digits[i]
        k += 1
    return k


cdef int put_decimal(Text* text, uint128_t magnitude, bint negative, int scale) except -1:
    cdef char digits[48]
    return put(text, digits, _decimal_text(magnitude, negative, scale, digits))
