"""What a DBA sees when the command line refuses something: one line with MySQL's error number, a
non-zero exit code, never a traceback (bad channel names, unknown channels on a fresh repository,
a slave file another process holds)."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest

from console.cli import main
from engine.errors import ChannelNameError
from engine.relaylog.index import validate_channel_name
from engine.repository import Repository

from .conftest import MULTISOURCE, ROOT, replay_argv

M2_INDEX = MULTISOURCE / "relay" / "relay-bin-m2.index"

# Characters that do not print as themselves: each could hide or rewrite what a terminal shows.
HIDDEN_CHARACTERS = [
    "\x1b",  # ESC, the start of ANSI sequences
    "\x7f",  # DEL
    "\x85",  # C1: NEL
    "\x9b",  # C1: CSI
    "\u202a",  # bidi embedding
    "\u202e",  # right-to-left override
    "\u2066",  # bidi isolate
    "\u2069",
    "\u200b",  # zero-width space
    "\u200c",
    "\u200d",
    "\ufeff",  # zero-width no-break space (BOM)
    "\u2028",  # line separator
    "\u00ad",  # soft hyphen (Cf)
    "\U000e0001",  # language tag (Cf, outside the BMP)
]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.mark.parametrize("character", HIDDEN_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_channel_name_with_a_character_that_does_not_print_is_refused_with_3076(character):
    with pytest.raises(ChannelNameError) as refused:
        validate_channel_name(f"m{character}1")
    assert refused.value.errno == 3076
    # the message shows the character escaped, never raw
    assert character not in str(refused.value)


@pytest.mark.parametrize("name", ["", "m1", "Source-2", "réplica", "主库", "a b", "x" * 64])
def test_printable_channel_names_are_accepted(name):
    assert validate_channel_name(name) == name


@pytest.mark.parametrize(
    "name", ["../evil", "a\x1b[31mred", "x" * 65, "m\u202e1", "m\u200b1", "m\x7f1", "m\x9b1"]
)
def test_replay_refuses_a_bad_channel_name_in_one_line(capsys, tmp_path, name):
    code, out, err = run_cli(
        capsys,
        "replay",
        "--slave",
        str(tmp_path / "s.duckdb"),
        "--repository",
        str(tmp_path / "r.sqlite"),
        "--channel",
        f"{name}={M2_INDEX}",
    )
    assert code == 1 and out == ""
    assert err.startswith("relaydeck: ERROR 3076: ") and err.count("\n") == 1
    assert "\x1b" not in err and "\u202e" not in err and "\x9b" not in err
    assert not (tmp_path / "s.duckdb").exists()  # refused before anything was opened


def test_replay_refusing_a_channel_name_prints_no_traceback(tmp_path):
    done = subprocess.run(
        replay_argv(tmp_path / "s.duckdb", tmp_path / "r.sqlite", f"../evil={M2_INDEX}"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("relaydeck: ERROR 3076: Couldn't create channel")


@pytest.mark.parametrize(
    "statement",
    [
        "START REPLICA FOR CHANNEL '{}'",
        "STOP REPLICA FOR CHANNEL '{}'",
        "RESET REPLICA ALL FOR CHANNEL '{}'",
        "SHOW REPLICA STATUS FOR CHANNEL '{}'",
        "SHOW RELAYLOG EVENTS FOR CHANNEL '{}'",
        "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db1' FOR CHANNEL '{}'",
    ],
)
def test_sql_refuses_a_bad_channel_name_with_3076_in_every_statement(capsys, tmp_path, statement):
    for name in ("../evil", "m\\u202e1", "x" * 65):  # \\u202e: the statement's own escape
        text = statement.format(name).replace("\\u202e", "\u202e")
        slave = tmp_path / "s.duckdb"
        code, _, err = run_cli(
            capsys, "sql", "--repository", str(tmp_path / "r.sqlite"), "--slave", str(slave), text
        )
        assert code == 1
        assert err.startswith("ERROR 3076: ") and err.count("\n") == 1 and "\u202e" not in err


@pytest.mark.parametrize(
    "statement",
    [
        "START REPLICA FOR CHANNEL 'nope'",
        "START SLAVE SQL_THREAD FOR CHANNEL 'nope'",
        "START REPLICA UNTIL SQL_AFTER_GTIDS = '1-1-5' FOR CHANNEL 'nope'",
        "STOP REPLICA FOR CHANNEL 'nope'",
        "RESET REPLICA FOR CHANNEL 'nope'",
        "RESET REPLICA ALL FOR CHANNEL 'nope'",
        "SHOW REPLICA STATUS FOR CHANNEL 'nope'",
        "SHOW RELAYLOG EVENTS FOR CHANNEL 'nope'",
    ],
)
def test_sql_on_a_fresh_repository_answers_3074_for_an_unknown_channel(capsys, tmp_path, statement):
    code, out, err = run_cli(capsys, "sql", "--repository", str(tmp_path / "new.sqlite"), statement)
    assert code == 1 and out == ""
    assert err == "ERROR 3074: Slave channel 'nope' does not exist\n"


def test_sql_on_a_fresh_repository_answers_1200_for_start_without_a_configured_channel(capsys, tmp_path):
    code, _, err = run_cli(capsys, "sql", "--repository", str(tmp_path / "new.sqlite"), "START REPLICA")
    assert code == 1 and err.startswith("ERROR 1200: The server is not configured as slave")


def test_sql_on_a_fresh_repository_asks_for_the_slave_only_when_the_statement_is_right(capsys, tmp_path):
    repo = str(tmp_path / "new.sqlite")
    change = "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db1' FOR CHANNEL 'nope'"
    code, _, err = run_cli(capsys, "sql", "--repository", repo, change)
    assert code == 1 and "no slave is recorded for this repository yet; give --slave" in err
    code, _, err = run_cli(capsys, "sql", "--repository", repo, "STRAT REPLICA")
    assert code == 1 and err.startswith("ERROR 1064: ")


def test_the_3074_answer_on_a_fresh_repository_prints_no_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", "sql", "--repository", str(tmp_path / "new.sqlite")]
        + ["START REPLICA FOR CHANNEL 'nope'"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (1, "ERROR 3074: Slave channel 'nope' does not exist\n")


@pytest.fixture
def slave_held_by_another_process(tmp_path):
    """A slave file with a DuckDB connection open in another process (the pid comes back too)."""
    slave = tmp_path / "s.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, sys; c = duckdb.connect({str(slave)!r}); print('open', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        yield slave, holder.pid
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_a_second_replay_on_a_slave_in_use_is_one_line_naming_the_file_and_the_pid(
    tmp_path, slave_held_by_another_process
):
    slave, pid = slave_held_by_another_process
    started = time.monotonic()
    done = subprocess.run(
        replay_argv(slave, tmp_path / "r.sqlite", f"m2={M2_INDEX}"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr == f"relaydeck: ERROR 1015: slave file {slave} is in use by another process (pid {pid})\n"
    )
    assert time.monotonic() - started < 60
    assert not (tmp_path / "r.sqlite").exists()  # nothing was started


@pytest.mark.parametrize("command", ["sql", "recovery"])
def test_other_commands_on_a_slave_in_use_are_one_line_too(
    capsys, tmp_path, slave_held_by_another_process, command
):
    slave, pid = slave_held_by_another_process
    repo = tmp_path / "r.sqlite"
    Repository(repo).close()
    argv = ["--repository", str(repo), "--slave", str(slave)]
    argv = ["sql", *argv, "SHOW REPLICA STATUS"] if command == "sql" else ["recovery", *argv]
    code, _, err = run_cli(capsys, *argv)
    assert code == 1
    # the path as given, or resolved (the server records it so)
    assert err in {
        f"relaydeck: ERROR 1015: slave file {path} is in use by another process (pid {pid})\n"
        for path in (slave, slave.resolve())
    }


def test_a_file_that_is_not_a_duckdb_database_is_one_line(capsys, tmp_path):
    slave = tmp_path / "s.duckdb"
    slave.write_bytes(b"not a database" * 1000)
    code, _, err = run_cli(
        capsys,
        "replay",
        "--slave",
        str(slave),
        "--repository",
        str(tmp_path / "r.sqlite"),
        "--channel",
        f"m2={M2_INDEX}",
    )
    assert code == 1
    assert (
        err.startswith(f"relaydeck: ERROR 1016: slave file {slave} cannot be opened: ")
        and err.count("\n") == 1
    )


def test_analyze_refuses_a_bad_channel_name_before_spark_starts(capsys, monkeypatch):
    import engine.spark.session as session

    monkeypatch.setattr(session, "spark_session", lambda *a: pytest.fail("Spark started"))
    code, _, err = run_cli(capsys, "analyze", "--channel", f"m\u202e1={M2_INDEX}")
    assert code == 1 and err.startswith("relaydeck: ERROR 3076: ") and "\u202e" not in err


@pytest.mark.parametrize(
    ("channel", "answer"),
    [("nope", "ERROR 3074: Slave channel 'nope' does not exist"), ("m\x1b1", "ERROR 3076: ")],
)
def test_status_of_an_unknown_or_invalid_channel_is_one_numbered_line(capsys, tmp_path, channel, answer):
    repo = tmp_path / "r.sqlite"
    Repository(repo).close()
    code, _, err = run_cli(capsys, "status", "--repository", str(repo), "--channel", channel)
    assert code == 1 and err.startswith(f"relaydeck: {answer}") and err.count("\n") == 1 and "\x1b" not in err


def test_recovery_of_an_unknown_channel_is_3074(capsys, tmp_path):
    from engine.slave.database import Slave

    repo, slave = tmp_path / "r.sqlite", tmp_path / "s.duckdb"
    Repository(repo).close()
    Slave(slave).close()
    code, _, err = run_cli(
        capsys, "recovery", "--repository", str(repo), "--slave", str(slave), "--channel", "nope"
    )
    assert (code, err) == (1, "relaydeck: ERROR 3074: Slave channel 'nope' does not exist\n")


@pytest.mark.parametrize("gtids", ["1-2", "0-1-5,", "0-1-x", "0-1-5;0-2-6", "\x1b[2J"])
def test_receive_refuses_a_malformed_gtid_list_in_one_line_before_connecting(capsys, tmp_path, gtids):
    code, _, err = run_cli(
        capsys, "receive", "--port", "1", "--user", "u", "--channel", "c", "--relay-dir", str(tmp_path),
        "--from-gtid", gtids,
    )  # fmt: skip
    assert code == 1 and err.count("\n") == 1 and "\x1b" not in err
    assert err.startswith("relaydeck: --from-gtid: ") and "is not a MariaDB GTID list" in err
    assert not any(tmp_path.iterdir())  # nothing written, no connection tried


def test_a_mariadb_gtid_list_is_taken_with_its_spaces_dropped():
    from engine.gtids import maria_gtid_list

    assert maria_gtid_list("0-1-5, 1-2-7") == "0-1-5,1-2-7"
    assert maria_gtid_list("") == ""  # from the start
    with pytest.raises(ValueError, match="not a MariaDB GTID list"):
        maria_gtid_list("0-1-5,")


def test_main_called_in_a_process_leaves_its_sigpipe_handling_alone(tmp_path):
    import signal

    from console.cli import main

    before = signal.getsignal(signal.SIGPIPE)
    assert main(["console", "--repository", str(tmp_path / "nope.sqlite")]) == 1
    assert signal.getsignal(signal.SIGPIPE) == before
