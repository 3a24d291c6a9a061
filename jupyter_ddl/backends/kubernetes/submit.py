"""Submitting one job: pre-flight, ship the code, create the objects, own them.

Everything happens in the job's namespace (``--namespace`` may name another than the
connection's). Order matters for "nothing lost": every check runs before the first
write; the ConfigMap, the Secret and the PodGroup are created before the job (its
pods mount the first two, and a gang scheduler holds pods whose group is absent) and
removed again if the job is refused; once the job exists they get an ownerReference
to it, so deleting the job deletes them. Every create is ``fieldValidation=Strict``.

A TrainJob is written for the Trainer release the cluster runs and laid out after the
runtime it names, both read from the cluster first (``runtimes``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from jupyter_ddl.backends.kubernetes import notebook, preflight, runtimes, shipping
from jupyter_ddl.backends.kubernetes.auxiliary import cleanup, create_aux, own
from jupyter_ddl.backends.kubernetes.checkcache import CheckCache, parallel
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.backends.kubernetes.objects import CustomObjects
from jupyter_ddl.backends.kubernetes.status import ANNOTATION_IMAGE, ANNOTATION_WARNINGS
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import TRAINJOB, Kind, TrainJobKind
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION, TRAINER_RUNTIME_OPTION
from jupyter_ddl.core.trainer import layout_of
from jupyter_ddl.errors import DDLError, JobConflict, ValidationError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.builder import build_and_push
from jupyter_ddl.image.plan import ImagePlan, notebook_container_image, plan_image
from jupyter_ddl.manifests import (
    ANNOTATION_SPEC,
    CODE_DIR,
    build_manifests,
    common,
    podgroup,
    trainingruntime,
)
from jupyter_ddl.models import CodeBundle, JobSpec
from jupyter_ddl.validation import validate
from jupyter_ddl.validation.images import image_problems

log = logging.getLogger(__name__)


@dataclass
class Submitted:
    job: dict[str, Any]
    kind: Kind
    warnings: list[str] = field(default_factory=list)
    image: str = ""
    pushed: bool | None = None  # None: no push, the code travels in a ConfigMap


def _image(cfg: Config, plan: ImagePlan, bundle: CodeBundle) -> tuple[str, bool | None]:
    """(image, pushed now). With a registry the bundle is appended to the planned base as
    a layer (``pushed`` False: it was there already); without one the base runs the
    code from a ConfigMap (``pushed`` None)."""
    if plan.repository is None:
        return plan.base, None

    built = build_and_push(bundle, base=plan.base, target_repo=plan.repository, config=cfg)
    return built.pull_ref, built.pushed


def notebook_pod(conn: Connection) -> dict[str, Any] | None:
    """The notebook's own pod, when in a Kubeflow notebook and the API lets us read it:
    the one read of it (submit, and the base image of a dry run or build)."""
    from kubernetes.client import ApiException

    if not conn.pod_name:
        return None
    try:
        pod: dict[str, Any] = conn.api.sanitize_for_serialization(
            conn.client("CoreV1Api").read_namespaced_pod(conn.pod_name, conn.namespace)
        )
    except ApiException:
        return None
    return pod


def _pod_and_defaults(conn: Connection) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The notebook's pod and, when there is one, the PodDefaults that may apply."""
    pod = notebook_pod(conn)
    return pod, (_poddefaults(conn) if pod is not None else [])


def _poddefaults(conn: Connection) -> list[dict[str, Any]]:
    """The namespace's PodDefaults (none where the CRD is absent)."""
    from kubernetes.client import ApiException

    try:
        pds = conn.client("CustomObjectsApi").list_namespaced_custom_object(
            "kubeflow.org", "v1alpha1", conn.namespace, "poddefaults"
        )
    except ApiException:
        return []  # PodDefault CRD absent: nothing to copy
    return pds.get("items") or []


def _gpu_asks(spec: JobSpec) -> dict[str, tuple[int, int]]:
    shape = spec.shape
    return {role: (n, shape.resources[role].gpu) for role, n in shape.counts.items()}


