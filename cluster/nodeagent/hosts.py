"""Name resolution as cluster DNS would answer it, without a DNS server: a per-pod hosts
file, bind-mounted over /etc/hosts in the pod's own mount namespace and rewritten in
place (the bind mount follows the inode) whenever the answers change.

What it names, for pods and Services the apiserver lists:
- the pod itself: `hostname` and, with a subdomain, `hostname.subdomain[.ns.svc[.cluster.local]]`;
- every Service: `svc.ns.svc`, `svc.ns.svc.cluster.local`, and `svc` in the pod's namespace;
  a headless Service names the IPs of the pods it selects, and each selected pod with
  `hostname` and `subdomain` equal to the Service's name as `hostname.svc.ns.svc[...]`
  (and `hostname.svc` in the same namespace);
- a Service with a cluster IP names the IP of the first pod it selects instead: no
  kube-proxy runs here, so the cluster IP would not route (and its `port` must equal its
  `targetPort` to be reached).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DOMAIN = "cluster.local"
HEADER = (
    "# written by the jupyter-ddl node agent: cluster DNS as a hosts file\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
)


def hostname(pod: dict[str, Any]) -> str:
    """The pod's hostname: spec.hostname, else its name (cut to 63 characters)."""
    return str(pod["spec"].get("hostname") or pod["metadata"]["name"])[:63].rstrip("-.")


def own_names(pod: dict[str, Any]) -> list[str]:
    host = hostname(pod)
    sub = pod["spec"].get("subdomain")
    if not sub:
        return [host]
    ns = pod["metadata"]["namespace"]
    base = f"{host}.{sub}.{ns}.svc"
    return [f"{base}.{DOMAIN}", base, f"{host}.{sub}", host]


def _selects(svc: dict[str, Any], pod: dict[str, Any]) -> bool:
    sel = (svc.get("spec") or {}).get("selector") or {}
    if not sel or pod["metadata"]["namespace"] != svc["metadata"]["namespace"]:
        return False
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in sel.items())


def _live(pod: dict[str, Any]) -> bool:
    """A pod that has an IP and has not ended (the endpoints controller's view, with
    not-ready pods kept: a replica resolves its peers before they are ready)."""
    st = pod.get("status") or {}
    return bool(st.get("podIP")) and st.get("phase") not in ("Succeeded", "Failed")


def _names(name: str, ns: str, same_ns: bool) -> list[str]:
    out = [f"{name}.{ns}.svc.{DOMAIN}", f"{name}.{ns}.svc"]
    return out + [name] if same_ns else out


def render(
    pod: dict[str, Any],
    pod_ip: str,
    pods: Iterable[dict[str, Any]],
    services: Iterable[dict[str, Any]],
) -> str:
    """The pod's hosts file (deterministic: the same inputs give the same text)."""
    ns = pod["metadata"]["namespace"]
    lines = [f"{pod_ip}\t{' '.join(own_names(pod))}"]
    live = sorted(
        (p for p in pods if _live(p) and p["metadata"].get("uid") != pod["metadata"].get("uid")),
        key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]),
    )
    rows: list[str] = []
    for svc in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
        name, sns = svc["metadata"]["name"], svc["metadata"]["namespace"]
        same = sns == ns
        # the pod being written counts as a backend of its own Services
        targets = [(pod_ip, pod)] if _selects(svc, pod) else []
        targets += [(p["status"]["podIP"], p) for p in live if _selects(svc, p)]
        if not targets:
            continue
        headless = (svc.get("spec") or {}).get("clusterIP") == "None"
        for ip, _ in targets if headless else targets[:1]:
            rows.append(f"{ip}\t{' '.join(_names(name, sns, same))}")
        if not headless:
            continue
        for ip, p in targets:
            host = p["spec"].get("hostname")
            if host and p["spec"].get("subdomain") == name and p is not pod:
                names = _names(f"{host}.{name}", sns, False)
                rows.append(f"{ip}\t{' '.join(names + ([f'{host}.{name}'] if same else []))}")
    return HEADER + "\n".join(lines + rows) + "\n"


def write_in_place(path: Path, text: str) -> bool:
    """Rewrite `path` keeping its inode (a bind mount of it sees the new text); False
    when it already holds `text`."""
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return True
