"""The types workload: one table per type family with edge values, and random valid values
for any column."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from decimal import Decimal

from engine.binlog.column_types import ColumnDef, TableDef
from engine.generate.workloads.base import Workload, col, create_database, create_table, table_def
from engine.generate.workloads.source import EPOCH, Row, SourceServer


def _t(h: int, m: int, s: int, us: int = 0, negative: bool = False) -> timedelta:
    value = timedelta(hours=h, minutes=m, seconds=s, microseconds=us)
    return -value if negative else value


class Types(Workload):
    """One table per type family with edge values: every row encoder and renderer is exercised."""

    name = "types"
    default_size_mb = 0.5
    THREAD = 60
    DB = "typesdb"

    def __init__(self, rng: random.Random, target_bytes: int) -> None:
        super().__init__(rng, target_bytes)
        self.next_id: dict[str, int] = {}

    def tables(self) -> list[tuple[TableDef, list[Row]]]:
        db = self.DB
        max_d65 = Decimal("9" * 35 + "." + "9" * 30)
        big_text = "漢字テスト😀 " * 6000  # > 64 KB: needs MEDIUMTEXT
        big_blob = bytes(range(256)) * 300
        json_big = [
            {"i": i, "s": f"entry {i}", "ok": i % 2 == 0} for i in range(2500)
        ]  # > 64 KB: large format
        return [
            (
                table_def(
                    db,
                    "t_int",
                    [col("id", "int", nullable=False)]
                    + [
                        col(n, t)
                        for n, t in [
                            ("ti", "tinyint"),
                            ("tiu", "tinyint unsigned"),
                            ("si", "smallint"),
                            ("siu", "smallint unsigned"),
                        ]
                    ]
                    + [
                        col(n, t)
                        for n, t in [
                            ("mi", "mediumint"),
                            ("miu", "mediumint unsigned"),
                            ("i", "int"),
                            ("iu", "int unsigned"),
                        ]
                    ]
                    + [col("bi", "bigint"), col("biu", "bigint unsigned")],
                    ["id"],
                ),
                [
                    (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -(2**63), 0),
                    (
                        2,
                        127,
                        255,
                        32767,
                        65535,
                        8388607,
                        16777215,
                        2147483647,
                        4294967295,
                        2**63 - 1,
                        2**64 - 1,
                    ),
                    (3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                    (4, None, None, None, None, None, None, None, None, None, None),
                    (5, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1),
                ],
            ),
            (
                table_def(
                    db,
                    "t_decimal",
                    [
                        col("id", "int", nullable=False),
                        col("d65", "decimal(65,30)"),
                        col("d10", "decimal(10,2)"),
                        col("d5", "decimal(5,0)"),
                        col("d18u", "decimal(18,9) unsigned"),
                        col("d4", "decimal(4,4)"),
                    ],
                    ["id"],
                ),
                [
                    (
                        1,
                        max_d65,
                        Decimal("99999999.99"),
                        Decimal("99999"),
                        Decimal("999999999.999999999"),
                        Decimal("0.9999"),
                    ),
                    (
                        2,
                        max_d65.copy_negate(),
                        Decimal("-99999999.99"),
                        Decimal("-99999"),
                        Decimal("0"),
                        Decimal("-0.9999"),
                    ),
                    (
                        3,
                        Decimal("0"),
                        Decimal("12.30"),
                        Decimal("0"),
                        Decimal("1.000000000"),
                        Decimal("0.0000"),
                    ),
                    (
                        4,
                        Decimal("-0.000000000000000000000000000001"),
                        Decimal("-0.01"),
                        Decimal("-1"),
                        Decimal("0.000000001"),
                        Decimal("-0.0001"),
                    ),
                    (
                        5,
                        Decimal("123456789012345678901234567890.5"),
                        Decimal("1.00"),
                        Decimal("100"),
                        None,
                        None,
                    ),
                    (6, None, None, None, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_float",
                    [col("id", "int", nullable=False), col("f", "float"), col("d", "double")],
                    ["id"],
                ),
                [
                    (1, 1.5, -1234.5),
                    (2, -0.25, 0.001953125),
                    (3, 3.75, 123456789.125),
                    (4, 0.0, 0.0),
                    (5, 100.5, -2.5),
                    (6, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_time",
                    [
                        col("id", "int", nullable=False),
                        col("d", "date"),
                        col("dt", "datetime"),
                        col("dt6", "datetime(6)"),
                        col("ts3", "timestamp(3)", default_sql="NULL"),
                        col("tm", "time"),
                        col("tm2", "time(2)"),
                        col("tm6", "time(6)"),
                        col("yr", "year"),
                    ],
                    ["id"],
                ),
                [
                    (
                        1,
                        date(1000, 1, 1),
                        datetime(1000, 1, 1),
                        datetime(1000, 1, 1, 0, 0, 0, 0),
                        datetime(1970, 1, 1, 0, 0, 1),
                        _t(838, 59, 59, negative=True),
                        _t(0, 0, 0, 10000, True),
                        _t(838, 59, 59, negative=True),
                        1901,
                    ),
                    (
                        2,
                        date(9999, 12, 31),
                        datetime(9999, 12, 31, 23, 59, 59),
                        datetime(9999, 12, 31, 23, 59, 59, 999999),
                        datetime(2038, 1, 19, 3, 14, 7, 999000),
                        _t(838, 59, 59),
                        _t(100, 0, 0, 990000),
                        _t(838, 59, 59),
                        2155,
                    ),
                    (
                        3,
                        date(2020, 2, 29),
                        datetime(2020, 2, 29, 12, 34, 56),
                        datetime(2020, 2, 29, 12, 34, 56, 1),
                        datetime(2000, 1, 1, 0, 0, 0, 500000),
                        _t(0, 0, 0),
                        _t(12, 30, 45, 500000, True),
                        _t(0, 0, 1, 1, True),
                        0,
                    ),
                    (
                        4,
                        date(1999, 12, 31),
                        datetime(1999, 12, 31, 23, 59, 59),
                        datetime(2001, 9, 9, 1, 46, 40, 123456),
                        datetime(2024, 6, 30, 12, 0, 0, 123000),
                        _t(25, 0, 0),
                        _t(0, 0, 1, 500000, True),
                        _t(24, 0, 0, 500000),
                        2024,
                    ),
                    (5, None, None, None, None, None, None, None, None),
                ],
            ),
            (
                table_def(
                    db,
                    "t_string",
                    [
                        col("id", "int", nullable=False),
                        col("c10", "char(10)"),
                        col("c64", "char(64)"),
                        col("vc20", "varchar(20)"),
                        col("vc255", "varchar(255)"),
                        col("tt", "tinytext"),
                        col("tx", "text"),
                        col("mt", "mediumtext"),
                        col("lt", "longtext"),
                    ],
                    ["id"],
                ),
                [
                    (1, "", "", "", "", "", "", "", ""),
                    (
                        2,
                        "漢字漢字漢字漢字漢字",
                        "😀" * 64,
                        "😀🎉 emoji",
                        "🎉" * 255,
                        "ü" * 127,
                        'He said "hi", ok',
                        big_text,
                        "line1\nline2\r\nend",
                    ),
                    (
                        3,
                        "a",
                        "tab\there",
                        "C:\\path\\x",
                        'comma, "quote"',
                        "naïve café",
                        "x" * 5000,
                        "short",
                        "0x00 \x00 nul",
                    ),
                    (4, None, None, None, None, None, None, None, None),
                    (
                        5,
                        "trail",
                        "spaces?  no",
                        "trailing  ",
                        " lead",
                        "\\N literal",
                        "NULL",
                        "'single'",
                        "ok",
                    ),
                ],
            ),
            (
                table_def(
                    db,
                    "t_binary",
                    [
                        col("id", "int", nullable=False),
                        col("vb", "varbinary(16)"),
                        col("tb", "tinyblob"),
                        col("bl", "blob"),
                        col("mb", "mediumblob"),
                        col("lb", "longblob"),
                    ],
                    ["id"],
                ),
                [
                    (1, b"", b"", b"", b"", b""),
                    (2, b"\x00", b"\x00\x00\x00", b"\x00\x01\x02\xff", big_blob, b"\xff" * 300),
                    (3, bytes(range(16)), b"abc\x00def", bytes(range(256)), b"\x00", b"end\x00"),
                    (4, None, None, None, None, None),
                ],
            ),
            (
                table_def(db, "t_json", [col("id", "int", nullable=False), col("doc", "json")], ["id"]),
                [
                    (1, {"a": 1}),
                    (
                        2,
                        {"bb": [1, 2.5, "x"], "a": None, "ccc": {"t": True, "f": False}, "émoji😀": "日本語"},
                    ),
                    (3, []),
                    (4, {}),
                    (5, 'just a string, with "quotes"\nand a newline'),
                    (6, 42),
                    (7, [70000, -70000, 5000000000, -1.25, "s", [], {}]),
                    (8, None),
                    (9, json_big),
                    (10, {"nested": {"deeper": {"deepest": [1, {"k": "v"}]}}}),
                ],
            ),
            (
                table_def(
                    db,
                    "t_enum_set",
                    [
                        col("id", "int", nullable=False),
                        col("e", "enum('small','medium','large','x-large')"),
                        col("s", "set('red','green','blue','it''s')"),
                    ],
                    ["id"],
                ),
                [
                    (1, "small", ""),
                    (2, "x-large", "red,blue"),
                    (3, "medium", "red,green,blue,it's"),
                    (4, None, None),
                    (5, "large", "it's"),
                ],
            ),
            (
                table_def(
                    db,
                    "t_bit",
                    [
                        col("id", "int", nullable=False),
                        col("b1", "bit(1)"),
                        col("b8", "bit(8)"),
                        col("b13", "bit(13)"),
                        col("b64", "bit(64)"),
                    ],
                    ["id"],
                ),
                [
                    (1, 0, 0, 0, 0),
                    (2, 1, 255, 8191, 2**64 - 1),
                    (3, 1, 170, 4096, 2**63),
                    (4, None, None, None, None),
                ],
            ),
        ]

    def setup(self, src: SourceServer) -> None:
        create_database(src, self.DB, self.THREAD)
        for table, rows in self.tables():
            create_table(src, table, self.THREAD)
            txn = src.rows(self.THREAD)
            txn.insert((table.db, table.name), rows)
            txn.commit()
            self.next_id[table.name] = len(rows) + 1

    def step(self, src: SourceServer) -> None:
        rng = self.rng
        name = rng.choice(sorted(self.next_id))
        key = (self.DB, name)
        state = src.oracle.state(key)
        table = state.table
        txn = src.rows(self.THREAD)
        roll = rng.random()
        existing = state.rows.get((rng.randint(1, self.next_id[name] - 1),))
        if roll < 0.6 or existing is None:
            pk = self.next_id[name]
            self.next_id[name] = pk + 1
            txn.insert(key, [(pk, *[random_value(c, rng) for c in table.columns[1:]])])
        elif roll < 0.85:
            i = rng.randint(1, len(table.columns) - 1)
            after = existing[:i] + (random_value(table.columns[i], rng),) + existing[i + 1 :]
            txn.update(key, [(existing, after)])
        elif existing[0] > 10:  # type: ignore[operator]
            txn.delete(key, [existing])  # the edge-value rows the setup wrote stay
        txn.commit()


def random_value(column: ColumnDef, rng: random.Random) -> object:
    """A random, valid, unambiguously printable value for a column (NULL now and then)."""
    t = column.type
    if column.nullable and rng.random() < 0.1:
        return None
    base = t.base
    if base in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[base]
        return (
            rng.randint(0, 2**bits - 1)
            if t.unsigned
            else rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
    if base == "decimal":
        value = Decimal(f"{rng.randint(0, 10**t.precision - 1)}E-{t.scale}")  # exact, any precision
        return value if t.unsigned or rng.random() < 0.5 else value.copy_negate()
    if base in ("float", "double"):
        return rng.randint(-4000, 4000) / 8 + (0.125 if base == "double" else 0.5)
    if base == "date":
        return date(1000, 1, 1) + timedelta(days=rng.randint(0, 3_000_000))
    if base in ("datetime", "timestamp"):
        low, high = (1, 2**31 - 2) if base == "timestamp" else (-30_610_224_000, 253_402_300_799)
        us = rng.randint(0, 999_999) // 10 ** (6 - t.fsp) * 10 ** (6 - t.fsp)
        return EPOCH + timedelta(seconds=rng.randint(low, high), microseconds=us)
    if base == "time":
        us = rng.randint(0, 999_999) // 10 ** (6 - t.fsp) * 10 ** (6 - t.fsp)
        value = timedelta(seconds=rng.randint(0, 838 * 3600 + 59 * 60 + 58), microseconds=us)
        return -value if rng.random() < 0.3 else value
    if base == "year":
        return rng.choice([0, rng.randint(1901, 2155)])
    if base in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        limit = {"tinytext": 60, "text": 400, "mediumtext": 400, "longtext": 400}.get(base, t.length)
        alphabet = "abcxyz ÄÖü漢字😀,\"'\\"
        text = "".join(rng.choices(alphabet, k=rng.randint(0, min(limit, 40))))
        return text.rstrip(" ") if base == "char" else text
    if base in ("varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
        limit = t.length if base == "varbinary" else 64
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, limit)))
    if base == "json":
        return {
            "n": rng.randint(-1000, 1000),
            "tags": [rng.choice(["a", "b", "ç"]) for _ in range(rng.randint(0, 3))],
            "ok": rng.random() < 0.5,
        }
    if base == "enum":
        return rng.choice(t.elements)
    if base == "set":
        return ",".join(e for e in t.elements if rng.random() < 0.5)
    if base == "bit":
        return rng.getrandbits(t.length)
    raise ValueError(f"no random values for {t.sql}")
