"""CPU and memory per pod from metrics.k8s.io, where the cluster serves it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.items import Usage

_SUFFIX = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
    "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4,
}  # fmt: skip


def quantity(text: str) -> float:
    """A Kubernetes quantity (``250m``, ``1.5Gi``, ``12345n``) as a float."""
    text = str(text).strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIX[suffix]
    return float(text)


def pod_usage(item: dict[str, Any]) -> dict[str, float]:
    """{"cpu": cores, "memory_bytes": bytes} summed over a PodMetrics' containers."""
    cpu = mem = 0.0
    for c in item.get("containers") or []:
        usage = c.get("usage") or {}
        cpu += quantity(usage.get("cpu", "0"))
        mem += quantity(usage.get("memory", "0"))
    return {"cpu": cpu, "memory_bytes": mem}


def poll_usage(
    conn: Connection,
    selector: str,
    every: float,
    put: Callable[[Usage], bool],
    halt: threading.Event,
) -> None:
    """Every ``every`` seconds put ``Usage(pod, values)``; stops for good when the
    metrics API is not served (404) or not allowed (403)."""
    from kubernetes.client import ApiException

    api = conn.client("CustomObjectsApi")
    while not halt.wait(every):
        try:
            listing = api.list_namespaced_custom_object(
                "metrics.k8s.io", "v1beta1", conn.namespace, "pods", label_selector=selector
            )
        except ApiException as e:
            if e.status in (403, 404):
                return
            continue
        except Exception:  # noqa: BLE001 - a metrics hiccup must not end the job stream
            continue
        for item in listing.get("items") or []:
            if not put(Usage(item["metadata"]["name"], pod_usage(item))):
                return
