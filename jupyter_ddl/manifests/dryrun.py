"""``%%distribute --dry-run``: the Kubeflow objects a job would create, as YAML.

Pure: no cluster, no registry. The header says which strategy and job kind, and how
the code would travel (a ConfigMap, or an image layer appended in the registry);
secret variables appear only as references to the job's Secret, never as values. A
TrainJob is written for the Trainer release of config key ``trainer_release`` (the
newest supported when unset), with the runtime as that release ships it.
"""

from __future__ import annotations

import dataclasses

import yaml

from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import TrainJobKind
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION, JobShape, is_trainjob
from jupyter_ddl.core.trainer import release_named
from jupyter_ddl.image.plan import ImagePlan, plan_image
from jupyter_ddl.manifests import (
    CODE_DIR,
    WORK_DIR,
    build_manifests,
    common,
    configmap_name,
    podgroup,
    secret_name,
)
from jupyter_ddl.models import CodeBundle, JobSpec


def render_yaml(
    spec: JobSpec,
    bundle: CodeBundle | None = None,
    *,
    config: Config | None = None,
    image: ImagePlan | None = None,
) -> str:
    """YAML documents for ``spec`` (job first, then a PodGroup if any), with a header.

    ``bundle`` gives the code digest and file list; ``config`` the registry and base
    images (defaults when omitted); ``image`` the plan a submit would follow (made from
    them when omitted: the caller knows the notebook pod's image). The spec should be
    valid (``validation.validate``).
    """
    config = config or Config()
    spec = podgroup.made_by(for_trainer_release(spec, config.trainer_release), config.gang_podgroup)
    plan = image or plan_image(spec, bundle, config)
    image_ref, shipping, configmap = _shipping(spec, plan, config)
    entry = bundle.entrypoint if bundle else "main.py"
    objects = build_manifests(
        spec,
        image=image_ref,
        command=["python", f"{CODE_DIR}/{entry}"],
        code_digest=bundle.digest if bundle else None,
        code_configmap=configmap,
        code_paths=sorted(bundle.files) if bundle and configmap else None,
    )
    docs = [yaml.safe_dump(o, sort_keys=False, default_flow_style=False) for o in objects]
    return _header(spec, shipping, bundle) + "---\n" + "---\n".join(docs)


def for_trainer_release(spec: JobSpec, release: str | None) -> JobSpec:
    """``spec`` written for Trainer ``release`` (a TrainJob; other specs as they are).
    Raises ValidationError for a release jupyter-ddl does not know."""
    if release is None or not is_trainjob(spec):
        return spec
    options = {**spec.backend_options, TRAINER_RELEASE_OPTION: release_named(release).name}
    return dataclasses.replace(spec, backend_options=options)


def _shipping(spec: JobSpec, plan: ImagePlan, config: Config) -> tuple[str, str, str | None]:
    """(image the manifests name, how the code travels, ConfigMap name or None)."""
    configmap = configmap_name(spec.name)
    mounted = f"ConfigMap {configmap}, mounted read-only at {CODE_DIR}"
    if plan.in_image:
        how = f"code appended as an image layer on {plan.base}, pushed to {plan.repository} (tag fixed at push)"
        if common.needs_code_configmap(spec, in_image=True):
            return (
                plan.reference,
                f"{how}; also in {mounted} for the runtime's other pods",
                configmap,
            )
        return plan.reference, how, None
    return plan.base, f"code in {mounted}", configmap


def _header(spec: JobSpec, shipping: str, bundle: CodeBundle | None) -> str:
    shape = spec.shape
    strategy = shape.strategy
    counts = ", ".join(f"{role} {n}" for role, n in shape.counts.items())
    lines = [
        f"jupyter-ddl dry run: job {spec.name}",
        f"strategy: {strategy.name} ({strategy.title}) -> {shape.kind}; replicas: {counts}; "
        f"world size {shape.world_size} ({_processes(shape)})",
        f"shipping: {shipping}; working directory {WORK_DIR} (an emptyDir)",
    ]
    if isinstance(shape.job_kind, TrainJobKind):
        lines.append(
            f"Trainer {shape.job_kind.release.name}: pods reached through "
            f"{shape.job_kind.release.override_field} (config trainer_release; newest supported when unset)"
        )
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
    if shape.mpi_host_ids:
        nodes = shape.num_nodes if shape.num_nodes is not None else len(shape.mpi_host_ids)
        return f"{nodes} MPI hosts × {shape.mpi_slots} slots"
    n = shape.nproc_per_node
    return f"{n} process{'es' if n > 1 else ''} per training replica"
