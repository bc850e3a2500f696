"""The model: sqlglot's trees of column and key definitions -> MySQL's column and key facts.

A column becomes a `MysqlColumn` with MySQL's own normalizations applied (display widths dropped
but TINYINT(1), FLOAT(p) by precision, TEXT(n) by size, CHARACTER SET binary making byte
strings, ZEROFILL implying UNSIGNED, ...); a key becomes a `KeySpec` that a `Draft` adds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from sqlglot import exp

from ..schema import MysqlColumn
from ..types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    SPATIAL_TYPES,
    TEXT_TYPES,
    ConversionError,
    duckdb_type,
)
from .column_rewrites import ColumnNotes
from .tokens import DIALECT, TranslationError, quote_string

_T = exp.DataType.Type
_BASE_OF_TYPE: dict[exp.DataType.Type, str] = {
    _T.TINYINT: "tinyint",
    _T.UTINYINT: "tinyint",
    _T.SMALLINT: "smallint",
    _T.USMALLINT: "smallint",
    _T.MEDIUMINT: "mediumint",
    _T.UMEDIUMINT: "mediumint",
    _T.INT: "int",
    _T.UINT: "int",
    _T.BIGINT: "bigint",
    _T.UBIGINT: "bigint",
    _T.DECIMAL: "decimal",
    _T.UDECIMAL: "decimal",
    _T.FLOAT: "float",
    _T.DOUBLE: "double",
    _T.UDOUBLE: "double",
    _T.BIT: "bit",
    _T.DATE: "date",
    _T.DATETIME: "datetime",
    _T.TIMESTAMP: "timestamp",
    _T.TIMESTAMPTZ: "timestamp",  # sqlglot's MySQL dialect reads TIMESTAMP as TIMESTAMPTZ
    _T.TIME: "time",
    _T.YEAR: "year",
    _T.CHAR: "char",
    _T.NCHAR: "char",
    _T.VARCHAR: "varchar",
    _T.NVARCHAR: "varchar",
    _T.TINYTEXT: "tinytext",
    _T.TEXT: "text",
    _T.MEDIUMTEXT: "mediumtext",
    _T.LONGTEXT: "longtext",
    _T.BINARY: "binary",
    _T.VARBINARY: "varbinary",
    _T.TINYBLOB: "tinyblob",
    _T.BLOB: "blob",
    _T.MEDIUMBLOB: "mediumblob",
    _T.LONGBLOB: "longblob",
    _T.JSON: "json",
    _T.ENUM: "enum",
    _T.SET: "set",
    _T.GEOMETRY: "geometry",
    _T.VECTOR: "vector",
    _T.UUID: "uuid",
}
_UNSIGNED_TYPES = frozenset(
    {_T.UTINYINT, _T.USMALLINT, _T.UMEDIUMINT, _T.UINT, _T.UBIGINT, _T.UDECIMAL, _T.UDOUBLE}
)
_NAMED_TYPES = {name: name for name in SPATIAL_TYPES} | {
    "geomcollection": "geometrycollection",
    "inet4": "inet4",
    "inet6": "inet6",
    "uuid": "uuid",
}
_TEMPORAL_WITH_FSP = frozenset({"datetime", "timestamp", "time"})
BINARY_OF_TEXT = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}
TEXTUAL = TEXT_TYPES | {"enum", "set"}
# Bytes per character, for TEXT(n), which MySQL sizes in bytes.
_CHARSET_MAXLEN = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "ucs2": 2}
_SIZED_FAMILIES = {
    "text": ("tinytext", "text", "mediumtext", "longtext"),
    "blob": ("tinyblob", "blob", "mediumblob", "longblob"),
}


@dataclass(frozen=True)
class _TypeFacts:
    base: str
    unsigned: bool = False
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    elements: tuple[str, ...] = ()


def _int_param(node: exp.Expression) -> int:
    value = node.this if isinstance(node, exp.DataTypeParam) else node
    try:
        return int(value.name if isinstance(value, exp.Expression) else value)
    except (TypeError, ValueError):
        raise TranslationError(
            f"expected a number in a column type, got {node.sql(dialect=DIALECT)!r}"
        ) from None


def _type_facts(datatype: exp.DataType, charset: str | None) -> _TypeFacts:
    """sqlglot's DataType -> MySQL's normalized type facts (MySQL's own normalizations applied).

    >>> def base(sql, charset=None):
    ...     return _type_facts(exp.DataType.build(sql, dialect=DIALECT), charset).base
    >>> base("FLOAT(30)"), base("TEXT(20000)", "utf8mb4"), base("TEXT(20000)", "latin1")
    ('double', 'mediumtext', 'text')
    """
    kind = datatype.this
    params = list(datatype.expressions)
    if kind == _T.USERDEFINED:
        name = str(datatype.args.get("kind") or "").lower()
        if name not in _NAMED_TYPES:
            raise TranslationError(f"unsupported column type {name or datatype.sql(dialect=DIALECT)!r}")
        return _TypeFacts(_NAMED_TYPES[name])
    if kind == _T.BOOLEAN:
        return _TypeFacts("tinyint", length=1)
    base = _BASE_OF_TYPE.get(kind)
    if base is None:
        raise TranslationError(f"unsupported column type {datatype.sql(dialect=DIALECT)!r}")
    unsigned = kind in _UNSIGNED_TYPES
    numbers = [_int_param(p) for p in params] if base not in ("enum", "set") else []
    if base in INTEGER_TYPES:
        # Display widths mean nothing to values; TINYINT(1) is kept because it marks booleans.
        width = numbers[0] if numbers else None
        return _TypeFacts(base, unsigned, length=1 if base == "tinyint" and width == 1 else None)
    if base == "decimal":
        precision = numbers[0] if numbers else 10
        return _TypeFacts(base, unsigned, precision=precision, scale=numbers[1] if len(numbers) > 1 else 0)
    if base in ("float", "double"):
        if base == "float" and len(numbers) == 1:
            return _TypeFacts(
                "double" if numbers[0] > 24 else "float", unsigned
            )  # FLOAT(p): p > 24 is DOUBLE
        if len(numbers) == 2:
            return _TypeFacts(base, unsigned, precision=numbers[0], scale=numbers[1])
        return _TypeFacts(base, unsigned)
    if base == "bit":
        return _TypeFacts(base, length=numbers[0] if numbers else 1)
    if base in _TEMPORAL_WITH_FSP:
        return _TypeFacts(base, fsp=numbers[0] if numbers else 0)
    if base in ("char", "binary"):
        return _TypeFacts(base, length=numbers[0] if numbers else 1)
    if base in ("varchar", "varbinary"):
        if not numbers:
            raise TranslationError(f"{base.upper()} needs a length")
        return _TypeFacts(base, length=numbers[0])
    if base in ("text", "blob") and numbers:
        # TEXT(n)/BLOB(n): MySQL picks the smallest type holding n characters/bytes.
        size = numbers[0] * (_CHARSET_MAXLEN.get(charset or "", 1) if base == "text" else 1)
        family = _SIZED_FAMILIES[base]
        index = 0 if size < 2**8 else 1 if size < 2**16 else 2 if size < 2**24 else 3
        return _TypeFacts(family[index])
    if base in ("enum", "set"):
        elements = tuple(p.this if isinstance(p, exp.Literal) else p.sql(dialect=DIALECT) for p in params)
        return _TypeFacts(base, elements=elements)
    if base == "vector":
        return _TypeFacts(base, length=numbers[0] if numbers else 2048)
    return _TypeFacts(base)


def mysql_type_text(column: MysqlColumn) -> str:
    base = column.base_type
    if base == "decimal":
        text = f"decimal({column.precision},{column.scale})"
    elif base in ("float", "double") and column.precision is not None:
        text = f"{base}({column.precision},{column.scale})"
    elif base in ("bit", "char", "varchar", "binary", "varbinary", "vector") or (
        base == "tinyint" and column.length == 1
    ):
        text = f"{base}({column.length})"
    elif base in _TEMPORAL_WITH_FSP and column.fsp:
        text = f"{base}({column.fsp})"
    elif base in ("enum", "set"):
        text = f"{base}(" + ",".join(quote_string(e) for e in column.elements) + ")"
    else:
        text = base
    return f"{text} unsigned" if column.unsigned else text


def charset_of_collation(collation: str) -> str:
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def name_of(node: exp.Expression) -> str:
    if isinstance(node, exp.Identifier):
        return node.this
    if isinstance(node, exp.Literal | exp.Var):
        return str(node.this)
    return node.name


_NOW_FUNCTIONS = frozenset({"NOW", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP"})


def now_fsp(node: exp.Expression) -> int | None:
    """If `node` is CURRENT_TIMESTAMP or a synonym: its precision (0 when none); else None."""
    if isinstance(node, exp.CurrentTimestamp | exp.Localtimestamp | exp.Localtime):
        arg = node.this
    elif isinstance(node, exp.Anonymous) and str(node.this).upper() in _NOW_FUNCTIONS:
        arg = node.expressions[0] if node.expressions else None
    else:
        return None
    return _int_param(arg) if arg is not None else 0


def default_text(node: exp.Expression) -> str:
    """MySQL SQL text of a DEFAULT value; CURRENT_TIMESTAMP's synonyms are normalized."""
    fsp = now_fsp(node)
    if fsp is not None:
        return f"CURRENT_TIMESTAMP({fsp})" if fsp else "CURRENT_TIMESTAMP"
    return node.sql(dialect=DIALECT)


def _unparen(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Paren) else node


@dataclass(frozen=True)
class TextDefaults:
    """Charset and collation text columns get when they name none (table's, else database's)."""

    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True)
