"""Every view of the console, as recorded in tests/__snapshots__/ (the same scenarios as the SVGs
in screenshots/demo/): the frozen demo state, the keys pressed, the screen compared cell by cell.

After an intended change of the look: pytest tests/test_console_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from console.demo_state import DemoReplica
from console.screenshots import SCENARIOS, Scenario, demo_app, play


@pytest.fixture
def demo():
    replica = DemoReplica()
    yield replica
    replica.close()


def test_the_scenarios_cover_every_view_both_sizes_and_the_light_theme():
    keys = {key for s in SCENARIOS for key in s.keys}
    assert {"2", "4", "5", "6", ":", "question_mark", "k"} <= keys
    assert {s.size for s in SCENARIOS} >= {(80, 24), (120, 36)}
    assert any(s.theme == "textual-light" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_view_looks_as_recorded(snap_compare, demo: DemoReplica, scenario: Scenario):
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await play(pilot, demo, scenario)

    assert snap_compare(demo_app(demo, scenario.theme), terminal_size=scenario.size, run_before=run_before)
