"""What a real cluster's admission chain does to a create, beyond the schema: mutating
webhooks (an Istio-like sidecar injector), ResourceQuota and validating policies
(Kyverno / Gatekeeper / PodSecurity / an operator's own webhook). Every create goes
through ``Policy.admit``, the HTTP ones and the ones the test operators make, so a pod
the operators create can be refused exactly like a user's.

Answers are shaped as the API server sends them: a webhook denial is 403 with
``admission webhook "<name>" denied the request: <message>`` (k8s.io/apiserver
``webhook/errors.ToStatusErr``: a denial without a code ≥ 400 becomes 403, and
controller-runtime's ``Denied`` carries 403); quota is 403 with ``exceeded quota: <name>,
requested: …, used: …, limited: …`` (the ResourceQuota admission plugin).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from . import errors as E
from .resources import Resource
from .store import Store

#: the Istio injector's switch on the pod (annotation or label), honoured when "false"
ISTIO_INJECT = "sidecar.istio.io/inject"
ISTIO_NS_LABEL = "istio-injection"
SIDECAR_STATUS = "sidecar.istio.io/status"


@dataclass
class Refusal:
    """A validating policy: refuses creates of ``plurals`` whose name contains ``match``.
    ``webhook`` names the admission webhook; without one the message stands alone
    (PodSecurity speaks as the API server itself)."""

    plurals: set[str]
    message: str
    webhook: str | None = None
    match: str = ""


@dataclass
class Policy:
    refusals: list[Refusal] = field(default_factory=list)
    #: a sidecar every pod gets regardless of annotations (a mesh whose injection is
    #: forced by a namespace or revision label); None: only the namespace label decides
    forced_sidecar: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(self, plurals: str | set[str], message: str, webhook: str | None = None,
               match: str = "") -> Refusal:  # fmt: skip
        r = Refusal(
            {plurals} if isinstance(plurals, str) else set(plurals), message, webhook, match
        )
        with self.lock:
            self.refusals.append(r)
        return r

    # -- the chain ---------------------------------------------------------------------
    def admit(self, store: Store, res: Resource, obj: dict[str, Any]) -> None:
        """Mutate ``obj`` in place (sidecars), then raise E.ApiError when refused."""
        md = obj.get("metadata") or {}
        ns, name = md.get("namespace", ""), md.get("name", "")
        if res.plural == "pods":
            self._inject(store, ns, obj)
        with self.lock:
            refusals = list(self.refusals)
        for r in refusals:
            if res.plural in r.plurals and r.match in name:
                what = f'{_gr(res)} "{name}" is forbidden: '
                if r.webhook:
                    text = f'admission webhook "{r.webhook}" denied the request: {r.message}'
                    raise E.ApiError(403, E.status(403, "Forbidden", text, _details(res, name)))
                raise E.ApiError(
                    403, E.status(403, "Forbidden", what + r.message, _details(res, name))
                )
        _quota(store, res, ns, name, obj)

    def _inject(self, store: Store, ns: str, pod: dict[str, Any]) -> None:
        md = pod.setdefault("metadata", {})
        space = store.get("core/v1/namespaces", "", ns) or {}
        labelled = ((space.get("metadata") or {}).get("labels") or {}).get(
            ISTIO_NS_LABEL
        ) == "enabled"
        off = "false" in (
            ((md.get("annotations") or {}).get(ISTIO_INJECT)),
            ((md.get("labels") or {}).get(ISTIO_INJECT)),
        )
        name = self.forced_sidecar or ("istio-proxy" if labelled and not off else None)
        containers = pod.setdefault("spec", {}).setdefault("containers", [])
        if name and not any(c.get("name") == name for c in containers):
            containers.append({"name": name, "image": "docker.io/istio/proxyv2:1.24.0",
                               "args": ["proxy", "sidecar"]})  # fmt: skip
            # the injector records what it added; the kubelet simulates those containers
            md.setdefault("annotations", {})[SIDECAR_STATUS] = json.dumps({"containers": [name]})


def _gr(res: Resource) -> str:
    return f"{res.plural}.{res.group}" if res.group else res.plural


def _details(res: Resource, name: str) -> dict[str, Any]:
    return {"name": name, "group": res.group, "kind": res.plural}


def _quota_key(res: Resource) -> list[str]:
    keys = [f"count/{_gr(res)}"]
    if res.group == "":
        keys.append(res.plural)  # pods, configmaps, secrets: also counted by bare name
    return keys


def _quota(store: Store, res: Resource, ns: str, name: str, obj: dict[str, Any]) -> None:
    quotas, _ = store.list("core/v1/resourcequotas", ns)
    for q in quotas:
        hard = (q.get("spec") or {}).get("hard") or {}
        for key in _quota_key(res):
            if key not in hard:
                continue
            items, _ = store.list(res.rid, ns)
            if res.plural == "pods":  # terminal pods no longer count against a quota
                items = [p for p in items
                         if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]  # fmt: skip
            used, limit = len(items), int(str(hard[key]))
            if used + 1 > limit:
                msg = (f'{_gr(res)} "{name}" is forbidden: exceeded quota: {q["metadata"]["name"]}, '
                       f"requested: {key}=1, used: {key}={used}, limited: {key}={limit}")  # fmt: skip
                raise E.ApiError(403, E.status(403, "Forbidden", msg, _details(res, name)))
