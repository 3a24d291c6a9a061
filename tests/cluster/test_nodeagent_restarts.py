"""The node agent restarts a failed container as the kubelet does: at once the first
time, then after a back-off that doubles (docs/operator-contract.md §11.13)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "cluster"))

from nodeagent.backoff import BACKOFF_MAX, Backoff
from nodeagent.pods import PodRunner

from tests.cluster.test_nodeagent import pod


def test_restart_back_off_is_the_kubelets():
    # the kubelet restarts a container at once after its first failure, then waits
    # 10 s, doubling to 5 min; a window unused for 10 min starts over
    t = [0.0]
    b = Backoff(clock=lambda: t[0])
    waits = []
    for _ in range(8):
        waits.append(b.wait())
        t[0] += waits[-1] + 1
    assert waits == [0, 10, 20, 40, 80, 160, 300, 300]
    t[0] += 2 * BACKOFF_MAX + 1
    assert b.wait() == 0 and b.wait() == 10


def test_a_crashing_container_restarts_at_once_then_backs_off(tmp_path):
    seen: list[dict] = []
    r = PodRunner(pod("crash", "import sys; sys.exit(1)", "OnFailure"), tmp_path, seen.append)
    r.start()
    try:
        main = lambda s: s["containerStatuses"][0]  # noqa: E731
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
            main(s).get("restartCount") == 1 and "running" in main(s)["state"] for s in seen
        ):
            time.sleep(0.1)
        first = next(i for i, s in enumerate(seen) if main(s).get("restartCount") == 1)
        reasons = [main(s)["state"].get("waiting", {}).get("reason") for s in seen[:first]]
        assert "CrashLoopBackOff" not in reasons, reasons
        while time.monotonic() < deadline and not any(
            main(s)["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff" for s in seen
        ):
            time.sleep(0.1)
        crash = [s for s in seen if "CrashLoopBackOff" in str(main(s)["state"])]
        assert crash and "back-off 10s" in main(crash[0])["state"]["waiting"]["message"]
        assert main(crash[0])["restartCount"] == 1
    finally:
        r.stop(1)
