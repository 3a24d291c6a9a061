"""The Kubeflow SDKs' side of the real-tier benchmark and scenario (helper, no ``run``).

Runs in the SDKs' own virtual environment (``SDK_VENV``; ``scripts/setup --test``
makes it): ``kubeflow`` caps the kubernetes client below 36, which jupyter-ddl needs,
so neither SDK can share the project's environment, and nothing here imports
``jupyter_ddl``. The parent passes one JSON argument and reads one ``RESULT {...}``
line from stdout.

- ``bench``: per repeat, the SDK's create call timed alone (``TrainingClient.create_job``
  for the Training SDK v1, ``TrainerClient.train`` for the Trainer SDK v2), then the
  first line of the job's code as the SDK shows it: wait for the job to run (the SDK's
  own wait, polled each second, its shortest) and follow its logs; then delete it.
- ``create``: create one job that runs until stopped and print its name (the
  scenario's product side lists, reads and cancels it).
- ``cycle``: create, wait to the end, read the logs, delete: the SDK's whole round.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SDK_VENV = Path(os.environ.get("JDDL_SDK_VENV") or ROOT / ".cluster" / "sdk-venv")
MARK = "first-line"
WAIT_S = 120


def cell() -> None:
    """The job's code: one line, then a little work so the pods are seen running."""
    import time

    print("first-line", flush=True)
    time.sleep(3)


def tf_cell() -> None:
    """A TFJob worker's code: its first line, then the task the training operator set in
    ``TF_CONFIG`` (what ``tf.distribute`` reads; importing TensorFlow itself would cost
    each worker seconds of CPU and test nothing of the operator's)."""
    import json
    import os
    import time

    print("first-line", flush=True)
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    print(f"tf-task {task['type']} {task['index']}", flush=True)
    time.sleep(3)


def long_cell() -> None:
    """A job that runs until someone stops it (the scenario cancels it)."""
    import time

    print("first-line", flush=True)
    time.sleep(600)


class _FirstLine:
    """A stdout stand-in that notes when the SDK printed the job's first line (the
    Training SDK v1 follows logs by printing them)."""

    def __init__(self, out: Any) -> None:
        self.out, self.at = out, None

    def write(self, text: str) -> int:
        if self.at is None and MARK in text:
            self.at = time.perf_counter()
        return int(self.out.write(text))

    def flush(self) -> None:
        self.out.flush()


def v1_client(kubeconfig: str, namespace: str, kind: str) -> Any:
    from kubeflow.training import TrainingClient

    return TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=kind)


def v1_create(client: Any, name: str, func: Any = cell) -> None:
    # a TFJob from a function: two Workers, no Chief, each run as `python -u` (the SDK's)
    client.create_job(name=name, train_func=func, num_workers=2, base_image="python:3.11")


def v1_first_line(client: Any, name: str) -> float | None:
    client.wait_for_job_conditions(
        name,
        expected_conditions={"Running", "Succeeded", "Failed"},
        timeout=WAIT_S,
        polling_interval=1,
    )
    seen = _FirstLine(sys.stdout)
    sys.stdout = seen  # type: ignore[assignment]
    try:
        client.get_job_logs(name, follow=True)
    finally:
        sys.stdout = seen.out
    return seen.at


def v2_client(kubeconfig: str, namespace: str) -> Any:
    from kubeflow.trainer import KubernetesBackendConfig, TrainerClient

    return TrainerClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig))


def v2_create(client: Any, runtime: Any, func: Any = cell) -> str:
    from kubeflow.trainer import CustomTrainer

    return str(client.train(runtime=runtime, trainer=CustomTrainer(func=func, num_nodes=2)))


def v2_first_line(client: Any, name: str) -> float | None:
    client.wait_for_job_status(
        name, status={"Running", "Complete", "Failed"}, timeout=WAIT_S, polling_interval=1
    )
    for line in client.get_job_logs(name, follow=True):
        if MARK in line:
            return time.perf_counter()
    return None


