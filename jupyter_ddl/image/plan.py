"""Which image a job runs: one rule for ``--build-only``, the submit and the dry run.

Base (the first that is set): the job's ``image``; else the notebook pod's own image
when the notebook runs in a Kubernetes pod (so the job sees the notebook's packages);
else ``config.base_images[framework]``. With a registry configured the code is
appended to the base as a layer and pushed to ``<registry>/ddl-<notebook slug>``
under tag ``code-<12 hex of the code>-<12 hex of the base digest, platform and
notebook>``: the same cell on the same base always gives the same reference, so a
second push of it uploads nothing. Without a registry the base image runs the code
from a ConfigMap.

Pure: the notebook pod's image is passed in by the caller, which read it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_ddl.config import Config
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import CodeBundle, JobSpec

#: bump when the layer or config layout changes, so old tags are not reused
FORMAT_VERSION = "1"
DEFAULT_PLATFORM = "linux/amd64"
#: what the dry run shows for the part of the tag only the base's digest decides
PENDING = "<base digest>"


@dataclass(frozen=True)
class ImagePlan:
    base: str
    repository: str | None  # None: no registry, the base runs the code from a ConfigMap
    code_tag: str  # ``code-<12 hex of the code>``, the start of the pushed tag

    @property
    def in_image(self) -> bool:
        return self.repository is not None

    @property
    def reference(self) -> str:
        """What the job runs, as far as it is known before the push."""
        if self.repository is None:
            return self.base
        return f"{self.repository}:{self.code_tag}-{PENDING}"


def plan_image(
    spec: JobSpec, bundle: CodeBundle | None, config: Config, notebook_image: str | None = None
) -> ImagePlan:
    """The image plan of ``spec``; raises RegistryError when no base can be chosen."""
    base = spec.image or notebook_image or _configured_base(spec, config)
    short = bundle.short_digest if bundle is not None else "nocode"
    repository = None
    if config.registry:
        notebook = spec.notebook or (bundle.source_notebook if bundle else None)
        repository = f"{config.registry.rstrip('/')}/ddl-{notebook_slug(notebook)}"
    return ImagePlan(base, repository, f"code-{short}")


def image_tag(bundle: CodeBundle, base_name: str, base_digest: str, platform: str) -> str:
    """The pushed tag: the plan's ``code_tag`` and 12 hex of everything else that
    decides the image's bytes. Same inputs, same tag."""
    h = hashlib.sha256()
    parts = (FORMAT_VERSION, base_name, base_digest, platform, bundle.digest)
    for part in (*parts, bundle.source_notebook or ""):
        h.update(part.encode() + b"\n")
    return f"code-{bundle.short_digest}-{h.hexdigest()[:12]}"


def notebook_slug(notebook: str | None) -> str:
    """``work/Train Model.ipynb`` → ``train-model`` (a valid repository component)."""
    stem = Path(notebook).name.removesuffix(".ipynb") if notebook else ""
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")[:40].strip("-")
    return slug or "notebook"


def notebook_container_image(pod: dict[str, Any] | None) -> str | None:
    """The image of the notebook's container in its pod (as the API serialises it).
    Kubeflow names that container after the notebook: the pod name less ``-<n>``."""
    if not pod:
        return None
    name = str((pod.get("metadata") or {}).get("name") or "")
    stem, _, ordinal = name.rpartition("-")
    name = stem if ordinal.isdigit() and stem else name
    containers = (pod.get("spec") or {}).get("containers") or []
    chosen = next((c for c in containers if c.get("name") == name), None)
    chosen = chosen or (containers[0] if containers else None)
    return chosen.get("image") if chosen else None


def _configured_base(spec: JobSpec, config: Config) -> str:
    framework = spec.shape.strategy.framework
    base = config.base_images.get(framework)
    if not base:
        raise RegistryError(
            tr("no base image for {framework} jobs", framework=framework),
            hint=tr(
                "set --image, or `%ddl config base_images={framework}=<image>`",
                framework=framework,
            ),
        )
    return base
