"""A JSON column's text: the compiled reader (engine/binlog/_jsontext.pyx) against the Python
forms it stands in for, json_text(decode_json(document)), on the same documents.

Both run interleaved, round by round, in one process; each figure is the best of a round's
timeit repeats, the ratio that of the rounds' medians. Every document's two texts must be equal.
Prints the figures and writes them to benchmarks/results/json_text.json.

    python benchmarks/json_text.py [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import measurement_header, write_results  # noqa: E402

from engine.binlog import columns  # noqa: E402
from engine.binlog.json_binary import decode_json, encode_json, json_text  # noqa: E402


def documents() -> dict[str, bytes]:
    """Shapes a JSON column holds: a small object (as the types workload writes), a mixed
    document, a large-format document of 2,500 objects, an array of doubles."""
    rng = random.Random(7)
    small = {"n": -417, "tags": ["a", "ç"], "ok": True}
    mixed = {
        "bb": [1, 2.5, "x", 70000, -70000, 5000000000],
        "a": None,
        "ccc": {"t": True, "f": False, "nested": {"deeper": [1, {"k": "v"}]}},
        "émoji😀": "日本語",
        "note": 'a string with "quotes"\nand a newline',
    }
    large = [{"i": i, "s": f"entry {i}", "ok": i % 2 == 0} for i in range(2500)]
    doubles = [rng.uniform(-1e6, 1e6) for _ in range(100)]
    return {
        name: encode_json(value)
        for name, value in [("small", small), ("mixed", mixed), ("large", large), ("doubles", doubles)]
    }


def per_call_us(call, document: bytes, number: int) -> float:
    return min(timeit.repeat(lambda: call(document), number=number, repeat=5)) / number * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compiled = columns._json_text
    if compiled is None:
        print("the compiled JSON reader is not built (pip install -e .)", file=sys.stderr)
        return 1

    def python_forms(document: bytes) -> str:
        return json_text(decode_json(document))

    results: dict[str, object] = {}
    for name, document in documents().items():
        if compiled.json_document_text(document) != python_forms(document):
            print(f"{name}: the compiled text differs from the Python forms'", file=sys.stderr)
            return 1
        # about 20 ms of Python work per repeat, whatever the document's size
        number = max(1, int(0.02 / (per_call_us(python_forms, document, 1) / 1e6)))
        python_us, c_us = [], []
        for _ in range(args.rounds):
            python_us.append(per_call_us(python_forms, document, number))
            c_us.append(per_call_us(compiled.json_document_text, document, number * 10))
        ratio = statistics.median(python_us) / statistics.median(c_us)
        results[name] = {
            "bytes": len(document),
            "python_forms_us": [round(v, 3) for v in python_us],
            "compiled_us": [round(v, 3) for v in c_us],
            "python_over_compiled": round(ratio, 1),
        }
        print(
            f"{name:8} {len(document):7} B  python {statistics.median(python_us):9.2f} µs"
            f"  compiled {statistics.median(c_us):8.2f} µs  {ratio:5.1f}×"
        )
    path = write_results("json_text", {**measurement_header(), "documents": results})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
