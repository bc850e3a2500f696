"""MySQL column types -> DuckDB column types that hold every MySQL value exactly, and conversions.

Decisions (each keeps the value the source stored, not an approximation of it):

- Integers keep their width and signedness: MEDIUMINT has no DuckDB twin, so it widens to
  INTEGER; UNSIGNED maps to DuckDB's unsigned types. TINYINT(1)/BOOL stays TINYINT because MySQL
  stores any -128..127 in it, not just 0/1.
- DECIMAL(p,s) is DECIMAL(p,s) up to DuckDB's limit of 38 digits; MySQL allows 65, and a wider
  DECIMAL is stored as VARCHAR holding MySQL's exact decimal text (DOUBLE would round).
- DATETIME is a wall-clock value without a zone: TIMESTAMP (microseconds, MySQL's finest).
  TIMESTAMP is a UTC instant in MySQL (row events carry seconds since the epoch): TIMESTAMPTZ,
  so the instant survives whatever TimeZone the DuckDB session displays it in.
- TIME is a signed duration of up to ±838:59:59.999999; DuckDB's TIME is a time of day
  (0..24 h, never negative), so TIME becomes INTERVAL.
- JSON becomes DuckDB's JSON type (the json extension, statically linked into the Python
  package); where that extension cannot load it falls back to VARCHAR holding the same text.
- BIT(n) (n <= 64) fits UBIGINT; ENUM/SET are stored as their text ('a', 'a,c'), which is what
  MySQL shows and what survives member-list changes; spatial values are their WKB bytes (BLOB);
  VECTOR is FLOAT[]. MariaDB's UUID is DuckDB UUID, INET4/INET6 their text form.
"""

from __future__ import annotations

import functools

import duckdb

from .schema import MysqlColumn

INTEGER_TYPES: dict[str, tuple[str, str]] = {
    "tinyint": ("TINYINT", "UTINYINT"),
    "smallint": ("SMALLINT", "USMALLINT"),
    "mediumint": ("INTEGER", "UINTEGER"),  # 24-bit: no DuckDB type of that width
    "int": ("INTEGER", "UINTEGER"),
    "bigint": ("BIGINT", "UBIGINT"),
}
TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
SPATIAL_TYPES = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
    }
)
NUMERIC_TYPES = frozenset({*INTEGER_TYPES, "decimal", "float", "double", "bit", "year"})
STRING_LIKE = TEXT_TYPES | {"enum", "set", "json", "inet4", "inet6"}

# DuckDB DECIMAL holds at most 38 digits.
MAX_DUCKDB_DECIMAL_PRECISION = 38


class ConversionError(ValueError):
    """A change of column type whose value conversion has no faithful DuckDB expression."""


@functools.cache
def json_type_available() -> bool:
    """Whether DuckDB's JSON type can be used (the json extension loads)."""
    try:
        with duckdb.connect() as con:
            con.execute("SELECT CAST('1' AS JSON)").fetchall()
    except duckdb.Error:
        return False
    return True


def duckdb_type(column: MysqlColumn) -> str:
    """The DuckDB type that stores every value of this MySQL column exactly."""
    base = column.base_type
    if base in INTEGER_TYPES:
        signed, unsigned = INTEGER_TYPES[base]
        return unsigned if column.unsigned else signed
    if base == "decimal":
        precision = column.precision if column.precision is not None else 10
        scale = column.scale if column.scale is not None else 0
        if precision > MAX_DUCKDB_DECIMAL_PRECISION:
            return "VARCHAR"  # MySQL's exact decimal text; see the module docstring
        return f"DECIMAL({precision},{scale})"
    if base == "float":
        return "FLOAT"
    if base == "double":
        return "DOUBLE"
    if base == "bit":
        return "UBIGINT"
    if base == "date":
        return "DATE"
    if base == "datetime":
        return "TIMESTAMP"
    if base == "timestamp":
        return "TIMESTAMPTZ"
    if base == "time":
        return "INTERVAL"
    if base == "year":
        return "SMALLINT"
    if base == "json":
        return "JSON" if json_type_available() else "VARCHAR"
    if base in BINARY_TYPES or base in SPATIAL_TYPES:
        return "BLOB"
    if base in STRING_LIKE:
        return "VARCHAR"
    if base == "vector":
        return "FLOAT[]"
    if base == "uuid":
        return "UUID"
    raise ConversionError(f"no DuckDB type for MySQL type {column.mysql_type}")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _string_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(_sql_string(i) for i in items) + "]::VARCHAR[]"


