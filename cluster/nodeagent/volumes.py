"""A pod's volumes as the kubelet lays them out: what files each volume holds (pure:
`volume_files`), where each container sees them (pure: `plan_mounts`), and writing a
volume's files under the pod's directory (`materialize`). The mounts themselves are bind
mounts made inside the container's private mount namespace (enter.py).
"""

from __future__ import annotations

import base64
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .envs import ConfigError, Fetch, expand, field_value, resource_value

# the kinds whose files the kubelet writes itself and mounts read-only
ATOMIC = ("configMap", "secret", "downwardAPI", "projected")
DEFAULT_MODE = 0o644
# token(audience or None, expirationSeconds) -> a service account token, None if refused
Token = Callable[["str | None", int], "str | None"]


@dataclass(frozen=True)
class Mount:
    source: str  # on this machine
    target: str  # inside the container
    read_only: bool


def _safe(rel: str) -> str:
    """A volume-relative file path, refused when it would leave the volume."""
    norm = posixpath.normpath(rel)
    if not rel or norm.startswith(("/", "..")) or norm == ".":
        raise ConfigError(f"the volume path {rel!r} leaves its volume")
    return norm


def _object_files(
    kind: str, src: dict[str, Any], fetch: Fetch, mode: int
) -> dict[str, tuple[bytes, int]]:
    """A configMap or secret source: every key, or the listed items."""
    name = src.get("name") or src.get("secretName") or ""
    obj = fetch("configmaps" if kind == "configMap" else "secrets", name)
    what = "configmap" if kind == "configMap" else "secret"
    if obj is None:
        if src.get("optional"):
            return {}
        raise ConfigError(f'{what} "{name}" not found')
    data: dict[str, bytes] = {}
    if kind == "configMap":
        data.update({k: v.encode() for k, v in (obj.get("data") or {}).items()})
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    else:
        data.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
    items = src.get("items")
    if not items:
        return {_safe(k): (v, mode) for k, v in data.items()}
    out = {}
    for it in items:
        if it["key"] not in data:
            if src.get("optional"):
                continue
            raise ConfigError(f"configmap references non-existent {what} key: {it['key']}")
        out[_safe(it["path"])] = (data[it["key"]], int(it.get("mode", mode)))
    return out


def _downward_files(
    pod: dict[str, Any], items: list[dict[str, Any]], pod_ip: str, mode: int
) -> dict[str, tuple[bytes, int]]:
    out = {}
    containers = {c["name"]: c for c in pod["spec"].get("containers") or []}
    for it in items:
        if it.get("fieldRef"):
            value = field_value(pod, it["fieldRef"]["fieldPath"], pod_ip)
        else:
            ref = it.get("resourceFieldRef") or {}
            value = resource_value(containers.get(ref.get("containerName", "")), ref)
        out[_safe(it["path"])] = (value.encode(), int(it.get("mode", mode)))
    return out


def volume_files(
    vol: dict[str, Any], pod: dict[str, Any], pod_ip: str, fetch: Fetch, token: Token
) -> dict[str, tuple[bytes, int]] | None:
    """The files (relative path -> (content, mode)) of a volume the kubelet writes;
    None for a volume that is a directory (emptyDir and the like)."""
    if "configMap" in vol or "secret" in vol:
        kind = "configMap" if "configMap" in vol else "secret"
        src = vol[kind]
        return _object_files(kind, src, fetch, int(src.get("defaultMode", DEFAULT_MODE)))
    if "downwardAPI" in vol:
        src = vol["downwardAPI"]
        mode = int(src.get("defaultMode", DEFAULT_MODE))
        return _downward_files(pod, src.get("items") or [], pod_ip, mode)
    if "projected" in vol:
        mode = int(vol["projected"].get("defaultMode", DEFAULT_MODE))
        out: dict[str, tuple[bytes, int]] = {}
        for s in vol["projected"].get("sources") or []:
            if "configMap" in s:
                out.update(_object_files("configMap", s["configMap"], fetch, mode))
            elif "secret" in s:
                out.update(_object_files("secret", s["secret"], fetch, mode))
            elif "downwardAPI" in s:
                out.update(_downward_files(pod, s["downwardAPI"].get("items") or [], pod_ip, mode))
            elif "serviceAccountToken" in s:
                t = s["serviceAccountToken"]
                got = token(t.get("audience"), int(t.get("expirationSeconds", 3600)))
                if got is None:
                    raise ConfigError("the service account token was refused")
                out[_safe(t["path"])] = (got.encode(), 0o600 if mode == DEFAULT_MODE else mode)
        return out
    return None


def volume_dir(vol: dict[str, Any], pod_dir: Path, claims_dir: Path) -> Path | str:
    """Where a volume's files live on this machine: the pod's own directory, a claim's
    directory shared by every pod that mounts the claim (any access mode), or a hostPath."""
    if "hostPath" in vol:
        return str(vol["hostPath"]["path"])
    if "persistentVolumeClaim" in vol:
        return claims_dir / str(vol["persistentVolumeClaim"]["claimName"])
    return pod_dir / "volumes" / str(vol["name"])


def plan_mounts(
    container: dict[str, Any],
    volumes: dict[str, dict[str, Any]],
    sources: dict[str, Path | str],
    env: dict[str, str],
) -> list[Mount]:
    """The container's bind mounts, parents before children."""
    out = []
    for m in container.get("volumeMounts") or []:
        vol = volumes.get(m["name"])
        if vol is None:
            raise ConfigError(f"the volume mount {m['name']!r} names no volume of the pod")
        sub = m.get("subPath") or expand(m.get("subPathExpr") or "", env)
        src = str(sources[m["name"]])
        if sub:
            src = posixpath.join(src, _safe(sub))
        ro = bool(m.get("readOnly")) or any(k in vol for k in ATOMIC)
        ro = ro or bool((vol.get("persistentVolumeClaim") or {}).get("readOnly"))
        out.append(Mount(src, posixpath.normpath(m["mountPath"]), ro))
    return sorted(out, key=lambda x: x.target.count("/"))


def materialize(where: Path, files: dict[str, tuple[bytes, int]] | None) -> None:
    """Write a volume's files (or make its directory) under `where`."""
    where.mkdir(parents=True, exist_ok=True)
    for rel, (data, mode) in (files or {}).items():
        p = where / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        p.chmod(mode & 0o777)
