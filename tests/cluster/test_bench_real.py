"""The real-tier benchmark runs (one repeat) and yields its rows; never how fast.

``benchmarks.k8s_real`` itself is run by hand (``python -m benchmarks.k8s_real``) on a
quiet machine; here it only proves the harness works against the real apiserver behind
the delaying proxy, with both Kubeflow SDKs.
"""

from __future__ import annotations

import math
import socket
import time

from benchmarks.delay_proxy import delayed, upstream_of
from benchmarks.k8s_real import KINDS, SDK_NAMES, measure
from benchmarks.k8s_real_sdk import SDK_VENV
from tests.cluster.tier import KUBECONFIG, MARKS, built
from tests.support import require

pytestmark = MARKS


def sdks() -> None:
    if not (SDK_VENV / "bin" / "python").exists():
        require._missing(f"the Kubeflow SDKs' environment {SDK_VENV}")


def test_the_proxy_adds_the_round_trip_to_the_real_apiserver(tier, tmp_path):
    host, port = upstream_of(KUBECONFIG)

    def connect(p: int) -> float:
        t0 = time.perf_counter()
        with socket.create_connection((host, p), timeout=5) as s:
            # plain HTTP to a TLS port: Go's server answers 400 at once
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            assert s.recv(12).startswith(b"HTTP/1.0 400")
        return time.perf_counter() - t0

    with delayed(KUBECONFIG, tmp_path / "kc", 0.2) as kc:
        proxied = upstream_of(kc)[1]
        # a connection (one round trip) then a request and its answer (another)
        assert connect(proxied) >= 0.4
    assert connect(port) < 0.4


def test_the_benchmark_yields_a_row_per_kind_and_baseline(tier):
    for operator in ("training-operator", "mpi-operator", "trainer-v2.3.0", "jobset-controller"):
        built(operator)
    sdks()
    # an MPIJob's first line is left out: its launcher reaches the workers over SSH,
    # which the tier does not run yet (its created row stays)
    rows = measure(KUBECONFIG, repeats=1, first_line=("PyTorchJob", "TFJob", "TrainJob"))
    errors = [f"{r.measure}: {r.error}" for r in rows if r.error]
    assert not errors, errors
    got = {(r.measure, r.baseline_name): r for r in rows}
    for kind, (*_, sdk) in KINDS.items():
        created = got[(f"{kind}: cell to job created", "kubectl create -f (dry-run YAML)")]
        assert math.isfinite(created.ours) and created.baseline and created.baseline > 0
        if sdk is not None:
            for measure_name, name in (
                (f"{kind}: cell to job created", SDK_NAMES[sdk]),
                (f"{kind}: cell to first log line", f"{SDK_NAMES[sdk]}, wait, logs"),
            ):
                row = got[(measure_name, name)]
                assert math.isfinite(row.ours) and row.baseline and row.baseline > 0, row
    assert any("first submit" in r.measure for r in rows)
