"""An image's layers laid out as one root filesystem, and which of its directories a
container sees (the image stand-in keeps this machine's OS files: image.py, pull.py).

`unpack` applies layer tars in order, as the OCI image spec's changeset rules say: an
entry `.wh.NAME` deletes NAME from the layers below, an entry `.wh..wh..opq` empties its
directory of what the layers below put there, and every other entry is written over
what was there. Each layer is read twice (whiteouts first, then its files), so a
whiteout never removes a file of its own layer. Paths are kept inside the root
(tarfile's `tar` filter: no absolute names, nothing through a link out of the root);
device nodes and fifos are skipped (a container here uses this machine's /dev).

`mounts` chooses what a container is shown (as an overlay: sandbox.py): every directory of the image that this
machine lacks (or holds only as an empty directory: a mount point an earlier pod left),
taken whole. Files the image adds under a directory this machine has (`/etc/os-release`,
`/usr/bin/...`) are the base image's OS and are not shown: there the machine's own
files stand in.
"""

from __future__ import annotations

import copy
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
# never shown from an image: the container runtime provides these
SYSTEM = frozenset({"proc", "sys", "dev", "run", "tmp"})


class UnpackError(Exception):
    """A layer that cannot be laid out; the message names the layer and the entry."""


# the filter's refusals, where this Python has the filter
_FILTER_ERRORS: tuple[type[Exception], ...] = tuple(
    e for e in (getattr(tarfile, "FilterError", None),) if isinstance(e, type)
)


def _clean(name: str) -> str | None:
    """An entry's path relative to the root, or None for the root itself."""
    parts = [p for p in PurePosixPath("/" + name).parts[1:] if p not in ("", ".")]
    if ".." in parts:
        raise UnpackError(f"the entry {name!r} leaves the image's root")
    return "/".join(parts) or None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    elif path.exists() or os.path.lexists(path):
        path.unlink()


def _inside(root: Path, rel: str) -> Path:
    """ROOT/REL, refused when a symlink of the layers below leads its parent out of ROOT."""
    real_root = os.path.realpath(root)
    parent = os.path.realpath((root / rel).parent)
    if parent != real_root and not parent.startswith(real_root + "/"):
        raise UnpackError(f"the entry {rel!r} leads out of the image's root through a link")
    return root / rel


def apply_whiteouts(root: Path, tar: tarfile.TarFile) -> None:
    for member in tar:
        rel = _clean(member.name)
        if rel is None:
            continue
        head, _, base = rel.rpartition("/")
        if base == OPAQUE:
            d = _inside(root, head) if head else root
            if d.is_dir() and not d.is_symlink():
                for child in list(d.iterdir()):
                    _remove(child)
        elif base.startswith(WHITEOUT):
            _remove(_inside(root, f"{head}/{base[len(WHITEOUT) :]}".lstrip("/")))


def _keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    if member.ischr() or member.isblk() or member.isfifo():
        return None
    base = member.name.rstrip("/").rsplit("/", 1)[-1]
    if base.startswith(WHITEOUT):
        return None
    if hasattr(tarfile, "tar_filter"):
        return tarfile.tar_filter(member, dest)
    return _tar_filter(member, dest)


def _tar_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tarfile's `tar` filter for a Python without it (before 3.11.4, e.g. Debian 12's
    3.11.2): the name kept inside DEST, no setuid, setgid, sticky or group/other write
    bits. Symbolic links are kept as they are (an image's absolute links are normal; a
    write through one is refused by `_inside`); a hard link must stay inside DEST."""
    m = copy.copy(member)
    m.name = _clean(member.name) or "."
    real = os.path.realpath(dest)

    def inside(path: str) -> bool:
        p = os.path.realpath(os.path.join(real, path))
        return p == real or p.startswith(real + "/")

    if m.islnk():
        m.linkname = _clean(m.linkname) or "."
        if not inside(m.linkname):
            raise UnpackError(f"the link {member.name!r} points out of the image's root")
    if m.mode is not None:
        m.mode &= ~0o7022
    return m


def extract(root: Path, tar: tarfile.TarFile) -> None:
    for member in tar:
        rel = _clean(member.name)
        if rel is None:
            continue
        target = _inside(root, rel)
        # a later layer replaces what is there, unless both are directories
        if os.path.lexists(target) and not (member.isdir() and target.is_dir()):
            _remove(target)
        try:
            if hasattr(tarfile, "tar_filter"):
                tar.extract(member, root, filter=_keep)
            else:
                kept = _keep(member, str(root))
                if kept is not None:
                    tar.extract(kept, root)
        except (*_FILTER_ERRORS, OSError) as e:
            raise UnpackError(f"the entry {member.name!r}: {e}") from None


def unpack(root: Path, layers: list[Path]) -> None:
    """Lay LAYERS (tar files, compressed or not, lowest first) out under ROOT."""
    root.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        try:
            with tarfile.open(layer, mode="r:*") as tar:
                apply_whiteouts(root, tar)
            with tarfile.open(layer, mode="r:*") as tar:
                extract(root, tar)
        except tarfile.TarError as e:
            raise UnpackError(
                f"the layer {layer.name} is not a tar this agent reads: {e}"
            ) from None
        except UnpackError as e:
            raise UnpackError(f"the layer {layer.name}: {e}") from None


def _empty_dir(path: str) -> bool:
    try:
        return os.path.isdir(path) and not os.listdir(path)
    except OSError:
        return False


def mounts(
    root: Path, host: str = "/", lacks: Callable[[str], bool] | None = None
) -> list[tuple[str, str]]:
    """(source under ROOT, target in the container) for each directory of the image this
    machine lacks, parents before children; HOST is the machine's root (tests)."""
    missing = lacks or (lambda p: not os.path.lexists(p) or _empty_dir(p))
    out: list[tuple[str, str]] = []

    def walk(rel: str) -> None:
        here = root / rel if rel else root
        for child in sorted(here.iterdir()):
            sub = f"{rel}/{child.name}" if rel else child.name
            if not rel and child.name in SYSTEM:
                continue
            if child.is_symlink() or not child.is_dir():
                continue
            on_host = os.path.join(host, sub)
            if missing(on_host):
                out.append((str(child), "/" + sub))
            elif os.path.isdir(on_host) and not os.path.islink(on_host):
                walk(sub)

    walk("")
    return out
