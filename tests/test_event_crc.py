"""engine/binlog/event_crc.h, the CRC32 the compiled reader and scanner verify events with: built
with ISA-L and with zlib, each gives zlib.crc32 of every event of the bundled capture's relay logs."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.conftest import MULTISOURCE

HEADER = Path(__file__).resolve().parent.parent / "engine" / "binlog" / "event_crc.h"

# reads (offset, length) pairs from stdin and prints the CRC32 of each such stretch of the file
_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "event_crc.h"
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(size);
    if (fread(data, 1, size, f) != (size_t)size) return 2;
    long offset, length;
    while (scanf("%ld %ld", &offset, &length) == 2) printf("%u\n", event_crc32(data + offset, length));
    return 0;
}
"""


def _events(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each event's bytes before its checksum."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        if size < 19 + 4 or pos + size > len(data):
            break
        out.append((pos, size - 4))
        pos += size
    return out


@pytest.mark.parametrize("variant", ["isal", "zlib"])
def test_each_build_of_the_event_crc_gives_zlibs_crc32(variant, tmp_path):
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler")
    if variant == "isal" and not any(
        (Path(d) / "isa-l" / "crc.h").exists() for d in ("/usr/include", "/usr/local/include")
    ):
        pytest.skip("ISA-L's headers are not installed")
    source = tmp_path / "crc.c"
    source.write_text(_PROGRAM)
    program = tmp_path / "crc"
    flags = ["-DRELAYDECK_ISAL", "-lisal"] if variant == "isal" else ["-lz"]
    subprocess.run(
        [compiler, "-O2", f"-I{HEADER.parent}", str(source), "-o", str(program), *flags], check=True
    )
    checked = 0
    for path in sorted((MULTISOURCE / "relay").glob("relay-bin-*.0*")):
        data = path.read_bytes()
        events = _events(data)
        request = "".join(f"{offset} {length}\n" for offset, length in events)
        out = subprocess.run(
            [str(program), str(path)], input=request, capture_output=True, text=True, check=True
        )
        got = [int(line) for line in out.stdout.split()]
        assert got == [zlib.crc32(data[offset : offset + length]) for offset, length in events]
        # the stored checksums, which the relay logs carry after every event
        assert got == [struct.unpack_from("<I", data, offset + length)[0] for offset, length in events]
        checked += len(events)
    assert checked > 10_000
