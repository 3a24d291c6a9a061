"""Checks before submit, each failing with one clear line: the job kind's CRD is
served (discovery; MPIJob v1 and v2beta1 share a name), the service account may create
it, its PodGroup, and read pods and their logs (SelfSubjectAccessReview), the image
exists (when a registry is configured), GPUs asked against allocatable capacity (a
warning only), and the notebook's ReadWriteOnce volumes (a job spread over nodes
cannot attach them).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from jupyter_ddl.backends.kubernetes.api_errors import crd_missing, from_api_exception
from jupyter_ddl.backends.kubernetes.checkcache import Check, CheckCache, parallel
from jupyter_ddl.backends.kubernetes.connection import Connection
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import Kind
from jupyter_ddl.errors import BackendUnavailable, PermissionDenied, RegistryError
from jupyter_ddl.i18n import tr
from jupyter_ddl.image.credentials import CredentialStore
from jupyter_ddl.image.reference import parse_reference
from jupyter_ddl.image.registry import RegistryClient
from jupyter_ddl.models import JobSpec

#: (verb, group, resource, subresource) the backend needs besides creating the job
POD_ACCESS = (
    ("get", "", "pods", ""),
    ("list", "", "pods", ""),
    ("watch", "", "pods", ""),
    ("get", "", "pods", "log"),
)


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def serving_versions(conn: Connection, group: str, plural: str) -> list[str]:
    """The versions of ``group`` whose discovery document lists ``plural``."""
    from kubernetes.client import ApiException

    try:
        groups = conn.client("ApisApi").get_api_versions().groups or []
    except ApiException as e:
        raise from_api_exception(e, action="reading the cluster's API groups") from e
    out = []
    for version in (v.version for g in groups if g.name == group for v in g.versions or []):
        try:
            found = conn.client("CustomObjectsApi").get_api_resources(group, version)
        except ApiException as e:
            if e.status == 404:
                continue
            raise from_api_exception(e, action=f"reading {group}/{version}") from e
        if plural in {r.name for r in (found.resources or [])}:
            out.append(version)
    return out


def check_crd(conn: Connection, kind: Kind, cache: CheckCache | None = None) -> None:
    """Raise BackendUnavailable naming the operator when ``kind`` is not served."""
    if cache is None:
        served = serving_versions(conn, kind.group, kind.plural)
    else:
        served = cache.served(kind.group, kind.plural, lambda: serving_versions(conn, kind.group, kind.plural))  # fmt: skip
    if kind.version in served:
        return
    err = crd_missing(kind)
    if served:  # same CRD name, another operator's version (operator-contract.md §10.1)
        raise BackendUnavailable(
            tr(
                "the cluster serves {kind} {group}/{served}, not {wanted}: another operator's "
                "version of the CRD is installed",
                kind=kind,
                group=kind.group,
                served=", ".join(served),
                wanted=kind.api_version,
            ),
            hint=err.hint,
        )
    raise err


def access_checks(kind: Kind, extra: Sequence[Check] = ()) -> list[Check]:
    return [("create", kind.group, kind.plural, ""), *extra, *POD_ACCESS]


def podgroup_checks(obj: dict[str, Any]) -> list[Check]:
    """Creating a job's PodGroup (Kubeflow's editor role has no rule for it) and
    patching it: it is made owned by the job by a patch, without which deleting the
    job would leave the group behind."""
    group, plural = obj["apiVersion"].rpartition("/")[0], obj["kind"].lower() + "s"
    return [("create", group, plural, ""), ("patch", group, plural, "")]


def refused(conn: Connection, checks: Sequence[Check]) -> list[str] | None:
    """The checks the API server refuses ("create pods/log"), or None when it will not
    answer access reviews (the real calls will tell)."""
    answers = [_review(conn, c) for c in checks]
    if any(a is None for a in answers):
        return None
    return [f"{v} {r}{'/' + sub if sub else ''}" for (v, _, r, sub), ok in zip(checks, answers, strict=True) if not ok]  # fmt: skip


def check_access(
    conn: Connection, kind: Kind, extra: Sequence[Check] = (), cache: CheckCache | None = None
) -> None:
    """SelfSubjectAccessReview for every verb we need, side by side, but those allowed
    within the cache's time; names each one refused (an RBAC refusal: a Role is the
    cure)."""
    checks = access_checks(kind, extra)
    if cache is not None:
        checks = cache.unchecked(conn.namespace, checks)
    answers = parallel(cache.pool if cache else None, [partial(_review, conn, c) for c in checks])
    if any(a is None for a in answers):  # cannot even ask: let the real calls tell
        return
    missing = [f"{v} {r}{'/' + sub if sub else ''}" for (v, _, r, sub), ok in zip(checks, answers, strict=True) if not ok]  # fmt: skip
    if cache is not None:
        cache.allow(conn.namespace, [c for c, ok in zip(checks, answers, strict=True) if ok])
    if missing:
        raise PermissionDenied(
            tr(
                "the service account may not {verbs} in namespace {namespace}",
                verbs=", ".join(missing),
                namespace=conn.namespace,
            ),
            hint=tr(
                "ask an admin for a Role granting these verbs (Kubeflow: the profile's "
                "default-editor role)"
            ),
        )


def _review(conn: Connection, check: Check) -> bool | None:
    """Whether the API server allows ``check``; None when it will not say."""
    from kubernetes import client
    from kubernetes.client import ApiException

    verb, group, resource, sub = check
    body = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                namespace=conn.namespace,
                verb=verb,
                group=group,
                resource=resource,
                subresource=sub or None,
            )
        )
    )
    try:
        review = conn.client("AuthorizationV1Api").create_self_subject_access_review(body)
    except ApiException as e:
        if e.status in (403, 404):
            return None
        raise from_api_exception(e, action="checking permissions") from e
    return bool(review.status and review.status.allowed)


def check_image(cfg: Config, image: str) -> None:
    """When a registry is configured, the user's image must exist there."""
    if not cfg.registry:
        return

    ref = parse_reference(image)
    insecure = {h.split("://", 1)[-1].rstrip("/") for h in cfg.insecure_registries}
    reg = RegistryClient(
        ref.api_host,
        credentials=CredentialStore.from_docker_config(),
        insecure=ref.api_host in insecure,
        ca=cfg.registry_ca,
        scopes=[f"repository:{ref.repository}:pull"],
        retries=1,
        timeout=15,
    )
    try:
        if reg.head_manifest(ref.repository, ref.reference) is None:
            raise RegistryError(
                tr(
                    "image {image} does not exist in {registry}", image=image, registry=ref.api_host
                ),
                hint=tr("push it first or fix the image name; pods would wait in ImagePullBackOff"),
            )
    finally:
        reg.close()


