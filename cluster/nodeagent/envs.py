"""A container's environment as the kubelet builds it: literal values, the downward API,
ConfigMap and Secret keys (env valueFrom and envFrom), and `$(VAR)` references expanded
in env values, command and args. Pure: the objects are looked up through `fetch`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

# fetch(kind, name) -> the API object (None: it does not exist); kind is "configmaps"
# or "secrets"
Fetch = Callable[[str, str], "dict[str, Any] | None"]

# what envFrom may import: a C identifier-like name (the kubelet skips the others)
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class ConfigError(Exception):
    """The container's configuration refers to what is not there
    (the kubelet's CreateContainerConfigError)."""


def expand(text: str, lookup: Mapping[str, str]) -> str:
    """`$(NAME)` becomes NAME's value when NAME is defined, else stays as written;
    `$$` is one literal `$`; an unterminated `$(` and any other `$x` stay as written."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2 : close]
            out.append(lookup.get(name, f"$({name})"))
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def field_value(pod: dict[str, Any], path: str, pod_ip: str, host_ip: str = "127.0.0.1") -> str:
    """The downward API's fieldRef values the kubelet resolves."""
    meta = pod["metadata"]
    simple = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta["namespace"],
        "metadata.uid": meta.get("uid", ""),
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
        "status.hostIP": host_ip,
        "status.hostIPs": host_ip,
        "spec.nodeName": pod["spec"].get("nodeName", ""),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
    }
    if path in simple:
        return str(simple[path])
    for prefix, key in (("metadata.labels['", "labels"), ("metadata.annotations['", "annotations")):
        if path.startswith(prefix) and path.endswith("']"):
            return str((meta.get(key) or {}).get(path[len(prefix) : -2], ""))
    if path in ("metadata.labels", "metadata.annotations"):
        # the volume form: one `key="value"` line per entry, sorted
        items = sorted((meta.get(path.split(".")[1]) or {}).items())
        return "\n".join(f'{k}="{v}"' for k, v in items)
    return ""


def resource_value(container: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """resourceFieldRef: the container's limit or request, the node's capacity when unset
    (cpu rounded up to whole cores by the default divisor, memory in bytes)."""
    what = ref.get("resource", "")
    section, _, name = what.partition(".")
    res = ((container or {}).get("resources") or {}).get(section) or {}
    raw = res.get(name) or {"cpu": "16", "memory": "64Gi", "ephemeral-storage": "100Gi"}.get(
        name, "0"
    )
    value = quantity(str(raw))
    divisor = quantity(str(ref.get("divisor") or "1"))
    if divisor <= 0:
        divisor = 1.0
    result = value / divisor
    whole = int(result)
    return str(whole if whole == result else whole + 1)


_SUFFIX = {
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


def quantity(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", text.strip())
    if not m or m.group(2) not in ("", *_SUFFIX):
        return 0.0
    return float(m.group(1)) * _SUFFIX.get(m.group(2), 1.0)


def text_data(kind: str, obj: dict[str, Any] | None) -> dict[str, str] | None:
    """A ConfigMap's `data`, or a Secret's `data` decoded (as env sees them)."""
    if obj is None:
        return None
    if kind == "secrets":
        return {
            k: base64.b64decode(v).decode(errors="replace")
            for k, v in (obj.get("data") or {}).items()
        }
    return dict(obj.get("data") or {})


def _key(fetch: Fetch, kind: str, ref: dict[str, Any]) -> str | None:
    data = text_data(kind, fetch(kind, ref.get("name", "")))
    optional = bool(ref.get("optional"))
    what = "configmap" if kind == "configmaps" else "secret"
    if data is None:
        if optional:
            return None
        raise ConfigError(f'{what} "{ref.get("name", "")}" not found')
    if ref.get("key") not in data:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {ref.get('key')} in {what} {ref.get('name')}")
    return data[ref["key"]]


def environment(
    pod: dict[str, Any], container: dict[str, Any], pod_ip: str, fetch: Fetch
) -> dict[str, str]:
    """The variables the container defines, in the kubelet's order: envFrom first, then
    env, each env value expanded against the variables defined before it (never the
    image's or the machine's: `$(PATH)` stays as written unless the pod defines PATH)."""
    defined: dict[str, str] = {}
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            ref = src.get(key)
            if ref is None:
                continue
            data = text_data(kind, fetch(kind, ref.get("name", "")))
            if data is None:
                if ref.get("optional"):
                    continue
                what = "configmap" if kind == "configmaps" else "secret"
                raise ConfigError(f'{what} "{ref.get("name", "")}" not found')
            for k, v in data.items():
                if _ENV_NAME.match(prefix + k):
                    defined[prefix + k] = v
    for e in container.get("env") or []:
        name = e["name"]
        if "valueFrom" not in e:
            defined[name] = expand(e.get("value", ""), defined)
            continue
        vf = e["valueFrom"]
        value: str | None = ""
        if vf.get("fieldRef"):
            value = field_value(pod, vf["fieldRef"]["fieldPath"], pod_ip)
        elif vf.get("resourceFieldRef"):
            value = resource_value(container, vf["resourceFieldRef"])
        elif vf.get("configMapKeyRef"):
            value = _key(fetch, "configmaps", vf["configMapKeyRef"])
        elif vf.get("secretKeyRef"):
            value = _key(fetch, "secrets", vf["secretKeyRef"])
        if value is not None:
            defined[name] = value
    return defined


def command_line(container: dict[str, Any], env: Mapping[str, str]) -> list[str]:
    """command + args with `$(VAR)` expanded against the variables the container defines."""
    argv = list(container.get("command") or []) + list(container.get("args") or [])
    return [expand(a, env) for a in argv]