class ColumnDefinition:
    column: MysqlColumn
    primary_key: bool  # declared PRIMARY KEY (or KEY) on the column
    unique: bool  # declared UNIQUE on the column


@dataclass
class _ColumnAttributes:
    """What a column definition says besides its type."""

    nullable: bool = True
    default: str | None = None
    auto_increment: bool = False
    on_update: bool = False
    zerofill: bool = False
    invisible: bool = False
    binary_collation: bool = False  # VARCHAR(n) BINARY: the charset's _bin collation
    primary: bool = False
    unique: bool = False
    generated: str | None = None
    stored: bool = False
    charset: str | None = None
    collation: str | None = None


def _column_attributes(definition: exp.ColumnDef) -> _ColumnAttributes:
    """The attributes of a sqlglot ColumnDef, read from its constraints."""
    name = definition.name
    seen = _ColumnAttributes()
    for constraint in definition.args.get("constraints") or []:
        kind = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else constraint
        if isinstance(kind, exp.NotNullColumnConstraint):
            seen.nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.DefaultColumnConstraint):
            seen.default = default_text(kind.this)
        elif isinstance(kind, exp.OnUpdateColumnConstraint):
            if now_fsp(kind.this) is None:
                raise TranslationError(f"ON UPDATE {kind.this.sql(dialect=DIALECT)} is not CURRENT_TIMESTAMP")
            seen.on_update = True
        elif isinstance(kind, exp.AutoIncrementColumnConstraint):
            seen.auto_increment = True
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            seen.primary = True
        elif isinstance(kind, exp.UniqueColumnConstraint):
            seen.unique = True
        elif isinstance(kind, exp.ComputedColumnConstraint):
            seen.generated = _unparen(kind.this).sql(dialect=DIALECT)
            seen.stored = bool(kind.args.get("persisted"))
        elif isinstance(kind, exp.CharacterSetColumnConstraint):
            seen.charset = name_of(kind.this).lower()
        elif isinstance(kind, exp.CollateColumnConstraint):
            seen.collation = name_of(kind.this).lower()
        elif isinstance(kind, exp.ZeroFillColumnConstraint):
            seen.zerofill = True
        elif isinstance(kind, exp.InvisibleColumnConstraint):
            seen.invisible = True
        elif isinstance(kind, exp.BinaryColumnConstraint):
            seen.binary_collation = True
        elif isinstance(kind, exp.CommentColumnConstraint | exp.CheckColumnConstraint | exp.Reference):
            pass  # comments, CHECK and inline REFERENCES (which MySQL ignores) change no value
        else:
            raise TranslationError(
                f"unsupported attribute {constraint.sql(dialect=DIALECT)!r} on column {name!r}"
            )
    return seen