def gpu_warnings(conn: Connection, asked: dict[str, tuple[int, int]]) -> list[str]:
    """``asked``: role -> (replicas, GPUs each). Warnings when no node or the cluster
    as a whole has that many allocatable; [] when nodes cannot be read (RBAC)."""
    from kubernetes.client import ApiException

    if not any(g for _, g in asked.values()):
        return []
    try:
        nodes = conn.client("CoreV1Api").list_node().items
    except ApiException:
        return []  # notebook service accounts usually cannot list nodes
    per_node = [_gpus(n.status.allocatable if n.status else None) for n in nodes]
    out = []
    biggest, total = max(per_node, default=0), sum(per_node)
    for role, (_n, g) in asked.items():
        if g > biggest:
            out.append(
                tr(
                    "{role} asks for {gpus} GPUs per replica but the largest node has {biggest} "
                    "allocatable; its pods will stay Pending",
                    role=role,
                    gpus=g,
                    biggest=biggest,
                )
            )
    need = sum(n * g for n, g in asked.values())
    if need > total:
        out.append(
            tr(
                "the job asks for {need} GPUs in all but the cluster has {total} allocatable; "
                "some pods will stay Pending",
                need=need,
                total=total,
            )
        )
    return out


def rwo_problems(
    conn: Connection, spec: JobSpec, notebook_pod: dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    """(refusals, warnings) for ReadWriteOnce claims the job mounts: such a claim
    attaches to one node, and a pod elsewhere waits for ever (Multi-Attach). A claim
    the notebook holds, mounted into a job of several pods, is refused; any other one
    warns. Nothing when the cluster has a single node, or claims cannot be read."""
    from kubernetes.client import ApiException

    if spec.shape.total < 2 or not spec.volumes:
        return [], []
    core = conn.client("CoreV1Api")
    try:
        if len(core.list_node().items) == 1:
            return [], []
    except ApiException:
        pass  # notebook accounts rarely may list nodes: assume several
    pod_spec = (notebook_pod or {}).get("spec") or {}
    held = {
        (v.get("persistentVolumeClaim") or {}).get("claimName")
        for v in pod_spec.get("volumes") or []
    }
    refuse, warn = [], []
    for v in spec.volumes:
        try:
            pvc = core.read_namespaced_persistent_volume_claim(v.claim_name, conn.namespace)
        except ApiException:
            continue
        if list(pvc.spec.access_modes or []) != ["ReadWriteOnce"]:
            continue
        text = tr(
            "volume {claim}: a ReadWriteOnce claim attaches to one node only, and the job's "
            "{pods} pods may land on other nodes and wait for ever (Multi-Attach)",
            claim=v.claim_name,
            pods=spec.shape.total,
        )
        if v.claim_name in held:
            node = pod_spec.get("nodeName") or tr("its node")
            said = tr(
                "the notebook holds it on {node}: use a ReadWriteMany claim, or copy the data "
                "elsewhere",
                node=node,
            )
            refuse.append(f"{text}; {said}")
        else:
            warn.append(text)
    return refuse, warn


def _gpus(allocatable: dict[str, Any] | None) -> int:
    total = 0
    for key, value in (allocatable or {}).items():
        if key.endswith("/gpu"):
            try:
                total += int(str(value))
            except ValueError:
                continue
    return total
