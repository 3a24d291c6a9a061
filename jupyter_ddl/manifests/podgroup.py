"""PodGroups for gang scheduling (operator-contract.md §1.8, §3.5, §5).

Training operators create a PodGroup themselves only when started with a gang
scheduler flag, which the shipped deployments do not pass. So by default we create
it (``backend_options["gang_podgroup"] = "client"``), named after the job as the
operator would, and the pod templates point at it; with ``"operator"`` we leave it
to the operator and only write ``runPolicy.schedulingPolicy``.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Any

from jupyter_ddl.manifests import common
from jupyter_ddl.models import JobSpec

_SUFFIX: dict[str, int | Decimal] = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
    "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def made_by(spec: JobSpec, maker: str) -> JobSpec:
    """``spec`` with config key ``gang_podgroup`` (who makes its PodGroup) applied: a
    job's own ``backend_options["gang_podgroup"]`` wins; only a gang job takes it."""
    if spec.gang is None or maker == "client" or "gang_podgroup" in spec.backend_options:
        return spec
    return dataclasses.replace(
        spec, backend_options={**spec.backend_options, "gang_podgroup": maker}
    )


def needs_podgroup(spec: JobSpec) -> bool:
    return (
        spec.gang is not None
        and spec.shape.runtime is None  # a runtime's podGroupPolicy does it (§4.5)
        and spec.backend_options.get("gang_podgroup", "client") == "client"
    )


def quantity(text: str) -> Decimal:
    """A Kubernetes quantity as a number (``500m`` -> 0.5, ``2Gi`` -> 2147483648)."""
    m = re.match(r"^([0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$", str(text))
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    return Decimal(m.group(1)) * Decimal(_SUFFIX[m.group(2)])


def min_resources(spec: JobSpec) -> dict[str, str]:
    """Summed requests of every replica: what must be free before any pod starts."""
    total: dict[str, Decimal] = {}
    for role, n in spec.shape.counts.items():
        requests = common.resources(spec.shape.resources[role]).get("requests", {})
        for name, value in requests.items():
            total[name] = total.get(name, Decimal(0)) + quantity(str(value)) * n
    out = {}
    for name, value in sorted(total.items()):
        if name == "cpu" and value != value.to_integral_value():
            out[name] = f"{int(value * 1000)}m"
        else:
            out[name] = str(int(value))
    return out


def build(spec: JobSpec, code_digest: str | None = None) -> dict[str, Any]:
    g = spec.gang
    assert g is not None
    meta = {k: v for k, v in common.metadata(spec, code_digest).items() if k != "annotations"}
    members = common.gang_members(spec)
    body: dict[str, Any] = {"minMember": members}
    res = min_resources(spec)
    if res:
        body["minResources"] = res
    if g.scheduler == "volcano":
        api_version = "scheduling.volcano.sh/v1beta1"
        body["queue"] = g.queue or "default"
        if g.priority_class:
            body["priorityClassName"] = g.priority_class
    else:
        api_version = "scheduling.x-k8s.io/v1alpha1"
        if g.schedule_timeout_seconds is not None:
            body["scheduleTimeoutSeconds"] = g.schedule_timeout_seconds
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": meta, "spec": body}
