"""The kind registry and the Trainer release facts, checked against the operators' own
CRDs and runtimes (tests/data/crds, each release's copy): a TrainJob rendered for a
release validates strictly against that release's CRD, the release is read back from
the CRD's fields and from the version Trainer publishes, and a runtime's layout is the
one its object describes."""

from __future__ import annotations

import pytest
import yaml

from jupyter_ddl.backends.kubernetes import status as S
from jupyter_ddl.config import Config
from jupyter_ddl.core import kinds
from jupyter_ddl.core.trainer import (
    NEWEST,
    RELEASES,
    layout_of,
    release_from_crd,
    release_named,
    release_of,
    shipped_layout,
)
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.manifests.dryrun import render_yaml
from jupyter_ddl.models import CodeBundle, JobSpec, RestartPolicy
from jupyter_ddl.validation import problems
from tests.support.crd_schema import crd_dir, validate_object

BUNDLE = CodeBundle({"main.py": b"import cell\n", "cell.py": b"print('hi')\n"})
RELEASE_DIR = crd_dir() / "trainer-releases"
OVERRIDE = {"v2.0.0": "podSpecOverrides", "v2.1.0": "podTemplateOverrides",
            "v2.2.0": "runtimePatches", "v2.3.0": "runtimePatches"}  # fmt: skip


def trainjob_crd(release: str) -> dict:
    return yaml.safe_load(
        (RELEASE_DIR / release / "trainer.kubeflow.org_trainjobs.yaml").read_text()
    )


def runtime(release: str, name: str) -> dict:
    return yaml.safe_load((RELEASE_DIR / release / f"{name.replace('-', '_')}.yaml").read_text())


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("strategy", ["torch-ddp", "deepspeed"])
def test_a_trainjob_rendered_for_a_release_validates_strictly_against_its_crd(
    data_dir, release, strategy
):
    spec = JobSpec("tj", strategy, {"Node": 2}, target="TrainJob", node_selector={"pool": "a"})
    text = render_yaml(spec, BUNDLE, config=Config(trainer_release=release))
    job = next(d for d in yaml.safe_load_all(text) if d)
    crd = RELEASE_DIR / release / "trainer.kubeflow.org_trainjobs.yaml"
    assert validate_object(job, crd) == []
    # the override field the release knows, and no other (§4.6)
    present = {f for f in set(OVERRIDE.values()) if f in job["spec"]}
    assert present == {OVERRIDE[release]}
    assert f"# Trainer {release}: pods reached through {OVERRIDE[release]}" in text
    # a release rendered for another one's CRD is what the cluster refuses strictly
    others = [r for r in RELEASES if OVERRIDE[r] != OVERRIDE[release]]
    assert any(
        "spec" in p and OVERRIDE[release] in p
        for p in validate_object(job, RELEASE_DIR / others[0] / crd.name)
    )


def test_the_dry_run_writes_for_the_newest_release_unless_configured(data_dir):
    spec = JobSpec("tj", "torch-ddp", {"Node": 2}, target="TrainJob", active_deadline_seconds=60)
    job = next(d for d in yaml.safe_load_all(render_yaml(spec, BUNDLE)) if d)
    assert "runtimePatches" in job["spec"] and job["spec"]["activeDeadlineSeconds"] == 60
    with pytest.raises(ValidationError, match="v2.0.0, v2.1.0, v2.2.0, v2.3.0"):
        render_yaml(spec, BUNDLE, config=Config(trainer_release="v1.9"))
    # activeDeadlineSeconds exists from v2.2 only: refused in one line for older releases
    old = JobSpec("tj", "torch-ddp", {"Node": 2}, target="TrainJob", active_deadline_seconds=60,
                  backend_options={"trainer_release": "v2.1.0"})  # fmt: skip
    assert any("has no activeDeadlineSeconds" in p for p in problems(old))


@pytest.mark.parametrize("release", RELEASES)
def test_the_release_is_read_back_from_its_crd(release):
    found = release_from_crd(trainjob_crd(release))
    # v2.2 and v2.3 declare the same TrainJob fields: both read as v2.2.0
    assert found == ("v2.2.0" if release == "v2.3.0" else release)
    assert release_named(found).override_field == OVERRIDE[release]


def test_published_versions_map_to_the_release_they_behave_like():
    assert release_of("v2.2.0") == "v2.2.0" and release_of("v2.2.1") == "v2.2.0"
    assert release_of("2.3.0") == "v2.3.0" and release_of("v2.9.0") == NEWEST
    assert release_of("v1.9.4") is None and release_of("") is None


