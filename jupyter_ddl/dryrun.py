"""``%%distribute --dry-run``: the Kubeflow objects a job would create, as YAML.

Pure: no cluster, no registry. The header says which strategy and job kind, and how
the code would travel (a ConfigMap, or an image layer appended in the registry);
secret variables appear only as references to the job's Secret, never as values.
"""

from __future__ import annotations

import yaml

from .config import Config
from .manifests import CODE_DIR, build_manifests, secret_name
from .models import CodeBundle, JobSpec
from .shape import JobShape
from .strategies import get_strategy

PENDING_TAG = "pending"  # the real tag needs the base image's digest (image/builder.py)


def render_yaml(
    spec: JobSpec, bundle: CodeBundle | None = None, *, config: Config | None = None
) -> str:
    """YAML documents for ``spec`` (job first, then a PodGroup if any), with a header.

    ``bundle`` gives the code digest and file list; ``config`` the registry and base
    images (defaults when omitted). The spec should be valid (``validation.validate``).
    """
    config = config or Config()
    image, shipping, configmap = _image_choice(spec, bundle, config)
    entry = bundle.entrypoint if bundle else "main.py"
    objects = build_manifests(
        spec,
        image=image,
        command=["python", f"{CODE_DIR}/{entry}"],
        code_digest=bundle.digest if bundle else None,
        code_configmap=configmap,
        code_paths=sorted(bundle.files) if bundle and configmap else None,
    )
    docs = [yaml.safe_dump(o, sort_keys=False, default_flow_style=False) for o in objects]
    return _header(spec, shipping, bundle) + "---\n" + "---\n".join(docs)


def _image_choice(
    spec: JobSpec, bundle: CodeBundle | None, config: Config
) -> tuple[str, str, str | None]:
    framework = get_strategy(spec.strategy).framework
    base = spec.image or config.base_images.get(framework, "python:3.11")
    if config.registry:
        short = bundle.short_digest if bundle else "nocode"
        image = f"{config.registry.rstrip('/')}/jupyter-ddl:code-{short}-{PENDING_TAG}"
        how = f"code appended as an image layer on {base}, pushed to {config.registry} (tag fixed at push)"
        return image, how, None
    configmap = f"{spec.name}-code"
    return base, f"code in ConfigMap {configmap}, mounted read-only at {CODE_DIR}", configmap


def _header(spec: JobSpec, shipping: str, bundle: CodeBundle | None) -> str:
    shape = spec.shape
    strategy = shape.strategy
    counts = ", ".join(f"{role} {n}" for role, n in shape.counts.items())
    lines = [
        f"jupyter-ddl dry run: job {spec.name}",
        f"strategy: {strategy.name} ({strategy.title}) -> {shape.kind}; replicas: {counts}; "
        f"world size {shape.world_size} ({_processes(shape)})",
        f"shipping: {shipping}",
    ]
    if bundle is not None:
        lines.append(f"code digest: {bundle.digest}")
    if spec.secret_env:
        names = ", ".join(spec.secret_env)
        lines.append(
            f"secret env: {names} from Secret {secret_name(spec.name)} (values never shown)"
        )
    return "".join(f"# {line}\n" for line in lines)


def _processes(shape: JobShape) -> str:
    """How the world size comes about: ranks per host, or processes per replica."""
    hosts = shape.mpi_hosts
    if hosts is not None:
        return f"{shape.count(hosts)} {hosts} × {shape.mpi_slots} MPI slots"
    n = shape.nproc_per_node
    return f"{n} process{'es' if n > 1 else ''} per training replica"
