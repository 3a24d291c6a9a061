"""Who a container's processes run as, as the kubelet and containerd decide it, and what
a non-root process needs on this machine to run at all.

- The user: the container's `securityContext.runAsUser`, else the pod's, else the
  image's (root for every stand-in here). The group: `runAsGroup` the same way, else the
  user's primary group in the image's /etc/passwd (containerd looks it up there), else 0.
  Supplementary groups: the pod's `fsGroup` and `supplementalGroups`.
- `fsGroup`: the kubelet gives the volumes it writes or makes (emptyDir, configMap,
  secret, downwardAPI, projected, a claim's directory) to that group, group-readable
  (and group-writable with the set-group-id bit on directories for the writable kinds),
  so a non-root process reads its Secret's keys and writes its emptyDir.
- The machine's interpreter stands in for the image's, and it may live under a directory
  only root may enter (pyenv under /root): a non-root container gets that directory as
  an empty one of its own, with the interpreter's tree bound back in (`exposures`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

# the volume kinds whose files the kubelet hands to fsGroup (hostPath keeps its owner)
OWNED = ("emptyDir", "configMap", "secret", "downwardAPI", "projected", "persistentVolumeClaim")
WRITABLE = ("emptyDir", "persistentVolumeClaim")


def _context(pod: dict[str, Any], container: dict[str, Any], key: str) -> int | None:
    for sc in (container.get("securityContext") or {}, pod["spec"].get("securityContext") or {}):
        if sc.get(key) is not None:
            return int(sc[key])
    return None


def primary_group(passwd: str, uid: int) -> int | None:
    """The primary gid of UID in a passwd file's text."""
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) >= 4 and fields[2] == str(uid) and fields[3].isdigit():
            return int(fields[3])
    return None


def identity(
    pod: dict[str, Any], container: dict[str, Any], passwd: str
) -> tuple[int, int, list[int]]:
    """(uid, gid, supplementary groups) the container's processes run with."""
    uid = _context(pod, container, "runAsUser") or 0
    gid = _context(pod, container, "runAsGroup")
    if gid is None:
        gid = primary_group(passwd, uid) or 0
    psc = pod["spec"].get("securityContext") or {}
    extra = [int(psc["fsGroup"])] if psc.get("fsGroup") is not None else []
    extra += [int(g) for g in psc.get("supplementalGroups") or []]
    return uid, gid, sorted({gid, *extra})


def give_to_fs_group(vol: dict[str, Any], where: Path, pod: dict[str, Any]) -> None:
    """The kubelet's volume ownership for the pod's fsGroup (SetVolumeOwnership)."""
    group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
    if group is None or not any(k in vol for k in OWNED) or not where.is_dir():
        return
    writable = any(k in vol for k in WRITABLE)
    for path in [where, *where.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, -1, int(group))
        mode = path.stat().st_mode
        add = stat.S_IRGRP
        if path.is_dir():
            add |= stat.S_IXGRP | stat.S_ISGID
        if writable:
            add |= stat.S_IWGRP
        os.chmod(path, stat.S_IMODE(mode) | add)


def _blocked(path: str) -> str | None:
    """The topmost directory above PATH that others may not enter, if any."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        d = os.path.join(*parts[:i])
        try:
            if not os.stat(d).st_mode & stat.S_IXOTH:
                return d
        except OSError:
            return None
    return None


def exposures(paths: list[str]) -> list[list[str]]:
    """[blocked directory, path under it] for each PATH a non-root process could not
    reach: enter.py mounts an empty directory over the first and binds the second back."""
    out: list[list[str]] = []
    for p in paths:
        real = os.path.realpath(p)
        top = _blocked(real)
        if top and [top, real] not in out:
            out.append([top, real])
    return out


def interpreter_paths(path_prefix: str, pythonpath: str) -> list[str]:
    """What the stand-in's programs need: the interpreter's own tree (a venv's base
    installation too) and the directories on PYTHONPATH."""
    out = []
    if path_prefix:
        out.append(path_prefix)
        python = os.path.realpath(os.path.join(path_prefix, "python"))
        out.append(os.path.dirname(os.path.dirname(python)))
    out += [p for p in pythonpath.split(os.pathsep) if p]
    return out
