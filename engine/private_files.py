"""Files and folders only their owner may use.

The slave holds the replicated data and the repository the source's credentials; the control
socket takes statements. What relaydeck creates for them (the files, their WAL, journal and shared
memory files, the socket and its folder) is the owner's alone: 0600, and 0700 for a folder. Files
that already exist keep the mode they have, as a DBA may have set it on purpose.
"""

from __future__ import annotations

import os
import stat

OWNER_ONLY_UMASK = 0o077


def restrict_new_files() -> None:
    """From now on this process creates files 0600 and folders 0700 (the umask only ever tightens).

    A process-wide setting, because the databases create their write-ahead logs later, on their own
    threads; files other than relaydeck's that this process creates get it too, which only tightens.
    """
    previous = os.umask(OWNER_ONLY_UMASK)
    os.umask(previous | OWNER_ONLY_UMASK)


class NotPrivate(Exception):
    """A path that another user owns or could have replaced: nothing may be entrusted to it."""


def private_directory(path: str, *, create: bool) -> bool:
    """Whether `path` is a real directory (no symbolic link) owned by this user; with create, make it
    (0700) when missing and take away any access others have. False only when it does not exist
    and create is off. Raises NotPrivate, saying why, when another user owns it or it is no folder."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        if create:
            raise
        return False
    except OSError as exc:
        raise NotPrivate(f"{path} is not a folder of this user ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        _check_owner(path, info)
        if create and info.st_mode & 0o077:
            os.fchmod(fd, 0o700)  # ours, and opened without following links: safe to tighten
    finally:
        os.close(fd)
    return True


def check_own_socket(path: str) -> bool:
    """Whether a socket of this user's is at `path` (False when nothing is there); raises NotPrivate
    when something else is, or a socket of another user's."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISSOCK(info.st_mode):
        raise NotPrivate(f"{path} is not a socket")
    _check_owner(path, info)
    return True


def _check_owner(path: str, info: os.stat_result) -> None:
    if info.st_uid != os.geteuid():
        raise NotPrivate(
            f"{path} belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()}): "
            "another user may have put it there"
        )
