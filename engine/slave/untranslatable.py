"""The error of a replicated statement the slave cannot reproduce.

Apart from the translators that raise it (ddl/, statements.py): the appliers name it in what
they catch, and the translators load sqlglot, which only a statement or DDL needs, not a start.
"""

from __future__ import annotations

from ..errors import RelaydeckError


class UntranslatableStatement(RelaydeckError):
    """A replicated statement the slave cannot reproduce; `statement` is the SQL as logged."""

    errno = 1105  # ER_UNKNOWN_ERROR; a subclass with a more precise MySQL error names its own

    def __init__(self, statement: str, reason: str) -> None:
        self.statement = statement
        self.reason = reason
        super().__init__(f"cannot translate {abbreviate(statement)!r}: {reason}")


def abbreviate(sql: str, limit: int = 160, ellipsis: str = "...") -> str:
    """The statement on one line, at most `limit` characters (cut short with `ellipsis`)."""
    flat = " ".join(sql.split())
    return flat if len(flat) <= limit else flat[: limit - len(ellipsis)] + ellipsis
