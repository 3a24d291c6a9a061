"""The last step before a container's command: run as `python3 -I -S enter.py PLAN` inside
the pod's network namespace and a private mount (and UTS) namespace of its own
(`ip netns exec NS unshare --mount --uts --propagation private ...`), it sets the pod's
hostname, lays a pulled image's directories out as overlays (the image's files below,
a writable layer of this container's own above: what it writes there no other
container sees, and the image's files stay as pulled), makes the container's bind
mounts (volumes, the pod's hosts file over /etc/hosts), enters the working directory,
becomes the container's user (uid, gid and supplementary groups from its
securityContext, when not root) and execs the command, which keeps this pid. For a
non-root user, a directory of this machine's that only root may enter and that holds
the interpreter standing in for the image's (pyenv under /root) is replaced by an
empty one with the interpreter's tree bound back in.

Standalone (standard library only, no imports from the package) so it runs isolated
from the container's PYTHONPATH. A mount point missing on this machine is created, and
its topmost new path recorded in the plan's `record` file so `scripts/cluster down` can
remove it; the mounts themselves end with the namespace.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384


def _mount(
    src: str | None, target: str, flags: int, fstype: str | None = None, data: str | None = None
) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    s = None if src is None else src.encode()
    t = None if fstype is None else fstype.encode()
    d = None if data is None else data.encode()
    if libc.mount(s, target.encode(), t, flags, d) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {src} on {target}: {os.strerror(err)}")


def overlay(lower: str, upper: str, work: str, target: str) -> None:
    """TARGET shows LOWER (read-only to it) under UPPER, where its writes go."""
    for d in (upper, work):
        os.makedirs(d, exist_ok=True)
    if any("," in p or ":" in p for p in (lower, upper, work)):
        raise OSError(f"an overlay's directories cannot hold ',' or ':': {lower}")
    _mount("overlay", target, 0, "overlay", f"lowerdir={lower},upperdir={upper},workdir={work}")


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def ensure(target: str, is_file: bool, mounted: list[str], record: str | None) -> None:
    """Create `target` (a directory, or an empty file) and what is missing above it."""
    if os.path.lexists(target):
        return
    missing = target
    while not os.path.lexists(os.path.dirname(missing)):
        missing = os.path.dirname(missing)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # Another container of this machine may make the same point since the check above (an
    # MPIJob's two workers mount their ssh Secret at /root/.ssh): this one goes on.
    if is_file:
        open(target, "a").close()
    else:
        os.makedirs(target, exist_ok=True)
    if record and not any(_under(os.path.realpath(missing), m) for m in mounted):
        with open(record, "a") as f:
            f.write(missing + "\n")


def _private_run(targets: list[str], mounted: list[str]) -> None:
    """A pod's own empty /run when a mount goes under a /run path this machine lacks (the
    service account's token at /var/run/secrets/...), as a container runtime gives every
    container: creating that path on the machine would make this machine look like a pod
    to anything that checks for an in-cluster account while the tier runs."""
    if not any(_under(os.path.realpath(t), "/run") and not os.path.lexists(t) for t in targets):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", b"/run", b"tmpfs", 0, b"mode=755,size=16m") != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on /run: {os.strerror(err)}")
    mounted.append("/run")


def _expose(pairs: list[list[str]], mounted: list[str]) -> None:
    """Each [blocked directory, path under it]: the path opened first, an empty world-
    enterable directory mounted over the blocked one, the path bound back from the
    opened descriptor."""
    libc = ctypes.CDLL(None, use_errno=True)
    for top in dict.fromkeys(t for t, _ in pairs):
        fds = [(os.open(p, os.O_PATH | os.O_DIRECTORY), p) for t, p in pairs if t == top]
        if libc.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=755,size=1m") != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"mount tmpfs on {top}: {os.strerror(err)}")
        mounted.append(top)
        for fd, path in fds:
            os.makedirs(path, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, MS_BIND | MS_REC)
            os.close(fd)


def _become(user: list | None) -> None:  # type: ignore[type-arg]
    """The container's uid, gid and supplementary groups, as the runtime sets them."""
    if not user:
        return
    uid, gid, groups = user
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)


def main(plan_path: str) -> int:
    with open(plan_path) as f:
        plan = json.load(f)
    if plan.get("hostname"):
        socket.sethostname(plan["hostname"])
    mounted: list[str] = []
    _expose(plan.get("expose") or [], mounted)
    overlays = plan.get("overlays") or []
    _private_run([t for _, t, _ in plan.get("mounts") or []] + [o[3] for o in overlays], mounted)
    for lower, upper, work, target in overlays:
        ensure(target, False, mounted, plan.get("record"))
        overlay(lower, upper, work, target)
        mounted.append(target)
    for src, target, read_only in plan.get("mounts") or []:
        if not os.path.exists(src):
            os.makedirs(src, exist_ok=True)  # a subPath of a directory volume
        ensure(target, os.path.isfile(src), mounted, plan.get("record"))
        _mount(src, target, MS_BIND | MS_REC)
        if read_only:
            _mount(None, target, MS_REMOUNT | MS_BIND | MS_RDONLY)
        mounted.append(target)
    if plan.get("cwd"):
        ensure(plan["cwd"], False, mounted, plan.get("record"))
        os.chdir(plan["cwd"])
    _become(plan.get("user"))
    argv = plan["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"exec {argv[0]}: {e.strerror}", file=sys.stderr, flush=True)
    return 128


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
