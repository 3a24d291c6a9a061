"""``render_yaml`` / ``JobManager.dry_run``: YAML documents, header, no secret values."""

from __future__ import annotations

import pytest
import yaml

from jupyter_ddl.config import Config
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.manager import JobManager
from jupyter_ddl.manifests import CODE_DIR, WORK_DIR, build_manifests
from jupyter_ddl.manifests.dryrun import render_yaml
from jupyter_ddl.models import CodeBundle, GangScheduling, JobSpec
from tests.support.crd_schema import validate_object

BUNDLE = CodeBundle(
    {"main.py": b"import cell\n", "cell.py": b"print('hi')\n", "lib/util.py": b"x = 1\n"}
)


def docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def test_yaml_documents_are_exactly_the_built_objects(data_dir):
    spec = JobSpec("dr", "torch-ddp", {"Worker": 2}, gang=GangScheduling())
    text = render_yaml(spec, BUNDLE)
    expected = build_manifests(
        spec,
        image=Config().base_images["pytorch"],
        command=["python", f"{CODE_DIR}/main.py"],
        code_digest=BUNDLE.digest,
        code_configmap="dr-code",
        code_paths=sorted(BUNDLE.files),
    )
    assert docs(text) == expected
    assert [d["kind"] for d in docs(text)] == ["PyTorchJob", "PodGroup"]
    for d in docs(text):
        assert validate_object(d) == []


def test_header_names_strategy_kind_and_configmap_shipping(data_dir):
    text = render_yaml(JobSpec("dr", "tf-parameter-server"), BUNDLE)
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert head[0] == "# jupyter-ddl dry run: job dr"
    assert head[1] == (
        "# strategy: tf-parameter-server (TF ParameterServerStrategy) -> TFJob; "
        "replicas: Chief 1, Worker 2, PS 1; world size 3 (1 process per training replica)"
    )
    assert head[2] == (
        f"# shipping: code in ConfigMap dr-code, mounted read-only at {CODE_DIR}; "
        f"working directory {WORK_DIR} (an emptyDir)"
    )
    assert head[3] == f"# code digest: {BUNDLE.digest}"


def test_registry_choice_names_the_registry_and_uses_no_configmap(data_dir):
    config = Config(registry="registry.example:5000/team")
    text = JobManager(config=config).dry_run(JobSpec("dr", "horovod"), BUNDLE)
    assert "# shipping: code appended as an image layer on docker.io/horovod/horovod:latest" in text
    job = docs(text)[0]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["containers"][0]["image"].startswith(
        f"registry.example:5000/team/ddl-notebook:code-{BUNDLE.short_digest}-"
    )
    assert [v for v in worker["volumes"] if "configMap" in v] == []


def test_secret_values_never_leak(data_dir, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_s3cr3t_value_123")
    spec = JobSpec("sec", "torch-ddp", secret_env=["HF_TOKEN"], env={"EPOCHS": "5"})
    text = render_yaml(spec, BUNDLE)
    assert "hf_s3cr3t_value_123" not in text
    assert "# secret env: HF_TOKEN from Secret sec-secrets (values never shown)" in text
    assert "secretKeyRef" in text and "EPOCHS" in text


def test_without_a_bundle_and_with_a_trainjob(data_dir):
    text = render_yaml(JobSpec("tj", "ignite", target="TrainJob", image="my/img:1"))
    (tj,) = docs(text)
    assert tj["kind"] == "TrainJob" and tj["spec"]["trainer"]["image"] == "my/img:1"
    assert "code digest" not in text


def test_manager_dry_run_validates_first(data_dir):
    with pytest.raises(ValidationError, match="replicas.Master: torch-ddp needs exactly 1 Master"):
        JobManager(config=Config()).dry_run(JobSpec("x", "torch-ddp", {"Master": 2}))
