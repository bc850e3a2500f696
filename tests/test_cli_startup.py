"""The command line is built without the engine's work: each subcommand loads what it runs when
it runs (console/cli/__init__.py). `relaydeck --help`, `status` and `recovery` are what a DBA's
scripts call every few seconds; loading the decoders, the listing and the hashing for them cost
about 50 ms a call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"

# what no subcommand needs to show its options
HEAVY = (
    "engine.binlog",
    "engine.listing",
    "engine.relaylog",
    "engine.scheduling.writeset",
    "engine.gtids",
    "engine.repository",
    "dataclasses",
    "hashlib",
    "sqlite_utils",
    "duckdb",
    "pyarrow",
    "numpy",
)


def loaded_after(code: str) -> list[str]:
    """The modules among HEAVY that a fresh interpreter holds after running `code`."""
    probe = f"""
import json, sys
{code}
heavy = {HEAVY!r}
print(json.dumps(sorted(m for m in sys.modules if m in heavy or m.startswith(tuple(h + "." for h in heavy)))))
"""
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT, timeout=120
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_building_the_command_line_loads_none_of_the_engines_work() -> None:
    assert loaded_after("import console.cli; console.cli.build_parser()") == []


def test_help_of_every_subcommand_loads_none_of_it() -> None:
    code = """
import contextlib, io
import console.cli
parser = console.cli.build_parser()
for name in ("events", "generate", "replay", "serve", "console", "sql", "analyze", "receive", "clone",
             "recovery", "status"):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        parser.parse_args([name, "--help"])
"""
    assert loaded_after(code) == []


def test_a_listing_still_loads_what_it_runs() -> None:
    # the check above must not pass because nothing is ever loaded: running a command does load
    code = f"""
import io
import console.cli
console.cli.main(["events", "--jobs", "1", "--limit", "3", {str(CAPTURE / "relay-bin-m2.index")!r}], io.StringIO())
"""
    loaded = loaded_after(code)
    assert "engine.listing" in loaded and "engine.binlog" in loaded and "engine.relaylog" in loaded
    assert "duckdb" not in loaded and "sqlite_utils" not in loaded  # a listing needs neither
