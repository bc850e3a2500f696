"""DuckDB identifiers for MySQL names.

Every name relaydeck writes into DuckDB SQL (databases, tables, columns) is quoted, always: names
are data, and a MySQL name may be a DuckDB keyword, hold spaces or quotes, or differ from
another only in case.
"""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """A DuckDB identifier for any name: double-quoted, inner double quotes doubled.

    >>> quote_ident("order")
    '"order"'
    >>> quote_ident('a"b')
    '"a""b"'
    """
    return '"' + name.replace('"', '""') + '"'
