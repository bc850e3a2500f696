"""Relay-log files as a MariaDB replica's IO thread writes them, from the events it receives.

Each relay file opens with the magic and the replica's own Format_description (the replica's
server id, the relay-log flag 0x40); a file opened by rotation at `max_relay_log_size` repeats the
source's Format_description marked artificial (log_pos 0, created 0) so that it reads on its own;
each file that is followed by another ends with the replica's own Rotate naming it. The source's
events go in as received, with their checksums. The index file lists the files WL#1697-named per
channel (`relay-bin-<channel>.000001`), and is replaced whole (a new file, then a rename) so that a
reader never sees half of it.

A follower in the same process (the channel's applier under `relaydeck serve`) is told of each
flush (relaylog/follow.py's announce_growth) rather than left to notice the files change.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from pathlib import Path
from typing import BinaryIO

from ..binlog.constants import BINLOG_MAGIC, COMMON_HEADER_LEN, ChecksumAlg, EventFlag, EventType
from ..binlog.events import HEADER
from ..binlog.events.control import fde_has_checksum_byte
from ..binlog.writer import rotate_body
from ..relaylog.follow import announce_growth, writing
from ..relaylog.index import channel_relay_log_names, read_index

_U32 = struct.Struct("<I")
_CREATED_AT = COMMON_HEADER_LEN + 2 + 50  # the Format_description's create timestamp
_LOG_POS_AT = 13
_FLAGS_AT = 17
_SERVER_ID_AT = 5
_TIMESTAMP_AT = 0


def reframe(event: bytes, *, checksum: bool, **fields: int) -> bytes:
    """The event with header fields (timestamp, server_id, log_pos, flags) or the Format_description's
    created time replaced, its CRC32 computed again when it carries one."""
    data = bytearray(event)
    for name, value in fields.items():
        if name == "flags":
            data[_FLAGS_AT : _FLAGS_AT + 2] = value.to_bytes(2, "little")
        else:
            at = {
                "timestamp": _TIMESTAMP_AT,
                "server_id": _SERVER_ID_AT,
                "log_pos": _LOG_POS_AT,
                "created": _CREATED_AT,
            }[name]
            data[at : at + 4] = value.to_bytes(4, "little")
    if checksum:
        data[-4:] = _U32.pack(zlib.crc32(data[:-4]))
    return bytes(data)


class RelayLogFiles:
    """One channel's relay-log files in `directory`: opened, appended to, rotated, indexed."""

    def __init__(
        self, directory: Path, channel: str, server_id: int, max_size: int, base: str = "relay-bin"
    ) -> None:
        self.directory = directory
        index_name, self.prefix = channel_relay_log_names(base, channel)
        self.index_file = directory / index_name
        self.server_id = server_id
        self.max_size = max_size
        directory.mkdir(parents=True, exist_ok=True)
        self.files: list[Path] = list(read_index(self.index_file).files) if self.index_file.exists() else []
        self._file: BinaryIO | None = None
        self.pos = 0
        self._source_fde: bytes | None = None  # the source's, as received
        self._checksum = False
        writing(self.index_file, True)
        self._writing = True

    @property
    def current(self) -> Path | None:
        return self.files[-1] if self._file is not None else None

    # -- the source's format --------------------------------------------------------------------

    def source_format(self, fde: bytes) -> None:
        """The source's Format_description, which also shapes the replica's own (same format,
        same checksum algorithm)."""
        version = fde[COMMON_HEADER_LEN + 2 : _CREATED_AT].split(b"\0", 1)[0].decode("ascii", "replace")
        self._checksum = fde_has_checksum_byte(version) and fde[-5] == ChecksumAlg.CRC32
        self._source_fde = fde

    # -- writing ---------------------------------------------------------------------------------

    def open_new(self, *, repeat_source_format: bool) -> None:
        """A new relay file after the last one (the last one gets the Rotate naming it)."""
        number = 1
        if self.files:
            number = int(self.files[-1].name.rsplit(".", 1)[1]) + 1
        path = self.directory / f"{self.prefix}{number:06d}"
        if self._file is not None:
            self._own_event(EventType.ROTATE, EventFlag.RELAY_LOG, rotate_body(4, path.name))
            self._close_file()
        self._file = path.open("xb")
        self.pos = 0
        self._write(BINLOG_MAGIC)
        self._write(self._own_format_description())
        self.files.append(path)
        self._write_index()
        if repeat_source_format and self._source_fde is not None:
            self._write(
                reframe(
                    self._source_fde,
                    checksum=self._checksum,
                    log_pos=0,
                    created=0,
                    flags=EventFlag.ARTIFICIAL,
                )
            )
        self.flush()

    def append(self, event: bytes) -> None:
        """One event of the source, as received."""
        self._write(event)

    def rotate_if_full(self) -> None:
        """At a transaction boundary: a new file once this one reached max_relay_log_size."""
        if self._file is not None and self.pos >= self.max_size:
            self.open_new(repeat_source_format=True)

    def purge_before(self, keep_from: str) -> list[Path]:
        """relay_log_purge: the files listed before `keep_from` (never the last one) are removed
        from the index, then deleted; the files removed."""
        names = [path.name for path in self.files]
        if keep_from not in names:
            return []
        cut = min(names.index(keep_from), len(self.files) - 1)
        if cut <= 0:
            return []
        purged, self.files = self.files[:cut], self.files[cut:]
        self._write_index()  # first: a reader never finds the index naming a deleted file
        for path in purged:
            path.unlink(missing_ok=True)
        return purged

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
            announce_growth(self.index_file)

    def sync(self) -> None:
        """On disk, before the position that covers these bytes is recorded."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._close_file()
        if self._writing:
            self._writing = False
            writing(self.index_file, False)

    def _close_file(self) -> None:
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)
        self.pos += len(data)

    def _own_event(self, type_code: int, flags: int, body: bytes) -> None:
        size = COMMON_HEADER_LEN + len(body) + (4 if self._checksum else 0)
        head = HEADER.pack(int(time.time()), type_code, self.server_id, size, self.pos + size, flags)
        event = head + body
        if self._checksum:
            event += _U32.pack(zlib.crc32(event))
        self._write(event)

    def _own_format_description(self) -> bytes:
        """The replica's Format_description: the source's format (a replica of the same server
        writes the same), under the replica's server id, flagged as a relay log's, positioned in
        the relay file."""
        assert self._source_fde is not None, "the source's Format_description comes first"
        fde = self._source_fde
        return reframe(
            fde,
            checksum=self._checksum,
            timestamp=int(time.time()),
            server_id=self.server_id,
            log_pos=self.pos + len(fde),
            flags=EventFlag.RELAY_LOG,
            created=int(time.time()),
        )

    def _write_index(self) -> None:
        text = "".join(f"./{path.name}\n" for path in self.files)
        staged = self.index_file.with_name(self.index_file.name + "~")
        staged.write_text(text)
        os.replace(staged, self.index_file)
        announce_growth(self.index_file)
