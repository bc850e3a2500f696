"""What a process killed with SIGKILL leaves in the temporary folder, removed by the next one.

Nothing of a process runs after SIGKILL: not its `finally`, not its atexit handlers. A folder it
would have removed stays, so relaydeck names each such folder after the process that made it
(prefix + pid + "-…") and the next process to make one of the kind removes those whose process has
ended.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process of this pid runs (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_folders_of_ended(prefix: str, keep_marker: str | None = None) -> None:
    """Remove the folders `prefix` + pid + "-…" in the temporary folder whose process has ended,
    except those holding a file named `keep_marker` (one kept on purpose, whose path an error
    message gave)."""
    root = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        if keep_marker is not None and (root / entry.name / keep_marker).exists():
            continue
        shutil.rmtree(root / entry.name, ignore_errors=True)