@pytest.mark.parametrize("release", RELEASES)
def test_shipped_runtimes_are_laid_out_as_their_objects_say(release):
    for name in ("torch-distributed", "deepspeed-distributed"):
        assert layout_of(runtime(release, name)) == shipped_layout(name, release_named(release))
    ds = layout_of(runtime(release, "deepspeed-distributed"))
    # the launcher is one of numNodes hosts in every release (§10.19); its line comes
    # first in the hostfile up to v2.2, last in v2.3
    assert ds.mpi and ds.launcher_as_node and ds.trainer_job == "launcher"
    assert ds.hosts == (("launcher", "node") if release != "v2.3.0" else ("node", "launcher"))
    assert [ds.node_pods(n) for n in (1, 2, 4)] == [1, 1, 3]


def test_the_runtime_read_from_the_cluster_lays_the_job_out():
    mpi_like = {"metadata": {"name": "my-mpi"}, "spec": {"mlPolicy": {"mpi": {"runLauncherAsNode": False}},
                "template": {"spec": {"replicatedJobs": [
                    {"name": "launcher", "template": {"metadata": {"labels": {
                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}}},
                    {"name": "node"}]}}}}  # fmt: skip
    spec = JobSpec("j", "deepspeed", {"Node": 3}, target="TrainJob", runtime_ref="my-mpi",
                   backend_options={"trainer_runtime": layout_of(mpi_like).to_dict()})  # fmt: skip
    # a launcher that is no node: 3 node pods besides it, and it runs no rank
    assert spec.shape.replica_ids == [("Launcher", 0)] + [("Node", i) for i in range(3)]
    assert spec.shape.mpi_host_ids == ("node-0", "node-1", "node-2")
    assert spec.shape.world_size == 3 and spec.shape.replicas[0].rank is None


def test_every_kind_knows_its_operators_rules():
    assert [k.name for k in kinds.KINDS] == ["TFJob", "PyTorchJob", "MPIJob", "TrainJob"]
    assert kinds.by_name("MPIJob") is kinds.MPIJOB
    with pytest.raises(ValidationError, match="jupyter-ddl submits TFJob, PyTorchJob"):
        kinds.by_name("XGBoostJob")
    assert [kinds.TFJOB.container("Worker"), kinds.PYTORCHJOB.container("Master"),
            kinds.MPIJOB.container("Launcher"), kinds.TRAINJOB.container("Launcher")] == [
        "tensorflow", "pytorch", "launcher", "node"]  # fmt: skip
    assert kinds.MPIJOB.default_restart("Launcher") == RestartPolicy.ON_FAILURE
    assert kinds.MPIJOB.default_restart("Worker") == RestartPolicy.NEVER
    assert kinds.TRAINJOB.suspend_patch() == {"suspend": True}
    assert kinds.PYTORCHJOB.suspend_patch() == {"runPolicy": {"suspend": True}}
    # a TrainJob in the background: Trainer's webhook refuses the foreground deletion's
    # last update once the job's own runtime is gone (tests/cluster/test_findings_real.py)
    assert [k.delete_propagation() for k in kinds.KINDS] == [
        "Foreground", "Foreground", "Foreground", "Background"]  # fmt: skip
    assert kinds.TRAINJOB.event_objects("j") == {"j", "j-node-0", "j-launcher-0"}
    assert kinds.TRAINJOB.for_release("v2.1.0").release.override_field == "podTemplateOverrides"


def test_the_training_container_is_found_by_name_not_position():
    # the kubelet sorts container statuses by name (operator-contract.md §10.15)
    pod = {"metadata": {"name": "j-master-0", "labels": {"training.kubeflow.org/replica-type": "master"}},
           "spec": {"containers": [{"name": "pytorch"}, {"name": "istio-proxy"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"name": "istio-proxy", "restartCount": 0, "state": {"running": {}}},
               {"name": "pytorch", "restartCount": 2, "state": {"running": {}}}]}}  # fmt: skip
    assert S.container_status(kinds.PYTORCHJOB, pod)["name"] == "pytorch"
    assert S.replica_status(kinds.PYTORCHJOB, "Master", 0, pod).restarts == 2
    # a job made elsewhere, with another container name: the pod spec's first container
    sdk = {**pod, "spec": {"containers": [{"name": "trainer"}, {"name": "istio-proxy"}]}}
    sdk["status"] = {"containerStatuses": [{"name": "istio-proxy"}, {"name": "trainer"}]}
    assert S.container_status(kinds.PYTORCHJOB, sdk)["name"] == "trainer"


def test_trainjob_times_come_from_its_pods_and_conditions():
    obj = {"metadata": {"name": "t"}, "status": {"conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:01:40Z"}]}}  # fmt: skip
    pods = [
        {"status": {"startTime": "2026-01-01T00:00:10Z"}},
        {"status": {"startTime": "2026-01-01T00:00:05Z"}},
    ]
    started, finished = S.times(obj, pods)
    assert (started, finished) == (1767225605.0, 1767225700.0)
