"""`python -m console.cli`: the `relaydeck` command."""

import sys

from . import main

sys.exit(main())
