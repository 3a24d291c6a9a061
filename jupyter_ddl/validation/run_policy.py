"""Checks of the run policy (restart, backoff, deadlines) and gang scheduling."""

from __future__ import annotations

from jupyter_ddl.core import names
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION, is_trainjob, try_resolve
from jupyter_ddl.core.strategies import Strategy
from jupyter_ddl.core.trainer import RELEASES, release_named
from jupyter_ddl.manifests.trainingruntime import JOB_RESTART_POLICIES
from jupyter_ddl.models import JobSpec, RestartPolicy

GANG_SCHEDULERS = ("volcano", "scheduler-plugins")


def run_policy_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = []
    rp = _restart_policy(spec.restart_policy)
    if spec.restart_policy is not None and rp is None:
        choices = ", ".join(p.value for p in RestartPolicy)
        out.append(
            f"restart_policy: unknown policy {spec.restart_policy!r}; choose one of: {choices}"
        )
    elif is_trainjob(spec) and rp is not None and rp not in JOB_RESTART_POLICIES:
        # a TrainJob's pods belong to batch Jobs, which accept these two only
        out.append(
            f"restart_policy: a TrainJob's Jobs refuse {rp.value} (operator-contract.md §11.8); "
            "use Never or OnFailure"
        )
    elif rp in strategy.kind.refused_restart():
        out.append(
            f"restart_policy: an {strategy.kind} refuses {rp.value} (operator-contract.md §3.1); "
            "use Never or OnFailure"
        )
    if is_trainjob(spec) and spec.clean_pod_policy is not None:
        out.append("clean_pod_policy: a TrainJob has no runPolicy; drop clean_pod_policy")
    for field, value, low in (
        ("backoff_limit", spec.backoff_limit, 0),
        ("ttl_seconds_after_finished", spec.ttl_seconds_after_finished, 0),
        ("active_deadline_seconds", spec.active_deadline_seconds, 1),
    ):
        if value is not None and value < low:
            out.append(f"{field}: {value} is below {low}; give {low} or more, or leave it unset")
    if is_trainjob(spec) and spec.ttl_seconds_after_finished is not None:
        out.append(
            "ttl_seconds_after_finished: a TrainJob has no TTL (its runtime decides); drop it"
        )
    return out + _trainer_release_problems(spec)


def _trainer_release_problems(spec: JobSpec) -> list[str]:
    name = spec.backend_options.get(TRAINER_RELEASE_OPTION)
    if name is None:
        return []
    if name not in RELEASES:
        return [
            f"backend_options.{TRAINER_RELEASE_OPTION}: {name!r} is not a Trainer release "
            f"jupyter-ddl knows; use one of {', '.join(RELEASES)}"
        ]
    deadline = is_trainjob(spec) and spec.active_deadline_seconds is not None
    if deadline and not release_named(name).deadline:  # the field exists from v2.2 (§4.6)
        return [
            f"active_deadline_seconds: Trainer {name} has no activeDeadlineSeconds (v2.2 "
            "and later do); drop it, or run on a newer Trainer"
        ]
    return []


def _restart_policy(value: object) -> RestartPolicy | None:
    try:
        return RestartPolicy(value)
    except ValueError:
        return None


def gang_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    g = spec.gang
    if g is None:
        return []
    out = []
    if g.scheduler not in GANG_SCHEDULERS:
        out.append(
            f"gang.scheduler: unknown scheduler {g.scheduler!r}; choose volcano or scheduler-plugins"
        )
    if is_trainjob(spec):
        out.append(
            "gang: a TrainJob gets gang scheduling from its runtime's podGroupPolicy; drop gang"
        )
    shape = try_resolve(spec)
    total = shape.total if shape is not None else None
    if g.min_available is not None and g.min_available < 1:
        out.append(
            f"gang.min_available: {g.min_available} is below 1; give 1 or more, or leave it unset"
        )
    elif g.min_available is not None and total is not None and g.min_available > total:
        out.append(
            f"gang.min_available: {g.min_available} is more than the job's {total} replicas; "
            f"the job could never start; give at most {total}"
        )
    elif (
        g.min_available is not None
        and shape is not None
        and shape.job_kind.name == "MPIJob"
        and g.min_available > shape.count("Worker")
    ):
        # mpi-operator makes the launcher only after every worker is Ready, and the
        # gang places no worker until min_available pods exist: neither would start
        workers = shape.count("Worker")
        out.append(
            f"gang.min_available: {g.min_available} counts the launcher, which mpi-operator "
            f"creates only once all {workers} workers are Ready, so the gang would never "
            f"form; give at most {workers} or leave it unset"
        )
    if g.scheduler == "scheduler-plugins" and (g.queue or g.priority_class):
        out.append(
            "gang.queue: scheduler-plugins ignores queue and priority class (operator-contract.md §1.8); "
            "drop them or use volcano"
        )
    if g.queue is not None and not names.is_dns1123_subdomain(g.queue):
        out.append(f"gang.queue: {g.queue!r} is not a valid queue name; use a lowercase DNS name")
    if g.priority_class is not None and not names.is_dns1123_subdomain(g.priority_class):
        out.append(
            f"gang.priority_class: {g.priority_class!r} is not a valid name; use a lowercase DNS name"
        )
    if g.schedule_timeout_seconds is not None and g.schedule_timeout_seconds < 0:
        out.append(
            f"gang.schedule_timeout_seconds: {g.schedule_timeout_seconds} is negative; give 0 or more"
        )
    return out