def _with_options(spec: JobSpec, **options: Any) -> JobSpec:
    return dataclasses.replace(spec, backend_options={**spec.backend_options, **options})


def _for_trainer(
    conn: Connection, cfg: Config, spec: JobSpec, checks: CheckCache | None = None
) -> tuple[JobSpec, runtimes.Found | None, dict[str, Any] | None]:
    """A TrainJob's spec with the cluster's Trainer release and its runtime's layout,
    and the runtime as read (None: unreadable, or not a TrainJob)."""
    if spec.shape.runtime is None:
        return spec, None, None
    ask = partial(runtimes.find_release, conn, cfg)
    found: runtimes.Found = ask() if checks is None else checks.release(ask)
    spec = _with_options(spec, **{TRAINER_RELEASE_OPTION: found.release})
    kind = spec.backend_options.get("runtime_kind", "ClusterTrainingRuntime")
    runtime = runtimes.read_runtime_object(conn, str(spec.shape.trainjob_runtime), kind)
    if runtime is not None:
        layout = layout_of(runtime)
        spec = _with_options(spec, **{TRAINER_RUNTIME_OPTION: layout.to_dict()})
    validate(spec)  # what the cluster runs may refuse what the spec asks (a deadline on v2.1)
    return spec, found, runtime


def _own_runtime(conn: Connection, spec: JobSpec, runtime: dict[str, Any] | None,
                 labels: dict[str, str], warnings: list[str]) -> tuple[JobSpec, list[dict[str, Any]]]:  # fmt: skip
    """The TrainJob's own TrainingRuntime when it asks for a backoff limit or restart
    policy (operator-contract.md §11.8), after checking that it can be made, or on
    Trainer v2.0 where it can (§11.10: a warning where it cannot); none else."""
    if trainingruntime.wants_pod_metadata(spec) and not trainingruntime.asks_runtime_settings(spec):
        why = _no_own_runtime(conn, spec, runtime)
        if why is not None or runtime is None:  # (a missing runtime always has a why)
            warnings.append(
                tr(
                    "Trainer v2.0 carries pod labels and annotations only in a runtime of the "
                    "job's own, and {why}: its pods get no Istio opt-out (in a namespace with "
                    "Istio injection the job would never end) and no PodDefault labels",
                    why=why,
                )
            )
            return spec, []
        spec = _with_options(spec, **{trainingruntime.OWN_RUNTIME_OPTION: True})
        return spec, [trainingruntime.build(spec, runtime, labels)]
    if not trainingruntime.needs_own_runtime(spec):
        return spec, []
    drop = tr("or drop --backoff-limit/--restart-policy (the runtime's Jobs then allow 6 restarts)")
    name = spec.shape.trainjob_runtime
    if runtime is None:
        raise ValidationError(
            tr(
                "backoff_limit: a TrainJob takes it through a copy of its runtime, and runtime "
                "{name!r} cannot be read here; ask an admin for get on trainer.kubeflow.org "
                "runtimes, {drop}",
                name=name,
                drop=drop,
            )
        )
    missing = preflight.refused(conn, [("create", TRAINJOB.group, trainingruntime.PLURAL, "")])
    if missing:
        raise ValidationError(
            tr(
                "backoff_limit: a TrainJob takes it through a TrainingRuntime of its own, which "
                "you may not create in namespace {namespace} (Kubeflow's editor role may "
                "only read them); ask an admin for create on trainingruntimes, {drop}",
                namespace=conn.namespace,
                drop=drop,
            )
        )
    return spec, [trainingruntime.build(spec, runtime, labels)]


