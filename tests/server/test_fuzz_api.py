"""A property-based fuzz run of the REST API against its own OpenAPI document
(jupyter_ddl/server/openapi.json): schemathesis makes requests from the document, valid
and invalid, for every route and parameter, and sends them to a real jupyter_server
process (on loopback, under a Kubeflow-like base URL) with the extension loaded and a real
local job store holding finished jobs.

Checked for every answer: no 5xx; status, content type and body as documented; an error
is one line of JSON naming its cause; the answer is bounded in size and time.

Bounded: ``DDL_FUZZ_EXAMPLES`` examples per route and mode (default 15), under one seed
(``DDL_FUZZ_SEED``, default below) so a failure found in CI reproduces here.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import require
from support.serving import wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[2]
BASE_URL = "/notebook/team/fuzz-user/"
SEED = int(os.environ.get("DDL_FUZZ_SEED", "20261127"))
EXAMPLES = int(os.environ.get("DDL_FUZZ_EXAMPLES", "15"))
#: the most one answer may carry (a log page is capped at 4 MiB of text plus its JSON)
MAX_ANSWER = 6 << 20
#: the slowest one answer may be (a store of two finished jobs, on a loaded machine)
MAX_SECONDS = 15.0
#: the longest error message (one line naming the cause and the next step)
MAX_MESSAGE = 2000

JOBS = ["fuzz-a", "fuzz-b"]
TRAIN = """\
for step in range(3):
    print(f"step={step} loss={1.0 / (step + 1):.4f}", flush=True)
