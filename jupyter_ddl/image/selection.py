"""The notebook pod's own image, read through the Kubernetes API (its name from
HOSTNAME), for the base-image rule of ``plan.plan_image``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from jupyter_ddl.backends.kubernetes.connection import SA_DIR
from jupyter_ddl.image.plan import notebook_container_image

log = logging.getLogger(__name__)


def notebook_pod_image(env: Mapping[str, str] | None = None, sa_dir: Path = SA_DIR) -> str | None:
    """The image of the notebook container of this pod, or None when this is not a
    Kubernetes pod, the client is not installed, or the pod cannot be read."""
    env = os.environ if env is None else env
    pod = env.get("HOSTNAME")
    if not pod or not env.get("KUBERNETES_SERVICE_HOST") or not (sa_dir / "namespace").exists():
        return None
    try:
        from kubernetes import client
        from kubernetes.config.incluster_config import InClusterConfigLoader
    except ImportError:
        return None
    try:
        cfg = client.Configuration()
        InClusterConfigLoader(
            token_filename=str(sa_dir / "token"), cert_filename=str(sa_dir / "ca.crt"), environ=env
        ).load_and_set(cfg)
        namespace = (sa_dir / "namespace").read_text().strip()
        with client.ApiClient(cfg) as api:
            found = client.CoreV1Api(api).read_namespaced_pod(pod, namespace, _request_timeout=10)
            return notebook_container_image(api.sanitize_for_serialization(found))
    except Exception as e:  # noqa: BLE001 - any failure here only means "use the default"
        log.info(
            "cannot read this notebook's pod %s (%s); using the default base", pod, type(e).__name__
        )
        return None
