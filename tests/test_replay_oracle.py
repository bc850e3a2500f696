"""The oracle: replaying the real MariaDB capture gives exactly the tables the source servers had."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from engine.generate import WORKLOADS, generate
from engine.replay import ChannelSpec, Replay
from engine.slave.database import Slave
from engine.slave.export import export_csv

from .conftest import MULTISOURCE

EXPECTED = MULTISOURCE / "expected"
CHANNELS = [
    ChannelSpec("m1", MULTISOURCE / "relay" / "relay-bin-m1.index"),
    ChannelSpec("m2", MULTISOURCE / "relay" / "relay-bin-m2.index"),
]


M1_SCHEMAS = {"sbtest1", "sbtest2", "sbtest3"}  # the capture's channel m1 writes these databases


def expected_tables(folder: Path = EXPECTED, schemas: set[str] | None = None) -> dict[tuple[str, str], Path]:
    """(database, table) -> the oracle's CSV, of the bundled capture or of a generated log's folder
    (of `schemas` only, if given)."""
    return {
        (p.parent.name, p.stem): p
        for p in sorted(folder.glob("*/*.csv"))
        if schemas is None or p.parent.name in schemas
    }


def assert_tables_equal(
    slave_path: Path, expected: dict[tuple[str, str], Path], schemas: set[str] | None = None
) -> None:
    """The slave's tables (of `schemas` only, if given) are exactly the expected CSVs."""
    slave = Slave(slave_path)
    try:
        tables = [t for t in slave.user_tables() if schemas is None or t[0] in schemas]
        assert sorted(tables) == sorted(expected)
        for key, path in expected.items():
            table = slave.catalog.get(key)
            assert table is not None, f"{key} missing from the catalog"
            got = export_csv(slave, table)
            want = path.read_bytes().decode("utf-8")  # values may hold CR: no newline translation
            if got != want:
                diff = "".join(
                    list(
                        difflib.unified_diff(
                            want.splitlines(True), got.splitlines(True), "expected", "slave", n=1
                        )
                    )[:40]
                )
                pytest.fail(f"{key[0]}.{key[1]} differs:\n{diff}")
    finally:
        slave.close()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, Path, list]:
    folder = tmp_path_factory.mktemp("oracle")
    slave, repo = folder / "slave.duckdb", folder / "repo.sqlite"
    outcomes = Replay(slave, repo, CHANNELS).run()
    return slave, repo, outcomes


def test_both_channels_replay_without_error(replayed):
    _, _, outcomes = replayed
    assert [o.error for o in outcomes] == [None, None]
    assert [o.stats.transactions for o in outcomes] == [2145, 303]


def test_replaying_the_capture_gives_exactly_the_expected_tables(replayed):
    slave, _, _ = replayed
    assert_tables_equal(slave, expected_tables())


def test_a_second_replay_applies_nothing_twice(replayed):
    slave, repo, _ = replayed
    outcomes = Replay(slave, repo, CHANNELS).run()
    assert [o.stats.transactions for o in outcomes] == [0, 0]
    assert_tables_equal(slave, expected_tables())
    check = Slave(slave)
    try:
        dupes = check.con.execute(
            "SELECT count(*) FROM (SELECT channel, gtid FROM __relaydeck.commits GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()[0]
        total = check.con.execute("SELECT count(*) FROM __relaydeck.commits").fetchone()[0]
    finally:
        check.close()
    assert dupes == 0 and total == 2145 + 303


@pytest.mark.parametrize("workload", WORKLOADS)
def test_every_generated_workload_replays_to_its_own_oracle(workload, tmp_path):
    summary = generate(workload, 7, tmp_path / "relay")
    outcomes = Replay(tmp_path / "slave.duckdb", None, [ChannelSpec("", summary.index_file)]).run()
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].stats.transactions == summary.transactions
    expected = {(p.parent.name, p.stem): p for p in sorted((tmp_path / "relay" / "expected").glob("*/*.csv"))}
    assert expected, "the generator wrote no expected tables"
    assert_tables_equal(tmp_path / "slave.duckdb", expected)
