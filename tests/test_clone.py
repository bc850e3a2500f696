"""`relaydeck clone` against a real MariaDB source whose first binary log is purged: the tables
copied in one consistent snapshot while the source is written to, then replication from the
snapshot's position gives exactly the source's tables; copied values equal replayed ones."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from console.cli import main
from engine.replica.server import ReplicaServer
from tests.test_receiver import gtid_binlog_pos, slave_rows, source_binlog_end, source_rows, write_load

ROOT = Path(__file__).resolve().parent.parent

# Every column type the clone converts; `plain` has no primary key, so a replayed UPDATE or DELETE
# finds its row by the whole before image: a copied value that differs in the least is error 1032.
TYPES = (
    "k INT NOT NULL, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, iu INT UNSIGNED, "
    "bu BIGINT UNSIGNED, bs BIGINT, d DECIMAL(10,2), dw DECIMAL(65,30), f FLOAT, fm FLOAT(7,3), "
    "db DOUBLE, b1 BIT(1), b64 BIT(64), dt DATE, dtt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(6), "
    "y YEAR, ch CHAR(10), vc VARCHAR(40), l1 VARCHAR(20) CHARACTER SET latin1, tx TEXT, bl BLOB, "
    "bn BINARY(8), vb VARBINARY(16), e ENUM('small','médium','large'), st SET('a','b','c'), j JSON, "
    "g POINT"
)
COLUMNS = [part.split()[0] for part in TYPES.split(", ")]


def typed_row(k: int) -> tuple:
    """A row of every type, from k alone: the same k gives the same values before and after the clone."""
    base = k % 1000  # keys 1000 apart: the same values
    n = base % 97
    floats = struct.unpack("<f", struct.pack("<I", (0x3F8CCCCD + base * 7919) & 0x7F7FFFFF))[0]
    return (
        k, -128 + n, 255 - n, -32768 + n, -8388608 + n, 4294967295 - n, 18446744073709551615 - n,
        -9223372036854775808 + n, Decimal(f"{n}.{n % 100:02d}") - 50,
        Decimal(f"-{n}1234567890123456789012345678901.{n:030d}"), floats, Decimal(f"{n}.125"),
        1 / (n + 3) * 10 ** (n % 40 - 20), n % 2, (1 << 63) + n, ("0000-00-00" if n % 11 == 0 else
        f"20{n % 30:02d}-0{n % 9 + 1}-{n % 28 + 1:02d}"), f"2024-02-{n % 28 + 1:02d} 12:34:56.{n:06d}",
        f"2038-01-{n % 18 + 1:02d} 03:14:07.{n % 1000:03d}", f"-{838 - n}:59:59.{n:06d}", 1901 + n,
        f"ch{n}", f"vär {n} ✓ 😀", f"café {n}", "x" * (n * 13), bytes(range(n % 256)) * 3,
        bytes([n, 0, 1]), bytes([0, n, 255]), ("small", "médium", "large")[n % 3],
        ",".join(s for i, s in enumerate("abc") if n >> i & 1), json.dumps({"k": base, "l": [1, "é", None]}),
        f"POINT({n} {-n / 3})",
    )  # fmt: skip


def insert_typed(cur, table: str, keys: range) -> None:
    marks = ", ".join("ST_GeomFromText(%s)" if c == "g" else "%s" for c in COLUMNS)
    cur.executemany(f"INSERT INTO clone1.{table} VALUES ({marks})", [typed_row(k) for k in keys])


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A MariaDB server of this module's own (its binary logs are purged), with table maps that
    carry the columns' character sets, and a replication account that may also read the tables."""
    from tests.mariadb_server import server_for_tests

    for server in server_for_tests(tmp_path_factory.mktemp("clone-source")):
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
            cur.execute("GRANT SELECT, SHOW VIEW ON *.* TO 'repl'@'%'")
        yield server


def execute(server, *statements: str) -> None:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # zero dates and the like, as old applications write
        cur.execute("SET SESSION time_zone = '+00:00'")
        for sql in statements:
            cur.execute(sql)


def purge_binary_logs_to(server, file: str) -> None:
    """PURGE BINARY LOGS TO `file`, again until it took: MariaDB keeps a binlog until its binlog
    checkpoint (InnoDB's flush of the commits in it) has passed, a moment after a rotation."""
    deadline = time.monotonic() + 60
    while True:
        with server.connect() as conn, conn.cursor() as cur:
            cur.execute(f"PURGE BINARY LOGS TO '{file}'")
            cur.execute("SHOW BINARY LOGS")
            if cur.fetchall()[0][0] == file:
                return
        assert time.monotonic() < deadline, "the binary logs were not purged"
        time.sleep(0.2)


