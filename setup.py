"""Builds the optional C forms of the hot paths: the row-image decoder, the decoders
of the events every transaction carries, the reader's event loop, the process pool workers'
reading of row-only transactions, and the row lines of `relaydeck events --rows`.

Everything else is declared in pyproject.toml. The extensions are optional: where they cannot be
built, relaydeck runs on their pure-Python twins, which give the same results, only slower.
"""

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # building without Cython: the pure-Python forms only
    extensions = []
else:
    extensions = cythonize(
        [
            Extension("engine.binlog._rowimage", ["engine/binlog/_rowimage.pyx"], optional=True),
            Extension("engine.binlog._decoders", ["engine/binlog/_decoders.pyx"], optional=True),
            Extension("engine._rowtext", ["engine/_rowtext.pyx"], optional=True),
            Extension(
                "engine.binlog._framing", ["engine/binlog/_framing.pyx"], libraries=["z"], optional=True
            ),
            Extension(
                "engine.binlog._runscan", ["engine/binlog/_runscan.pyx"], libraries=["z"], optional=True
            ),
        ],
        compiler_directives={"language_level": "3"},
    )

setup(ext_modules=extensions)
