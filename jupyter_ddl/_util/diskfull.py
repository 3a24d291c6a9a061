"""A full disk, named: "no space left on <device> (<path>)" instead of a bare
ENOSPC traceback, or a supervisor that died with an empty log."""

from __future__ import annotations

import errno
import os
from pathlib import Path

#: bytes free under which a filesystem counts as full (a supervisor that died there
#: most likely died of it)
NEARLY_FULL = 1 << 20
_FULL = (errno.ENOSPC, errno.EDQUOT)


def is_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in _FULL


def device_of(path: str | os.PathLike[str]) -> str:
    """The filesystem ``path`` is on, as ``/dev/sda1`` or ``tmpfs at /mnt/x``."""
    p = Path(path).absolute()
    best, source = "", "the disk"
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return source
    for line in mounts:
        fields = line.split()
        if len(fields) < 2:
            continue
        dev, point = fields[0], fields[1].replace("\\040", " ")
        if (p == Path(point) or Path(point) in p.parents) and len(point) > len(best):
            best, source = point, dev
    if not source.startswith("/"):
        source = f"{source} at {best}"
    return source


def message(path: str | os.PathLike[str]) -> str:
    return f"no space left on {device_of(path)} ({path})"


def nearly_full(path: str | os.PathLike[str]) -> bool:
    """Whether the filesystem of ``path`` has (almost) no room left for us."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < NEARLY_FULL
