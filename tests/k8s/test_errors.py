"""What the user reads when the cluster says no: 403, 404 (CRD missing), 409, 422,
MPIJob v1 installed instead of v2beta1 — and that nothing is left behind."""

from __future__ import annotations

import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import (
    BackendUnavailable,
    JobConflict,
    JobNotFound,
    PermissionDenied,
    ResourceError,
    ValidationError,
)
from jupyter_ddl.models import JobSpec, Resources

from .apidouble import ApiDouble


def spec(strategy: str = "torch-ddp", **fields) -> JobSpec:
    replicas = {"Master": 1, "Worker": 1} if strategy.startswith("torch") else {"Worker": 1}
    if strategy == "horovod":
        replicas = {"Launcher": 1, "Worker": 1}
    return JobSpec(name=f"e-{uuid.uuid4().hex[:6]}", strategy=strategy, replicas=replicas, **fields)


def leftovers(double: ApiDouble) -> list[str]:
    names = []
    for rid in ("core/v1/configmaps", "core/v1/secrets", "kubeflow.org/v1/pytorchjobs"):
        names += [o["metadata"]["name"] for o in double.store.list(rid, "team-a")[0]]
    return names


def test_403_names_the_missing_verb_and_resource(backend, double):
    double.state.denied |= {("create", "pytorchjobs"), ("get", "pods/log")}
    with pytest.raises(PermissionDenied) as e:
        backend.submit(spec(), build_bundle("pass\n"))
    msg = str(e.value)
    assert "create pytorchjobs" in msg and "get pods/log" in msg and "team-a" in msg
    assert "\n" not in msg and leftovers(double) == []


def test_403_from_the_api_itself_when_reviews_are_not_answered(backend, double):
    double.state.denied |= {("list", "pods")}
    double.state.denied |= {("create", "selfsubjectaccessreviews")}
    with pytest.raises(PermissionDenied) as e:
        backend.list()
    assert "may not list pods in namespace team-a" in str(e.value)
    assert "Role" in str(e.value)


def test_404_crd_missing_names_the_operator_to_install(make_backend, double):
    double.catalog.crds = ["TFJob/v1"]  # no PyTorchJob, no MPIJob
    b = make_backend()
    with pytest.raises(BackendUnavailable) as e:
        b.submit(spec(), build_bundle("pass\n"))
    assert "PyTorchJob (kubeflow.org/v1)" in str(e.value) and "training operator" in str(e.value)
    assert leftovers(double) == []
    caps = b.capabilities()
    assert "torch-ddp" not in caps.strategies and "tf-mirrored" in caps.strategies


def test_mpijob_v1_installed_instead_of_v2beta1(make_backend, double):
    double.catalog.crds = ["MPIJob/v1", "PyTorchJob/v1"]
    with pytest.raises(BackendUnavailable) as e:
        make_backend().submit(spec("horovod"), build_bundle("pass\n"))
    msg = str(e.value)
    assert (
        "serves MPIJob kubeflow.org/v1, not kubeflow.org/v2beta1" in msg and "mpi-operator" in msg
    )


def test_409_name_taken_by_a_job_created_elsewhere(backend, double):
    s = spec()
    double.store.create("kubeflow.org/v1/pytorchjobs", {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                                       "metadata": {"name": s.name, "namespace": "team-a"}, "spec": {}})  # fmt: skip
    with pytest.raises(JobConflict) as e:
        backend.submit(s, build_bundle("pass\n"))
    assert s.name in str(e.value) and "another name" in str(e.value)
    assert leftovers(double) == [s.name]  # no ConfigMap created for the refused job


def test_422_shows_the_field_causes_and_removes_the_configmap(backend, double):
    bad = spec(
        default_resources=Resources(cpu="lots")
    )  # not a quantity: the CRD pattern refuses it
    with pytest.raises(ValidationError) as e:
        backend.submit(bad, build_bundle("pass\n"))
    msg = str(e.value)
    assert "refused PyTorchJob" in msg and "resources.requests.cpu" in msg
    assert leftovers(double) == []  # the ConfigMap created first was removed again


def test_configmap_over_1mib_points_to_the_registry_option(backend, double):
    big = build_bundle("DATA = " + repr("x" * (1100 * 1024)) + "\n")
    with pytest.raises(ResourceError) as e:
        backend.submit(spec(), big)
    assert "over the 1 MiB" in str(e.value) and "registry=" in str(e.value)
    assert leftovers(double) == []


def test_secret_env_unset_is_refused_before_any_write(make_backend, double):
    b = make_backend()
    b._environ = {}
    with pytest.raises(ValidationError) as e:
        b.submit(spec(secret_env=["WANDB_API_KEY"]), build_bundle("pass\n"))
    assert "WANDB_API_KEY not set" in str(e.value) and leftovers(double) == []


def test_unknown_job_everywhere(backend):
    for call in (backend.get, backend.cancel, backend.delete, backend.spec):
        with pytest.raises(JobNotFound):
            call("nope")
