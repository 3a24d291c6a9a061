"""Writing a file whole: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to a temporary file with a unique name in the same directory
    (so two writers never share one), flush it to disk, then rename it over ``path``.
    The file gets ``mode`` whatever the umask (mkstemp creates it 0600)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode != 0o600:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