def bench(a: dict[str, Any]) -> dict[str, Any]:
    created: list[float] = []
    first: list[float | None] = []
    if a["sdk"] == "v1":
        client = v1_client(a["kubeconfig"], a["namespace"], a["kind"])
        client.list_jobs()  # the client's connection up, as a notebook's would be
    else:
        client = v2_client(a["kubeconfig"], a["namespace"])
        runtime = client.get_runtime("torch-distributed")  # what a user looks up first
    for _ in range(int(a["repeats"])):
        t0 = time.perf_counter()
        if a["sdk"] == "v1":
            name = f"sdk1-{uuid.uuid4().hex[:6]}"
            v1_create(client, name)
        else:
            name = v2_create(client, runtime)
        created.append(time.perf_counter() - t0)
        try:
            if a.get("first_line", True):
                at = (v1_first_line if a["sdk"] == "v1" else v2_first_line)(client, name)
                first.append(None if at is None else at - t0)
        finally:
            client.delete_job(name)
    return {"created": created, "first_line": first}


def create(a: dict[str, Any]) -> dict[str, Any]:
    if a["sdk"] == "v1":
        name = f"sdk1-{uuid.uuid4().hex[:6]}"
        v1_create(v1_client(a["kubeconfig"], a["namespace"], a["kind"]), name, long_cell)
        return {"name": name}
    client = v2_client(a["kubeconfig"], a["namespace"])
    return {"name": v2_create(client, client.get_runtime("torch-distributed"), long_cell)}


def cycle(a: dict[str, Any]) -> dict[str, Any]:
    """Create, wait until it ended, logs, delete: what each SDK's own docs walk through."""
    if a["sdk"] == "v1":
        client = v1_client(a["kubeconfig"], a["namespace"], a["kind"])
        name = f"sdk1-{uuid.uuid4().hex[:6]}"
        v1_create(client, name, tf_cell if a["kind"] == "TFJob" else cell)
        job = client.wait_for_job_conditions(name, timeout=WAIT_S * 2, polling_interval=1)
        ended = "Succeeded" if client.is_job_succeeded(name, job=job) else "not succeeded"
        logs, _ = client.get_job_logs(name, is_master=False)
        client.delete_job(name)
        gone = _v1_gone(client, name)
        return {"name": name, "state": ended, "logs": logs, "gone": gone}
    client = v2_client(a["kubeconfig"], a["namespace"])
    name = v2_create(client, client.get_runtime("torch-distributed"))
    job = client.wait_for_job_status(name, timeout=WAIT_S * 2, polling_interval=1)
    logs = list(client.get_job_logs(name))
    client.delete_job(name)
    gone = _v2_gone(client, name)
    return {"name": name, "state": job.status, "logs": {"node-0": "".join(logs)}, "gone": gone}


def _v1_gone(client: Any, name: str) -> bool:
    for _ in range(30):
        if name not in [j.metadata.name for j in client.list_jobs()]:
            return True
        time.sleep(1)
    return False


def _v2_gone(client: Any, name: str) -> bool:
    for _ in range(30):
        if name not in [j.name for j in client.list_jobs()]:
            return True
        time.sleep(1)
    return False


def root_cause(exc: BaseException) -> str:
    """The SDK's error with what it wrapped, down to the API's answer: the SDKs raise
    their own one-line errors ``from`` the kubernetes client's ``ApiException``, whose
    status and body say what the API server refused, and why."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(parts) < 6:
        status = getattr(seen, "status", None)
        body = getattr(seen, "body", None)
        if status is not None:
            parts.append(f"{type(seen).__name__} {status}: {str(body or seen)[:400]}")
        else:
            parts.append(f"{type(seen).__name__}: {str(seen)[:300]}")
        seen = seen.__cause__ or seen.__context__
    return " <- ".join(parts).replace("\n", " ")


if __name__ == "__main__":
    args = json.loads(sys.argv[1])
    do = {"bench": bench, "create": create, "cycle": cycle}[args["op"]]
    try:
        got = do(args)
    except Exception as e:  # noqa: BLE001 - whatever the SDK raised, said in one line
        # one line with the whole chain, last on stderr, where the parent reads it
        print(f"FAILED {root_cause(e)}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    print("RESULT " + json.dumps(got), flush=True)
