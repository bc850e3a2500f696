"""The help screen: every key, by where it works, read from the bindings themselves so it cannot
fall behind them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_WIDTH = 8
# Keys that are not bindings of ours: the widgets' own
TABLE_KEYS = (
    ("↑ ↓", "move in a table (in Channels: select the channel)"),
    ("PgUp PgDn Home End", "move by pages, to the first or last row"),
    ("← →", "scroll a wide table sideways"),
    ("Tab", "next part of the screen (Shift+Tab: previous)"),
)
LINE_KEYS = (("Enter", "run the statement (RESET asks first)"),)


def key_label(binding: BindingType) -> str:
    key = binding.key if isinstance(binding, Binding) else binding[0]
    names = []
    for one in key.split(","):
        modifiers, _, last = one.rpartition("+")
        names.append(
            (modifiers.replace("ctrl", "^").replace("+", "") if modifiers else "") + format_key(last)
        )
    return " ".join(names)


def key_rows(bindings: Iterable[BindingType]) -> list[tuple[str, str]]:
    rows = []
    for binding in bindings:
        description = (
            binding.description if isinstance(binding, Binding) else (binding[2] if len(binding) > 2 else "")
        )
        tooltip = binding.tooltip if isinstance(binding, Binding) else ""
        rows.append((key_label(binding), tooltip or description))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "app.pop_screen", "Close help")]

    def __init__(self, sections: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        parts: list[Text | Table] = []
        for title, rows in self.sections:
            parts.append(Text(f"\n{title}", style="bold underline"))
            table = Table.grid(padding=(0, 2))
            table.add_column(style="bold", no_wrap=True, min_width=KEY_WIDTH)
            table.add_column()
            for keys, description in rows:
                table.add_row(keys, description)
            parts.append(table)
        with VerticalScroll(id="help-dialog"):
            yield Static(Text("relaydeck console — keys (Esc closes)", style="bold"), id="help-title")
            yield Static(Group(*parts), id="help-keys")
