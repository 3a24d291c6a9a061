"""REST over real local jobs: log pages and streams carry no report() lines, a tail
counts user lines, the metrics still come from them; the job detail names each
replica's rank, the cell the job came from and the root cause of a failure."""

from __future__ import annotations

import json

import pytest

from .conftest import get_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

REPORTS = """\
for step in range(6):
    report(step=step, loss=1.0 / (step + 1))
    print(f"user line {step}", flush=True)
report(step=6, loss=0.1)
"""

CRASH = """\
import torch, torch.distributed as dist
if rank == 1:
    raise ValueError("boom")
dist.all_reduce(torch.ones(1))
"""


def _submit(manager, name, code, replicas, **fields):
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.models import JobSpec

    spec = JobSpec(name=name, strategy="torch-ddp", replicas=replicas, notebook="train.ipynb",
                   cell_id="3f2a9c1d-0000-4000-8000-000000000000", dist_backend="gloo", **fields)  # fmt: skip
    manager.submit(spec, build_bundle(code, notebook="train.ipynb"))


async def test_logs_metrics_and_detail(jp_fetch, ddl_app):
    from jupyter_ddl.core.metrics import METRIC_MARKER
    from jupyter_ddl.models import RestartPolicy

    _submit(ddl_app.manager, "ul-rest", REPORTS, {"Master": 1, "Worker": 0})
    chunks: list[bytes] = []
    await jp_fetch(
        "jupyter-ddl", "jobs", "ul-rest", "logs", params={"follow": "1"},
        streaming_callback=chunks.append, request_timeout=90,
    )  # fmt: skip
    streamed = b"".join(chunks).decode()
    assert "user line 5" in streamed and METRIC_MARKER not in streamed

    page = await get_json(jp_fetch, "jupyter-ddl", "jobs", "ul-rest", "logs", params={"tail": "2"})
    assert [ln["text"] for ln in page["lines"]] == ["user line 4", "user line 5"]
    metrics = await get_json(jp_fetch, "jupyter-ddl", "jobs", "ul-rest", "metrics")
    assert [p["step"] for p in metrics["points"]] == list(range(7))
    assert {p["source"] for p in metrics["points"]} == {"report"}

    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "ul-rest")
    assert detail["cell_id"].startswith("3f2a9c1d") and detail["replicas"][0]["rank"] == 0
    assert detail["root_cause"] is None and detail["backoff_limit"] == 3
    listed = await get_json(jp_fetch, "jupyter-ddl", "jobs")
    assert next(j for j in listed["jobs"] if j["name"] == "ul-rest")["cell_id"]

    _submit(ddl_app.manager, "ul-crash", CRASH, {"Master": 1, "Worker": 1},
            restart_policy=RestartPolicy.NEVER)  # fmt: skip
    ddl_app.manager.wait("ul-crash", timeout=90)
    detail = await get_json(jp_fetch, "jupyter-ddl", "jobs", "ul-crash")
    cause = detail["root_cause"]
    assert (cause["replica"], cause["rank"]) == ("worker-0", 1), json.dumps(cause)
    assert (
        cause["summary"].startswith("ValueError: boom") and cause["tail"][-1] == "ValueError: boom"
    )
    assert detail["message"].startswith("worker-0 · rank 1 failed first: ValueError: boom")
