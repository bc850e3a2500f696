"""MySQL/MariaDB collation ids -> the Python codec that decodes their strings.

Facts from the servers' collation tables (SHOW COLLATION). A collation with no Python codec, or an
id not listed, decodes as UTF-8 with the undecodable bytes kept (surrogateescape), never dropped.
"""

from __future__ import annotations

from functools import cache

from .constants import BINARY_CHARSET

_RANGES: list[tuple[str, tuple[int, ...] | range]] = [
    ("big5", (1, 84)),
    ("iso8859_2", (2, 9, 21, 27, 77)),
    ("cp850", (4, 80)),
    ("latin_1", (5, 8, 15, 31, 47, 48, 49, 94)),
    ("koi8_r", (7, 74)),
    ("ascii", (11, 65)),
    ("euc_jp", (12, 91, 97, 98)),
    ("shift_jis", (13, 88)),
    ("cp1251", (14, 23, 50, 51, 52)),
    ("iso8859_8", (16, 71)),
    ("tis_620", (18, 89)),
    ("euc_kr", (19, 85)),
    ("iso8859_13", (20, 41, 42, 79)),
    ("koi8_u", (22, 75)),
    ("gb2312", (24, 86)),
    ("iso8859_7", (25, 70)),
    ("cp1250", (26, 34, 44, 66, 99)),
    ("gbk", (28, 87)),
    ("cp1257", (29, 58, 59)),
    ("iso8859_9", (30, 78)),
    ("utf-8", (33, 83, 76, 223)),
    ("utf-8", range(192, 216)),
    ("utf-16-be", (35, 90, 159)),
    ("utf-16-be", range(128, 152)),
    ("cp866", (36, 68)),
    ("mac_latin2", (38, 43)),
    ("mac_roman", (39, 53)),
    ("cp852", (40, 81)),
    ("utf-8", (45, 46)),
    ("utf-8", range(224, 248)),
    ("utf-8", range(255, 324)),
    ("utf-16-be", (54, 55)),
    ("utf-16-be", range(101, 125)),
    ("utf-16-le", (56, 62)),
    ("cp1256", (57, 67)),
    ("utf-32-be", (60, 61)),
    ("utf-32-be", range(160, 184)),
    ("cp932", (95, 96)),
    ("gb18030", (248, 249, 250)),
]

_CODECS: dict[int, str] = {cid: codec for codec, ids in _RANGES for cid in ids}


@cache
def codec_for(collation_id: int | None) -> str | None:
    """The codec for a collation id; None means binary (keep bytes)."""
    if collation_id == BINARY_CHARSET:
        return None
    if collation_id is None:
        return "utf-8"
    return _CODECS.get(collation_id, "utf-8")
