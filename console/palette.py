"""Colours by meaning (ok, warning, error, muted), taken from the current theme.

Cells and plots are Rich text, which cannot read Textual's CSS variables, so the theme's text
colours are looked up here: they are the ones a theme makes legible on its own background, light
or dark.
"""

from __future__ import annotations

from rich.style import Style
from textual.app import App

from .thresholds import CRIT, OK, UNKNOWN, WARN

ERROR = "error"
NOTE = "note"
MUTED = "muted"
ACCENT = "accent"
PLAIN = "plain"

_THEME_TEXT = {
    OK: "text-success",
    WARN: "text-warning",
    CRIT: "text-error",
    ERROR: "text-error",
    NOTE: "text-warning",
    ACCENT: "text-accent",
}

# A channel's and a worker's states, by how much attention they ask for
STATE_LEVELS = {
    "running": OK,
    "applying": OK,
    "preparing": OK,
    "waiting": WARN,
    "connecting": WARN,
    "recovering": WARN,
    "waiting for a dependency": WARN,
    "waiting for commit order": WARN,
    "error": ERROR,
    "stopped": MUTED,
    "idle": MUTED,
}


def style(app: App[object], level: str) -> Style:
    if level in (MUTED, UNKNOWN):
        return Style(dim=True)
    variable = _THEME_TEXT.get(level)
    if variable is None:
        return Style()
    colour = app.theme_variables.get(variable)
    return Style(color=colour, bold=level in (CRIT, ERROR)) if colour else Style()


def state_level(state: str) -> str:
    return STATE_LEVELS.get(state, PLAIN)