def _no_own_runtime(conn: Connection, spec: JobSpec, runtime: dict[str, Any] | None) -> str | None:
    """Why Trainer v2.0's TrainJob cannot get a runtime of its own here; None: it can."""
    if runtime is None:
        # a profile's RoleBinding cannot grant a cluster-scoped read, and v2.0 ships no
        # ClusterRoleBinding for its runtimes (§11.10): the usual case on v2.0
        kind = spec.backend_options.get("runtime_kind", "ClusterTrainingRuntime")
        cluster = kind != "TrainingRuntime"
        plural = runtimes.RUNTIME_PLURALS.get(kind, kind)
        if cluster:
            return tr(
                "{kind} {runtime!r} cannot be read here to copy it (ask an admin for get on "
                "{plural}: Trainer v2.0 grants it to no notebook user)",
                kind=kind,
                runtime=spec.shape.trainjob_runtime,
                plural=plural,
            )
        return tr(
            "{kind} {runtime!r} cannot be read here to copy it (ask an admin for get on {plural})",
            kind=kind,
            runtime=spec.shape.trainjob_runtime,
            plural=plural,
        )
    if preflight.refused(conn, [("create", TRAINJOB.group, trainingruntime.PLURAL, "")]):
        return tr(
            "you may not create a TrainingRuntime here (ask an admin for create on trainingruntimes)"
        )
    return None


def _absent(conn: Connection, kind: Kind, name: str) -> None:
    if CustomObjects(conn, kind).get(name) is not None:
        raise JobConflict(
            tr(
                "submitting {kind}: a job named {name!r} exists already in namespace {namespace}",
                kind=kind,
                name=name,
                namespace=conn.namespace,
            ),
            hint=tr("choose another name, or `%ddl delete` the old job"),
        )


def submit(
    conn: Connection,
    cfg: Config,
    spec: JobSpec,
    bundle: CodeBundle,
    environ: Mapping[str, str] | None = None,
    *,
    checks: CheckCache | None = None,
) -> Submitted:
    """Create the job; raises the errors of ``Backend.submit``. ``checks``: what an
    earlier submit learnt, and a pool to run the checks side by side (``checkcache``)."""
    home = conn  # where the notebook runs
    spec = dataclasses.replace(spec, namespace=spec.namespace or conn.namespace)
    spec = podgroup.made_by(spec, cfg.gang_podgroup)
    conn = conn.at(spec.namespace)

    # -- checks: nothing is written before all of them pass; independent ones run side
    # by side, and the error is the one they would raise first run in this order
    kind = spec.shape.job_kind  # a TrainJob's group, resource and version: any release's
    group = [podgroup.build(spec)] if podgroup.needs_podgroup(spec) else []
    pool = checks.pool if checks is not None else None
    calls: list[Callable[[], Any]] = [
        partial(_for_trainer, conn, cfg, spec, checks),
        partial(preflight.check_crd, conn, kind, checks),
        partial(preflight.check_access, conn, kind, [c for g in group for c in preflight.podgroup_checks(g)], checks),
        partial(_absent, conn, kind, spec.name),
        partial(_pod_and_defaults, home),
    ]  # fmt: skip
    answers = parallel(pool, calls)
    spec, found, runtime = answers[0]
    pod, poddefaults = answers[4]
    kind = spec.shape.job_kind
    bad_image = image_problems(spec, notebook_container_image(pod), cfg.base_images.get("mpi"))
    if bad_image:
        raise ValidationError(bad_image)
    spec = notebook.with_notebook_volumes(spec, pod)
    refused, warnings = preflight.rwo_problems(conn, spec, pod)
    if refused:
        raise ValidationError(refused)
    labels = common.our_labels(spec, bundle.digest)
    secret = shipping.secret(spec, environ if environ is not None else os.environ, labels)
    warnings += preflight.gpu_warnings(conn, _gpu_asks(spec))
    spec, own_runtime = _own_runtime(conn, spec, runtime, labels, warnings)
    if spec.image and cfg.registry:
        preflight.check_image(cfg, spec.image)
    plan = plan_image(spec, bundle, cfg, notebook_container_image(pod))
    image, pushed = _image(cfg, plan, bundle)
    cm = None
    if common.needs_code_configmap(spec, plan.in_image):
        cm = shipping.configmap(bundle, spec.name, labels)

    def render(s: JobSpec) -> list[dict[str, Any]]:
        objs = build_manifests(
            s,
            image=image,
            command=["python", f"{CODE_DIR}/{bundle.entrypoint}"],
            code_digest=bundle.digest,
            code_configmap=cm["metadata"]["name"] if cm else None,
            code_paths=sorted(bundle.files) if cm else None,
        )
        notes = objs[0]["metadata"].setdefault("annotations", {})
        notes[ANNOTATION_SPEC] = json.dumps(s.to_dict(), sort_keys=True)
        if warnings:
            notes[ANNOTATION_WARNINGS] = json.dumps(warnings)
        notes[ANNOTATION_IMAGE] = json.dumps({"reference": image, "pushed": pushed})
        if pod is not None:
            notebook.add_template_labels(objs[0], notebook.poddefault_labels(pod, poddefaults))
        return objs

    # -- writes ----------------------------------------------------------------------
    aux = [o for o in (cm, secret) if o] + own_runtime + render(spec)[1:]
    created: list[dict[str, Any]] = []

    def for_release(s: JobSpec) -> JobSpec:
        """An older release tried after a refusal may need what the assumed one did
        not: Trainer v2.0 carries pod metadata only in a runtime of the job's own."""
        if trainingruntime.needs_own_runtime(s):
            return s
        s, objs = _own_runtime(conn, s, runtime, labels, warnings)
        for obj in objs:
            create_aux(conn, obj)
            created.append(obj)
        return s

    try:
        created += _create_all(conn, aux, pool)
        made, spec = _create_job(conn, spec, found, render, for_release)
    except DDLError as e:
        cleanup(conn, created)
        if checks is not None:
            _forget(checks, conn.namespace, e)
        raise
    owner = shipping.owner_reference(made)
    parallel(pool, [partial(own, conn, obj, owner, spec.name) for obj in created])
    return Submitted(made, spec.shape.job_kind, warnings, image, pushed)


