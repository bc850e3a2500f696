"""Values for existing rows: what MySQL gives the rows a table has when a column is added or changed.

The DEFAULT converted to the column's DuckDB type as MySQL converts it, MySQL's implicit default
for NOT NULL columns without one (0, '', the first ENUM member; zero dates become NULL, as DuckDB
has no zero date), or CURRENT_TIMESTAMP: the event's timestamp when the caller passes it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from ..schema import MysqlColumn
from ..types import SPATIAL_TYPES, duckdb_type, round_fraction
from .model import now_fsp
from .tokens import DIALECT, TranslationError, parse, quote_string


@dataclass(frozen=True)
class _Constant:
    kind: str  # 'null', 'string', 'number', 'bytes'
    value: str | bytes | None = None


def _constant(node: exp.Expression) -> _Constant:
    """A DEFAULT literal as a value; expressions are not constants."""
    if isinstance(node, exp.Null):
        return _Constant("null")
    if isinstance(node, exp.Literal):
        return _Constant("string" if node.is_string else "number", str(node.this))
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _Constant("number", "-" + str(node.this.this))
    if isinstance(node, exp.Boolean):
        return _Constant("number", "1" if node.this else "0")
    if isinstance(node, exp.BitString):
        return _Constant("number", str(int(str(node.this) or "0", 2)))
    if isinstance(node, exp.HexString):
        digits = str(node.this)
        return _Constant("bytes", bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits))
    if isinstance(node, exp.National):
        return _Constant("string", str(node.this))
    if isinstance(node, exp.Introducer):
        inner = _constant(node.expression)
        if str(node.this).lower() == "_binary" and inner.kind == "string":
            return _Constant("bytes", str(inner.value).encode())
        return inner
    if isinstance(node, exp.Concat) and all(
        isinstance(e, exp.Literal) and e.is_string for e in node.expressions
    ):
        return _Constant("string", "".join(str(e.this) for e in node.expressions))
    raise TranslationError(f"DEFAULT {node.sql(dialect=DIALECT)} is not a constant")


def _is_zero_date(text: str) -> bool:
    return text.strip().startswith(("0000-00-00", "00000000"))


def _time_literal(number: str) -> str:
    """MySQL's numeric TIME ([-]HHMMSS[.ffffff]) as an INTERVAL."""
    value = Decimal(number)
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole = int(value)
    micros = int((value - whole) * 1_000_000)
    hh, mm, ss = whole // 10000, whole // 100 % 100, whole % 100
    return f"CAST('{sign}{hh}:{mm:02d}:{ss:02d}.{micros:06d}' AS INTERVAL)"


