"""The code layer: a code bundle as a deterministic gzip'd tar.

Same bundle, same bytes, in any process on any machine: entries sorted, every parent
directory written explicitly, mtime 0, uid/gid 0 with no user or group names, fixed
modes, gzip with mtime 0 and no file name. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import CodeBundle

#: where the bundle lands inside the image; a replica runs ``python CODE_DIR/<entrypoint>``
CODE_DIR = "/opt/jupyter-ddl/code"
DIR_MODE = 0o755
FILE_MODE = 0o644
EXEC_MODE = 0o755  # the entry point, so it can also be run directly
#: fixed so zlib output does not depend on a default that could change
GZIP_LEVEL = 6


@dataclass(frozen=True)
class Layer:
    """A built layer: compressed bytes, their digest/size, and the tar's diff_id."""

    data: bytes = field(repr=False)
    digest: str
    diff_id: str
    size: int


def entry_command(entrypoint: str) -> list[str]:
    """The command a replica runs for a bundle's entry point."""
    return ["python", f"{CODE_DIR}/{entrypoint}"]


def _check_path(path: str) -> PurePosixPath:
    p = PurePosixPath(path)
    if (
        not path
        or p.is_absolute()
        or "\\" in path
        or any(part in ("", ".", "..") for part in path.split("/"))
    ):
        raise ValidationError(
            tr(
                "code bundle path {path!r} is not a plain relative path; use names like 'pkg/mod.py'",
                path=path,
            )
        )
    return p


def _tar_entries(bundle: CodeBundle) -> list[tuple[str, bytes | None, int]]:
    """(path inside the image without leading '/', content or None for a dir, mode), sorted."""
    root = PurePosixPath(CODE_DIR.lstrip("/"))
    dirs = {str(p) for p in (root, *root.parents) if str(p) != "."}
    files: dict[str, tuple[bytes, int]] = {}
    for rel, content in bundle.files.items():
        target = root / _check_path(rel)
        dirs.update(str(p) for p in target.parents if str(p) != ".")
        mode = EXEC_MODE if rel == bundle.entrypoint else FILE_MODE
        files[str(target)] = (content, mode)
    clash = dirs & set(files)
    if clash:
        raise ValidationError(
            tr(
                "code bundle path {path!r} is both a file and a directory; rename one",
                path=sorted(clash)[0],
            )
        )
    entries: list[tuple[str, bytes | None, int]] = [(d, None, DIR_MODE) for d in dirs]
    entries += [(p, c, m) for p, (c, m) in files.items()]
    return sorted(entries, key=lambda e: e[0])


def _tar_bytes(entries: list[tuple[str, bytes | None, int]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content, mode in entries:
            info = tarfile.TarInfo(path + "/" if content is None else path)
            info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = (
                mode,
                0,
                0,
                0,
                "",
                "",
            )
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def build_layer(bundle: CodeBundle) -> Layer:
    """The bundle as a layer under ``CODE_DIR``; raises ValidationError for bad paths."""
    if bundle.entrypoint not in bundle.files:
        raise ValidationError(
            tr(
                "code bundle has no entry point file {path!r}; add it to the bundle",
                path=bundle.entrypoint,
            )
        )
    raw = _tar_bytes(_tar_entries(bundle))
    out = io.BytesIO()
    # filename="" and mtime=0 keep temp names and clocks out of the gzip header
    with gzip.GzipFile(
        filename="", mode="wb", fileobj=out, mtime=0, compresslevel=GZIP_LEVEL
    ) as gz:
        gz.write(raw)
    data = out.getvalue()
    return Layer(
        data=data,
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        diff_id="sha256:" + hashlib.sha256(raw).hexdigest(),
        size=len(data),
    )
