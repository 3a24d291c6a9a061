"""With a registry configured the code travels as an appended image layer (a real
``docker-registry``), no ConfigMap is made (but where pods of the job do not run that
image), and a missing user image is caught before anything is created."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest

from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.models import JobSpec
from tests.support.require import executable


@pytest.fixture
def registry(tmp_path):
    executable("docker-registry")
    executable("skopeo")
    from tests.image.bases import make_layout
    from tests.image.registries import start_registry

    reg = start_registry("plain", tmp_path / "registry")
    layout = make_layout(tmp_path / "layout")
    subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", f"oci:{layout}:base", f"docker://{reg.host}/base:1"],
                   check=True, capture_output=True)  # fmt: skip
    yield reg
    reg.stop()


def test_code_ships_as_an_image_layer_and_missing_images_are_caught(make_backend, double, registry):
    b = make_backend(registry=f"{registry.host}/team", insecure_registries=[registry.host])
    spec = JobSpec(name=f"img-{uuid.uuid4().hex[:6]}", strategy="torch-ddp", replicas={"Master": 1},
                   image=f"{registry.host}/base:1", command=["python", "-c", "pass"])  # fmt: skip
    b.submit(spec, build_bundle("print('from the image')\n"))
    job = double.store.get("kubeflow.org/v1/pytorchjobs", "team-a", spec.name)
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith(f"{registry.host}/team/ddl-notebook@sha256:")
    assert not [
        v
        for v in job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"].get("volumes", [])
        if "configMap" in v
    ]
    assert double.store.get("core/v1/configmaps", "team-a", f"{spec.name}-code") is None
    out = subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{container['image']}"],
                         check=True, capture_output=True, text=True)  # fmt: skip
    assert '"Layers"' in out.stdout
    missing = JobSpec(name=f"img-{uuid.uuid4().hex[:6]}", strategy="torch-ddp", replicas={"Master": 1},
                      image=f"{registry.host}/nope:1")  # fmt: skip
    with pytest.raises(RegistryError) as e:
        b.submit(missing, build_bundle("pass\n"))
    assert "does not exist" in str(e.value) and "\n" not in str(e.value)
    assert double.store.get("kubeflow.org/v1/pytorchjobs", "team-a", missing.name) is None
    b.cancel(spec.name)


def test_a_deepspeed_trainjob_ships_its_code_to_the_node_pods_too(make_backend, double, registry):
    """trainer.image reaches the launcher only; the node pods keep the runtime's image
    (operator-contract.md §10.19), so the code also travels in a ConfigMap mounted on
    every job of the runtime."""
    b = make_backend(registry=f"{registry.host}/team", insecure_registries=[registry.host])
    spec = JobSpec(name=f"ds-{uuid.uuid4().hex[:6]}", strategy="deepspeed", target="TrainJob",
                   replicas={"Node": 2}, image=f"{registry.host}/base:1",
                   # the launcher outlives the look below: a JobSet that completes deletes
                   # its node pods, so a quick launcher could take them before they are seen
                   command=["python", "-c", "import time; time.sleep(120)"])  # fmt: skip
    b.submit(spec, build_bundle("print('everywhere')\n"))
    job = double.store.get("trainer.kubeflow.org/v1alpha1/trainjobs", "team-a", spec.name)
    assert job["spec"]["trainer"]["image"].startswith(f"{registry.host}/team/ddl-notebook@sha256:")
    assert double.store.get("core/v1/configmaps", "team-a", f"{spec.name}-code") is not None
    selector = (
        f"jobset.sigs.k8s.io/replicatedjob-name=node,jobset.sigs.k8s.io/jobset-name={spec.name}"
    )
    deadline = time.monotonic() + 20
    while not (node := double.store.list("core/v1/pods", "team-a", selector)[0]):
        assert time.monotonic() < deadline, "no node pod"
        time.sleep(0.1)
    code = [v for v in node[0]["spec"]["volumes"] if v["name"] == "ddl-code"]
    assert code and code[0]["configMap"]["name"] == f"{spec.name}-code"
    assert node[0]["spec"]["containers"][0]["image"] != job["spec"]["trainer"]["image"]
    b.cancel(spec.name)


def test_build_only_then_submit_pushes_nothing_new(make_backend, double, registry, monkeypatch):
    """``--build-only``, the dry run and the submit follow one image plan: the submit
    finds the image the build pushed (same digest), the dry run names its repository,
    base and code tag, and the reference reaches ``%ddl status``."""
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.manifests.dryrun import render_yaml
    from jupyter_ddl.present.state import DashboardState
    from jupyter_ddl.present.text import header_text

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a notebook pod
    b = make_backend(registry=f"{registry.host}/team", insecure_registries=[registry.host],
                     base_images={"pytorch": f"{registry.host}/base:1"})  # fmt: skip
    spec = JobSpec(name=f"same-{uuid.uuid4().hex[:6]}", strategy="torch-ddp", replicas={"Master": 1},
                   notebook="work/Same Cell.ipynb", command=["python", "-c", "pass"])  # fmt: skip
    bundle = build_bundle("print('built once')\n")
    built = JobManager(config=b.config).build_image(spec, bundle)
    assert built.pushed and built.repository == f"{registry.host}/team/ddl-same-cell"

    dry = render_yaml(spec, bundle, config=b.config)
    planned = f"{built.repository}:code-{bundle.short_digest}-"
    assert f"image: {planned}" in dry and f"on {registry.host}/base:1," in dry
    assert built.tag.startswith(f"code-{bundle.short_digest}-")

    handle = b.submit(spec, bundle)
    assert (handle.image, handle.image_pushed) == (built.pull_ref, False)  # nothing new
    job = double.store.get("kubeflow.org/v1/pytorchjobs", "team-a", spec.name)
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert container["image"] == built.pull_ref
    status = b.get(spec.name)
    assert (status.image, status.image_pushed) == (built.pull_ref, False)
    text = header_text(DashboardState.of_status(status))
    assert f"image {built.pull_ref} (already in the registry, nothing uploaded)" in text
    b.cancel(spec.name)
