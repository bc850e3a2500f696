"""Relay-log index files and WL#1697's per-channel file naming."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ChannelNameError, RelayIndexError, escaped

MAX_CHANNEL_NAME_LENGTH = 64
_NUMBERED = re.compile(r"^(.*)\.(\d+)$")


@dataclass(frozen=True, slots=True)
class RelayLogSet:
    """The files of one relay-log stream, in index order."""

    index_file: Path | None
    files: tuple[Path, ...]


def read_index(index_file: str | os.PathLike[str], must_exist: bool = True) -> RelayLogSet:
    """Read `<base>.index`: one file per line, absolute or relative to the index's folder.

    Servers write the path they were configured with (e.g. './relay-bin.000001' relative to the
    data directory); when that path does not resolve, the file of that name beside the index is
    the one meant — relay logs are moved around together with their index.
    """
    index_path = Path(index_file)
    try:
        text = index_path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise RelayIndexError(str(index_path), None, "index file does not exist") from None
    except OSError as exc:
        raise RelayIndexError(str(index_path), None, f"cannot read index: {exc.strerror}") from None
    folder = index_path.parent
    files = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        entry = line.strip()
        if not entry:
            continue
        if "\0" in entry:
            raise RelayIndexError(str(index_path), None, f"line {line_no} holds a NUL byte")
        candidate = Path(entry)
        resolved = candidate if candidate.is_absolute() else folder / candidate
        if not resolved.exists() and (folder / candidate.name).exists():
            resolved = folder / candidate.name
        if must_exist and not resolved.exists():
            raise RelayIndexError(
                str(index_path), None, f"line {line_no} names {entry!r}, which does not exist"
            )
        files.append(resolved)
    if not files:
        raise RelayIndexError(str(index_path), None, "index file lists no relay log files")
    logs = RelayLogSet(index_path, tuple(files))
    check_index_order(logs)
    return logs


def check_index_order(logs: RelayLogSet) -> None:
    """Relay files are numbered one after another (`relay-bin.000001`, `.000002`, …): a number
    missing from the index is a file missing from it, a number going back a file out of order."""
    where = str(logs.index_file) if logs.index_file else "the relay logs given"
    listed = {path.name for path in logs.files}
    previous: tuple[str, int, str] | None = None
    for path in logs.files:
        match = _NUMBERED.match(path.name)
        if match is None:
            previous = None
            continue
        stem, number = match[1], int(match[2])
        if previous is not None and previous[0] == stem:
            before = previous[1]
            missing = f"{stem}.{before + 1:0{len(match[2])}d}"
            if number <= before or (number > before + 1 and missing in listed):
                raise RelayIndexError(
                    where, None, f"{path.name} is listed after {previous[2]}: the files are out of order"
                )
            if number > before + 1:
                more = f" (and {number - before - 2} more)" if number > before + 2 else ""
                raise RelayIndexError(
                    where,
                    None,
                    f"{path.name} is listed right after {previous[2]}: {missing}{more} is missing from the index",
                )
        previous = (stem, number, path.name)


def is_index_file(path: str | os.PathLike[str]) -> bool:
    return str(path).endswith(".index")


def resolve_inputs(paths: list[str]) -> list[RelayLogSet]:
    """Command-line inputs: index files become their file lists, plain files stand alone."""
    sets = []
    for item in paths:
        if is_index_file(item):
            sets.append(read_index(item))
        else:
            sets.append(RelayLogSet(None, (Path(item),)))
    return sets


def validate_channel_name(name: str) -> str:
    """WL#1697: up to 64 characters. relaydeck also refuses what could leave the relay-log folder
    and what does not print as itself (control and format characters: C0, DEL, C1, bidi overrides,
    zero-width characters, and other separators than the space): a name shows in file names,
    terminals and errors, where such characters could hide or rewrite text."""
    if len(name) > MAX_CHANNEL_NAME_LENGTH:
        raise ChannelNameError(f"longer than {MAX_CHANNEL_NAME_LENGTH} characters")
    if not name.replace(" ", "").isprintable():
        raise ChannelNameError(f"{_shown(name)} holds characters that do not print")
    if any(c in "/\\" for c in name) or name in (".", "..") or name.strip() != name:
        raise ChannelNameError(f"{_shown(name)} has characters a relay-log file name cannot hold")
    return name


def _shown(name: str) -> str:
    """The name quoted, its unprintable characters escaped (\\x1b, \\u202e)."""
    return f"'{escaped(name)}'"


def channel_relay_log_names(base: str, channel: str) -> tuple[str, str]:
    """(index file name, file-name prefix) for a channel: `<base>-<channel>` lower-cased, none for ''."""
    validate_channel_name(channel)
    stem = base if channel == "" else f"{base}-{channel.lower()}"
    return f"{stem}.index", f"{stem}."
