"""`relaydeck serve`'s TOML file: what it becomes, and the errors that name the file and the key."""

from __future__ import annotations

import pytest

from engine.replica.config import ConfigError, bundled_example, load_config
from engine.replica.server import ReplicaServer


def write(tmp_path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "relaydeck.toml"
    path.write_text(text)
    return path


def test_a_config_becomes_set_global_and_change_statements(tmp_path):
    path = write(
        tmp_path,
        """
slave = "data/s.duckdb"
repository = "data/r.sqlite"
[variables]
replica_parallel_workers = 3
replica_preserve_commit_order = false
server_id = 12
[channels.""]
relay_log = "relay/relay-bin"
[channels.Shop]
relay_log_index = "relay/shop.index"
source_host = "db2"
source_port = 3308
replica_parallel_type = "DATABASE"
""",
    )
    config = load_config(path)
    assert config.slave == tmp_path / "data" / "s.duckdb"
    replica = ReplicaServer(tmp_path / "s.duckdb", tmp_path / "r.sqlite", follow=False)
    try:
        replica.execute(config.variables)
        for change in config.channels:
            replica.execute(change)
        assert replica.repository.global_variables() == {
            "replica_parallel_workers": "3",
            "replica_preserve_commit_order": "OFF",
            "server_id": "12",
        }
        assert replica.repository.channels() == ["", "Shop"]
        assert replica.repository.relay_log_info("")["Relay_log_index"] == str(
            (tmp_path / "relay" / "relay-bin.index").resolve()
        )
        assert replica.repository.relay_log_info("shop")["Relay_log_index"] == str(
            (tmp_path / "relay" / "shop.index").resolve()
        )
        assert replica.repository.master_info("Shop")["Host"] == "db2"
        assert replica.repository.channel_options("Shop") == {"replica_parallel_type": "DATABASE"}
    finally:
        replica.close()


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('slave = "s"\nrepository = "r"\nextra = 1\n', "unknown key 'extra'"),
        ('repository = "r"\n', 'slave = "PATH" is required'),
        (
            'slave = "s"\nrepository = "r"\n[channels.a]\nsource_port = 1\n',
            "relay_log_index (or relay_log) is required",
        ),
        (
            'slave = "s"\nrepository = "r"\n[channels.a]\nrelay_log = "x"\nrelay_log_pos = 4\n',
            "unknown option 'relay_log_pos'",
        ),
        (
            'slave = "s"\nrepository = "r"\n[channels.a]\nrelay_log = "x"\nsource_host = [1]\n',
            "a value is a string",
        ),
        ("slave = \n", "not valid TOML"),
    ],
)
def test_a_bad_config_names_the_file_and_the_key(tmp_path, text, complaint):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value)
    assert complaint in str(caught.value)


def test_the_bundled_example_configures_both_captured_channels(tmp_path):
    config = bundled_example(tmp_path)
    assert config.path is None
    assert [c.channel for c in config.channels] == ["m1", "m2"]
    for change in config.channels:
        index = dict(change.options)["RELAY_LOG_INDEX"].text
        assert index.endswith(f"relay-bin-{change.channel}.index")
