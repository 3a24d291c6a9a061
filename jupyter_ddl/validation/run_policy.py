"""Checks of the run policy (restart, backoff, deadlines) and gang scheduling."""

from __future__ import annotations

from jupyter_ddl.core import names
from jupyter_ddl.core.shape import TRAINER_RELEASE_OPTION, is_trainjob, try_resolve
from jupyter_ddl.core.strategies import Strategy
from jupyter_ddl.core.trainer import RELEASES, release_named
from jupyter_ddl.i18n import tr
from jupyter_ddl.manifests.trainingruntime import JOB_RESTART_POLICIES
from jupyter_ddl.models import JobSpec, RestartPolicy

GANG_SCHEDULERS = ("volcano", "scheduler-plugins")


def run_policy_problems(spec: JobSpec, strategy: Strategy) -> list[str]:
    out = []
    rp = _restart_policy(spec.restart_policy)
    if spec.restart_policy is not None and rp is None:
        choices = ", ".join(p.value for p in RestartPolicy)
        said = tr("unknown policy {policy!r}; choose one of: {choices}",
                  policy=spec.restart_policy, choices=choices)  # fmt: skip
        out.append(f"restart_policy: {said}")
    elif is_trainjob(spec) and rp is not None and rp not in JOB_RESTART_POLICIES:
        # a TrainJob's pods belong to batch Jobs, which accept these two only
        said = tr("a TrainJob's Jobs refuse {policy} (operator-contract.md §11.8); use Never or OnFailure",
                  policy=rp.value)  # fmt: skip
        out.append(f"restart_policy: {said}")
    elif rp in strategy.kind.refused_restart():
        said = tr("an {kind} refuses {policy} (operator-contract.md §3.1); use Never or OnFailure",
                  kind=strategy.kind, policy=rp.value)  # fmt: skip
        out.append(f"restart_policy: {said}")
    if is_trainjob(spec) and spec.clean_pod_policy is not None:
        out.append("clean_pod_policy: " + tr("a TrainJob has no runPolicy; drop clean_pod_policy"))
    for field, value, low in (
        ("backoff_limit", spec.backoff_limit, 0),
        ("ttl_seconds_after_finished", spec.ttl_seconds_after_finished, 0),
        ("active_deadline_seconds", spec.active_deadline_seconds, 1),
    ):
        if value is not None and value < low:
            said = tr(
                "{value} is below {low}; give {low} or more, or leave it unset",
                value=value,
                low=low,
            )
            out.append(f"{field}: {said}")
    if is_trainjob(spec) and spec.ttl_seconds_after_finished is not None:
        said = tr("a TrainJob has no TTL (its runtime decides); drop it")
        out.append(f"ttl_seconds_after_finished: {said}")
    return out + _trainer_release_problems(spec)


def _trainer_release_problems(spec: JobSpec) -> list[str]:
    name = spec.backend_options.get(TRAINER_RELEASE_OPTION)
    if name is None:
        return []
    if name not in RELEASES:
        said = tr("{name!r} is not a Trainer release jupyter-ddl knows; use one of {releases}",
                  name=name, releases=", ".join(RELEASES))  # fmt: skip
        return [f"backend_options.{TRAINER_RELEASE_OPTION}: {said}"]
    deadline = is_trainjob(spec) and spec.active_deadline_seconds is not None
    if deadline and not release_named(name).deadline:  # the field exists from v2.2 (§4.6)
        said = tr("Trainer {name} has no activeDeadlineSeconds (v2.2 and later do); drop it, "
                  "or run on a newer Trainer", name=name)  # fmt: skip
        return [f"active_deadline_seconds: {said}"]
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
        said = tr("unknown scheduler {scheduler!r}; choose volcano or scheduler-plugins",
                  scheduler=g.scheduler)  # fmt: skip
        out.append(f"gang.scheduler: {said}")
    if is_trainjob(spec):
        said = tr("a TrainJob gets gang scheduling from its runtime's podGroupPolicy; drop gang")
        out.append(f"gang: {said}")
    shape = try_resolve(spec)
    total = shape.total if shape is not None else None
    if g.min_available is not None and g.min_available < 1:
        said = tr(
            "{value} is below {low}; give {low} or more, or leave it unset",
            value=g.min_available,
            low=1,
        )
        out.append(f"gang.min_available: {said}")
    elif g.min_available is not None and total is not None and g.min_available > total:
        said = tr("{value} is more than the job's {total} replicas; the job could never start; "
                  "give at most {total}", value=g.min_available, total=total)  # fmt: skip
        out.append(f"gang.min_available: {said}")
    elif (
        g.min_available is not None
        and shape is not None
        and shape.job_kind.name == "MPIJob"
        and g.min_available > shape.count("Worker")
    ):
        # mpi-operator makes the launcher only after every worker is Ready, and the
        # gang places no worker until min_available pods exist: neither would start
        workers = shape.count("Worker")
        said = tr("{value} counts the launcher, which mpi-operator creates only once all {workers} "
                  "workers are Ready, so the gang would never form; give at most {workers} or "
                  "leave it unset", value=g.min_available, workers=workers)  # fmt: skip
        out.append(f"gang.min_available: {said}")
    if g.scheduler == "scheduler-plugins" and (g.queue or g.priority_class):
        said = tr("scheduler-plugins ignores queue and priority class (operator-contract.md §1.8); "
                  "drop them or use volcano")  # fmt: skip
        out.append(f"gang.queue: {said}")
    if g.queue is not None and not names.is_dns1123_subdomain(g.queue):
        said = tr("{name!r} is not a valid queue name; use a lowercase DNS name", name=g.queue)
        out.append(f"gang.queue: {said}")
    if g.priority_class is not None and not names.is_dns1123_subdomain(g.priority_class):
        said = tr("{name!r} is not a valid name; use a lowercase DNS name", name=g.priority_class)
        out.append(f"gang.priority_class: {said}")
    if g.schedule_timeout_seconds is not None and g.schedule_timeout_seconds < 0:
        said = tr("{count} is negative; give 0 or more", count=g.schedule_timeout_seconds)
        out.append(f"gang.schedule_timeout_seconds: {said}")
    return out