def column_definition(
    definition: exp.ColumnDef, defaults: TextDefaults, notes: ColumnNotes
) -> ColumnDefinition:
    """A sqlglot ColumnDef -> the MySQL column it declares.

    >>> tree = exp.maybe_parse("ALTER TABLE t ADD COLUMN c VARCHAR(10) BINARY NOT NULL", dialect=DIALECT)
    >>> column = column_definition(tree.args["actions"][0], TextDefaults("utf8mb4"), ColumnNotes()).column
    >>> column.mysql_type, column.charset, column.collation, column.nullable
    ('varchar(10)', 'utf8mb4', 'utf8mb4_bin', False)
    """
    name = definition.name
    datatype = definition.args.get("kind")
    if not isinstance(datatype, exp.DataType):
        raise TranslationError(f"column {name!r} has no type")
    seen = _column_attributes(definition)
    charset, collation = seen.charset, seen.collation
    if collation is not None and charset is None:
        charset = charset_of_collation(collation)
    if charset is None and datatype.this in (_T.NCHAR, _T.NVARCHAR):
        charset = "utf8mb3"  # NATIONAL CHAR/VARCHAR
    if charset is None:
        charset, collation = defaults.charset, collation or defaults.collation
    facts = _type_facts(datatype, charset)
    base = facts.base
    if base in TEXT_TYPES and charset == "binary":
        base = BINARY_OF_TEXT[base]  # CHARACTER SET binary makes byte strings
    if base in TEXTUAL and charset != "binary":
        if seen.binary_collation and charset is not None:
            collation = f"{charset}_bin"
    else:
        charset = collation = None
    column = MysqlColumn(
        name=name,
        mysql_type="",
        base_type=base,
        nullable=seen.nullable and not seen.primary,
        default=seen.default,
        unsigned=facts.unsigned
        or seen.zerofill
        or name.casefold() in notes.unsigned_floats,  # ZEROFILL implies UNSIGNED
        auto_increment=seen.auto_increment,
        generated_expression=seen.generated,
        generated_stored=seen.stored,
        charset=charset,
        collation=collation,
        binary=base in BINARY_TYPES,
        on_update_current_timestamp=seen.on_update,
        length=facts.length,
        precision=facts.precision,
        scale=facts.scale,
        fsp=facts.fsp,
        elements=facts.elements,
        zerofill=seen.zerofill,
        invisible=seen.invisible,
    )
    column = replace(column, mysql_type=mysql_type_text(column))
    try:
        duckdb_type(column)
    except ConversionError as exc:
        raise TranslationError(str(exc)) from None
    return ColumnDefinition(column, seen.primary, seen.unique)


