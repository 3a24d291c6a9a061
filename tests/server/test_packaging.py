"""One version for Python and npm; the wheel carries the prebuilt lab extension and
the server-extension switch, so `pip install` needs no Node."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.require import STRICT

import jupyter_ddl

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / "jupyter_ddl" / "labextension"


def test_npm_and_python_versions_are_one():
    pkg = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert pkg["version"] == jupyter_ddl.__version__
    lock = json.loads((ROOT / "labextension" / "package-lock.json").read_text())
    assert lock["version"] == jupyter_ddl.__version__


def test_lab_extension_path_matches_package_name():
    pkg = json.loads((ROOT / "labextension" / "package.json").read_text())
    (entry,) = jupyter_ddl._jupyter_labextension_paths()
    assert entry["dest"] == pkg["name"]
    assert pkg["jupyterlab"]["outputDir"] == "../jupyter_ddl/" + entry["src"]


def _no_node_env(bin_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PATH holds only ``bin_dir`` with the Python interpreter in
    it (the interpreter's own directory may be /usr/bin, beside a system Node)."""
    bin_dir.mkdir(exist_ok=True)
    for name in ("python", "python3"):
        if not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(Path(sys.executable).resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHON"))}
    env["PATH"] = str(bin_dir)
    env.update(extra or {})
    return env


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_wheel_installs_and_enables_both_extensions_without_node(tmp_path):
    if not (BUILT / "static" / "style.js").exists():
        msg = "the lab extension is not built (run scripts/build-labextension)"
        pytest.fail(msg) if STRICT else pytest.skip(msg)
    env = _no_node_env(tmp_path / "bin")
    assert shutil.which("node", path=env["PATH"]) is None
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(dist)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = dist.glob("jupyter_ddl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = f"jupyter_ddl-{jupyter_ddl.__version__}.data/data"
    assert "jupyter_ddl/py.typed" in names  # type checkers read the package's hints
    assert f"{data}/etc/jupyter/jupyter_server_config.d/jupyter_ddl.json" in names
    assert f"{data}/share/jupyter/labextensions/jupyter-ddl/package.json" in names
    assert f"{data}/share/jupyter/labextensions/jupyter-ddl/install.json" in names
    assert any(
        re.search(r"labextensions/jupyter-ddl/static/remoteEntry\.\w+\.js$", n) for n in names
    )

    # A fresh venv, PATH without Node. It borrows Jupyter from the environment the setup
    # scripts filled (this interpreter's site-packages, read through a .pth: its own
    # .pth files, the editable jupyter_ddl among them, stay unread), never from the base
    # interpreter, which a fresh machine leaves bare.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    own_site = subprocess.run(
        [py, "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    borrowed = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(own_site) / "_borrowed_test_env.pth").write_text("\n".join(borrowed) + "\n")
    env = _no_node_env(
        tmp_path / "bin",
        {"JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"), "JUPYTER_DATA_DIR": str(tmp_path / "data")},
    )
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    # the host's pip installs into the venv (--python): no pip bootstrap in the venv
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        py,
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        str(wheel),
    ]
    subprocess.run(pip, env=env, check=True, capture_output=True, timeout=120)
    where = subprocess.run(
        [py, "-c", "import jupyter_ddl; print(jupyter_ddl.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(venv))

    server = _run(py, "jupyter_server.extension.serverextension", env, tmp_path)
    assert re.search(r"jupyter_ddl\s+enabled", server), server
    assert re.search(rf"jupyter_ddl {re.escape(jupyter_ddl.__version__)}\s+OK", server), server
    lab = _run(py, "jupyterlab.labextensions", env, tmp_path)
    line = next(ln for ln in lab.splitlines() if "jupyter-ddl" in ln)
    assert f"jupyter-ddl v{jupyter_ddl.__version__}" in line
    assert "enabled" in line and "OK" in line and "(python, jupyter-ddl)" in line


def _run(py: str, module: str, env: dict[str, str], cwd: Path) -> str:
    r = subprocess.run(
        [py, "-m", module, "list"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    # both tools print to stderr and colour their words: strip the escapes
    return re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)
