"""Checks of resources, accelerators and framework options."""

from __future__ import annotations

from jupyter_ddl.core import names
from jupyter_ddl.core.shape import JobShape, is_trainjob, try_resolve
from jupyter_ddl.core.strategies import Strategy
from jupyter_ddl.i18n import tr
from jupyter_ddl.models import JobSpec


def resource_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out: list[str] = []
    roles = set(strategy.role_names) | ({"Node", "Launcher"} if is_trainjob(spec) else set())
    for role in spec.resources:
        if role not in roles:
            said = tr(
                "{strategy} has no {role} role; give resources for {roles} only",
                strategy=strategy.name, role=role, roles=", ".join(sorted(roles)),
            )  # fmt: skip
            out.append(f"resources.{role}: {said}")
    entries = [("default_resources", spec.default_resources, None)] + [
        (f"resources.{r}", res, strategy.rule(r)) for r, res in spec.resources.items()
    ]
    for field, res, rule in entries:
        for what, value in (("cpu", res.cpu), ("memory", res.memory)):
            if value is not None and not names.is_quantity(str(value)):
                said = tr(
                    "{value!r} is not a Kubernetes quantity; write e.g. {example}",
                    value=value, example=tr("2 or 500m") if what == "cpu" else tr("4Gi or 512Mi"),
                )  # fmt: skip
                out.append(f"{field}.{what}: {said}")
        for what, count in (("gpu", res.gpu), ("tpu", res.tpu)):
            if count < 0:
                said = tr("{count} is negative; give 0 or more", count=count)
                out.append(f"{field}.{what}: {said}")
        for what, rname in (("gpu_resource", res.gpu_resource), ("tpu_resource", res.tpu_resource)):
            if not names.is_resource_name(rname):
                said = tr(
                    "{name!r} is not an extended resource name; use a vendor-qualified name "
                    "such as nvidia.com/gpu",
                    name=rname,
                )
                out.append(f"{field}.{what}: {said}")
        if rule is not None and not rule.gpu and (res.gpu > 0 or res.tpu > 0):
            said = tr(
                "the {role} role of {strategy} cannot use accelerators; set its gpu/tpu to 0 "
                "(give them to the Worker role)",
                role=rule.role, strategy=strategy.name,
            )  # fmt: skip
            out.append(f"{field}.gpu: {said}")
    out += _accelerators(spec, strategy)
    return out


def _accelerators(spec: JobSpec, strategy: Strategy) -> list[str]:
    roles = [r.role for r in strategy.roles]
    tpus = sum(spec.resources_for(r).tpu for r in roles)
    if strategy.needs_tpu and tpus <= 0:
        said = tr(
            "{strategy} needs a TPU; set resources tpu (e.g. 8) and tpu_resource (default "
            "google.com/tpu) on the Worker",
            strategy=strategy.name,
        )
        return [f"resources.tpu: {said}"]
    if not strategy.needs_tpu and tpus > 0:
        said = tr(
            "{strategy} does not use TPUs; choose tf-tpu or set tpu to 0", strategy=strategy.name
        )
        return [f"resources.tpu: {said}"]
    return []


# -- framework options -----------------------------------------------------------
def torch_option_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = []
    torch = strategy.framework == "pytorch"
    if spec.nproc_per_node is not None:
        if not torch:
            said = tr(
                "only PyTorch strategies use it, not {strategy}; drop it", strategy=strategy.name
            )
            out.append(f"nproc_per_node: {said}")
        elif strategy.one_process:
            said = tr(
                "{strategy} drives every GPU from one process; drop nproc_per_node or choose "
                "torch-ddp for one process per GPU",
                strategy=strategy.name,
            )
            out.append(f"nproc_per_node: {said}")
        elif spec.nproc_per_node < 1:
            said = tr("{n} is below 1; give 1 or more", n=spec.nproc_per_node)
            out.append(f"nproc_per_node: {said}")
    if spec.dist_backend is not None:
        if not strategy.dist_backends:
            said = tr(
                "{strategy} has no distributed backend choice; drop dist_backend",
                strategy=strategy.name,
            )
            out.append(f"dist_backend: {said}")
        elif spec.dist_backend not in strategy.dist_backends:
            said = tr(
                "unknown backend {backend!r}; choose one of: {choices}",
                backend=spec.dist_backend, choices=", ".join(strategy.dist_backends),
            )  # fmt: skip
            out.append(f"dist_backend: {said}")
        elif spec.dist_backend == "nccl" and not _all_roles_have_gpus(spec, strategy):
            said = tr("nccl needs a GPU on every replica; add gpu resources or use gloo")
            out.append(f"dist_backend: {said}")
    if spec.slots_per_worker != 1 and strategy.framework != "mpi" and strategy.name != "deepspeed":
        said = tr(
            "only MPI strategies use it, not {strategy}; leave it at 1", strategy=strategy.name
        )
        out.append(f"slots_per_worker: {said}")
    elif spec.slots_per_worker < 1:
        said = tr("{n} is below 1; give 1 or more", n=spec.slots_per_worker)
        out.append(f"slots_per_worker: {said}")
    shape = try_resolve(spec)
    if shape is not None:
        out += _processes_fit_gpus(spec, shape)
    if shape is not None and shape.elastic_bounds is not None:
        out += _elastic(spec, shape.elastic_bounds)
    return out


def _all_roles_have_gpus(spec: JobSpec, strategy: Strategy) -> bool:
    return all(spec.resources_for(r.role).gpu > 0 for r in strategy.roles if r.gpu)


def _processes_fit_gpus(spec: JobSpec, shape: JobShape) -> list[str]:
    """Each NCCL process needs a GPU of its own: the runtime binds process k of a
    replica to that replica's k-th GPU (LOCAL_RANK)."""
    nproc = shape.nproc_per_node
    if shape.strategy.framework != "pytorch" or (spec.dist_backend or "nccl") != "nccl":
        return []
    short = next((r for r in shape.replicas if 0 < r.gpus < nproc), None)
    if short is None:
        return []
    said = tr(
        "{n} processes per replica but {replica} has {gpus} GPU(s), and NCCL needs one GPU per "
        "process; give --gpus {n}, lower --nproc-per-node, or use --dist-backend gloo",
        n=nproc, replica=short.rid, gpus=short.gpus,
    )  # fmt: skip
    return [f"nproc_per_node: {said}"]


def _elastic(spec: JobSpec, bounds: tuple[int, int]) -> list[str]:
    opts = spec.backend_options
    for key in ("elastic_min_replicas", "elastic_max_replicas"):
        v = opts.get(key)
        if v is not None and (not isinstance(v, int) or v < 1):
            said = tr("{value!r} must be a whole number ≥ 1; fix or drop it", value=v)
            return [f"backend_options.{key}: {said}"]
    lo, hi = bounds
    if lo > hi:
        said = tr("{low} exceeds elastic_max_replicas {high}; lower it", low=lo, high=hi)
        return [f"backend_options.elastic_min_replicas: {said}"]
    return []
