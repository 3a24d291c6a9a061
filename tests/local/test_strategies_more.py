"""More strategies on the local backend (CPU, real processes): torch-elastic through
torchrun's c10d rendezvous, deepspeed, torch-dp and the one-replica TF strategies."""

from __future__ import annotations

import pytest

from tests.local.conftest import lines, submit, wait
from tests.local.test_torch import SHIM_CELL, assert_trained_together, results
from tests.support import require

pytestmark = pytest.mark.slow


def test_torch_elastic_two_workers_rendezvous_and_train(backend):
    require.module("torch")
    probe = 'import os\nprint("ELASTIC", os.environ.get("TORCHELASTIC_RUN_ID"), os.environ.get("GROUP_RANK"))\n'
    name = submit(backend, probe + SHIM_CELL, "torch-elastic", {"Worker": 2})
    status = wait(backend, name, timeout=180)
    assert status.state.value == "Succeeded", status.message
    assert_trained_together(results(backend, name), 2)
    # each replica ran under its own torchrun agent, placed by the rendezvous
    probes = sorted(
        t for rid in ("worker-0", "worker-1") for t in lines(backend, name, rid) if "ELASTIC" in t
    )
    assert [p.split()[2] for p in probes] == ["0", "1"] and "None" not in probes[0], probes
