"""pandas stays out of the processes that apply relay logs (engine/without_pandas.py): loading it
cost each of them a quarter second of CPU, the applier's on the way to its first commit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"


def run_python(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_replay_on_local_processes_loads_pandas_nowhere(tmp_path: Path) -> None:
    code = f"""
import json, sys
from pathlib import Path
from engine.applier.vocabulary import ParallelOptions
from engine.pool import ProcessExecutor
from engine.replay import ChannelSpec, Replay

class ConvertAndLook:
    # a segment task: converts a Python list as a preparing process does, then looks
    def run(self, segment):
        import pyarrow as pa
        pa.array([1, 2, None])
        return "pandas" in sys.modules

channels = [ChannelSpec(name, Path({str(CAPTURE)!r}) / f"relay-bin-{{name}}.index") for name in ("m1", "m2")]
work = Path({str(tmp_path)!r})
outcomes = Replay(work / "s.duckdb", work / "r.sqlite", channels,
                  parallel=ParallelOptions(workers=2, pool="processes")).run()
applied = sum(o.stats.transactions for o in outcomes)
in_applier = "pandas" in sys.modules
executor = ProcessExecutor(2)
try:
    in_processes = [executor.submit(ConvertAndLook(), None).result(timeout=60) for _ in range(4)]
finally:
    executor.close()
import pandas
print(json.dumps({{"applied": applied, "errors": [o.error.one_line() for o in outcomes if o.error],
                  "in_applier": in_applier, "in_processes": in_processes, "importable": pandas.__name__}}))
"""
    result = run_python(code)
    assert result["errors"] == []
    assert result["applied"] > 1000
    assert result["in_applier"] is False
    assert result["in_processes"] == [False] * 4
    assert result["importable"] == "pandas"


def test_pyarrows_pandas_functions_still_work_once_settled() -> None:
    code = """
import json, sys
import pyarrow as pa
from engine.without_pandas import settle_arrow_without_pandas
finders = list(sys.meta_path)
settle_arrow_without_pandas()
settled_unloaded = "pandas" not in sys.modules
import pandas as pd
frame = pd.DataFrame({"id": [1, 2], "name": ["a", None]})
table = pa.Table.from_pandas(frame, preserve_index=False)
back = table.to_pandas()
print(json.dumps({
    "settled_unloaded": settled_unloaded,
    "finders_restored": sys.meta_path == finders,
    "from_pandas": table.to_pylist(),
    "to_pandas": back.where(back.notna(), None).to_dict("records"),
    "plain": pa.array([1, None, 3]).to_pylist(),
}))
"""
    result = run_python(code)
    assert result["settled_unloaded"] is True
    assert result["finders_restored"] is True
    assert result["from_pandas"] == [{"id": 1, "name": "a"}, {"id": 2, "name": None}]
    assert result["to_pandas"] == [{"id": 1, "name": "a"}, {"id": 2, "name": None}]
    assert result["plain"] == [1, None, 3]


def test_settling_changes_nothing_where_pandas_is_loaded_already() -> None:
    code = """
import json, sys
import pandas as pd
import pyarrow as pa
from engine.without_pandas import settle_arrow_without_pandas
settle_arrow_without_pandas()
# pyarrow still recognises pandas objects: a missing value of a Series becomes null
print(json.dumps({"series": pa.array(pd.Series([1.0, None])).to_pylist()}))
"""
    assert run_python(code) == {"series": [1.0, None]}
