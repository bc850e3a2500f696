"""Relay-log index files and WL#1697's per-channel file naming."""

from __future__ import annotations

import pytest

from engine.errors import RelayIndexError
from engine.relaylog.index import channel_relay_log_names, read_index, validate_channel_name

from .conftest import MULTISOURCE


def test_channel_files_are_named_base_dash_lowercased_channel_and_the_default_channel_has_no_suffix():
    assert channel_relay_log_names("relay-bin", "M1") == ("relay-bin-m1.index", "relay-bin-m1.")
    assert channel_relay_log_names("relay-bin", "") == ("relay-bin.index", "relay-bin.")


@pytest.mark.parametrize("name", ["../etc", "a/b", "a\\b", "nul\0", "..", "tab\tname", " padded", "x" * 65])
def test_a_channel_name_cannot_leave_the_relay_log_folder(name):
    with pytest.raises(ValueError):
        validate_channel_name(name)


def test_index_entries_written_for_another_data_directory_resolve_beside_the_index():
    logs = read_index(MULTISOURCE / "relay" / "relay-bin-m2.index")
    assert [p.name for p in logs.files] == ["relay-bin-m2.000001", "relay-bin-m2.000002"]
    assert all(p.exists() for p in logs.files)


def test_an_index_naming_a_missing_file_is_an_error_naming_the_line(tmp_path):
    index = tmp_path / "relay-bin.index"
    index.write_text("./relay-bin.000001\n")
    with pytest.raises(RelayIndexError, match="line 1"):
        read_index(index)
