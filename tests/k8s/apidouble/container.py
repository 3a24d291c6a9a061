"""One container as a local process: its volumes, its environment, its mounts.

Volumes become directories under the pod's scratch folder and the container's paths
(command, args, env, workingDir) are rewritten to them. Like the kubelet, ConfigMap and
Secret volumes (and any mount with ``readOnly: true``) are read-only (Kubernetes ≥ 1.10:
the atomic-writer volumes are mounted ro), emptyDir and PVC mounts are writable. The
read-only part is real: the process runs in its own mount namespace
(``unshare -m``) where those directories are bind-mounted ``ro``, so a write gets
EROFS, as in a pod. Where mount namespaces are not available (no CAP_SYS_ADMIN) the
files are made non-writable instead, which only stops a non-root process;
``READ_ONLY`` says which mechanism is in force.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import shlex
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .store import Store, field_lookup


@functools.cache
def read_only_mechanism() -> str:
    """``"mount"`` (bind mounts ro in a mount namespace), ``"chmod"`` (non-root only)
    or ``"none"`` (root without mount namespaces: writes cannot be stopped)."""
    with tempfile.TemporaryDirectory() as d:
        probe = (f"mount --bind {d} {d} && mount -o remount,ro,bind {d} {d} "
                 f"&& ! touch {d}/x 2>/dev/null")  # fmt: skip
        try:
            ok = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", probe],
                                capture_output=True, timeout=10).returncode == 0  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            ok = False
    if ok:
        return "mount"
    return "chmod" if os.geteuid() != 0 else "none"


def data(store: Store, ns: str, kind: str, name: str) -> dict[str, str]:
    """The text values env reads: a Secret's ``data``, a ConfigMap's ``data`` (the
    kubelet's envFrom and configMapKeyRef never read ``binaryData``)."""
    obj = store.get(f"core/v1/{kind}", ns, name) or {}
    if kind == "secrets":
        return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
    return dict(obj.get("data") or {})


def files(store: Store, ns: str, kind: str, name: str) -> dict[str, bytes]:
    """The bytes a volume of the object holds: ``binaryData`` byte for byte."""
    obj = store.get(f"core/v1/{kind}", ns, name) or {}
    if kind == "secrets":
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    out = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    out.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return out


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion in command, args and env values: a defined
    variable is replaced, an undefined reference stays as written, ``$$`` is one ``$``
    (kubernetes ``third_party/forked/golang/expansion``)."""
    return _VAR.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def environment(store: Store, ns: str, pod: dict[str, Any], c: dict[str, Any]) -> dict[str, str]:
    """env and envFrom resolved like the kubelet (value, secret/configMap refs, fieldRef)."""
    env: dict[str, str] = {}
    for src in c.get("envFrom") or []:
        if src.get("secretRef"):
            env.update(data(store, ns, "secrets", src["secretRef"]["name"]))
        if src.get("configMapRef"):
            env.update(data(store, ns, "configmaps", src["configMapRef"]["name"]))
    for e in c.get("env") or []:
        vf = e.get("valueFrom") or {}
        if "value" in e:  # may name the variables defined before it
            env[e["name"]] = expand(str(e["value"]), env)
        elif vf.get("secretKeyRef"):
            ref = vf["secretKeyRef"]
            env[e["name"]] = data(store, ns, "secrets", ref["name"]).get(ref["key"], "")
        elif vf.get("configMapKeyRef"):
            ref = vf["configMapKeyRef"]
            env[e["name"]] = data(store, ns, "configmaps", ref["name"]).get(ref["key"], "")
        elif vf.get("fieldRef"):
            path = vf["fieldRef"]["fieldPath"]
            if path.startswith("metadata.annotations['") or path.startswith("metadata.labels['"):
                where, _, key = path.partition("['")
                value = ((pod.get("metadata") or {}).get(where.split(".")[1]) or {}).get(key[:-2])
            else:
                value = field_lookup(pod, path)
            env[e["name"]] = str(value or "")
    return env


def volumes(store: Store, ns: str, spec: dict[str, Any], c: dict[str, Any],
            root: Path) -> tuple[dict[str, str], list[str]]:  # fmt: skip
    """(mountPath -> directory, read-only directories) for container ``c``."""
    mounts: dict[str, str] = {}
    read_only: list[str] = []
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        v = vols.get(m["name"], {})
        target = root / "volumes" / m["name"]
        target.mkdir(parents=True, exist_ok=True)
        for kind, ref in (("configmaps", v.get("configMap")), ("secrets", v.get("secret"))):
            if not ref:
                continue
            values = files(store, ns, kind, ref.get("name") or ref.get("secretName"))
            items = ref.get("items") or [{"key": k, "path": k} for k in values]
            for it in items:
                f = target / it["path"]
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(values.get(it["key"], b""))
        if v.get("configMap") or v.get("secret") or m.get("readOnly"):
            read_only.append(str(target))
        mounts[m["mountPath"]] = str(target)
    return mounts, read_only


def rewrite(text: str, mounts: dict[str, str]) -> str:
    for path in sorted(mounts, key=len, reverse=True):
        text = text.replace(path, mounts[path])
    return text


def _chmod_read_only(folder: str) -> None:
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            os.chmod(os.path.join(dirpath, f), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP
                 | stat.S_IROTH | stat.S_IXOTH)  # fmt: skip


def spawn(argv: list[str], env: dict[str, str], cwd: str,
          read_only: list[str]) -> subprocess.Popen[bytes]:  # fmt: skip
    """Start the container's process; raises OSError when it cannot start."""
    if argv[0] in ("python", "python3"):  # the "image's" interpreter is this one
        argv = [sys.executable, *argv[1:]]
    env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}
    mechanism = read_only_mechanism() if read_only else "none"
    if mechanism == "mount":
        binds = "".join(f"mount --bind {shlex.quote(d)} {shlex.quote(d)} && "
                        f"mount -o remount,ro,bind {shlex.quote(d)} {shlex.quote(d)} && "
                        for d in read_only)  # fmt: skip
        argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                binds + 'cd "$0" && exec "$@"', cwd, *argv]  # fmt: skip
    elif mechanism == "chmod":
        for d in read_only:
            _chmod_read_only(d)
    return subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