def config_file(server, folder: Path, **options: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in options.items())
    path = folder / "serve.toml"
    path.write_text(
        'slave = "slave.duckdb"\nrepository = "repository.sqlite"\n[channels.live]\n'
        f'source_host = "{server.host}"\nsource_port = {server.port}\nsource_user = "repl"\n'
        f'source_password = "{server.repl_password}"\nrelay_log = "relay/relay-bin"\n'
        f"source_connect_retry = 1\nsource_heartbeat_period = 0.5\n{extra}"
    )
    return path


def clone(*argv: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", "clone", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def status(repository: Path) -> dict:
    out = io.StringIO()
    assert main(["status", "--repository", str(repository), "--channel", "live", "--json"], out=out) == 0
    return json.loads(out.getvalue())[0]


def serve_until_applied(server, config: Path) -> None:
    """`relaydeck serve CONFIG` until the channel executed everything the source logged, then SIGTERM."""
    repository = config.parent / "repository.sqlite"
    serve = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "serve", str(config)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while status(repository)["executed_gtid_set"] != gtid_binlog_pos(server):
            assert serve.poll() is None, serve.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"not applied: {status(repository)}"
            time.sleep(0.2)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(60) == 0, serve.stderr.read()  # type: ignore[union-attr]
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def duck_rows(slave: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(slave), read_only=True) as conn:
        return [tuple(row) for row in conn.sql(sql).fetchall()]


def expected_typed(k: int) -> tuple:
    """What the slave holds for typed_row(k): the MySQL value as its DuckDB type stores it."""
    row = list(typed_row(k))
    at = {name: i for i, name in enumerate(COLUMNS)}
    row[at["f"]] = struct.unpack("<f", struct.pack("<f", row[at["f"]]))[0]
    row[at["fm"]] = struct.unpack("<f", struct.pack("<f", float(row[at["fm"]])))[0]
    row[at["dw"]] = f"{row[at['dw']]:f}"  # wider than DuckDB's DECIMAL: MySQL's exact text
    row[at["dt"]] = None if row[at["dt"]] == "0000-00-00" else dt.date.fromisoformat(row[at["dt"]])
    row[at["dtt"]] = dt.datetime.fromisoformat(row[at["dtt"]])
    row[at["ts"]] = dt.datetime.fromisoformat(row[at["ts"]]).replace(tzinfo=dt.UTC)
    hours, minutes, seconds = row[at["tm"]].lstrip("-").split(":")
    whole, fraction = seconds.split(".")
    row[at["tm"]] = -dt.timedelta(
        hours=int(hours), minutes=int(minutes), seconds=int(whole), microseconds=int(fraction)
    )
    row[at["bn"]] = row[at["bn"]].ljust(8, b"\0")
    n = k % 1000 % 97
    row[at["g"]] = b"\0\0\0\0" + struct.pack("<BIdd", 1, 1, n, -n / 3)  # SRID, then WKB
    return tuple(row)


def typed_slave_rows(slave: Path, table: str) -> dict[int, tuple]:
    rows = duck_rows(slave, f"SELECT * FROM clone1.{table}")
    return {row[0]: tuple(v.astimezone(dt.UTC) if isinstance(v, dt.datetime) and v.tzinfo else v for v in row)
            for row in rows}  # fmt: skip


def test_clone_then_replication_gives_exactly_the_source(source, tmp_path):
    """The first binlog purged: replication from the start is refused (1236). The clone copies the
    tables while a writer changes them, serve replicates from the snapshot's position; every table
    equals the source's, and every copied value equals the value replay wrote for the same row."""
    server = source
    execute(server, "CREATE DATABASE clone1", *(f"CREATE TABLE clone1.{t} ({TYPES}{key})"
                                                for t, key in (("typed", ", PRIMARY KEY (k)"), ("plain", ""))))  # fmt: skip
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET SESSION time_zone = '+00:00'")
        insert_typed(cur, "typed", range(0, 300))
        insert_typed(cur, "plain", range(0, 100))
        cur.execute("CREATE TABLE clone1.big (id INT PRIMARY KEY, v VARCHAR(30), n BIGINT)")
        cur.execute(
            "INSERT INTO clone1.big SELECT seq, concat('row ', seq), seq * 7 FROM clone1.seq_1_to_60000"
        )
        cur.execute("CREATE VIEW clone1.small AS SELECT id FROM clone1.big WHERE id < 10")
        cur.execute("CREATE DATABASE clone_empty")
    write_load(server, "clone2", 50, seed=1)
    execute(server, "FLUSH BINARY LOGS")
    current = source_binlog_end(server)[0]
    purge_binary_logs_to(server, current)
    refused = io.StringIO()
    argv = ["receive", "--host", server.host, "--port", str(server.port), "--user", "repl", "--password",
            server.repl_password, "--channel", "x", "--relay-dir", str(tmp_path / "x"), "--from-file", "source-bin.000001"]  # fmt: skip
    assert main(argv, out=refused) == 1, (
        refused.getvalue()
    )  # replication from the start is no longer possible

    stop = threading.Event()

    def keep_writing() -> None:
        seed = 100
        while not stop.is_set():
            write_load(server, "clone2", 5, seed=seed)
            seed += 1

    writer = threading.Thread(target=keep_writing)
    config = config_file(server, tmp_path / "r")
    writer.start()
    try:
        time.sleep(0.3)
        before = gtid_binlog_pos(server)
        code, out, err = clone(str(config))
        during = gtid_binlog_pos(server)
        time.sleep(0.5)
    finally:
        stop.set()
        writer.join()
    assert code == 0, err
    assert "`clone1`.`big`: 60000 rows" in out and server.repl_password not in out + err
    assert before != during  # the source was written to while the clone ran
    snapshot = status(tmp_path / "r" / "repository.sqlite")
    assert snapshot["executed_gtid_set"] and snapshot["source_log_file"] == current

    # after the clone: more rows of every type, updates and deletes of copied rows, DDL
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET SESSION time_zone = '+00:00'")
        insert_typed(cur, "typed", range(1000, 1300))  # the same values as keys 0-299, replayed
        insert_typed(cur, "plain", range(1000, 1100))
        cur.execute("UPDATE clone1.plain SET ti = ti + 1 WHERE k % 3 = 0 AND k < 1000")
        cur.execute("DELETE FROM clone1.plain WHERE k % 5 = 1 AND k < 1000")
        cur.execute("UPDATE clone1.typed SET vc = concat(vc, '!') WHERE k % 4 = 0")
        cur.execute("ALTER TABLE clone1.big ADD COLUMN extra INT DEFAULT 7 AFTER v")
        cur.execute("UPDATE clone1.big SET extra = id WHERE id % 1000 = 0")
        cur.execute("CREATE TABLE clone_empty.later (id INT PRIMARY KEY, d DATETIME)")
        cur.execute("INSERT INTO clone_empty.later VALUES (1, '2025-01-01 00:00:00')")
    write_load(server, "clone2", 20, seed=999)
    serve_until_applied(server, config)

    slave = tmp_path / "r" / "slave.duckdb"
    for table in ("items", "moves"):
        assert slave_rows(slave, "clone2", table) == source_rows(server, "clone2", table), table
    assert duck_rows(slave, "SELECT * FROM clone1.big ORDER BY id") == source_rows(server, "clone1", "big")
    assert duck_rows(slave, "SELECT id FROM clone_empty.later") == [(1,)]
    typed = typed_slave_rows(slave, "typed")
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT k FROM clone1.typed ORDER BY k")
        assert sorted(typed) == [k for (k,) in cur.fetchall()]
        cur.execute("SELECT k, ti FROM clone1.plain ORDER BY k")
        plain_source = cur.fetchall()
    for k in range(300):
        copied, replayed = typed[k], typed[k + 1000]
        assert copied[1:] == replayed[1:], f"copied row {k} differs from the row replayed for the same values"
        expected = expected_typed(k)
        if k % 4 == 0:
            expected = (*expected[:COLUMNS.index("vc")], expected[COLUMNS.index("vc")] + "!",
                        *expected[COLUMNS.index("vc") + 1:])  # fmt: skip
        assert copied == expected, f"row {k}"
    plain = sorted((row[0], row[1]) for row in typed_slave_rows(slave, "plain").values())
    assert plain == sorted(plain_source)  # every replayed UPDATE/DELETE found its copied row


def test_clone_with_gtid_positioning_and_the_refusals(source, tmp_path):
    """SOURCE_USE_GTID: the receiver asks for what follows the snapshot's GTIDs. A second clone of
    the channel is refused, so is a clone into a slave that holds the tables, and a wrong password
    is MySQL's 1045, without the password."""
    server = source
    write_load(server, "clone3", 30, seed=3)
    config = config_file(server, tmp_path / "g", source_use_gtid="slave_pos")
    code, out, err = clone(str(config))
    assert code == 0, err
    write_load(server, "clone3", 30, seed=4)
    repository = tmp_path / "g" / "repository.sqlite"
    replica = ReplicaServer(tmp_path / "g" / "slave.duckdb", repository, follow=True)
    try:
        replica.execute("START REPLICA FOR CHANNEL 'live'")
        deadline = time.monotonic() + 60
        while replica.status("live")[0].executed_gtid_set != gtid_binlog_pos(server):
            assert time.monotonic() < deadline, replica.status("live")[0]
            time.sleep(0.1)
        replica.execute("STOP REPLICA FOR CHANNEL 'live'")
    finally:
        replica.close()
    assert status(repository)["using_gtid"] == "Slave_Pos"
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "g" / "slave.duckdb", "clone3", table) == source_rows(
            server, "clone3", table
        )

    code, _, err = clone(str(config))
    assert code == 1 and "channel 'live' has already applied" in err and "Traceback" not in err

    other = config_file(server, tmp_path / "h")
    with duckdb.connect(str(tmp_path / "h" / "slave.duckdb")) as conn:
        conn.execute("CREATE SCHEMA clone3; CREATE TABLE clone3.items (id INT)")
    code, _, err = clone(str(other))
    assert code == 1 and "ERROR 1050: Table 'clone3.items' already exists" in err

    execute(server, "CREATE USER 'onlyrepl'@'%' IDENTIFIED BY 'pw'", "GRANT REPLICATION SLAVE ON *.* TO 'onlyrepl'@'%'",
            "GRANT SELECT ON clone3.* TO 'onlyrepl'@'%'")  # fmt: skip
    code, _, err = clone(str(other), "--source-user", "onlyrepl", "--source-password", "pw")
    assert code == 1 and "ERROR 1227" in err and "GRANT SELECT, SHOW VIEW ON *.* TO onlyrepl" in err

    env = {**os.environ, "RELAYDECK_SOURCE_PASSWORD": "not-the-password"}
    done = subprocess.run(
        [sys.executable, "-m", "console.cli", "clone", "--slave", str(tmp_path / "w.duckdb"), "--repository",
         str(tmp_path / "w.sqlite"), "--channel", "w", "--source-host", server.host, "--source-port",
         str(server.port), "--source-user", "repl"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "ERROR 1045" in done.stderr and "Access denied" in done.stderr
    assert "not-the-password" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_ddl_between_the_snapshot_and_the_tables_held_refuses_the_clone(source, tmp_path):
    """An ALTER logged after the snapshot but before the clone held its table would be applied twice
    (once in the copied definition, once replayed): the clone stops with 1412, changing nothing."""
    server = source
    execute(server, "CREATE DATABASE clone4", "CREATE TABLE clone4.t (id INT PRIMARY KEY, v INT)",
            "INSERT INTO clone4.t VALUES (1, 1)")  # fmt: skip
    config = config_file(server, tmp_path / "d")
    with server.connect() as locker, locker.cursor() as cur:
        cur.execute("LOCK TABLES clone4.t WRITE")  # the clone's snapshot starts, then waits for t
        cloning = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "clone", str(config)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while True:
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE '%metadata lock%'"
                )
                if cur.fetchone()[0]:
                    break
                assert cloning.poll() is None, cloning.stderr.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the clone never waited for the table"
                time.sleep(0.05)
            cur.execute("ALTER TABLE clone4.t ADD COLUMN w INT")
            cur.execute("UNLOCK TABLES")
            _, err = cloning.communicate(timeout=120)
        finally:
            if cloning.poll() is None:
                cloning.kill()
                cloning.wait()
    assert cloning.returncode == 1 and "ERROR 1412" in err and "run the clone again" in err, err
    assert "Traceback" not in err
    with duckdb.connect(str(tmp_path / "d" / "slave.duckdb"), read_only=True) as conn:  # as it was
        assert conn.sql(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name <> '__relaydeck'"
        ).fetchall() == [(0,)]
        schemas = conn.sql("SELECT schema_name FROM duckdb_schemas() WHERE NOT internal").fetchall()
        assert {name for (name,) in schemas} <= {"main", "__relaydeck"}


def test_the_read_lock_sequence_of_a_mysql_source(source, tmp_path, monkeypatch):
    """MySQL has no binlog_snapshot_* variables: FLUSH TABLES WITH READ LOCK around the snapshot's
    start and SHOW MASTER STATUS. No MySQL server runs here, so the same statements run against the
    MariaDB source (which takes them all): without RELOAD the clone stops with 1227, with it the
    position is the snapshot's and replication from there is exact."""
    from engine.clone import CloneError, clone_channel
    from engine.clone.source import SourceSnapshot
    from engine.receiver.connection import SourceAccount
    from engine.repository import Repository
    from engine.slave.database import Slave

    server = source
    monkeypatch.setattr(SourceSnapshot, "_is_mariadb", lambda self: False)
    write_load(server, "clone5", 20, seed=5)
    account = SourceAccount(server.host, server.port, "repl", server.repl_password)
    slave, repository = Slave(tmp_path / "slave.duckdb"), Repository(tmp_path / "repo.sqlite")
    try:
        with pytest.raises(CloneError) as refused:
            clone_channel(slave, repository, "my", account)
        assert refused.value.errno == 1227 and "RELOAD" in refused.value.message
        assert not slave.user_tables()
        execute(server, "GRANT RELOAD ON *.* TO 'repl'@'%'")
        try:
            result = clone_channel(slave, repository, "my", account)
        finally:
            execute(server, "REVOKE RELOAD ON *.* FROM 'repl'@'%'")
        assert result.position.gtids == ""  # SHOW MASTER STATUS of MariaDB has no Executed_Gtid_Set
        assert repository.master_info("my")["Master_log_pos"] == result.position.pos
    finally:
        slave.close()
        repository.close()
    write_load(server, "clone5", 20, seed=6)
    replica = ReplicaServer(tmp_path / "slave.duckdb", tmp_path / "repo.sqlite", follow=False)
    try:
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{server.host}', SOURCE_PORT = {server.port}, "
            f"SOURCE_USER = 'repl', SOURCE_PASSWORD = '{server.repl_password}', "
            f"RELAY_LOG = '{tmp_path}/relay/relay-bin' FOR CHANNEL 'my'"
        )
        replica.execute("START REPLICA FOR CHANNEL 'my'")
        assert replica.wait(120)
        assert replica.status("my")[0].last_error_number == 0, replica.status("my")[0]
    finally:
        replica.close()
    for table in ("items", "moves"):
        assert slave_rows(tmp_path / "slave.duckdb", "clone5", table) == source_rows(server, "clone5", table)