print("loss=nan", flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _plant_finished_jobs(names: list[str]) -> None:
    """Real local jobs, run to their end before the server starts (none is running, so
    a fuzzed ``follow=true`` ends at once)."""
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.manager import JobManager
    from jupyter_ddl.models import JobSpec

    manager = JobManager()
    try:
        for name in names:
            # tf-mirrored: its replica imports nothing before the cell (a second, not 10)
            spec = JobSpec(name=name, strategy="tf-mirrored", replicas={"Worker": 1})
            manager.submit(spec, build_bundle(TRAIN))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if all(manager.get(n, "local").state.finished for n in names):
                return
            time.sleep(0.3)
        raise AssertionError("the planted jobs did not finish in 90 s")
    finally:
        manager.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A jupyter_server process with the extension switched on by the file the wheel
    installs, on a data directory of its own; yields its URL (base URL included) and
    token. One for the module: the tests only read, but for the fuzzed deletes."""
    require.module("jupyter_server")
    require.module("schemathesis")
    from jupyter_ddl.backends.local import warm

    tmp_path = tmp_path_factory.mktemp("fuzz")
    data = tmp_path / "ddl-data"
    data.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_DDL_DATA_DIR", str(data))
        try:
            _plant_finished_jobs(JOBS)
            yield from _serve(tmp_path)
        finally:
            warm.stop_spares(warm.warm_dir(data))


def _serve(tmp_path: Path):
    config = tmp_path / "config"
    (config / "jupyter_server_config.d").mkdir(parents=True)
    enable = ROOT / "jupyter-config" / "jupyter_server_config.d" / "jupyter_ddl.json"
    shutil.copy(enable, config / "jupyter_server_config.d")
    root = tmp_path / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_PLATFORM_DIRS": "1"}
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--allow-root",
        f"--ServerApp.port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.base_url={BASE_URL}",
        f"--ServerApp.root_dir={root}",
    ]
    log_path = tmp_path / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}{BASE_URL}"
        try:
            wait_ready(f"{url}api/status?token={token}", proc, log_path, "jupyter_server")
            yield {"url": url, "token": token, "log": log_path}
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


#: values that name something that exists (the planted jobs, a backend, their replica),
#: and the one that makes a log answer a stream (of a finished job: it ends)
KNOWN = {"name": JOBS, "backend": ["local"], "replica": ["worker-0"], "follow": ["1"]}


def _aimed(cases, operation):
    """Valid cases, each parameter that names something (a job, a backend, a replica)
    now and then set to a name that exists, so the run reaches real jobs and not only
    404s (a document that allows any string for them makes a hit unlikely)."""
    from hypothesis import strategies as st

    declared = {p.name for p in operation.path_parameters} | {p.name for p in operation.query}
    wanted = {k: v for k, v in KNOWN.items() if k in declared}
    picks = st.fixed_dictionaries({k: st.sampled_from([None, *v]) for k, v in wanted.items()})

    def aim(pair):
        case, pick = pair
        for key, value in pick.items():
            if value is None:
                continue
            if key in (case.path_parameters or {}):
                case.path_parameters[key] = value
            else:
                case.query = {**(case.query or {}), key: value}
        return case

    return st.tuples(cases, picks).map(aim)


def test_fuzz_every_route_against_the_document(server):
    require.module("schemathesis")
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    from jupyter_ddl.server.handlers import OPENAPI

    schema = schemathesis.openapi.from_dict(json.loads(OPENAPI.read_text()))
    headers = {"Authorization": f"token {server['token']}"}
    base = server["url"].rstrip("/")
    operations = [result.ok() for result in schema.get_all_operations()]
    # a stream that stays open has a test of its own; deletes last (they end the jobs)
    operations = [op for op in operations if op.path != "/jupyter-ddl/events"]
    operations.sort(key=lambda op: op.method.upper() == "DELETE")
    failures: list[str] = []
    answered: dict[str, set[int]] = {op.label: set() for op in operations}
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            cases = operation.as_strategy(generation_mode=mode)
            if mode is GenerationMode.POSITIVE:
                cases = _aimed(cases, operation)

            @seed(SEED)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
                # no shrinking: the seed replays a failure, and shrinking one costs minutes
                phases=[Phase.explicit, Phase.generate],
            )
            @given(case=cases)
            def run(case):
                started = time.monotonic()
                response = case.call(base_url=base, headers=headers, timeout=MAX_SECONDS)
                took = time.monotonic() - started
                answered[case.operation.label].add(response.status_code)
                unreachable = _cluster_unreachable(case, response)
                excluded = [not_a_server_error] if unreachable else []
                if _names_unknown_value(response):
                    excluded.append(positive_data_acceptance)
                case.validate_response(response, headers=headers, excluded_checks=excluded)
                _ours(response, took, unreachable)

            try:
                run()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE and not operation.query, operation.label
            except BaseException as e:  # every route is tried, then all failures are shown
                if isinstance(e, KeyboardInterrupt):
                    raise
                failures.append(f"{operation.label} ({mode.value}): {str(e)[:1500]}")
    assert not failures, "\n\n".join(failures)
    # the run reached real jobs, not only 400s and 404s
    missed = [label for label, got in answered.items() if not any(200 <= c < 300 for c in got)]
    assert not missed, answered


def _cluster_unreachable(case, response) -> bool:
    """A 503 is documented for one case only: the kubernetes backend, asked by name,
    cannot be reached (no cluster here)."""
    if response.status_code != 503 or (case.query or {}).get("backend") != "kubernetes":
        return False
    return response.json().get("error") in ("BackendUnavailable", "ClusterUnreachable")


def _names_unknown_value(response) -> bool:
    """A 400 for a value the document allows as text but no backend or job state has
    (the installed backends and the states are not listed there): the answer names it."""
    if response.status_code != 400:
        return False
    message = response.json().get("message", "")
    return message.startswith(("backend: unknown backend ", "state: unknown job state "))


def _ours(response, took: float, unreachable: bool) -> None:
    body = response.content
    assert took < MAX_SECONDS, f"answered in {took:.1f} s"
    assert len(body) <= MAX_ANSWER, f"{len(body)} bytes"
    assert response.status_code < 500 or unreachable, body[:500]
    if response.status_code >= 400:
        assert response.headers.get("content-type", [""])[0].startswith("application/json")
        data = json.loads(body)
        assert isinstance(data, dict) and data.get("error") and data.get("message"), data
        message = data["message"]
        assert "\n" not in message and len(message) <= MAX_MESSAGE, message[:300]


def test_the_event_stream_answers_as_documented(server):
    """The one route the fuzz run leaves out (it stays open): its first event comes at
    once, as the documented content type, and lists the jobs."""
    import requests

    url = f"{server['url']}jupyter-ddl/events"
    headers = {"Authorization": f"token {server['token']}"}
    with requests.get(url, headers=headers, stream=True, timeout=MAX_SECONDS) as r:
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        frame = b""
        for chunk in r.iter_content(chunk_size=None):
            frame += chunk
            if b"\nevent: " in b"\n" + frame and frame.endswith(b"\n\n") or len(frame) > MAX_ANSWER:
                break
    # the first frame with an event (a comment saying the stream is open comes first)
    frames = [f for f in frame.decode().split("\n\n") if f.startswith("event: ")]
    fields = dict(line.split(": ", 1) for line in frames[0].splitlines())
    assert fields["event"] == "jobs"
    listed = json.loads(fields["data"])
    assert isinstance(listed["jobs"], list) and isinstance(listed["unavailable"], list)
    assert {j["name"] for j in listed["jobs"]} <= set(JOBS)  # the fuzzed deletes ran first
