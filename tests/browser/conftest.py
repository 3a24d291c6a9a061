"""JupyterLab served locally (isolated Jupyter dirs, a base URL like Kubeflow's) and
Debian's Chromium driven by Playwright."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import require
from support.serving import wait_ready

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "jupyter_ddl" / "labextension"
ARTIFACTS = ROOT / ".test-artifacts"
BASE_URL = "/notebook/team/lab-user/"  # Kubeflow serves notebook servers under such a prefix
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path, data_dir):
    """A running JupyterLab with our server and lab extensions; yields its URL info."""
    require.module("jupyterlab")
    if not (BUILT / "static" / "style.js").exists():
        msg = "the lab extension is not built (run scripts/build-labextension)"
        pytest.fail(msg) if require.STRICT else pytest.skip(msg)
    dirs = {
        k: tmp_path / k.lower()
        for k in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR")
    }
    for d in dirs.values():
        d.mkdir()
    (dirs["JUPYTER_DATA_DIR"] / "labextensions").mkdir()
    (dirs["JUPYTER_DATA_DIR"] / "labextensions" / "jupyter-ddl").symlink_to(BUILT)
    _link_widget_manager(dirs["JUPYTER_DATA_DIR"] / "labextensions")
    # the server extension is switched on by the very file the wheel installs
    enable = dirs["JUPYTER_CONFIG_DIR"] / "jupyter_server_config.d"
    enable.mkdir()
    shutil.copy(ROOT / "jupyter-config" / "jupyter_server_config.d" / "jupyter_ddl.json", enable)
    # no news/update toast over the page we photograph, and no launcher: JupyterLab opens
    # and activates it while it finishes starting, which on a loaded machine came after
    # a test had put the focus on our panel, and took it (the keyboard tests then failed)
    labconfig = dirs["JUPYTER_CONFIG_DIR"] / "labconfig"
    labconfig.mkdir()
    off = {
        "@jupyterlab/apputils-extension:announcements": True,
        "@jupyterlab/launcher-extension:plugin": True,
    }
    (labconfig / "page_config.json").write_text(json.dumps({"disabledExtensions": off}))
    settings = tmp_path / "lab-settings"
    root = tmp_path / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, **{k: str(v) for k, v in dirs.items()}}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    # in a virtual environment jupyter_core prefers the environment's share/ over
    # JUPYTER_DATA_DIR: without this a copy installed earlier would shadow BUILT
    env["JUPYTER_PREFER_ENV_PATH"] = "0"
    # searched first: in a virtualenv, jupyter_core prefers the environment's share/ over
    # JUPYTER_DATA_DIR, where an installed (older) copy of the extension would win
    env["JUPYTER_PATH"] = str(dirs["JUPYTER_DATA_DIR"])
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.base_url={BASE_URL}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
    ]
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}{BASE_URL}"
    try:
        wait_ready(f"{url}api/status?token={token}", proc, tmp_path / "lab.log", "JupyterLab")
        yield {
            "url": url,
            "token": token,
            "root": root,
            "settings": settings,
            "log": tmp_path / "lab.log",
            "proc": proc,  # an outage test stops it
        }
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _link_widget_manager(labextensions: Path) -> None:
    """ipywidgets' front end (the cells' dashboards and form), from where pip put it: a
    virtual environment over a shared interpreter has it in the base one's share/."""
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        found = Path(prefix) / "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager"
        if found.is_dir():
            (labextensions / "@jupyter-widgets").mkdir()
            (labextensions / "@jupyter-widgets" / "jupyterlab-manager").symlink_to(found)
            return


@pytest.fixture
def browser():
    """Debian's Chromium through Playwright (no `playwright install` needed)."""
    require.module("playwright")
    chromium = require.executable("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def artifacts():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
