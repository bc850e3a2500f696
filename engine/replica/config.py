"""`relaydeck serve`'s configuration file (TOML): the slave, the repository, the channels.

    slave = "data/slave.duckdb"              # paths are relative to the file
    repository = "data/repository.sqlite"
    worker_pool = "processes"                # "spark" (with spark_master = "spark://…") or "threads"

    [variables]                              # SET GLOBAL, for channels that do not set their own
    replica_parallel_workers = 4
    replica_parallel_type = "LOGICAL_CLOCK"
    server_id = 12                           # the receivers' id at the sources (2 by default)

    [channels.m1]                            # [channels.""] is the default channel
    relay_log_index = "/var/lib/mysql/relay-bin-m1.index"   # or relay_log = ".../relay-bin"
    source_host = "10.0.0.1"
    source_port = 3306
    source_delay = 0
    replica_parallel_workers = 2

    [channels.live]                          # a source relaydeck receives from itself
    relay_log = "relay/relay-bin"            # writes relay/relay-bin-live.000001 …
    source_host = "127.0.0.1"
    source_user = "repl"
    source_password = "secret"
    source_use_gtid = "slave_pos"            # or current_pos, no (file and position); a MySQL
                                             # source: source_auto_position = 1 instead
    source_connect_retry = 60
    source_retry_count = 86400
    source_heartbeat_period = 30
    source_ssl = true                        # TLS (or 1); MySQL's SOURCE_SSL_* options:
    source_ssl_ca = "tls/ca.pem"             #   checks the source's certificate against this CA
    source_ssl_verify_server_cert = true     #   and its host name
    source_ssl_cert = "tls/client-cert.pem"  # a client certificate, for a user REQUIRE X509
    source_ssl_key = "tls/client-key.pem"

Each channel table becomes CHANGE REPLICATION SOURCE TO … FOR CHANNEL, and [variables] SET
GLOBAL, executed when the server starts: the file and the statements are one path, and a
channel the file configures is checked by the same rules as one a DBA configures by hand.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RelaydeckError
from .commands import Assignment, ChangeSource, SetVariables, Value
from .server import CHANGE_OPTIONS, FLAG_OPTIONS, PATH_OPTIONS

_PATH_OPTIONS = {"RELAY_LOG_INDEX", "RELAY_LOG"}
# Positions belong to the running replica (CHANGE … RELAY_LOG_FILE by hand), not to a file read
# at every start.
_NOT_IN_FILE = {"RELAY_LOG_FILE", "RELAY_LOG_POS"}


class ConfigError(RelaydeckError):
    """A configuration file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class ServeConfig:
    path: Path | None  # None: the bundled example
    slave: Path
    repository: Path
    variables: SetVariables | None
    channels: list[ChangeSource] = field(default_factory=list)
    worker_pool: str = "processes"
    spark_master: str | None = None


def _value(where: str, raw: object) -> Value:
    if isinstance(raw, bool):
        return Value("word", "ON" if raw else "OFF")
    if isinstance(raw, int):
        return Value("int", str(raw))
    if isinstance(raw, float):
        return Value("decimal", repr(raw))
    if isinstance(raw, str):
        return Value("string", raw)
    raise ConfigError(f"{where}: a value is a string, a number or a boolean, not {type(raw).__name__}")


def load_config(path: str | Path) -> ServeConfig:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, path.parent, path)


def parse_config(data: dict, base: Path, path: Path | None) -> ServeConfig:
    name = str(path) if path else "the bundled example"
    known = {"slave", "repository", "variables", "channels", "worker_pool", "spark_master"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{name}: unknown key {sorted(unknown)[0]!r} ({', '.join(sorted(known))})")
    pool = data.get("worker_pool", "processes")
    if pool not in ("threads", "spark", "processes"):
        raise ConfigError(f'{name}: worker_pool is "processes", "spark" or "threads", not {pool!r}')
    master = data.get("spark_master")
    if master is not None and not isinstance(master, str):
        raise ConfigError(f'{name}: spark_master = "URL"')
    for key in ("slave", "repository"):
        if not isinstance(data.get(key), str):
            raise ConfigError(f'{name}: {key} = "PATH" is required')
    variables = data.get("variables", {})
    channels = data.get("channels", {})
    if not isinstance(variables, dict) or not isinstance(channels, dict):
        raise ConfigError(f"{name}: [variables] and [channels.NAME] are tables")
    assignments = tuple(
        Assignment("GLOBAL", key.lower(), _value(f"{name}: variables.{key}", raw))
        for key, raw in variables.items()
    )
    changes = []
    for channel, table in channels.items():
        where = f"{name}: channels.{channel!r}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} is a table of CHANGE REPLICATION SOURCE TO options")
        options = []
        for key, raw in table.items():
            option = key.upper()
            if option not in CHANGE_OPTIONS or option in _NOT_IN_FILE:
                raise ConfigError(f"{where}: unknown option {key!r}")
            value = _value(f"{where}.{key}", raw)
            if option in FLAG_OPTIONS and isinstance(raw, bool):
                value = Value("int", str(int(raw)))
            if option in _PATH_OPTIONS or (option in PATH_OPTIONS and value.text):
                value = Value("string", str((base / value.text).expanduser()))
            options.append((option, value))
        if not any(o in _PATH_OPTIONS for o, _ in options):
            raise ConfigError(f"{where}: relay_log_index (or relay_log) is required")
        changes.append(ChangeSource(tuple(options), channel))
    return ServeConfig(
        path,
        (base / data["slave"]).expanduser(),
        (base / data["repository"]).expanduser(),
        SetVariables(assignments) if assignments else None,
        changes,
        pool,
        master,
    )


def apply_config(replica, config: ServeConfig, *, start: bool = True) -> list:  # type: ignore[no-untyped-def]
    """What `relaydeck serve` (and the console running a config) does with the file: SET GLOBAL,
    CHANGE REPLICATION SOURCE TO … for each channel, then START REPLICA; the notes they left."""
    warnings = []
    if config.variables is not None:
        warnings += replica.execute(config.variables).warnings
    for change in config.channels:
        warnings += replica.execute(change).warnings
    if start:
        warnings += replica.execute("START REPLICA").warnings
    return warnings


def bundled_example(work: Path) -> ServeConfig:
    """The bundled MariaDB multi-source capture, two channels, applied under `work`."""
    relay = Path(__file__).resolve().parents[2] / "fixtures" / "mariadb-10.11-multisource" / "relay"
    data = {
        "slave": "slave.duckdb",
        "repository": "repository.sqlite",
        "channels": {
            "m1": {
                "relay_log_index": str(relay / "relay-bin-m1.index"),
                "source_host": "127.0.0.1",
                "source_port": 3407,
            },
            "m2": {
                "relay_log_index": str(relay / "relay-bin-m2.index"),
                "source_host": "127.0.0.1",
                "source_port": 3408,
            },
        },
    }
    return parse_config(data, work, None)
