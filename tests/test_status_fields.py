"""`relaydeck status --json` after a replay holds what was applied: rows_applied, the last applied
transaction and when, for every applier; a default channel never used shows the single applier."""

from __future__ import annotations

import io
import json
import re

import pytest

from console.cli import main
from engine.replica.variables import VARIABLES
from engine.repository import Repository

from .conftest import MULTISOURCE

M2_INDEX = MULTISOURCE / "relay" / "relay-bin-m2.index"


def run(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), out=out) == 0
    return out.getvalue()


def status_rows(repo) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {
        row["channel_name"]: row for row in json.loads(run("status", "--repository", str(repo), "--json"))
    }


@pytest.mark.parametrize(
    "applier",
    [[], ["--workers", "2"], ["--workers", "2", "--pool", "processes"]],
    ids=["single", "workers", "process-pool"],
)
def test_status_after_a_replay_holds_the_rows_and_the_last_transaction_applied(tmp_path, applier):
    slave, repo = tmp_path / "s.duckdb", tmp_path / "r.sqlite"
    printed = run(
        "replay", "--slave", str(slave), "--repository", str(repo), "--channel", f"m2={M2_INDEX}", *applier
    )
    row_changes = int(re.search(r"(\d+) row changes", printed).group(1))
    m2 = status_rows(repo)["m2"]
    assert row_changes > 0 and m2["rows_applied"] == row_changes
    # MariaDB GTIDs: the executed set's last sequence number is the last transaction applied
    domain_server, last_seqno = m2["executed_gtid_set"].rsplit("-", 1)
    assert m2["last_applied_transaction"] == f"{domain_server}-{last_seqno}"
    assert m2["last_applied_transaction_end_apply_timestamp"] > m2["started_at"]
    assert m2["workers_running"] == 0  # the applier has stopped; a single applier has no workers
    assert "events_applied" not in m2  # not counted: left out rather than shown as 0


def test_a_default_channel_never_used_shows_the_single_applier(tmp_path):
    repo = tmp_path / "r.sqlite"
    run(
        "replay",
        "--slave",
        str(tmp_path / "s.duckdb"),
        "--repository",
        str(repo),
        "--channel",
        f"m2={M2_INDEX}",
    )
    default = status_rows(repo)[""]
    assert default["number_of_workers"] == VARIABLES["replica_parallel_workers"].default == 0


def test_a_fresh_repository_records_the_single_applier_for_its_default_channel(tmp_path):
    with Repository(tmp_path / "r.sqlite") as repo:
        assert repo.relay_log_info("")["Number_of_workers"] == 0
