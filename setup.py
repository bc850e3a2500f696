"""Builds the optional C forms of the hot paths: the row-image decoder, the decoders
of the events every transaction carries, the reader's event loop, the process pool workers'
reading of row-only transactions, and the row lines of `relaydeck events --rows`.

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
built, relaydeck runs on their pure-Python twins, which give the same results, only slower.
The two that verify events' CRC32 use Intel ISA-L where its headers are installed (Debian:
libisal-dev; see engine/binlog/event_crc.h), zlib otherwise.
"""

import os

from setuptools import Extension, setup


def _event_crc_settings() -> dict[str, object]:
    """How the modules that verify events' CRC32 are built: with ISA-L where it is installed."""
    isal = any(
        os.path.exists(os.path.join(d, "isa-l", "crc.h")) for d in ("/usr/include", "/usr/local/include")
    )
    return {
        "libraries": ["z", "isal"] if isal else ["z"],
        "define_macros": [("RELAYDECK_ISAL", "1")] if isal else [],
        "include_dirs": ["engine/binlog"],
        "depends": ["engine/binlog/event_crc.h"],
    }


try:
    from Cython.Build import cythonize
except ImportError:  # building without Cython: the pure-Python forms only
    extensions = []
else:
    extensions = cythonize(
        [
            Extension("engine.binlog._rowimage", ["engine/binlog/_rowimage.pyx"], optional=True),
            Extension("engine.binlog._decoders", ["engine/binlog/_decoders.pyx"], optional=True),
            Extension("engine.binlog._jsontext", ["engine/binlog/_jsontext.pyx"], optional=True),
            Extension(
                "engine.binlog._framing",
                ["engine/binlog/_framing.pyx"],
                optional=True,
                **_event_crc_settings(),
            ),
            Extension(
                "engine.binlog._runscan",
                ["engine/binlog/_runscan.pyx"],
                optional=True,
                **_event_crc_settings(),
            ),
        ],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=extensions)
