# cython: language_level=3, boundscheck=False, wraparound=False
"""The compiled form of render.row_lines: rows events as `### INSERT ... (c=v, ...)` lines.

`relaydeck events --rows` prints one such line per row, and formatting them was a quarter of its
time. Integers, strings and NULL (nearly every value of an OLTP log) are written here; any other
value goes through render.quoted, so the text is the same as the Python form's
(tests/test_rowtext_compiled.py compares them).
"""

cdef object _py_quoted = None


def configure(py_quoted):
    global _py_quoted
    _py_quoted = py_quoted
    return row_lines


cdef inline str _quoted(object value):
    cdef type kind = type(value)
    if kind is int:
        return str(value)
    if kind is str:
        if not (<str> value).isprintable():
            return _py_quoted(value)  # characters a terminal must see escaped (render.visible)
        if "\\" in value or "'" in value:
            value = (<str> value).replace("\\", "\\\\").replace("'", "\\'")
        return "'" + <str> value + "'"
    if value is None:
        return "NULL"
    return _py_quoted(value)


def row_lines(str head, columns, tuple images, Py_ssize_t count):
    """The rows as text, one line (and newline) per row: head, then each image present as
    (name=value, ...), joined by ' -> '.

    columns: the table's columns (each with a .name); images: the before and after images, each
    None, or a dict of column index -> that column's values.
    """
    cdef list shown = []
    for image in images:
        if image:
            shown.append([(columns[i].name, values) for i, values in (<dict> image).items()])
    cdef list parts = []
    cdef Py_ssize_t r
    cdef bint first_image, first_column
    for r in range(count):
        parts.append(head)
        first_image = True
        for image in shown:
            parts.append("(" if first_image else " -> (")
            first_image = False
            first_column = True
            for name, values in <list> image:
                if not first_column:
                    parts.append(", ")
                first_column = False
                parts.append(name)
                parts.append("=")
                parts.append(_quoted(values[r]))
            parts.append(")")
        parts.append("\n")
    return "".join(parts)


# -- --json --rows: the rows as a JSON list -----------------------------------------------------

cdef object _py_value_json = None
cdef object _json_string = None


def configure_json(py_value_json):
    global _py_value_json, _json_string
    import json.encoder

    _py_value_json = py_value_json
    _json_string = json.encoder.encode_basestring  # json.dumps' string form (ensure_ascii=False)
    return rows_json


cdef inline bint _json_plain(str text):
    """Whether json.dumps writes `text` as itself between quotes (nothing to escape)."""
    cdef Py_UCS4 c
    for c in text:
        if c < 0x20 or c == 0x22 or c == 0x5C:
            return False
    return True


cdef inline void _append_value_json(list parts, object value):
    cdef type kind = type(value)
    if kind is int:
        parts.append(str(value))
    elif kind is str:
        if _json_plain(<str> value):
            parts.append('"')
            parts.append(value)
            parts.append('"')
        else:
            parts.append(_json_string(value))
    elif value is None:
        parts.append("null")
    else:
        parts.append(_py_value_json(value))  # render.value_json


def rows_json(list keys, before, after, Py_ssize_t count):
    """The compiled form of render.rows_json_text: the rows as the JSON list
    [{"before": {name: value, ...}, "after": {...}}, ...].

    keys: each column's name as a JSON string (unique); before/after: None, or a dict of column
    index -> that column's values.
    """
    cdef list shown = []
    cdef list columns
    for name, image in (('"before": {', before), ('"after": {', after)):
        if image:
            columns = []
            for i, values in (<dict> image).items():
                # what precedes each value: its key, after a comma for all but the first
                columns.append((keys[i] + ": " if not columns else ", " + keys[i] + ": ", values))
            shown.append((name if not shown else ", " + name, columns))
    cdef list parts = ["["]
    cdef Py_ssize_t r
    for r in range(count):
        parts.append("{" if r == 0 else ", {")
        for label, columns in shown:
            parts.append(label)
            for prefix, values in columns:
                parts.append(prefix)
                _append_value_json(parts, values[r])
            parts.append("}")
        parts.append("}")
    parts.append("]")
    return "".join(parts)
