"""Tab completion of replication statements: keywords, channel names, variables, CHANGE options.

What is offered depends on the words before the cursor: after FOR CHANNEL, channel names (quoted);
after SET [GLOBAL], variable names; after CHANGE REPLICATION SOURCE TO or a comma in it, its
options; elsewhere the statements' keywords.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from engine.api import CHANGE_OPTIONS, VARIABLES

# The words of the statements the engine accepts, in the order a DBA meets them
KEYWORDS = (
    "CHANGE",
    "REPLICATION",
    "SOURCE",
    "TO",
    "START",
    "STOP",
    "RESET",
    "REPLICA",
    "ALL",
    "SHOW",
    "STATUS",
    "RELAYLOG",
    "EVENTS",
    "IN",
    "FROM",
    "LIMIT",
    "OFFSET",
    "FOR",
    "CHANNEL",
    "SET",
    "GLOBAL",
    "PERSIST",
    "DEFAULT",
    "UNTIL",
    "SQL_THREAD",
    "IO_THREAD",
    "SQL_AFTER_MTS_GAPS",
    "SQL_BEFORE_GTIDS",
    "SQL_AFTER_GTIDS",
    "RELAY_LOG_FILE",
    "RELAY_LOG_POS",
    "SOURCE_LOG_FILE",
    "SOURCE_LOG_POS",
)

_WORD = re.compile(r"[\w$@.']*$")


@dataclass(frozen=True, slots=True)
class Completion:
    text: str  # the whole line after completing
    candidates: tuple[str, ...]  # what the word could become (several: the choice is the user's)


def complete(line: str, channels: list[str]) -> Completion:
    """Complete the word at the end of line: fully when one candidate fits, else as far as they agree."""
    word = _WORD.search(line).group()  # type: ignore[union-attr]  # matches at least ""
    before = line[: len(line) - len(word)]
    pool = _candidates(before.upper().split(), channels)
    typed = word.upper()
    # a channel name may be typed without its opening quote
    matches = tuple(
        sorted(
            {c for c in pool if c.upper().startswith(typed) or c.upper().startswith("'" + typed)},
            key=str.upper,
        )
    )
    if not matches:
        return Completion(line, ())
    if len(matches) == 1:
        return Completion(before + matches[0] + " ", matches)
    common = os.path.commonprefix([m.upper() for m in matches])
    # keep what the user typed when the candidates agree on nothing more
    completed = matches[0][: len(common)] if len(common) > len(word) else word
    if completed.startswith("'") and not word.startswith("'") and len(common) <= len(word) + 1:
        completed = word  # only the opening quote would be added: not worth changing the line
    return Completion(before + completed, matches)


def _candidates(words: list[str], channels: list[str]) -> list[str]:
    if words[-2:] == ["FOR", "CHANNEL"]:
        return ["'" + name.replace("'", "''") + "'" for name in channels]
    if words[:1] == ["SET"] and (
        len(words) == 1 or words[-1] in ("GLOBAL", "PERSIST") or words[-1].endswith(",")
    ):
        return [name.upper() for name in VARIABLES] + (["GLOBAL", "PERSIST"] if len(words) == 1 else [])
    if words[:1] == ["CHANGE"] and (words[-1:] == ["TO"] or (words and words[-1].endswith(","))):
        return sorted(CHANGE_OPTIONS)
    return list(KEYWORDS)