def _create_all(conn: Connection, objs: list[dict[str, Any]], pool: Any) -> list[dict[str, Any]]:
    """Create the job's ConfigMap, Secret and PodGroup side by side (none depends on
    another); the first refusal is raised once those created are removed again."""
    if pool is None or len(objs) < 2:
        created = []
        try:
            for obj in objs:
                create_aux(conn, obj)
                created.append(obj)
        except DDLError:
            cleanup(conn, created)
            raise
        return created
    futures = [pool.submit(create_aux, conn, obj) for obj in objs]
    errors = [f.exception() for f in futures]
    created = [obj for obj, e in zip(objs, errors, strict=True) if e is None]
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        cleanup(conn, created)
        raise first
    return created


def _forget(checks: CheckCache, namespace: str, error: DDLError) -> None:
    """A write refused against what the kept checks said: they are stale. A 403 (a Role
    taken away since a review was kept) drops the namespace's reviews, a 404 (a CRD
    gone) discovery and the Trainer release; the error itself goes to the user as is."""
    status = getattr(error.__cause__, "status", None)
    if status == 403:
        checks.forget_access(namespace)
    elif status == 404:
        checks.forget_cluster()


def _create_job(
    conn: Connection,
    spec: JobSpec,
    found: runtimes.Found | None,
    render: Callable[[JobSpec], list[dict[str, Any]]],
    for_release: Callable[[JobSpec], JobSpec] = lambda s: s,
) -> tuple[dict[str, Any], JobSpec]:
    """Create the job object. A TrainJob whose release was only assumed is tried again
    for an older release while the cluster refuses the tried release's override field
    (a refused create changes nothing); ``for_release`` makes what that release needs
    first."""
    older = found.fallbacks() if found else []
    about = found.describe() if found else None
    while True:
        kind = spec.shape.job_kind
        try:
            return CustomObjects(conn, kind, written_for=about).create(render(spec)[0]), spec
        except ValidationError as e:
            refused = isinstance(
                kind, TrainJobKind
            ) and f"spec.{kind.release.override_field}" in str(e)
            if not (older and refused):
                raise
        release = older.pop(0)
        log.info("the cluster refused %s's fields: trying Trainer %s", about, release)
        spec = _with_options(spec, **{TRAINER_RELEASE_OPTION: release})
        about = f"Trainer {release}, tried after the cluster refused a newer release's field"
        validate(spec)  # an older release may lack what the spec asks (a deadline)
        spec = for_release(spec)
