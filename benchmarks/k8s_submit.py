"""Kubernetes submit at the floor: from the cell's submit to the job object created,
per kind, beside ``kubectl create -f`` of the same objects, on a cluster 50 ms away.

The API double (its own process, as a real API server would be) adds ``DELAY_S`` to
every request: a round trip to a cluster in another zone. Ours is
``KubernetesBackend.submit`` (its pre-flight checks, the code's ConfigMap, the job,
the ownerReferences), timed from the call until the job's create returned (the
ownerReferences are made after it, and not timed). The first submit of a backend
reads discovery and the Trainer release and asks the access reviews; the later ones
find them kept (``checkcache``), so the rows are the median of the submits after the
first, and one row the first submit. The baseline runs ``kubectl create -f`` on a YAML
file holding the same objects as our submit created (renamed), with a discovery cache
kubectl filled on a first, untimed call, and ``--validate=false`` (the double serves no
OpenAPI document; kubectl then asks no server-side validation either, which only
makes it faster). No kubectl on PATH: that column says so.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.k8s_logs import double_process
from benchmarks.table import Row, summarize

ROOT = Path(__file__).resolve().parent.parent
AREA = "Kubernetes submit, API double 50 ms away"
DELAY_S = 0.05
TARGET = 1.5  # × kubectl create -f
KINDS = {  # kind: (strategy, replicas, target)
    "PyTorchJob": ("torch-ddp", {"Master": 1, "Worker": 1}, None),
    "TFJob": ("tf-multi-worker-mirrored", {"Worker": 2}, None),
    "MPIJob": ("horovod", {"Launcher": 1, "Worker": 1}, None),
    "TrainJob": ("torch-ddp", {"Node": 2}, "TrainJob"),
}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                 "ownerReferences", "selfLink")  # fmt: skip


def _say(msg: str) -> None:
    print(f"[k8s_submit] {msg}", file=sys.stderr, flush=True)


@contextmanager
def delayed_double(kubeconfig: Path, delay: float) -> Iterator[Path]:
    code = (
        "import sys; from pathlib import Path; from tests.k8s.apidouble import ApiDouble\n"
        "d = ApiDouble().start(); d.state.delay = float(sys.argv[2])\n"
        "d.kubeconfig(Path(sys.argv[1])); print('ready', flush=True)\n"
        "sys.stdin.read(); d.stop()\n"
    )
    with double_process(code, str(kubeconfig), str(delay)):
        yield kubeconfig


def _spec(kind: str) -> Any:
    from jupyter_ddl.models import JobSpec

    strategy, replicas, target = KINDS[kind]
    extra = {"target": target} if target else {}
    return JobSpec(name=f"s-{uuid.uuid4().hex[:6]}", strategy=strategy, replicas=replicas,
                   command=["python", "-c", "pass"], **extra)  # fmt: skip


def same_objects(conn: Any, kind: Any, name: str) -> list[dict[str, Any]]:
    """What our submit created for job ``name`` (its ConfigMap and Secret when there,
    then the job), as a user would write them, renamed to ``<name>k``."""
    from kubernetes.client import ApiException

    core = conn.client("CoreV1Api")
    out = []
    for read in (core.read_namespaced_config_map, core.read_namespaced_secret):
        try:
            out.append(conn.api.sanitize_for_serialization(read(name, conn.namespace)))
        except ApiException:
            continue
    out.append(conn.client("CustomObjectsApi").get_namespaced_custom_object(
        kind.group, kind.version, conn.namespace, kind.plural, name))  # fmt: skip
    kinds = ("ConfigMap", "Secret")
    for obj, k in zip(out, [*kinds[: len(out) - 1], None], strict=False):
        if k:
            obj.setdefault("kind", k)
            obj.setdefault("apiVersion", "v1")
        obj.pop("status", None)
        for f in SERVER_FIELDS:
            obj["metadata"].pop(f, None)
    return [json.loads(json.dumps(o).replace(f'"{name}', f'"{name}k')) for o in out]


def kubectl_create(kubectl: str, kubeconfig: Path, home: Path, objs: list[dict[str, Any]]) -> float:
    path = home / f"objs-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    t0 = time.perf_counter()
    done = subprocess.run([kubectl, "create", "--validate=false", "-f", str(path)], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"kubectl create -f: {done.stderr.strip()[-300:]}")
    return took


def run(repeats: int = 5, quick: bool = False, budget_s: float | None = None) -> list[Row]:
    sys.path.insert(0, str(ROOT))
    from jupyter_ddl.backends.kubernetes import KubernetesBackend, submit
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle

    repeats = 2 if quick else max(2, repeats)
    kubectl = shutil.which("kubectl")
    ours: dict[str, list[float]] = {k: [] for k in KINDS}
    theirs: dict[str, list[float]] = {k: [] for k in KINDS}
    first: list[float] = []
    before: dict[str, list[float]] = {k: [] for k in KINDS}
    with tempfile.TemporaryDirectory(prefix="k8s-submit-") as tmp, \
            delayed_double(Path(tmp) / "kc", DELAY_S) as kc:  # fmt: skip
        home = Path(tmp)
        backend = KubernetesBackend(Config(backend="kubernetes"), kubeconfig=str(kc),
                                    sa_dir=home / "no-sa", usage_every=0)  # fmt: skip
        created_at: list[float] = []
        real_create = submit._create_job

        def timed_create(*args: Any, **kwargs: Any) -> Any:
            got = real_create(*args, **kwargs)
            created_at.append(time.perf_counter())
            return got

        submit._create_job = timed_create  # the job's create returning: the figure's end
        try:
            warmed = False
            for i in range(repeats):
                for kind in KINDS:
                    spec = _spec(kind)
                    t0 = time.perf_counter()
                    backend.submit(spec, build_bundle("pass\n"))
                    took = created_at[-1] - t0
                    (first if i == 0 and kind == "PyTorchJob" else ours[kind]).append(took)
                    # the same submit as before this module: checks one after another,
                    # nothing kept (no cache, no pool)
                    t0 = time.perf_counter()
                    submit.submit(backend.conn, backend.config, _spec(kind), build_bundle("pass\n"))
                    before[kind].append(created_at[-1] - t0)
                    if kubectl is None:
                        continue
                    objs = same_objects(backend.conn, spec.shape.job_kind, spec.name)
                    if not warmed:  # kubectl's discovery cache, as a user's shell has it
                        kubectl_create(kubectl, kc, home, same_objects(backend.conn, spec.shape.job_kind, spec.name)[-1:])  # fmt: skip
                        warmed = True
                        objs = [json.loads(json.dumps(o).replace(f'"{spec.name}k', f'"{spec.name}kk')) for o in objs]  # fmt: skip
                    theirs[kind].append(kubectl_create(kubectl, kc, home, objs))
                    _say(f"{i} {kind}: ours {took:.3f} s, kubectl {theirs[kind][-1]:.3f} s")
        finally:
            submit._create_job = real_create
            backend.close()
    return rows(ours, theirs, first, None if kubectl else "kubectl is not on PATH", before)


def rows(ours: dict[str, list[float]], theirs: dict[str, list[float]], first: list[float],
         missing: str | None, before: dict[str, list[float]] | None = None) -> list[Row]:  # fmt: skip
    out = []
    base_name = "kubectl create -f (same objects)"
    for kind, samples in ours.items():
        measure = f"{kind}: cell to job created, after the first submit"
        o, o_r = summarize(samples)
        if missing or not theirs.get(kind):
            out.append(Row(AREA, measure, math.nan, None, base_name, f"≤ {TARGET}× baseline",
                           None, error=missing or "kubectl not measured"))  # fmt: skip
            continue
        b, b_r = summarize(theirs[kind])
        out.append(Row(AREA, measure, o, b, base_name, f"≤ {TARGET}× baseline",
                       o <= TARGET * b, "s", o_r, b_r))  # fmt: skip
        if before and before.get(kind):
            w, w_r = summarize(before[kind])
            out.append(Row(AREA, f"{kind}: checks one after another, nothing kept (before)", w,
                           b, base_name, "n/a", None, "s", w_r, b_r))  # fmt: skip
    if first and theirs.get("PyTorchJob"):
        b, b_r = summarize(theirs["PyTorchJob"])
        out.append(Row(AREA, "PyTorchJob: a backend's first submit (nothing kept yet)", first[0],
                       b, base_name, "n/a", None, "s", None, b_r))  # fmt: skip
    return out


if __name__ == "__main__":
    from benchmarks.table import render_text

    print(render_text(run(quick="--quick" in sys.argv)))
