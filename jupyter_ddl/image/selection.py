"""Which base image and which target repository a job's image build uses.

Base: the job's own ``image`` if set; else, inside a Kubeflow notebook pod, the
notebook's own image (the pod read through the Kubernetes API, its name from
HOSTNAME), so the job sees the packages the notebook has; else the per-framework
default from the config. Target: ``<config.registry>/ddl-<notebook slug>``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ..config import Config
from ..errors import RegistryError
from ..models import CodeBundle, JobSpec
from ..strategies import get_strategy

log = logging.getLogger(__name__)

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def notebook_slug(notebook: str | None) -> str:
    """``work/Train Model.ipynb`` → ``train-model`` (a valid repository component)."""
    stem = Path(notebook).name.removesuffix(".ipynb") if notebook else ""
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:40].strip("-")
    return slug or "notebook"


def target_repository(config: Config, notebook: str | None) -> str:
    """Where the job image goes; raises RegistryError when no registry is configured."""
    if not config.registry:
        raise RegistryError(
            "no image registry is configured, so the code cannot travel as an image",
            hint="run `%ddl config registry=<host>/<namespace>`, or leave it unset to ship a ConfigMap",
        )
    return f"{config.registry.rstrip('/')}/ddl-{notebook_slug(notebook)}"


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
    except Exception as e:  # noqa: BLE001 - any failure here only means "use the default"
        log.info(
            "cannot read this notebook's pod %s (%s); using the default base", pod, type(e).__name__
        )
        return None
    containers = (found.spec.containers if found.spec else None) or []
    # Kubeflow names the notebook's container after the notebook (pod name minus "-0")
    name = pod.rsplit("-", 1)[0] if pod.rsplit("-", 1)[-1].isdigit() else pod
    chosen = next((c for c in containers if c.name == name), containers[0] if containers else None)
    return chosen.image if chosen is not None else None


def choose_base(
    spec: JobSpec, config: Config, env: Mapping[str, str] | None = None, sa_dir: Path = SA_DIR
) -> str:
    """The base image for ``spec``; raises RegistryError when none can be chosen."""
    if spec.image:
        return spec.image
    own = notebook_pod_image(env, sa_dir)
    if own:
        return own
    framework = get_strategy(spec.strategy).framework
    base = config.base_images.get(framework)
    if not base:
        raise RegistryError(
            f"no base image for {framework} jobs",
            hint=f"set --image, or `%ddl config base_images={framework}=<image>`",
        )
    return base


def notebook_of(spec: JobSpec, bundle: CodeBundle) -> str | None:
    return spec.notebook or bundle.source_notebook
