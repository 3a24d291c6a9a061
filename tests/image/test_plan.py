"""Base and target choice, and ``JobManager.build_image`` end to end (the notebook
pod's own image as the base: ``tests/k8s/test_notebook_image.py``)."""

from __future__ import annotations

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.errors import RegistryError
from jupyter_ddl.image.plan import notebook_slug, plan_image
from jupyter_ddl.manager import JobManager
from jupyter_ddl.models import JobSpec

from .conftest import base_in
from .test_registry_variants import make_bundle

pytestmark = pytest.mark.timeout(120)


def test_slug_and_target():
    assert notebook_slug("work/Train Model (v2).ipynb") == "train-model-v2"
    assert notebook_slug(None) == notebook_slug("???.ipynb") == "notebook"
    spec = JobSpec(name="j", strategy="torch-ddp", notebook="a/MNIST.ipynb")
    plan = plan_image(spec, None, Config(registry="r.io:5000/team/"))
    assert plan.repository == "r.io:5000/team/ddl-mnist" and plan.in_image
    assert plan.reference == "r.io:5000/team/ddl-mnist:code-nocode-<base digest>"
    unshipped = plan_image(spec, None, Config())  # no registry: the base runs a ConfigMap
    assert (unshipped.repository, unshipped.reference) == (None, Config().base_images["pytorch"])


def test_the_spec_image_comes_first_and_a_missing_base_is_one_line():
    spec = JobSpec(name="j", strategy="torch-ddp")
    mine = JobSpec(name="j", strategy="torch-ddp", image="mine:1")
    assert plan_image(mine, None, Config(), "reg.io/team/nb:3").base == "mine:1"
    assert plan_image(spec, None, Config(), None).base == Config().base_images["pytorch"]
    with pytest.raises(RegistryError, match="no base image for pytorch") as e:
        plan_image(spec, None, Config(base_images={}))
    assert "\n" not in str(e.value) and "%ddl config base_images=" in str(e.value)


def test_manager_build_image_end_to_end(plain_registry, layouts, docker_config, monkeypatch):
    base = base_in(plain_registry, layouts, "oci", repo="bases/manager")
    cfg = Config(registry=f"{plain_registry.host}/team", base_images={"pytorch": base})
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    manager = JobManager(config=cfg)
    spec = JobSpec(name="j", strategy="torch-ddp", notebook="work/Train Model.ipynb")
    built = manager.build_image(spec, make_bundle("print('manager')\n"))
    assert built.repository == f"{plain_registry.host}/team/ddl-train-model"
    assert built.base.startswith(f"{plain_registry.host}/bases/manager:base@sha256:")
    again = manager.build_image(spec, make_bundle("print('manager')\n"))
    assert (again.digest, again.pushed) == (built.digest, False)
    with pytest.raises(RegistryError, match="no image registry"):
        JobManager(config=Config()).build_image(spec, make_bundle())
