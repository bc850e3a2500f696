"""What a statement from a relay log may use on the slave: only what a MySQL statement could mean.

Statement-format DML and DDL expressions are translated MySQL -> DuckDB by sqlglot, which keeps
every function call it does not know as is. DuckDB would then run its own table and setting
functions from a relay log: read_csv('/etc/passwd'), read_text(), glob(), current_setting(),
query(), duckdb_settings() ... A relay log is input, not an operator, so the translated syntax
tree is checked against an allow-list before any of it reaches DuckDB:

- every table is a plain table reference (a name, never a function call, a string or a
  three-part name) in one of the replicated databases, or a CTE of the statement; the internal
  ``__relaydeck`` schemas, information_schema, pg_catalog and DuckDB's catalogs are none of them;
- every function is one MySQL has, and nothing that reads the server's environment, files or
  state (LOAD_FILE, SLEEP, VERSION, DATABASE, USER, GET_LOCK ... are left out). Typed sqlglot
  functions are allowed by their class: the classes sqlglot builds from MySQL's functions and
  operators, collected by parsing them (`collect_classes`); unknown functions
  (exp.Anonymous) by their name;
- every other node of the tree is a query, an operator, a literal, a name or a type, collected
  from MySQL's query syntax the same way; anything else (a command, PRAGMA, SET, COPY, ATTACH,
  a nested statement, UNNEST, LATERAL ...) is refused.

A refused statement is error 1290 (ER_OPTION_PREVENTS_STATEMENT, as MySQL refuses what an option
forbids); the applier adds the transaction and its relay-log position. The slave's DuckDB
connection has external access switched off as well (slave/database.py), so a function that
slipped through could still not reach a file or the network.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp

from ..errors import RelaydeckError
from . import names
from .names import INTERNAL_SCHEMA
from .rowapply import ER_NO_SUCH_TABLE, ApplyError
from .schema import Catalog
from .untranslatable import UntranslatableStatement, abbreviate

ER_OPTION_PREVENTS_STATEMENT = 1290

# DuckDB's own schemas and catalogs (`memory` too, an in-memory database's catalog): a replicated
# database of one of these names is found by `replicated_schemas`; otherwise the name means
# DuckDB's, never the source's.
DUCKDB_SCHEMAS = names.DUCKDB_SCHEMAS | {"memory"}

# MySQL 8 / MariaDB built-in functions a replicated statement may call: string, numeric, date and
# time, comparison, control flow, cast, bit, JSON, encryption/hashing, aggregate and window
# functions. Left out on purpose: what reads the host or the server (LOAD_FILE, SLEEP, BENCHMARK,
# the lock functions, DATABASE/SCHEMA, USER & co, VERSION, CONNECTION_ID, the GTID and wait
# functions), and what the statement translator refuses (UUID, FOUND_ROWS, ROW_COUNT). NOW and
# the like, RAND and UNIX_TIMESTAMP() are listed although the translator replaces them by what
# the source logged first.
MYSQL_FUNCTIONS = frozenset(
    """
    ABS ACOS ADDDATE ADDTIME AES_DECRYPT AES_ENCRYPT ANY_VALUE ASCII ASIN ATAN ATAN2 AVG BIN
    BIN_TO_UUID BIT_AND BIT_COUNT BIT_LENGTH BIT_OR BIT_XOR CAST CEIL CEILING CHAR CHAR_LENGTH
    CHARACTER_LENGTH COALESCE CONCAT CONCAT_WS CONV CONVERT CONVERT_TZ COS COT COUNT CRC32
    CUME_DIST CURDATE CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURTIME DATE DATE_ADD DATE_FORMAT
    DATE_SUB DATEDIFF DAY DAYNAME DAYOFMONTH DAYOFWEEK DAYOFYEAR DEGREES DENSE_RANK DIV ELT EXP
    EXPORT_SET EXTRACT FIELD FIND_IN_SET FIRST_VALUE FLOOR FORMAT FROM_BASE64 FROM_DAYS
    FROM_UNIXTIME GREATEST GROUP_CONCAT HEX HOUR IF IFNULL INET_ATON INET_NTOA INET6_ATON
    INET6_NTOA INSERT INSTR INTERVAL IS_IPV4 IS_IPV6 IS_UUID ISNULL JSON_ARRAY JSON_ARRAYAGG
    JSON_ARRAY_APPEND JSON_ARRAY_INSERT JSON_CONTAINS JSON_CONTAINS_PATH JSON_DEPTH JSON_EXTRACT
    JSON_INSERT JSON_KEYS JSON_LENGTH JSON_MERGE JSON_MERGE_PATCH JSON_MERGE_PRESERVE JSON_OBJECT
    JSON_OBJECTAGG JSON_OVERLAPS JSON_PRETTY JSON_QUOTE JSON_REMOVE JSON_REPLACE JSON_SEARCH
    JSON_SET JSON_TYPE JSON_UNQUOTE JSON_VALID JSON_VALUE LAG LAST_DAY LAST_VALUE LCASE LEAD LEAST
    LEFT LENGTH LN LOCALTIME LOCALTIMESTAMP LOCATE LOG LOG10 LOG2 LOWER LPAD LTRIM MAKE_SET
    MAKEDATE MAKETIME MAX MD5 MICROSECOND MID MIN MINUTE MOD MONTH MONTHNAME NOW NTH_VALUE NTILE
    NULLIF OCT OCTET_LENGTH ORD PERCENT_RANK PERIOD_ADD PERIOD_DIFF PI POSITION POW POWER QUARTER
    QUOTE RADIANS RAND RANK REGEXP_INSTR REGEXP_LIKE REGEXP_REPLACE REGEXP_SUBSTR REPEAT REPLACE
    REVERSE RIGHT ROUND ROW_NUMBER RPAD RTRIM SEC_TO_TIME SECOND SHA SHA1 SHA2 SIGN SIN SOUNDEX
    SPACE SQRT STD STDDEV STDDEV_POP STDDEV_SAMP STR_TO_DATE STRCMP SUBDATE SUBSTR SUBSTRING
    SUBSTRING_INDEX SUBTIME SUM SYSDATE TAN TIME TIME_FORMAT TIME_TO_SEC TIMEDIFF TIMESTAMP
    TIMESTAMPADD TIMESTAMPDIFF TO_BASE64 TO_DAYS TO_SECONDS TRIM TRUNCATE UCASE UNHEX UNIX_TIMESTAMP
    UPPER UTC_DATE UTC_TIME UTC_TIMESTAMP UUID_TO_BIN VAR_POP VAR_SAMP VARIANCE WEEK WEEKDAY
    WEEKOFYEAR WEIGHT_STRING YEAR YEARWEEK
    """.split()
)

# MySQL's own functions left out of MYSQL_FUNCTIONS on purpose (see above): what they give depends
# on the source server, its host, its session or the moment, so the slave computing them again
# would not hold what the source held. Refused with that reason, not as strangers to MySQL.
SOURCE_ONLY_FUNCTIONS = frozenset(
    """
    BENCHMARK CONNECTION_ID CURRENT_ROLE CURRENT_USER DATABASE FOUND_ROWS GET_LOCK GTID_SUBSET
    GTID_SUBTRACT ICU_VERSION IS_FREE_LOCK IS_USED_LOCK LOAD_FILE MASTER_POS_WAIT
    RELEASE_ALL_LOCKS RELEASE_LOCK ROLES_GRAPHML ROW_COUNT SCHEMA SESSION_USER SLEEP
    SOURCE_POS_WAIT SYSTEM_USER USER UUID UUID_SHORT VERSION WAIT_FOR_EXECUTED_GTID_SET
    WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS
    """.split()
)

# MySQL query syntax the node classes are collected from (with the functions above): every form a
# replicated INSERT/UPDATE/DELETE can take, and the operators MySQL has.
_MYSQL_SYNTAX = (
    "INSERT INTO d.t (a, b) VALUES (1, 'x'), (-2.5, NULL), (0x0f, b'1'), (TRUE, _utf8mb4'x')",
    "INSERT INTO d.t SET a = 1, b = DEFAULT",
    "INSERT INTO d.t (a) SELECT DISTINCT a FROM d.u AS x INNER JOIN d.v y ON x.a = y.a "
    "LEFT JOIN d.w USING (a) CROSS JOIN d.z RIGHT JOIN d.q ON TRUE STRAIGHT_JOIN d.r "
    "WHERE a BETWEEN 1 AND 2 AND b NOT IN (1, 2) OR c IS NOT NULL AND NOT d LIKE 'x%' ESCAPE '!' "
    "AND e REGEXP 'a' AND f RLIKE 'b' AND g <=> h AND i IN (SELECT 1) AND EXISTS (SELECT 1) "
    "AND j = ANY (SELECT 1) AND k > ALL (SELECT 1) AND l SOUNDS LIKE m AND n XOR o "
    "GROUP BY a WITH ROLLUP HAVING COUNT(*) > 1 AND COUNT(DISTINCT a) > 0 "
    "ORDER BY a DESC, b ASC LIMIT 10 OFFSET 5",
    "INSERT INTO d.t WITH c AS (SELECT 1 AS a) SELECT a FROM c UNION ALL SELECT 2 UNION SELECT 3 "
    "EXCEPT SELECT 4 INTERSECT SELECT 5",
    "INSERT INTO d.t SELECT * FROM (SELECT 1 a) AS s WHERE a = (SELECT MAX(a) FROM d.t) FOR UPDATE",
    "INSERT INTO d.t SELECT a + b - c * d / e DIV f % g MOD h, a & b | c ^ d << 1 >> 2, ~a, -a, !a, "
    "a || b, a && b, a != b, a <> b, a >= b, a <= b, a < b, CASE a WHEN 1 THEN 2 ELSE 3 END, "
    "CASE WHEN a THEN b END, CAST(a AS CHAR(10)), CAST(a AS SIGNED), CAST(a AS UNSIGNED), "
    "CAST(a AS DECIMAL(10, 2)), CAST(a AS DATETIME(6)), CAST(a AS DATE), CAST(a AS TIME), "
    "CAST(a AS BINARY), CAST(a AS JSON), CAST(a AS DOUBLE), CONVERT(a, CHAR), "
    "CONVERT(a USING utf8mb4), a COLLATE utf8mb4_bin, BINARY a, INTERVAL 1 DAY + a, "
    "a - INTERVAL '1:2' HOUR_MINUTE, DATE_ADD(a, INTERVAL 1 MONTH), EXTRACT(YEAR FROM a), "
    "TRIM(LEADING 'x' FROM a), TRIM(BOTH 'x' FROM a), SUBSTRING(a FROM 1 FOR 2), "
    "POSITION('a' IN b), GROUP_CONCAT(DISTINCT a ORDER BY b SEPARATOR ','), a->'$.x', a->>'$.y', "
    "ROW_NUMBER() OVER (PARTITION BY a ORDER BY b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), "
    "SUM(a) OVER w, DATE '2020-01-01', TIMESTAMP '2020-01-01 00:00:00', @@x, @y "
    "FROM d.t WINDOW w AS (ORDER BY a)",
    "UPDATE d.t SET a = a + 1, b = DEFAULT WHERE c = 1 ORDER BY a LIMIT 1",
    "DELETE FROM d.t WHERE a IS TRUE AND b IS NOT FALSE ORDER BY a LIMIT 2",
)

# Nodes the statement translator itself adds (slave/statements.py): literals for the session's
# values, AUTO_INCREMENT numbering, rowid selection for UPDATE/DELETE ... LIMIT.
_TRANSLATOR_NODES = (exp.Unhex, exp.Cast, exp.DataType, exp.Window, exp.RowNumber, exp.Subquery, exp.Null)

# Parsing the function names at these arities yields the classes sqlglot builds for them.
_ARGUMENTS = ("", "a", "a, b", "a, b, c", "a, b, c, d")


def collect_classes() -> tuple[frozenset[str], frozenset[str]]:
    """(function classes, other node classes) sqlglot parses MySQL's functions and syntax into,
    plus what the translator adds. Takes a second, so the result is kept below as
    ALLOWED_FUNCTIONS and ALLOWED_NODES (the tests hold the two equal)."""
    found: set[type[exp.Expression]] = set(_TRANSLATOR_NODES)
    sources = [f"SELECT {name}({args})" for name in sorted(MYSQL_FUNCTIONS) for args in _ARGUMENTS]
    for sql in (*sources, *_MYSQL_SYNTAX):
        try:
            tree = sqlglot.parse_one(sql, read="mysql")
        except Exception:  # noqa: BLE001 - a wrong arity; sqlglot raises more than its own errors
            continue
        found.update(type(node) for node in tree.walk())
    # Anonymous functions are judged by name. Statements are the root only (checked apart);
    # session references are replaced by literals before the check, so one left over is refused.
    found -= {exp.Anonymous, exp.Insert, exp.Update, exp.Delete, exp.Parameter, exp.SessionParameter}
    functions = frozenset(c.__name__ for c in found if issubclass(c, exp.Func))
    others = frozenset(c.__name__ for c in found if not issubclass(c, exp.Func))
    return functions, others


ALLOWED_FUNCTIONS = frozenset(
    """
    Abs Acos And AnyValue Ascii Asin Atan Atan2 Avg BitLength BitwiseAndAgg BitwiseCount
    BitwiseOrAgg BitwiseXorAgg Case Cast Ceil Chr Coalesce Collate Concat ConcatWs ConvertTimezone
    Cos Cot Count CumeDist CurrentDate CurrentTime CurrentTimestamp DateAdd DateDiff Day DayOfMonth
    DayOfWeek DayOfYear Dayname Degrees DenseRank Elt Exists Exp Extract FirstValue Floor
    FromBase64 Greatest GroupConcat Hex Hour If JSONArrayAppend JSONArrayInsert JSONExtract
    JSONExtractScalar JSONKeys JSONObject JSONObjectAgg JSONRemove JSONSet JSONType Lag LastDay
    LastValue Lead Least Left Length Ln Localtime Localtimestamp Log Lower MD5 Max Min Minute Month
    NthValue Ntile Nullif NumberToStr Or Pad PercentRank Pi Pow Quarter Radians Rand Rank RegexpInstr
    RegexpLike RegexpReplace RegexpSubstr Repeat Replace Reverse Right Round RowNumber SHA SHA2
    Second Sign Sin Soundex Space Sqrt StddevPop StddevSamp StrPosition StrToDate Stuff Substring
    SubstringIndex Sum Tan Time TimeFromParts TimeToStr Timestamp TimestampAdd TimestampDiff
    ToBase64 Trim Trunc TsOrDsToDate TsOrDsToTimestamp Unhex UnixToTime Upper UtcDate UtcTime
    UtcTimestamp Variance VariancePop Week WeekOfYear WeightString Xor Year
    """.split()
)
ALLOWED_NODES = frozenset(
    """
    Add Alias Aliases All Any Between BitString BitwiseAnd BitwiseLeftShift BitwiseNot BitwiseOr
    BitwiseRightShift BitwiseXor Boolean CTE Column DataType DataTypeParam Distinct Div EQ Escape
    Except From GT GTE Group Having HexString Identifier In IntDiv Intersect Interval Introducer Is
    JSONKeyValue JSONPath JSONPathKey JSONPathRoot JSONValue Join LT LTE Like Limit Literal Lock
    Mod Mul NEQ Neg Not Null NullSafeEQ Offset Order Ordered Paren Rollup Schema Select Star Sub
    Subquery Table TableAlias Tuple Union Values Var Where Window WindowSpec With
    """.split()
)


class RefusedStatement(UntranslatableStatement):
    """A replicated statement using something no MySQL statement could mean (a DuckDB table
    function, a setting, a schema outside the replicated databases ...)."""

    errno = ER_OPTION_PREVENTS_STATEMENT

    def __init__(self, statement: str, reason: str) -> None:
        self.statement = statement
        self.reason = reason
        RelaydeckError.__init__(
            self,
            "The slave is running with the relay-log statement allow-list so it cannot execute "
            f"this statement: {reason}; statement {abbreviate(statement, ellipsis='…')!r}",
        )


def _is_internal(schema: str) -> bool:
    folded = schema.lower()
    return folded == INTERNAL_SCHEMA or folded.startswith(INTERNAL_SCHEMA + "_")


def replicated_schemas(catalog: Catalog) -> frozenset[str]:
    """The replicated databases (lower case: DuckDB folds names). A source database may have an
    internal or a DuckDB name (`__relaydeck`, `main`): the statement translator gives it its own
    slave schema (names.duckdb_schema), so it is one of them; the temporary tables' internal
    schema is not."""
    tables = {schema.lower() for schema, _ in catalog if not _is_internal(schema)}
    return frozenset({db.lower() for db in catalog.databases} | tables)


def check_statement(
    statement: str,
    tree: exp.Expression,
    schemas: frozenset[str],
    extra_tables: Iterable[tuple[str, str]] = (),
) -> None:
    """Refuse `tree` (translated from `statement`) unless it uses only what MySQL could mean.

    schemas: the replicated databases tables may be in; extra_tables: (schema, name) pairs also
    allowed (the source session's temporary tables, kept in an internal schema).
    """
    extra = {(s.lower(), n.lower()) for s, n in extra_tables}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for node in tree.walk():
        kind = type(node)
        if node is tree and kind in (exp.Insert, exp.Update, exp.Delete):
            continue
        if kind is exp.Table:
            _check_table(statement, node, schemas, extra, ctes)
        elif kind is exp.Anonymous:
            if node.name.upper() not in MYSQL_FUNCTIONS:
                raise RefusedStatement(statement, _refused_function(node))
        elif issubclass(kind, exp.Func):
            if kind.__name__ not in ALLOWED_FUNCTIONS:
                raise RefusedStatement(statement, _refused_function(node))
        elif kind.__name__ not in ALLOWED_NODES:
            raise RefusedStatement(statement, f"{_describe(node)} is not part of a MySQL statement")


def _check_table(
    statement: str, table: exp.Table, schemas: frozenset[str], extra: set[tuple[str, str]], ctes: set[str]
) -> None:
    target = table.this
    if not isinstance(target, exp.Identifier):
        what = f"table function {_sql_name(target)}()" if isinstance(target, exp.Func) else _describe(target)
        raise RefusedStatement(statement, f"{what} is not a table")
    if table.args.get("catalog") is not None:
        raise RefusedStatement(statement, f"{table.sql(dialect='mysql')} names a catalog")
    for part in ("joins", "laterals", "pivots"):
        if table.args.get(part):
            raise RefusedStatement(statement, f"{part} on {table.sql(dialect='mysql')}")
    schema, name = table.db, table.name
    if not schema:
        if name.lower() in ctes:
            return
        raise RefusedStatement(statement, f"table {name!r} is in no database")
    if (schema.lower(), name.lower()) in extra:
        return
    folded = schema.lower()
    if folded in schemas:
        return
    if _is_internal(folded) or folded in DUCKDB_SCHEMAS:
        raise RefusedStatement(statement, f"`{schema}` is not a replicated database")
    # A database the slave does not hold: what MySQL would answer, and nothing reaches DuckDB.
    raise ApplyError(ER_NO_SUCH_TABLE, f"Table '{schema}.{name}' doesn't exist")


def _refused_function(node: exp.Expression) -> str:
    name = _sql_name(node)
    if not isinstance(node, exp.Anonymous):
        # as MySQL spells it: sqlglot's name for DATABASE() is CURRENT_SCHEMA
        name = node.sql(dialect="mysql").split("(", 1)[0] or name
    if name.upper() in SOURCE_ONLY_FUNCTIONS:
        return f"function {name}() gives what only the source server knew when it ran: the slave cannot reproduce it"
    return f"function {name}() is not a MySQL function"


def _sql_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name)
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return type(node).__name__


def _describe(node: exp.Expression) -> str:
    text = abbreviate(node.sql(dialect="duckdb"), 60, "…")
    return f"{type(node).__name__} {text!r}"
