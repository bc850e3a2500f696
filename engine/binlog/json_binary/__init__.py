"""MySQL binary JSON (the storage format of JSON columns) and partial JSON updates.

Format facts follow MySQL's sql-common/json_binary.h and sql/json_diff.cc:

* A document is one type byte followed by the value.  An empty document means JSON null.
* Objects and arrays come in a small (2-byte counts/offsets) and a large (4-byte) form.
  Offsets are relative to the first byte after the container's type byte.
* Literals, int16 and uint16 are always inlined in the value entry; int32 and uint32 are
  inlined only in the large form.
* Strings and opaque values carry a length of 7 bits per byte, high bit = more bytes.
* Opaque values are a MySQL field type byte, a length and raw bytes; NEWDECIMAL holds
  precision, scale and MySQL's binary decimal, temporal types hold a packed int64.

The package's modules: ``decoder`` (bytes to Python values), ``encoder`` (Python values to
bytes, for the generator's row images), ``text`` (values printed as MySQL prints JSON) and
``diffs`` (partial updates: decoded and applied).
"""

from engine.binlog.json_binary.decoder import JsonOpaque, decode_json
from engine.binlog.json_binary.diffs import (
    JsonDiff,
    apply_json_diffs,
    decode_json_diffs,
    read_json_diff_column,
    read_packed_int,
)
from engine.binlog.json_binary.encoder import JsonValue, encode_json, json_key_order
from engine.binlog.json_binary.text import json_text

__all__ = [
    "JsonDiff",
    "JsonOpaque",
    "JsonValue",
    "apply_json_diffs",
    "decode_json",
    "decode_json_diffs",
    "encode_json",
    "json_key_order",
    "json_text",
    "read_json_diff_column",
    "read_packed_int",
]
