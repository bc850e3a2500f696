"""How long `relaydeck` commands take from start to exit, as a DBA's scripts call them, beside
another checkout's and beside `mariadb-binlog` on the same files.

    python benchmarks/cli_startup.py [--baseline-checkout PATH] [--rounds N]

Commands (each a process of its own, output discarded): `relaydeck --help`; `status --json` and
`recovery --json` on a repository holding one channel; `events --rows --json` of the bundled
MariaDB capture (both channels) with --jobs 1 and --jobs 2; and `mariadb-binlog
--base64-output=decode-rows -vv` of the same files. With --baseline-checkout, each command runs
with that checkout too (PATH/.venv/bin/python with PYTHONPATH=PATH), one after the other in every
round, so that both see the same machine. Reported per command: the median wall and CPU time
(getrusage of the reaped child) of each, and this checkout's over the baseline's.
Figures are printed and written to benchmarks/results/cli_startup.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import measurement_header, write_bytecode, write_results  # noqa: E402

CAPTURE = ROOT / "fixtures" / "mariadb-10.11-multisource" / "relay"
INDEXES = [str(CAPTURE / "relay-bin-m1.index"), str(CAPTURE / "relay-bin-m2.index")]


def commands(repository: Path) -> dict[str, list[str]]:
    """The relaydeck arguments of each command measured."""
    return {
        "help": ["--help"],
        "status_json": ["status", "--json", "--repository", str(repository)],
        "recovery_json": [
            "recovery",
            "--json",
            "--slave",
            str(repository.with_name("slave.duckdb")),
            "--repository",
            str(repository),
        ],
        "events_rows_json_jobs_1": ["events", "--rows", "--json", "--jobs", "1", *INDEXES],
        "events_rows_json_jobs_2": ["events", "--rows", "--json", "--jobs", "2", *INDEXES],
    }


def timed(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; a command that fails stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def repository_with_a_channel(folder: Path) -> Path:
    """A repository after a replay of the bundled capture's channel m2 (a slave beside it)."""
    repository = folder / "repository.sqlite"
    subprocess.run(
        [sys.executable, "-m", "console.cli", "replay", "--slave", str(folder / "slave.duckdb"),
         "--repository", str(repository), "--channel", f"m2={INDEXES[1]}"],
        cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return repository


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-checkout", type=Path, default=None, metavar="PATH")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    # `python -m` looks in its working folder first: each checkout runs from its own
    pythons: dict[str, tuple[str, dict[str, str] | None, Path]] = {"this": (sys.executable, None, ROOT)}
    if args.baseline_checkout is not None:
        baseline = args.baseline_checkout.resolve()
        python = baseline / ".venv" / "bin" / "python"
        if not python.exists():
            parser.error(
                f"{baseline} has no .venv: python3 -m venv .venv && .venv/bin/pip install -e . there"
            )
        write_bytecode(baseline)
        pythons["baseline"] = (str(python), {**os.environ, "PYTHONPATH": str(baseline)}, baseline)
    tool = shutil.which("mariadb-binlog")
    files = [str(CAPTURE / line.strip().removeprefix("./")) for index in INDEXES
             for line in Path(index).read_text().splitlines() if line.strip()]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="relaydeck-bench-cli-"))
    try:
        measured = commands(repository_with_a_channel(work))
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):  # interleaved: each sees the same machine load
            for name, arguments in measured.items():
                for checkout, (python, env, cwd) in pythons.items():
                    runs.setdefault((name, checkout), []).append(
                        timed([python, "-m", "console.cli", *arguments], env, cwd)
                    )
            if tool is not None:
                runs.setdefault(("mariadb_binlog_decode_rows", "tool"), []).append(
                    timed([tool, "--base64-output=decode-rows", "-vv", *files])
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures: dict[str, dict[str, object]] = {}
    for (name, checkout), timings in runs.items():
        entry = figures.setdefault(name, {})
        entry[f"{checkout}_wall_s"] = round(statistics.median(t[0] for t in timings), 3)
        entry[f"{checkout}_cpu_s"] = round(statistics.median(t[1] for t in timings), 3)
    print(
        f"{'command':26} {'wall':>7} {'cpu':>7}   {'baseline':>8} {'cpu':>7}   {'wall ratio':>10} {'cpu ratio':>9}"
    )
    for name, entry in figures.items():
        line = f"{name:26} {entry.get('this_wall_s', entry.get('tool_wall_s')):7.3f} "
        line += f"{entry.get('this_cpu_s', entry.get('tool_cpu_s')):7.3f}"
        if "baseline_wall_s" in entry:
            entry["wall_ratio"] = round(entry["this_wall_s"] / entry["baseline_wall_s"], 3)  # type: ignore[operator]
            entry["cpu_ratio"] = round(entry["this_cpu_s"] / entry["baseline_cpu_s"], 3)  # type: ignore[operator]
            line += f"   {entry['baseline_wall_s']:8.3f} {entry['baseline_cpu_s']:7.3f}"
            line += f"   {entry['wall_ratio']:10.3f} {entry['cpu_ratio']:9.3f}"
        print(line)
    tool_wall = figures.get("mariadb_binlog_decode_rows", {}).get("tool_wall_s")
    if tool_wall:
        for jobs in ("1", "2"):
            entry = figures[f"events_rows_json_jobs_{jobs}"]
            entry["mariadb_binlog_wall_over_this"] = round(tool_wall / entry["this_wall_s"], 3)  # type: ignore[operator]
            print(
                f"mariadb-binlog's wall over `events --jobs {jobs}`'s: {entry['mariadb_binlog_wall_over_this']}"
            )
    results = {
        **measurement_header(),
        "rounds": args.rounds,
        "baseline_checkout": str(args.baseline_checkout) if args.baseline_checkout else None,
        "relay_log_bytes": sum(os.path.getsize(f) for f in files),
        "commands": figures,
    }
    print(f"written to {write_results('cli_startup', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
