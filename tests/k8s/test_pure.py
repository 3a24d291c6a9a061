"""The pure parts of the Kubernetes backend: error mapping, waiting reasons, status
folding, shipping builders, notebook inheritance, quantities, log timestamps."""

from __future__ import annotations

import json

import pytest

from jupyter_ddl.backends.kubernetes import api_errors as E
from jupyter_ddl.backends.kubernetes import notebook, reasons, shipping
from jupyter_ddl.backends.kubernetes import status as S
from jupyter_ddl.backends.kubernetes.logs import split_timestamp
from jupyter_ddl.backends.kubernetes.usage import quantity
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.core.kinds import MPIJOB, PYTORCHJOB, TFJOB, TRAINJOB
from jupyter_ddl.errors import (
    JobConflict,
    JobNotFound,
    PermissionDenied,
    ResourceError,
    ValidationError,
)
from jupyter_ddl.models import JobSpec, JobState, ReplicaState, VolumeMount


def status_body(code, reason, message, **details):
    return json.dumps(
        {"kind": "Status", "code": code, "reason": reason, "message": message, "details": details}
    )


def test_error_mapping_one_line_each():
    msg = 'pods "x" is forbidden: User "u" cannot get resource "pods" subresource "log" in API group "" in the namespace "ns"'
    e = E.map_api_error(
        403, status_body(403, "Forbidden", msg), action="reading logs", namespace="ns"
    )
    assert isinstance(e, PermissionDenied) and "may not get pods/log in namespace ns" in str(e)
    assert isinstance(E.map_api_error(409, "", action="submitting", name="j"), JobConflict)
    e404 = E.map_api_error(404, "404 page not found", action="submitting", kind=TFJOB)
    assert "CRD is not installed" in str(e404) and "training operator" in str(e404)
    nf = E.map_api_error(
        404, status_body(404, "NotFound", 'x "j" not found'), action="reading", kind=TFJOB, name="j"
    )
    assert isinstance(nf, JobNotFound)
    body = status_body(
        422, "Invalid", "bad", causes=[{"field": "spec.x", "message": "Invalid value"}]
    )
    inv = E.map_api_error(422, body, action="submitting", kind=TFJOB, name="j")
    assert isinstance(inv, ValidationError) and "spec.x: Invalid value" in str(inv)
    # not every 403 is RBAC: a webhook's and a quota's words are shown as they are
    hook = 'pytorchjobs.kubeflow.org "j" is forbidden: admission webhook "v.kyverno" denied the request:\n  team label missing'
    wh = E.map_api_error(
        403, status_body(403, "Forbidden", hook), action="submitting", kind=PYTORCHJOB
    )
    assert isinstance(wh, PermissionDenied) and "team label missing" in str(wh)
    assert "may not" not in str(wh) and "Role" not in str(wh)
    quota = 'configmaps "j-code" is forbidden: exceeded quota: cm, requested: count/configmaps=1'
    q = E.map_api_error(403, status_body(403, "Forbidden", quota), action="submitting")
    assert isinstance(q, ResourceError) and "exceeded quota: cm" in str(q)
    # a strict create refused for a field the cluster's CRD lacks: the field and the release
    strict = ('TrainJob in version "v1alpha1" cannot be handled as a TrainJob: strict decoding '
              'error: unknown field "spec.runtimePatches"')  # fmt: skip
    uf = E.map_api_error(400, status_body(400, "BadRequest", strict), action="submitting",
                         kind=TRAINJOB, written_for="Trainer v2.3.0, from config")  # fmt: skip
    assert isinstance(uf, ValidationError)
    assert "spec.runtimePatches" in str(uf) and "Trainer v2.3.0" in str(uf)
    assert "trainer_release" in str(uf)
    for err in (e, e404, nf, inv, wh, q, uf):
        assert "\n" not in str(err)


@pytest.mark.parametrize(
    ("status", "expect"),
    [
        ({"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/2 nodes: 2 Insufficient nvidia.com/gpu."}]}, "not enough free GPUs"),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]}, "ErrImagePull: not found"),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}, "OOMKilled"),
        ({"containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}]}, "last exit code 1"),
    ],
)  # fmt: skip
def test_pod_waiting_reasons(status, expect):
    assert expect in reasons.pod_waiting({"status": status})