def run_clone(capsys, *argv: str) -> tuple[int, str]:
    code = main(["clone", *argv], out=io.StringIO())
    return code, capsys.readouterr().err


def test_what_the_command_line_refuses_is_one_line(capsys, tmp_path):
    """No source needed: the options, the configuration, a channel naming no source, a source that
    cannot be reached (2003) or found (2005) are each one line, with MySQL's number where it has one."""
    two = tmp_path / "two.toml"
    two.write_text(
        'slave = "s.duckdb"\nrepository = "r.sqlite"\n[channels.a]\nrelay_log = "relay/relay-bin"\n'
        '[channels.b]\nrelay_log = "relay/relay-bin"\n'
    )
    repo = ["--slave", str(tmp_path / "s.duckdb"), "--repository", str(tmp_path / "r.sqlite")]
    cases = [
        ((), "give CONFIG.toml, or --slave, --repository and --channel"),
        ((str(two),), "has 2 channels: give --channel NAME"),
        ((str(two), "--channel", "c"), "there is no [channels.c]"),
        ((str(two), "--channel", "a"), "channel 'a' names no source: give --source-host"),
        ((*repo, "--channel", "x\x1b"), "ERROR 3076"),
        ((*repo, "--channel", "x", "--source-host", "127.0.0.1", "--source-port", "1", "--source-user", "u"),
         "ERROR 2003"),
        ((*repo, "--channel", "x", "--source-host", "no-such-host.invalid", "--source-user", "u"), "ERROR 2005"),
    ]  # fmt: skip
    for argv, said in cases:
        code, err = run_clone(capsys, *argv)
        assert code == 1 and said in err and err.count("\n") == 1 and "\x1b" not in err, (argv, err)