@dataclass(frozen=True)
class ExistingRows:
    """DuckDB SQL for the values existing rows get, in one statement's setting.

    time_zone: the source session's time zone; timestamp: the event's time (seconds since the
    epoch), or None to use the DuckDB transaction's start time.

    >>> rows = ExistingRows("Europe/Paris", timestamp=0.0)
    >>> column = MysqlColumn("d", "date", "date", nullable=False, default="CURRENT_DATE")
    >>> rows.fill_value(column)
    "CAST(timezone('Europe/Paris', CAST('1970-01-01 00:00:00+00:00' AS TIMESTAMPTZ)) AS DATE)"
    >>> rows.fill_value(MysqlColumn("e", "enum('a','b')", "enum", nullable=False, elements=("a", "b")))
    "'a'"
    """

    time_zone: str
    timestamp: float | None

    def now_sql(self, column: MysqlColumn) -> str:
        """CURRENT_TIMESTAMP(fsp) as a value of the column: the event's time, else the transaction's."""
        fsp = column.fsp or 0
        if self.timestamp is not None:
            micros = round(self.timestamp * 1_000_000)
            unit = 10 ** (6 - fsp)
            micros = (micros + unit // 2) // unit * unit  # MySQL rounds to the column's precision
            instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
            now = f"CAST('{instant.isoformat(sep=' ')}' AS TIMESTAMPTZ)"
        else:
            now = round_fraction("current_timestamp", "TIMESTAMPTZ", fsp) if fsp < 6 else "current_timestamp"
        zone = quote_string(self.time_zone)
        base = column.base_type
        if base == "timestamp":
            return now
        if base == "datetime":
            return f"timezone({zone}, {now})"  # the wall clock in the source session's zone
        if base == "date":
            return f"CAST(timezone({zone}, {now}) AS DATE)"
        raise TranslationError(f"CURRENT_TIMESTAMP default on {column.mysql_type} column `{column.name}`")

    def fill_value(self, column: MysqlColumn) -> str:
        """DuckDB SQL for the value MySQL gives rows that exist when `column` is added."""
        if column.default is None:
            return "NULL" if column.nullable else _implicit_default(column)
        node = parse(column.default, f"DEFAULT {column.default}")
        if now_fsp(node) is not None:
            return self.now_sql(column)
        if isinstance(node, exp.CurrentDate):
            return self.now_sql(replace(column, base_type="date"))
        return self.literal(column, _constant(node))

    def literal(self, column: MysqlColumn, value: _Constant) -> str:
        """A constant as a value of the column's DuckDB type, converted as MySQL converts it."""
        if value.kind == "null":
            return "NULL"
        target = duckdb_type(column)
        base = column.base_type
        raw = value.value
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if base == "bit":
            if value.kind == "number":
                number = int(Decimal(text).to_integral_value())
            else:
                number = int.from_bytes(raw if isinstance(raw, bytes) else text.encode(), "big")
            return f"CAST({number} AS UBIGINT)"
        if target == "BLOB":
            data = raw if isinstance(raw, bytes) else text.encode()
            return f"from_hex('{data.hex()}')"
        if base == "enum" and value.kind == "number":
            index = int(Decimal(text))
            return quote_string(column.elements[index - 1] if 0 < index <= len(column.elements) else "")
        if base in ("date", "datetime", "timestamp"):
            if _is_zero_date(text):
                return "NULL"  # DuckDB has no zero date
            if base == "timestamp":
                cast = f"CAST({quote_string(text)} AS TIMESTAMP)"
                return f"timezone({quote_string(self.time_zone)}, {cast})"
            return f"CAST({quote_string(text)} AS {target})"
        if base == "time":
            return (
                _time_literal(text) if value.kind == "number" else f"CAST({quote_string(text)} AS INTERVAL)"
            )
        if base == "decimal" and target == "VARCHAR":
            try:
                exact = Decimal(text).quantize(Decimal(1).scaleb(-(column.scale or 0)))
            except InvalidOperation:
                raise TranslationError(f"DEFAULT {text!r} is not a number") from None
            return quote_string(format(exact, "f"))
        if target == "VARCHAR":
            return quote_string(text)
        return f"CAST({quote_string(text)} AS {target})"


def _implicit_default(column: MysqlColumn) -> str:
    """MySQL's value for NOT NULL columns without DEFAULT (zero dates become NULL: DuckDB has none)."""
    base = column.base_type
    target = duckdb_type(column)
    if base in ("date", "datetime", "timestamp") or base in SPATIAL_TYPES or base == "vector":
        return "NULL"
    if base == "time":
        return "to_microseconds(0)"
    if base == "enum":
        return quote_string(column.elements[0] if column.elements else "")
    if base == "json":
        return f"CAST('null' AS {target})"
    if base == "uuid":
        return "CAST('00000000-0000-0000-0000-000000000000' AS UUID)"
    if base == "inet4":
        return "'0.0.0.0'"
    if base == "inet6":
        return "'::'"
    if base == "decimal" and target == "VARCHAR":
        return quote_string(format(Decimal(0).quantize(Decimal(1).scaleb(-(column.scale or 0))), "f"))
    if target == "BLOB":
        return "from_hex('')"
    if target == "VARCHAR":
        return "''"
    return f"CAST(0 AS {target})"