def test_podgroup_and_event_reasons():
    pg = {
        "metadata": {"name": "j"},
        "spec": {"minMember": 3},
        "status": {"phase": "Pending", "scheduled": 1},
    }
    assert "1/3 replicas placed" in reasons.podgroup_waiting(pg)
    assert reasons.event_waiting({"type": "Normal", "reason": "Scheduled"}) is None
    ev = {
        "type": "Warning",
        "reason": "ValidationError",
        "message": "bad",
        "involvedObject": {"kind": "MPIJob", "name": "j"},
    }
    assert reasons.event_waiting(ev) == "the operator refused the job: bad"


def _pod(labels, phase, **cs):
    return {
        "metadata": {"name": "p", "labels": labels},
        "status": {"phase": phase, "containerStatuses": [cs] if cs else []},
    }


def test_status_folding_per_kind():
    tf = {"metadata": {"name": "j", "labels": {"jupyter-ddl.io/strategy": "tf-mirrored"}},
          "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}},
          "status": {"conditions": [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]}}  # fmt: skip
    pods = [_pod({"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "1"}, "Running",
                 state={"running": {}}, restartCount=0)]  # fmt: skip
    st = S.job_status(TFJOB, tf, pods)
    assert st.state == JobState.RUNNING and st.strategy == "tf-mirrored"
    assert [(r.id, r.state) for r in st.replicas] == [
        ("worker-0", ReplicaState.PENDING),
        ("worker-1", ReplicaState.RUNNING),
    ]
    mpi_pod = _pod({"training.kubeflow.org/job-role": "launcher"}, "Succeeded")
    assert MPIJOB.pod_replica(mpi_pod) == ("Launcher", 0)
    tj_pod = _pod(
        {
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "batch.kubernetes.io/job-completion-index": "3",
        },
        "Running",
    )
    assert TRAINJOB.pod_replica(tj_pod) == ("Node", 3)
    done = {
        **tf,
        "status": {"conditions": [{"type": "Complete", "status": "True", "message": "ok"}]},
    }
    assert S.job_state(done, [])[0] == JobState.SUCCEEDED
    cancelled = {**tf, "metadata": {"name": "j", "annotations": {S.ANNOTATION_CANCELLED: "true"}}}
    assert S.job_status(TFJOB, cancelled, pods).replicas[1].state == ReplicaState.TERMINATED
    # a finished job whose replica's pod was never seen (deleted as the job ended): not
    # "Pending" under a Succeeded job
    finished = S.job_status(TFJOB, done, pods)
    assert finished.state == JobState.SUCCEEDED
    unseen = finished.replicas[0]
    assert unseen.pod is None and unseen.state == ReplicaState.TERMINATED
    assert "deleted when the job ended" in (unseen.message or "")


def test_shipping_builders_keep_values_out_and_check_size():
    spec = JobSpec(name="j", strategy="tf-mirrored", secret_env=["TOKEN"])
    sec = shipping.secret(spec, {"TOKEN": "v"}, {})
    assert sec["metadata"]["name"] == "j-secrets" and sec["data"] == {"TOKEN": "dg=="}
    cm = shipping.configmap(build_bundle("x = 1\n"), "j", {"a": "b"})
    shim = {"ddl_runtime.py", "ddl_runtime_torch.py", "ddl_runtime_end.py", "ddl_spawn.py"}
    assert set(cm["data"]) == {"cell.py", "main.py", *shim} and cm["immutable"] is True
    bundle = build_bundle("pass\n")
    bundle.files["pkg/blob.bin"] = b"\xff\xfe\x00"
    assert shipping.configmap(bundle, "j", {})["binaryData"] == {"pkg__blob.bin": "//4A"}


def test_notebook_inheritance():
    pod = {"metadata": {"labels": {"access-ml-pipeline": "true", "x": "y"}},
           "spec": {"volumes": [{"name": "w", "persistentVolumeClaim": {"claimName": "ws"}}],
                    "containers": [{"volumeMounts": [{"name": "w", "mountPath": "/home/jovyan"}]}]}}  # fmt: skip
    pds = [
        {"spec": {"selector": {"matchLabels": {"access-ml-pipeline": "true"}}}},
        {"spec": {"selector": {}}},
    ]
    assert notebook.poddefault_labels(pod, pds) == {"access-ml-pipeline": "true"}
    spec = JobSpec(
        name="j", strategy="tf-mirrored", volumes=[VolumeMount(claim_name="ws", mount_path="")]
    )
    assert notebook.with_notebook_volumes(spec, pod).volumes[0].mount_path == "/home/jovyan"
    bad = JobSpec(
        name="j", strategy="tf-mirrored", volumes=[VolumeMount(claim_name="other", mount_path="")]
    )
    with pytest.raises(ValidationError, match="its PVCs: ws"):
        notebook.with_notebook_volumes(bad, pod)


def test_quantities_and_timestamps():
    assert (
        quantity("250m") == 0.25 and quantity("1Gi") == 1024**3 and quantity("1500000n") == 0.0015
    )
    t, text = split_timestamp("2026-11-21T23:00:01.500000000Z hello world")
    assert text == "hello world" and t == pytest.approx(1795302001.5)
    assert split_timestamp("no stamp here") == (None, "no stamp here")


def test_importing_the_backend_does_not_import_kubernetes():
    import subprocess
    import sys

    code = "import sys, jupyter_ddl.backends.kubernetes as k; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("caught", ["waiting", "killed"])
def test_a_job_failed_while_its_replicas_wait_to_restart_names_the_root_cause(caught):
    """Seen on the real tier: under OnFailure every replica crashed and waited in
    CrashLoopBackOff when the operator failed the job at its backoff limit and deleted
    the pods (cleanPodPolicy Running); the replicas' last runs failed, so the job's
    message names the root cause, not only the operator's reason."""
    pt = {"metadata": {"name": "j", "labels": {"jupyter-ddl.io/strategy": "torch-ddp"}},
          "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}},
          "status": {"conditions": [{"type": "Failed", "status": "True",
                                     "message": "Job j has failed because it has reached the specified backoff limit"}]}}  # fmt: skip

    def crashed(role, at):
        labels = {
            "training.kubeflow.org/replica-type": role,
            "training.kubeflow.org/replica-index": "0",
        }
        # waiting in CrashLoopBackOff, or its third run killed by the job's end (143)
        now = ({"waiting": {"reason": "CrashLoopBackOff"}} if caught == "waiting"
               else {"terminated": {"exitCode": 143, "finishedAt": "2026-01-01T00:00:09Z"}})  # fmt: skip
        return _pod(labels, "Running", name="pytorch", restartCount=2, state=now,
                    lastState={"terminated": {"exitCode": 1, "finishedAt": at}})  # fmt: skip

    pods = [crashed("master", "2026-01-01T00:00:02Z"), crashed("worker", "2026-01-01T00:00:01Z")]
    lines = {
        "worker-0": ["Traceback (most recent call last):", "ValueError: rank one is broken"],
        "master-0": [
            "Traceback (most recent call last):",
            "RuntimeError: Connection closed by peer",
        ],
    }
    # heard deleted (cleanPodPolicy Running) or still listed when the job's end is heard
    gone, live = (pods, []) if caught == "waiting" else ([], pods)
    st = S.job_status(PYTORCHJOB, pt, live, gone=gone, last_lines=lines)
    assert st.state == JobState.FAILED
    assert [r.state for r in st.replicas] == [ReplicaState.FAILED, ReplicaState.FAILED]
    assert st.replicas[1].exit_code == 1
    assert st.message.startswith("worker-0 failed first: ValueError: rank one is broken")
    assert st.message.endswith("reached the specified backoff limit")


def test_submit_warnings_and_the_end_read_from_the_job_object():
    notes = {S.ANNOTATION_WARNINGS: json.dumps(["no node has 8 GPUs"])}
    assert S.job_warnings({"metadata": {"annotations": notes}}) == ["no node has 8 GPUs"]
    # a hand-edited annotation reads as no warning: the watch goes on
    for mangled in ("[not json", '{"a": 1}', ""):
        assert S.job_warnings({"metadata": {"annotations": {S.ANNOTATION_WARNINGS: mangled}}}) == []
    assert S.job_warnings({}) == []
    done = {"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}
    assert S.job_over(done) and not S.job_over({"status": {}}) and not S.job_over(None)
    assert S.job_over({"metadata": {"annotations": {S.ANNOTATION_GAVE_UP: "x"}}})
