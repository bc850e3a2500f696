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


def test_a_file_purged_before_the_start_after_the_list_was_read_is_passed_over(tmp_path):
    """relay_log_purge may delete a file before the applier's position while a reader holds the
    list that names it (a restart's gap recovery): reading from the position goes on; a file
    from the position on that is gone is still an error."""
    import shutil

    from engine.errors import BinlogError
    from engine.relaylog.index import RelayLogSet
    from engine.relaylog.stream import stream_events

    files = read_index(MULTISOURCE / "relay" / "relay-bin-m1.index").files[:4]
    copies = []
    for path in files:
        shutil.copy(path, tmp_path / path.name)
        copies.append(tmp_path / path.name)
    logs = RelayLogSet(None, tuple(copies))
    start = copies[2].name
    whole = [(e.log_name, e.pos, e.source_log_file) for e in stream_events(logs, start, 4)]
    copies[0].unlink()  # purged after the list was read
    assert [(e.log_name, e.pos, e.source_log_file) for e in stream_events(logs, start, 4)] == whole
    copies[2].unlink()
    with pytest.raises(BinlogError, match="file does not exist"):
        list(stream_events(logs, start, 4))
