"""At the process boundary: a real kernel (nbclient) and a real Jupyter server, each
started with the ``kubernetes`` client unimportable (a start-up import blocker), with a
kubeconfig pointing at a closed port, or with no kubeconfig. ``%ddl list`` and the REST
job list still show the local job with one line naming the unavailable backend, and
``%ddl status/logs/cancel`` of an unknown name answer JobNotFound in one line."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from tests.support import deadends, require

from .conftest import LOCAL_JOB

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
BLOCKER = REPO / "tests" / "support" / "blocker"
#: generous bound on one command or request; the measured figures are far below
BOUND_S = 4.0

CASES = {
    "import-blocked": "kubernetes: the Python client cannot be imported (No module named 'kubernetes')",
    "closed-port": "kubernetes: not reachable at {url}: connection refused",
    "no-kubeconfig": "kubernetes: not configured (no kubeconfig at",
}


def environment(case: str, data_dir: Path, tmp_path: Path) -> tuple[dict[str, str], str]:
    """The child's environment and the line its list must show for ``case``."""
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env["JUPYTER_DDL_DATA_DIR"] = str(data_dir)
    env["KUBECONFIG"] = str(tmp_path / "absent-kubeconfig")
    paths = [str(REPO)]
    expected = CASES[case]
    if case == "import-blocked":
        paths.insert(0, str(BLOCKER))
        env["JUPYTER_DDL_TEST_BLOCK"] = "kubernetes"
    elif case == "closed-port":
        url = deadends.closed_port_url()
        env["KUBECONFIG"] = str(deadends.write_kubeconfig(tmp_path / "kc", url, insecure=True))
        expected = expected.format(url=url)
    env["PYTHONPATH"] = os.pathsep.join(paths + [p for p in [env.get("PYTHONPATH")] if p])
    for k in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        (tmp_path / k.lower()).mkdir(exist_ok=True)
        env[k] = str(tmp_path / k.lower())
    return env, expected


def _seconds(cell) -> float:
    t = cell.metadata["execution"]
    start = datetime.fromisoformat(t["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.mark.parametrize("case", list(CASES))
def test_ddl_commands_in_a_kernel(case, local_jobs, tmp_path):
    require.module("nbclient")
    require.module("ipykernel")
    import nbformat
    from nbclient import NotebookClient

    env, expected = environment(case, local_jobs, tmp_path)
    sources = [
        "%load_ext jupyter_ddl",
        "%ddl list",
        "%ddl list",
        "%ddl status no-such-job",
        "%ddl logs no-such-job",
        "%ddl cancel no-such-job",
        f"%ddl logs {LOCAL_JOB}",
        "import sys; print('kubernetes' in sys.modules)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True)
    client.execute(env=env, cwd=str(tmp_path))
    cells = nb.cells

    for listed in cells[1:3]:
        out = _text(listed).splitlines()
        assert any(line.split()[:2] == [LOCAL_JOB, "local"] for line in out), out
        down = [line for line in out if line.startswith("kubernetes:")]
        assert len(down) == 1 and down[0].startswith(expected), out
        assert not [o for o in listed.outputs if o.output_type == "error"]
    for missing in cells[3:6]:
        errors = [o for o in missing.outputs if o.output_type == "error"]
        assert len(errors) == 1 and len(errors[0].traceback) == 1, missing.outputs
        line = errors[0].traceback[0]
        assert "JobNotFound" in line and "no job named 'no-such-job' in local" in line
        assert expected.split(" (")[0] in line and "Traceback" not in line
    assert _text(cells[6]).strip() == "[worker-0] local replica ran"
    if case == "import-blocked":
        assert _text(cells[7]).strip() == "False"  # the blocker held: nothing imported it

    pairs = enumerate(zip(sources, cells, strict=True))
    times = {f"{i} {s}": round(_seconds(c), 3) for i, (s, c) in pairs if 0 < i < 7}
    print(f"\nkernel, {case}: {times}")
    assert max(times.values()) < BOUND_S, times


def _get(url: str, token: str) -> tuple[int, dict, float]:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    return status, json.loads(body), time.monotonic() - start


@pytest.mark.parametrize("case", list(CASES))
def test_rest_job_list_in_a_server(case, local_jobs, tmp_path):
    require.module("jupyter_server")
    env, expected = environment(case, local_jobs, tmp_path)
    port, token = deadends.free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
        f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
    ]  # fmt: skip
    # the server extension is switched on by the very file the wheel installs
    enable = Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.d"
    enable.mkdir()
    shutil.copy(REPO / "jupyter-config" / "jupyter_server_config.d" / "jupyter_ddl.json", enable)
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if _get(f"{base}/api/status", token)[0] == 200:
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.3)

        firsts = []
        for _ in range(2):
            status, body, seconds = _get(f"{base}/jupyter-ddl/jobs", token)
            firsts.append(round(seconds, 3))
            assert status == 200, body
            assert [j["name"] for j in body["jobs"]] == [LOCAL_JOB]
            assert len(body["unavailable"]) == 1, body
            down = body["unavailable"][0]
            assert down["backend"] == "kubernetes" and down["message"].startswith(expected)
        status, body, missing_s = _get(f"{base}/jupyter-ddl/jobs/no-such-job", token)
        assert status == 404 and body["error"] == "JobNotFound"
        assert expected.split(" (")[0] in body["message"] and "\n" not in body["message"]
        status, body, _ = _get(f"{base}/jupyter-ddl/backends", token)
        by_name = {b["name"]: b for b in body["backends"]}
        assert by_name["local"]["available"] and not by_name["kubernetes"]["available"]
        assert "Traceback" not in (tmp_path / "server.log").read_text()
        print(f"\nREST, {case}: job list {firsts} s, unknown job {missing_s:.3f} s")
        assert max(firsts) < BOUND_S
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
