"""The sidebar with a cluster that does not answer: the local job is still listed, and
one line under the header names the unavailable backend and why."""

from __future__ import annotations

import time

import pytest

from tests.support import deadends

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(180)]

JOB = "ui-local-only"


@pytest.fixture
def cluster_down(data_dir, tmp_path, monkeypatch):
    """Before the server starts: a finished local job, and a kubeconfig whose server
    refuses connections."""
    url = deadends.closed_port_url()
    monkeypatch.setenv("KUBECONFIG", str(deadends.write_kubeconfig(tmp_path / "kc", url)))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    _finished_local_job()
    return url


@pytest.fixture
def local_only(data_dir, tmp_path, monkeypatch):
    """Before the server starts: a finished local job on a machine where Kubernetes was
    never set up (no KUBECONFIG, no ~/.kube/config, not in a pod)."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    _finished_local_job()


def _finished_local_job() -> None:
    from jupyter_ddl.backends.local import LocalBackend
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    b = LocalBackend()
    b.submit(JobSpec(name=JOB, strategy="tf-mirrored", replicas={"Worker": 1}),
             build_bundle("print('ran')\n"))  # fmt: skip
    deadline = time.monotonic() + 60
    while not b.get(JOB).state.finished:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_local_only_user_is_told_nothing_about_kubernetes(local_only, lab, browser, artifacts):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{lab['url']}lab?token={lab['token']}")
        page.wait_for_selector('.jp-SideBar [data-id="jupyter-ddl-jobs"]', timeout=60_000)
        page.click('.jp-SideBar [data-id="jupyter-ddl-jobs"]')
        page.wait_for_selector(f'.jp-DDL-jobrow[data-job="{JOB}"][data-state="Succeeded"]')
        page.wait_for_timeout(500)  # a second push would bring a late line
        assert page.locator(".jp-DDL-unavailable-line").count() == 0
        assert "kubernetes" not in page.inner_text(".jp-DDL-panel").lower()
        page.screenshot(path=str(artifacts / "sidebar-local-only.png"))
    finally:
        page.close()


def test_sidebar_shows_local_jobs_and_names_the_unreachable_cluster(
    cluster_down, lab, browser, artifacts
):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{lab['url']}lab?token={lab['token']}")
        page.wait_for_selector('.jp-SideBar [data-id="jupyter-ddl-jobs"]', timeout=60_000)
        page.click('.jp-SideBar [data-id="jupyter-ddl-jobs"]')
        page.wait_for_selector(f'.jp-DDL-jobrow[data-job="{JOB}"][data-state="Succeeded"]')
        line = page.wait_for_selector('.jp-DDL-unavailable-line[data-backend="kubernetes"]')
        text = line.inner_text()
        assert text.startswith(f"kubernetes: not reachable at {cluster_down}: connection refused")
        assert page.locator(".jp-DDL-unavailable-line").count() == 1
        assert not page.is_visible(".jp-DDL-panel-status.jp-DDL-error")
        page.screenshot(path=str(artifacts / "sidebar-cluster-down.png"))
    finally:
        page.close()


def test_an_unreadable_job_directory_is_said_in_the_panel(data_dir, lab, browser, artifacts):
    """Not "No jobs yet": the panel says the local jobs could not be read, and where."""
    (data_dir / "jobs").write_text("not a directory\n", encoding="utf-8")  # root reads any mode
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{lab['url']}lab?token={lab['token']}")
        page.wait_for_selector('.jp-SideBar [data-id="jupyter-ddl-jobs"]', timeout=60_000)
        page.click('.jp-SideBar [data-id="jupyter-ddl-jobs"]')
        line = page.wait_for_selector('.jp-DDL-unavailable-line[data-backend="local"]')
        assert f"the job directory {data_dir / 'jobs'} cannot be read" in line.inner_text()
        status = page.inner_text(".jp-DDL-panel-status")
        assert "No jobs yet" not in status
        assert status.startswith("No jobs listed:"), status
        page.screenshot(path=str(artifacts / "sidebar-unreadable-store.png"))
    finally:
        page.close()
