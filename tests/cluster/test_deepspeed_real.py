"""DeepSpeed as a Trainer v2.3.0 TrainJob on the real tier, on the release's own
`deepspeed-distributed` ClusterTrainingRuntime: its launcher and node run as uid 1000
(`runAsUser`, `fsGroup`), the node's sshd is started with `/home/mpiuser/.sshd_config`
(port 2222, the host key from the SSH Secret Trainer makes, mounted at
/home/mpiuser/.ssh), and the launcher runs our `mpirun` (runLauncherAsNode). The node
agent's stand-in for the runtime's image has that user and home (image.py), and runs
each container as the user its securityContext names (enter.py).

- Without `--image`, the product refuses before anything is created, in one line.
- With `--image` naming an image built on the runtime's, every rank runs as uid 1000
  with the cell's `--env`, and the TrainJob ends Succeeded.
- What the refusal prevents, made by hand as the admin: a launcher on a notebook image
  (no mpirun) never starts.
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import JobSpec, JobState
from tests.cluster.test_distribute_real import lines, manager, run_cell  # noqa: F401
from tests.cluster.tier import ADMIN, MARKS, NAMESPACE, built, kubectl, wait_for

pytestmark = MARKS

# an image built FROM the runtime's (the stand-in knows it by its name, image.py)
RUNTIME_BUILT = "registry.example/jddl/deepspeed-runtime-jddl:1"
DS_CELL = """
import os, torch, torch.distributed as dist
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print('rank', dist.get_rank(), 'of', dist.get_world_size(), 'sum', t.item(),
      'A=' + os.environ.get('A', ''), 'uid', os.getuid(), 'home', os.path.expanduser('~'))
"""


def _trainer() -> None:
    built("trainer-v2.3.0")
    built("jobset-controller")


def _left(name: str) -> str:
    got = kubectl(
        "-n",
        NAMESPACE,
        "get",
        "trainjobs,jobsets,configmaps,secrets,pods",
        "-o",
        "name",
        kubeconfig=ADMIN,
    )
    return "\n".join(ln for ln in got.stdout.splitlines() if name in ln)


def test_a_deepspeed_trainjob_without_image_is_refused_before_anything_is_created(
    manager,  # noqa: F811
):
    _trainer()
    name = f"real-ds-{uuid.uuid4().hex[:6]}"
    spec = JobSpec(
        name=name,
        strategy="deepspeed",
        replicas={"Node": 2},
        backend="kubernetes",
        namespace=NAMESPACE,
        target="TrainJob",
    )
    with pytest.raises(ValidationError) as e:
        manager.submit(spec, build_bundle(DS_CELL))
    text = str(e.value)
    assert len(text.splitlines()) == 1, text
    assert "uid 1000" in text and "--image" in text, text
    assert "ghcr.io/kubeflow/trainer/deepspeed-runtime" in text, text
    assert _left(name) == ""


def test_a_deepspeed_trainjob_on_an_image_built_on_the_runtime_runs_every_rank_as_mpiuser(
    manager,  # noqa: F811
):
    _trainer()
    state, message, events = run_cell(
        manager,
        "deepspeed",
        {"Node": 2},
        DS_CELL,
        300,
        target="TrainJob",
        image=RUNTIME_BUILT,
        env={"A": "1"},
    )
    got = lines(events)
    assert state is JobState.SUCCEEDED, (message, got)
    flat = [ln for replica in got.values() for ln in replica]
    for rank in (0, 1):
        want = f"rank {rank} of 2 sum 3.0 A=1 uid 1000 home /home/mpiuser"
        assert want in flat, got
    # no deepspeed in the tier's interpreter: the runtime says it runs plain torch
    assert any("running as plain torch.distributed" in ln for ln in flat), got


NOTEBOOK_IMAGE = "kubeflownotebookswg/jupyter-pytorch-full:v1.9.0"
HAND_MADE = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "", "namespace": NAMESPACE},
    "spec": {
        "runtimeRef": {"name": "deepspeed-distributed"},
        "trainer": {
            "image": NOTEBOOK_IMAGE,
            "numNodes": 2,
            "command": ["mpirun", "-np", "2", "python", "-c", "print('never')"],
        },
    },
}


def test_a_launcher_on_a_notebook_image_never_starts_which_the_refusal_prevents():
    """The failure itself, made by hand as the admin: the runtime's node comes up (its
    sshd as uid 1000), the launcher on a notebook image cannot exec `mpirun`."""
    _trainer()
    name = f"hand-ds-{uuid.uuid4().hex[:6]}"
    body = json.loads(json.dumps(HAND_MADE))
    body["metadata"]["name"] = name
    made = subprocess.run(
        ["kubectl", "--kubeconfig", str(ADMIN), "create", "-f", "-"],
        input=json.dumps(body),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    try:

        def launcher_refused() -> str | None:
            got = kubectl(
                "-n", NAMESPACE, "get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={name}",
                "-o", "json", kubeconfig=ADMIN,
            )  # fmt: skip
            for pod in json.loads(got.stdout)["items"]:
                if "-launcher-" not in pod["metadata"]["name"]:
                    continue
                for cs in pod.get("status", {}).get("containerStatuses") or []:
                    for part in (cs.get("state") or {}, cs.get("lastState") or {}):
                        term = part.get("terminated") or {}
                        if term.get("reason") == "StartError":
                            return str(term.get("message") or "")
            return None

        message = wait_for("the launcher's StartError", launcher_refused, 180)
        assert '"mpirun"' in message and "executable file not found" in message, message
    finally:
        kubectl("-n", NAMESPACE, "delete", "trainjob", name, "--wait=false", kubeconfig=ADMIN,
                check=False)  # fmt: skip
