"""Backends come from the ``jupyter_ddl.backends`` entry points only: the built-ins
through pyproject's table, a third party's through its own distribution. A toy backend
installed the way docs/adding-a-backend.md says (a distribution whose metadata names
the entry point) is listed, loaded by name and passes the whole backend contract."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tomllib

from jupyter_ddl import JobManager, JobSpec, ValidationError, build_bundle, default_manager
from jupyter_ddl.backends import backend_class, backend_names, names, registry
from jupyter_ddl.config import Config
from jupyter_ddl.core.kinds import TFJOB
from jupyter_ddl.core.strategies import CATALOG, RoleRule, Strategy
from jupyter_ddl.errors import BackendUnavailable
from jupyter_ddl.validation import validate
from tests.backend_contract import *  # noqa: F403 - collects the contract tests
from tests.backend_contract import default_make_job

ROOT = Path(__file__).resolve().parents[1]
ENTRY_POINTS = "[jupyter_ddl.backends]\ntoy = tests.support.toy_backend:ToyBackend\n"


@pytest.fixture
def toy_installed(tmp_path, monkeypatch):
    """A distribution ``toy-ddl`` on sys.path whose entry point registers ``toy``: what
    ``pip install`` of a package with the pyproject table of the guide leaves behind."""
    info = tmp_path / "toy_ddl-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-ddl\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_builtins_are_pyprojects_entry_points_and_nothing_else():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = table["project"]["entry-points"]["jupyter_ddl.backends"]
    assert set(backend_names()) == set(declared)
    assert backend_names()[0] == "local"  # a fresh config's default comes first
    assert not hasattr(registry, "BUILTIN")


def test_a_backend_installed_through_its_entry_point_is_listed_and_loaded(toy_installed):
    assert "toy" in backend_names() and backend_names()[0] == "local"
    cls = backend_class("toy")
    assert cls.__name__ == "ToyBackend" and cls.__module__ == "tests.support.toy_backend"
    manager = JobManager(config=Config(backend="toy"))
    assert "toy" in manager.backend_names()


def test_the_job_api_runs_a_job_on_the_toy_backend(toy_installed):
    manager = JobManager(config=Config(backend="toy"))
    spec, bundle = default_make_job("print('hello from toy')", backend="toy")
    manager.submit(spec, bundle)
    status = manager.wait(spec.name, backend="toy", timeout=30)
    assert status.state.value == "Succeeded" and status.backend == "toy"
    logs = manager.logs(spec.name, backend="toy")
    assert "hello from toy" in "".join(line.text for line in logs)
    assert isinstance(spec, JobSpec) and default_manager() is not None


def test_an_unknown_backend_names_the_installed_ones():
    with pytest.raises(BackendUnavailable, match="unknown backend 'nope'; choose one of: local"):
        backend_class("nope")


def test_an_unknown_backend_is_the_callers_mistake_and_its_name_is_cut():
    """A name no backend has is bad input (REST answers 400, not 503: the server is
    fine), and a name of any length gives one short line."""
    from jupyter_ddl.errors import UnknownBackend

    with pytest.raises(UnknownBackend) as e:
        backend_class("x" * 100_000)
    assert e.value.http_status == 400
    assert str(e.value).startswith(f"backend: unknown backend {'x' * 40!r}... (100000 characters)")
    assert len(str(e.value)) < 200


def test_no_entry_points_at_all_says_to_install_the_package(monkeypatch):
    monkeypatch.setattr(names, "entry_points", lambda group: [])
    with pytest.raises(BackendUnavailable, match="no backend is registered") as info:
        backend_class("local")
    assert "pip install -e ." in (info.value.hint or "")


# -- the shared contract over the toy backend, loaded by name through its entry point ----
@pytest.fixture
def backend(toy_installed):
    b = backend_class("toy")(config=Config())
    yield b
    b.close()


@pytest.fixture
def contract_timeout() -> float:
    return 10.0


def test_the_contract_runs_over_the_entry_point_backend(backend):
    assert type(backend).__module__ == "tests.support.toy_backend" and backend.name == "toy"
    assert sys.modules["tests.support.toy_backend"].ToyBackend is type(backend)


# -- docs/adding-a-strategy.md: a catalog entry is all a new strategy needs ------------
def test_a_new_strategy_runs_on_an_entry_point_backend(toy_installed, monkeypatch):
    toy = Strategy(
        "tf-toy", "tensorflow", "TF toy", "Two workers, each printing a line.", TFJOB,
        (RoleRule("Worker", 1, 2, 1),), "python", "tf-mirrored",
    )  # fmt: skip
    monkeypatch.setitem(CATALOG, toy.name, toy)
    spec = JobSpec(name="toy-strategy", strategy="tf-toy", replicas={"Worker": 2}, backend="toy")
    assert spec.shape.strategy is toy and dict(spec.shape.counts) == {"Worker": 2}
    with pytest.raises(ValidationError, match="Worker"):
        validate(JobSpec(name="too-many", strategy="tf-toy", replicas={"Worker": 3}))
    manager = JobManager(config=Config(backend="toy"))
    manager.submit(spec, build_bundle("print('toy strategy')"))
    status = manager.wait(spec.name, backend="toy", timeout=30)
    assert status.state.value == "Succeeded"
    assert sorted(r.id for r in status.replicas) == ["worker-0", "worker-1"]
    logs = [line for line in manager.logs(spec.name, backend="toy") if "toy strategy" in line.text]
    assert sorted(line.replica for line in logs) == ["worker-0", "worker-1"]