def round_fraction(value: str, column_type: str, fsp: int) -> str:
    """Round a temporal value to `fsp` fractional digits as MySQL does (half away from zero)."""
    unit = 10 ** (6 - fsp)
    if column_type == "INTERVAL":
        micros = f"round(epoch({value}) * 1000000)"
        return f"to_microseconds(CAST(round({micros} / {unit}) * {unit} AS BIGINT))"
    # The fraction of a DATETIME/TIMESTAMP is always the positive part within its second.
    rest = f"((epoch_us({value}) % {unit}) + {unit}) % {unit}"
    delta = f"CASE WHEN {rest} * 2 >= {unit} THEN {unit} - {rest} ELSE -{rest} END"
    return f"{value} + to_microseconds({delta})"


_FRACTIONAL = frozenset({"datetime", "timestamp", "time"})


def _fraction_digits(column: MysqlColumn) -> int:
    """Fractional-second digits a column's values may carry (text may carry microseconds)."""
    if column.base_type in _FRACTIONAL:
        return column.fsp or 0
    return 0 if column.base_type in NUMERIC_TYPES or column.base_type == "date" else 6


def convert_expression(value: str, old: MysqlColumn, new: MysqlColumn, *, time_zone: str = "UTC") -> str:
    """DuckDB SQL turning `value` (a value of column `old`) into a value of column `new` as MySQL would.

    `time_zone` is the source session's zone, which MySQL uses to turn DATETIME wall-clock values
    into TIMESTAMP instants and back.
    """
    old_type, new_type = duckdb_type(old), duckdb_type(new)
    ob, nb = old.base_type, new.base_type

    if ob == "set" and nb in NUMERIC_TYPES or nb == "set" and ob in NUMERIC_TYPES:
        raise ConversionError(
            f"converting {old.mysql_type} to {new.mysql_type} (SET bitmasks) is not supported"
        )
    if ob == "enum" and nb in NUMERIC_TYPES:
        # MySQL turns an ENUM into its 1-based member index ('' is 0).
        index = f"coalesce(list_position({_string_list(old.elements)}, {value}), 0)"
        return f"CAST(CASE WHEN {value} IS NULL THEN NULL ELSE {index} END AS {new_type})"
    if nb == "enum" and ob in NUMERIC_TYPES:
        member = f"list_extract({_string_list(new.elements)}, CAST({value} AS BIGINT))"
        return f"CASE WHEN {value} IS NULL THEN NULL WHEN {value} = 0 THEN '' ELSE {member} END"

    if old_type == "BLOB" and new_type != "BLOB":
        # Bytes to text: DuckDB's CAST would render escapes (\xAB); decode() reads them as UTF-8.
        value, old_type = f"decode({value})", "VARCHAR"
    if new_type == "BLOB" and old_type != "BLOB":
        return f"encode(CAST({value} AS VARCHAR))"

    if ob == "datetime" and nb == "timestamp" or ob == "timestamp" and nb == "datetime":
        # timezone(zone, TIMESTAMP) reads a wall clock in `zone`; timezone(zone, TIMESTAMPTZ) shows an instant there.
        value, old_type = f"timezone({_sql_string(time_zone)}, {value})", new_type
    converted = value if old_type == new_type else f"CAST({value} AS {new_type})"

    if nb in _FRACTIONAL and (new.fsp or 0) < _fraction_digits(old):
        converted = round_fraction(converted, new_type, new.fsp or 0)
    if nb == "char" and ob != "char":
        converted = f"rtrim({converted}, ' ')"  # MySQL drops a CHAR's trailing spaces
    return converted
