"""Regenerates the SVG screenshots in screenshots/: python -m console.screenshots

By default, the console over the bundled example running for real (console/example_screenshots.py),
the README's pictures. With --demo, every view over the frozen, made-up state (console/demo_state.py)
after the keys of one scenario (SCENARIOS), into screenshots/demo/: the snapshot tests play the same
scenarios, so those pictures are what the tests check, identical on every machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot

from engine.api import RelaydeckError

from .app import ConsoleApp
from .demo_state import SOURCE, TAKEN_AT, DemoReplica
from .example_screenshots import PLOT_SECONDS, Pacing, take

SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
DEMO_SCREENSHOTS = SCREENSHOTS / "demo"
# Keys for the characters typed on the command line that are not their own key names
_KEY_NAMES = {" ": "space", "'": "apostrophe", ",": "comma", "=": "equals_sign", "*": "asterisk"}


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    keys: tuple[str, ...]  # key names, or "type:TEXT" for text typed on the command line
    size: tuple[int, int] = (80, 24)
    theme: str = "textual-dark"


SCENARIOS = (
    Scenario("channels", "Channels: one row per channel, the selected one in full below", ()),
    Scenario(
        "channels-large",
        "Channels at 120x36, channel oltp selected",
        ("right_square_bracket", "right_square_bracket", "right_square_bracket"),
        size=(120, 36),
    ),
    Scenario(
        "receiver",
        "Channels at 120x36, channel shop selected: it receives from its source, IO and SQL threads side by side",
        ("left_square_bracket", "left_square_bracket"),
        size=(120, 36),
    ),
    Scenario(
        "receiver-error",
        "Channel web: its source refuses the replication user, the IO thread retries with error 1045",
        ("left_square_bracket",),
        size=(120, 36),
    ),
    Scenario(
        "workers",
        "Workers of channel oltp with throughput and lag over the last minutes",
        ("right_square_bracket", "right_square_bracket", "right_square_bracket", "2"),
    ),
    Scenario(
        "command-result",
        "Command line: SHOW REPLICA STATUS, shown one column per line",
        (":", "type:SHOW REPLICA STATUS FOR CHANNEL 'm2'", "enter"),
    ),
    Scenario(
        "command-notes",
        "Command line: START REPLICA on running channels leaves notes, shown under the result",
        (":", "type:START REPLICA", "enter"),
    ),
    Scenario(
        "command-error",
        "Command line: an error, then completion offering the channel names",
        (":", "type:START REPLICA FOR CHANNEL 'nope'", "enter", "type:STOP REPLICA FOR CHANNEL ", "tab"),
    ),
    Scenario("recovery", "Recovery inspector: LWM, gaps, worker bitmaps, plan", ("4",)),
    Scenario(
        "recovery-light",
        "Recovery inspector in the light theme at 120x36",
        ("4",),
        size=(120, 36),
        theme="textual-light",
    ),
    Scenario(
        "relaylog",
        "Relay-log browser of m2 at its applied position, with the decoded rows of an UPDATE",
        ("right_square_bracket", "right_square_bracket", "5", "a", "down", "down"),
    ),
    Scenario("log", "Log: statements, errors and state changes", ("k", "y", "x", "6")),
    Scenario("kill-confirmation", "Kill asks first", ("k",)),
    Scenario("help", "Help: every key", ("question_mark",)),
)


def demo_app(replica: DemoReplica, theme: str = "textual-dark") -> ConsoleApp:
    """A console over the frozen state that does not poll: what it shows depends on nothing else."""
    app = ConsoleApp(replica, source=SOURCE, refresh_s=None, clock=lambda: TAKEN_AT)
    app.theme = theme
    return app


async def play(pilot: Pilot[None], replica: DemoReplica, scenario: Scenario) -> None:
    """Feed the demo's history, then press the scenario's keys, each once the last one's work is done."""
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    for snapshot in replica.rest_of_history():
        app.ingest(snapshot)
    await _settle(pilot)
    for key in scenario.keys:
        if key.startswith("type:"):
            for character in key.removeprefix("type:"):
                await pilot.press(_KEY_NAMES.get(character, character))
        else:
            await pilot.press(key)
        await _settle(pilot)
    # a console that failed shows its error screen: that must fail the test, not become its picture
    assert app.is_running, f"the console stopped during scenario {scenario.name!r}"


async def _settle(pilot: Pilot[None]) -> None:
    # twice: a thread's result comes back as a callback that may start the next thread (rows after a page)
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def capture(scenario: Scenario, folder: Path) -> Path:
    replica = DemoReplica()
    try:
        app = demo_app(replica, scenario.theme)
        async with app.run_test(size=scenario.size) as pilot:
            await play(pilot, replica, scenario)
            path = folder / f"{scenario.name}.svg"
            app.save_screenshot(str(path.name), str(folder))
            return path
    finally:
        replica.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.screenshots", description=__doc__)
    parser.add_argument(
        "--demo", action="store_true", help="the frozen demo state's scenarios (the snapshot tests' views)"
    )
    parser.add_argument(
        "--out", type=Path, help=f"default: {SCREENSHOTS.name}/ (with --demo: {SCREENSHOTS.name}/demo/)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="folder of the bundled example (its slave is emptied; default: a temporary folder)",
    )
    parser.add_argument(
        "--feed-seconds", type=float, help="how long the example's feed lasts (default: as in the console)"
    )
    parser.add_argument(
        "--plot-seconds",
        type=float,
        default=PLOT_SECONDS,
        help="throughput history to wait for before the workers' screenshot (default: %(default)g)",
    )
    args = parser.parse_args(argv)
    if args.demo:
        out = args.out or DEMO_SCREENSHOTS
        out.mkdir(parents=True, exist_ok=True)
        for scenario in SCENARIOS:
            path = asyncio.run(capture(scenario, out))
            print(f"{path}: {scenario.description}")
        return 0
    try:
        take(args.out or SCREENSHOTS, args.work, Pacing(args.feed_seconds, args.plot_seconds), sys.stdout)
    except RelaydeckError as exc:
        print(f"python -m console.screenshots: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