def key_parts(items: Iterable[exp.Expression]) -> tuple[str, ...]:
    """Index key parts -> column names, or '(expr)' for MySQL 8 functional key parts."""
    parts: list[str] = []
    for item in items:
        node = item.this if isinstance(item, exp.Ordered) else item
        if isinstance(node, exp.Paren):
            parts.append("(" + node.this.sql(dialect=DIALECT) + ")")
        elif isinstance(node, exp.ColumnPrefix):
            parts.append(name_of(node.this))
        elif isinstance(node, exp.Identifier | exp.Column):
            parts.append(name_of(node))
        else:
            raise TranslationError(f"unsupported index key part {node.sql(dialect=DIALECT)!r}")
    return tuple(parts)


@dataclass(frozen=True)
class KeySpec:
    """A key declared by a table element or an ADD clause."""

    kind: str  # 'primary', 'unique', 'index', 'foreign'
    name: str | None
    columns: tuple[str, ...]
    reference: tuple[str | None, str, tuple[str, ...]] | None = None


def key_spec(node: exp.Expression) -> KeySpec | None:
    """A key from a table element / ADD CONSTRAINT node, or None for CHECK constraints."""
    symbol: str | None = None
    if isinstance(node, exp.Constraint):
        symbol = name_of(node.this) if node.this is not None else None
        inner = node.expressions
        if len(inner) != 1:
            raise TranslationError(f"unsupported constraint {node.sql(dialect=DIALECT)!r}")
        node = inner[0]
    if isinstance(node, exp.PrimaryKey):
        return KeySpec("primary", None, key_parts(node.expressions))
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if not isinstance(schema, exp.Schema):
            raise TranslationError("UNIQUE without columns")
        name = name_of(schema.this) if schema.this is not None else symbol
        return KeySpec("unique", name, key_parts(schema.expressions))
    if isinstance(node, exp.IndexColumnConstraint):
        name = name_of(node.this) if node.this is not None else None
        return KeySpec("index", name, key_parts(node.expressions))
    if isinstance(node, exp.ForeignKey):
        reference = node.args.get("reference")
        target = reference.this if isinstance(reference, exp.Reference) else None
        if not isinstance(target, exp.Schema) or not isinstance(target.this, exp.Table):
            raise TranslationError("FOREIGN KEY without a referenced table")
        table = target.this
        name = symbol or (name_of(node.this) if node.this is not None else None)
        ref = (table.db or None, table.name, key_parts(target.expressions))
        return KeySpec("foreign", name, key_parts(node.expressions), ref)
    if isinstance(node, exp.CheckColumnConstraint | exp.Check):
        return None
    raise TranslationError(f"unsupported table element {node.sql(dialect=DIALECT)!r}")


def drop_targets(node: exp.Expression) -> list[exp.Expression]:
    """What a sqlglot DROP names (tables, columns, indexes)."""
    return list(node.args.get("tables") or node.expressions)
