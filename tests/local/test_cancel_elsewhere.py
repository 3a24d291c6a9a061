"""A cancel from a process other than the submitting kernel (the sidebar's server,
REST, a second kernel) ends a job at once, while the kernel that started its cold
supervisor lives on without reaping it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.config import Config
from jupyter_ddl.models import JobState
from tests.local.conftest import submit, wait_line

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]

CANCEL = """
import json, sys, time
from jupyter_ddl.backends.local import LocalBackend
backend = LocalBackend()
start = time.monotonic()
state = backend.cancel(sys.argv[1]).state.value
print(json.dumps({"took": time.monotonic() - start, "state": state}))
"""


def test_a_cancel_from_another_process_ends_the_job_within_seconds(data_dir, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    backend = LocalBackend(Config(local_warm_seconds=0))  # a cold supervisor, ours to reap
    code = "import time\nprint('up', flush=True)\ntime.sleep(600)\n"
    name = submit(backend, code, "tf-mirrored", {"Worker": 1})
    wait_line(backend, name, "worker-0", "up")
    done = subprocess.run(
        [sys.executable, "-c", CANCEL, name], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["state"] == JobState.CANCELLED.value
    # the supervisor stops its replica at once; 20 s was a wait for a zombie's pid to go
    assert answer["took"] < 10, answer
    assert backend.get(name).state == JobState.CANCELLED
