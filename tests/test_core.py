"""The package's plain-data core: import hygiene, models, catalog, metrics parser."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jupyter_ddl.core.metrics import parse_metric_line
from jupyter_ddl.core.strategies import CATALOG, get_strategy
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.models import (
    CodeBundle,
    JobSpec,
    JobState,
    JobStatus,
    ReplicaState,
    ReplicaStatus,
    Resources,
)


def test_import_pulls_no_framework_or_kubernetes():
    code = (
        "import sys, jupyter_ddl, jupyter_ddl.manager, jupyter_ddl.models;"
        "bad=[m for m in ('torch','tensorflow','kubernetes') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_catalog_has_the_user_facing_names():
    assert set(CATALOG) == {
        "tf-mirrored", "tf-central-storage", "tf-multi-worker-mirrored",
        "tf-parameter-server", "tf-tpu", "torch-dp", "torch-ddp", "torch-elastic",
        "horovod", "deepspeed", "ignite",
    }  # fmt: skip


def test_unknown_strategy_lists_known_ones():
    with pytest.raises(ValidationError) as e:
        get_strategy("tf-magic")
    assert "tf-magic" in str(e.value) and "torch-ddp" in str(e.value)


def test_bundle_digest_is_content_addressed():
    a = CodeBundle({"b.py": b"2", "a.py": b"1"}, requirements=["x"])
    b = CodeBundle({"a.py": b"1", "b.py": b"2"}, requirements=["x"])
    assert a.digest == b.digest
    assert CodeBundle({"a.py": b"1!", "b.py": b"2"}).digest != a.digest


def test_spec_and_status_round_trip():
    spec = JobSpec("j", "torch-ddp", {"Master": 1, "Worker": 2}, {"Worker": Resources(gpu=1)})
    assert JobSpec.from_dict(spec.to_dict()) == spec
    st = JobStatus("j", "local", "torch-ddp", JobState.RUNNING,
                   [ReplicaStatus("Worker", 1, ReplicaState.RUNNING)])  # fmt: skip
    d = st.to_dict()
    assert d["replicas"][0]["id"] == "worker-1"
    assert JobStatus.from_dict(d) == st


@pytest.mark.parametrize(
    ("line", "values", "step"),
    [
        ('@@ddl-metric@@ {"step": 3, "loss": 0.5}', {"loss": 0.5}, 3),
        ("step=10 loss=0.52 lr=1e-3", {"loss": 0.52, "lr": 0.001}, 10),
        ("epoch: 2, loss: 0.61", {"loss": 0.61}, 2),
        (
            "50/50 [====] - 1s 3ms/step - loss: 0.3412 - accuracy: 0.9010",
            {"loss": 0.3412, "accuracy": 0.901},
            None,
        ),  # fmt: skip
    ],
)
def test_metric_lines(line, values, step):
    m = parse_metric_line(line)
    assert m is not None and m.values == values and m.step == step


def test_plain_lines_are_not_metrics():
    assert parse_metric_line("Starting worker 1 at 127.0.0.1:3333") is None
    assert parse_metric_line("port=2222 rank=1") is None
