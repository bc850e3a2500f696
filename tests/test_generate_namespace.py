"""generate(namespace=...): suffixed database names for fan-in, and unchanged bytes without one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from engine.generate import RotationSizes, generate, generate_with
from engine.replay import ChannelSpec, Replay

from .test_replay_oracle import assert_tables_equal

SIZE_MB = 0.3
SEED = 12


def relay_digests(relay_files: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in relay_files}


def expected_tables(out: Path) -> dict[tuple[str, str], Path]:
    return {(p.parent.name, p.stem): p for p in (out / "expected").glob("*/*.csv")}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, object]]:
    base = tmp_path_factory.mktemp("namespace")
    return {
        "omitted": (base / "omitted", generate("oltp", SEED, base / "omitted", SIZE_MB)),
        "empty": (base / "empty", generate("oltp", SEED, base / "empty", SIZE_MB, namespace="")),
        "_x": (base / "x", generate("oltp", SEED, base / "x", SIZE_MB, namespace="_x")),
    }


def test_an_empty_namespace_writes_the_same_bytes_as_none(outputs) -> None:
    (omitted_dir, omitted), (empty_dir, empty) = outputs["omitted"], outputs["empty"]
    assert relay_digests(omitted.relay_files) == relay_digests(empty.relay_files)
    assert (omitted_dir / "relay-bin.index").read_bytes() == (empty_dir / "relay-bin.index").read_bytes()
    manifest = (empty_dir / "expected" / "manifest.json").read_text()
    assert manifest == (omitted_dir / "expected" / "manifest.json").read_text()


def test_a_namespace_suffixes_every_database(outputs) -> None:
    (omitted_dir, omitted), (named_dir, named) = outputs["omitted"], outputs["_x"]
    plain = {db for db, _ in expected_tables(omitted_dir)}
    suffixed = {db for db, _ in expected_tables(named_dir)}
    assert plain == {"sbtest1", "sbtest2", "sbtest3"}
    assert suffixed == {"sbtest1_x", "sbtest2_x", "sbtest3_x"}
    # Table names stay as they were; only the databases move.
    assert {t for _, t in expected_tables(named_dir)} == {t for _, t in expected_tables(omitted_dir)}
    assert relay_digests(named.relay_files) != relay_digests(omitted.relay_files)
    manifest = json.loads((named_dir / "expected" / "manifest.json").read_text())
    assert manifest["generator"]["namespace"] == "_x"


def test_a_namespaced_log_replays_to_its_oracle(outputs, tmp_path: Path) -> None:
    named_dir, named = outputs["_x"]
    slave = tmp_path / "slave.duckdb"
    outcomes = Replay(slave, None, [ChannelSpec("", named.index_file)]).run()
    assert [o.error for o in outcomes] == [None]
    assert outcomes[0].stats.transactions == named.transactions
    assert_tables_equal(slave, expected_tables(named_dir))


@pytest.mark.parametrize("workload", ["hot", "mixed"])
def test_other_workloads_refuse_a_namespace(workload: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="namespace"):
        generate(workload, 1, tmp_path, 0.1, namespace="_x")
    with pytest.raises(ValueError, match="namespace"):
        generate_with(workload, 1, tmp_path, 1 << 16, RotationSizes(1 << 16, 1 << 20), namespace="_x")
    assert not any(tmp_path.iterdir())  # refused before writing anything
