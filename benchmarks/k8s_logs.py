"""Kubernetes log streaming and submit latency, against the API double.

The real ``kubernetes`` client talks HTTP to the API double (tests/k8s/apidouble),
whose kubelet runs every pod as a local process. Each repeat runs two identical
8-pod PyTorchJobs whose replicas print ``rate`` lines/s for ``seconds``, each line
carrying its write time:

- **ours**: ``KubernetesBackend.watch`` (all pods followed at once, as they start);
- **baseline**: pods followed one at a time with ``read_namespaced_pod_log(follow=True)``,
  as a simple client (and the Kubeflow v1 SDK) does.

Latency = line delivered to the caller − line written in the replica. Throughput =
lines delivered / (last delivery − first write). Submit latency = ``submit`` call to
job object created, with the code in a ConfigMap and with an image push to a real
``docker-registry`` (new code each time, so a layer is really pushed); the baseline is
creating the same job object directly with ``create_namespaced_custom_object``.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.table import Row, summarize

AREA = "log streaming, Kubernetes API double"
ROOT = Path(__file__).resolve().parent.parent
_T0 = time.monotonic()  # the budget counts from the module's start, imports included
SUBMIT_PART_S = 30.0  # what the submit rows (registry included) take on a loaded box
PODS = 8

CELL = """\
import os, time
rank, rate, seconds = os.environ["RANK"], int(os.environ["RATE"]), float(os.environ["SECONDS"])
n = int(rate * seconds)
t0 = time.time()
for i in range(n):
    delay = t0 + i / rate - time.time()
    if delay > 0:
        time.sleep(delay)
    print(f"L {rank} {i} {time.time():.6f}", flush=True)
open(os.path.join(os.environ["MARKS"], "done-" + rank), "w").close()
while rank == "0" and len(os.listdir(os.environ["MARKS"])) < int(os.environ["WORLD_SIZE"]):
    time.sleep(0.05)  # the master's end ends a PyTorchJob: wait for the others
"""


def _say(msg: str) -> None:
    """Progress on stderr (the runner keeps it in the module's log)."""
    print(f"[k8s_logs {time.monotonic() - _T0:5.1f}s] {msg}", file=sys.stderr, flush=True)


def _spec(rate: int, seconds: float, marks: Path) -> Any:
    from jupyter_ddl.manifests import CODE_DIR
    from jupyter_ddl.models import CleanPodPolicy, JobSpec

    # cleanPodPolicy None: pods stay after the master ends, so a one-at-a-time
    # follower can still read the later pods (with Running it would lose them)
    return JobSpec(
        clean_pod_policy=CleanPodPolicy.NONE,
        name=f"bench-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": PODS - 1},
        command=["python", "-u", f"{CODE_DIR}/cell.py"],
        env={"RATE": str(rate), "SECONDS": str(seconds), "MARKS": str(marks)},
    )


def _parse(text: str) -> tuple[str, int, float] | None:
    parts = text.split(" ")
    if len(parts) != 4 or parts[0] != "L":
        return None
    return parts[1], int(parts[2]), float(parts[3])


def _stats(got: list[tuple[str, int, float, float]], expected: int) -> dict[str, float]:
    lat = sorted(recv - sent for _, _, sent, recv in got)
    unique = {(r, i) for r, i, _, _ in got}
    span = max(recv for *_, recv in got) - min(sent for _, _, sent, _ in got) if got else 1.0
    return {
        "median_ms": 1000 * statistics.median(lat) if lat else float("inf"),
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("inf"),
        "throughput": len(unique) / span,
        "lost": float(expected - len(unique)),
    }


def ours(backend: Any, name: str) -> list[tuple[str, int, float, float]]:
    from jupyter_ddl.models import EventKind

    got = []
    stop = threading.Event()
    timer = threading.Timer(60, stop.set)
    timer.start()
    for ev in backend.watch(name, stop=stop):
        if ev.kind == EventKind.LOG and ev.log is not None:
            now = time.time()
            p = _parse(ev.log.text)
            if p:
                got.append((*p, now))
    timer.cancel()
    return got


def baseline(conn: Any, name: str) -> list[tuple[str, int, float, float]]:
    """Follow the pods one after the other, each until its container ends."""
    from kubernetes.client import ApiException

    core = conn.client("CoreV1Api")
    got: list[tuple[str, int, float, float]] = []
    pods = [f"{name}-master-0"] + [f"{name}-worker-{i}" for i in range(PODS - 1)]
    for pod in pods:
        while True:  # wait until the pod exists and has started
            try:
                p = core.read_namespaced_pod(pod, conn.namespace)
            except ApiException as e:
                if e.status != 404:
                    raise
                time.sleep(0.05)
                continue
            if (
                p.status
                and p.status.container_statuses
                and p.status.container_statuses[0].container_id
            ):
                break
            time.sleep(0.05)
        try:
            resp = core.read_namespaced_pod_log(
                pod, conn.namespace, follow=True, _preload_content=False
            )
        except ApiException as e:
            if e.status == 404:
                continue  # the pod is gone: its lines count as lost
            raise
        pending = b""
        for chunk in resp.stream(4096):
            now = time.time()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                parsed = _parse(raw.decode())
                if parsed:
                    got.append((*parsed, now))
        resp.release_conn()
    return got


def _registry(root: Path) -> tuple[Any, str] | None:
    """A plain docker-registry with a small base image, or None when not installed."""
    import shutil
    import subprocess

    if not (shutil.which("docker-registry") and shutil.which("skopeo")):
        return None
    from tests.image.bases import make_layout
    from tests.image.registries import start_registry

    reg = start_registry("plain", root / "registry")
    layout = make_layout(root / "layout")
    subprocess.run(["skopeo", "copy", "--dest-tls-verify=false", f"oci:{layout}:base",
                    f"docker://{reg.host}/base:1"], check=True, capture_output=True)  # fmt: skip
    return reg, f"{reg.host}/base:1"


@contextlib.contextmanager
def serve_double(kubeconfig: Path) -> Iterator[Path]:
    """The API double (with its operator and kubelet) in its own process, as a real API
    server would be: sharing our interpreter's GIL would slow both sides."""
    code = (
        "import sys; from pathlib import Path; from tests.k8s.apidouble import ApiDouble\n"
        "d = ApiDouble().start(); d.kubeconfig(Path(sys.argv[1])); print('ready', flush=True)\n"
        "sys.stdin.read(); d.stop()\n"
    )
    with double_process(code, str(kubeconfig)):
        yield kubeconfig


@contextlib.contextmanager
def double_process(code: str, *args: str) -> Iterator[None]:
    """Run ``code`` (which starts the API double and prints "ready") in its own
    interpreter until the block ends; closing its stdin stops it."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        yield
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def submit_latency(
    backend: Any, repeats: int, image: str | None
) -> tuple[list[float], list[float]]:
    """(ours, baseline) seconds for ``repeats`` submits of a 1-replica job."""
    from jupyter_ddl.core.bundle import build_bundle
    from jupyter_ddl.core.kinds import PYTORCHJOB
    from jupyter_ddl.manifests import build_manifests
    from jupyter_ddl.models import JobSpec

    co = backend.conn.client("CustomObjectsApi")
    mine, base = [], []
    for i in range(repeats):
        spec = JobSpec(name=f"sub-{uuid.uuid4().hex[:6]}", strategy="torch-ddp", replicas={"Master": 1},
                       command=["python", "-c", "pass"], image=image)  # fmt: skip
        bundle = build_bundle(f"print({i}, {time.time()!r})\n")  # new code: a real push
        t0 = time.perf_counter()
        backend.submit(spec, bundle)
        mine.append(time.perf_counter() - t0)
        job = build_manifests(spec, image=image or "img", command=["python", "x.py"])[0]
        job["metadata"]["name"] = spec.name + "-b"
        t0 = time.perf_counter()
        co.create_namespaced_custom_object(
            PYTORCHJOB.group, PYTORCHJOB.version, backend.conn.namespace, PYTORCHJOB.plural, job
        )
        base.append(time.perf_counter() - t0)
    return mine, base


def run(
    repeats: int = 2,
    quick: bool = False,
    budget_s: float = 90.0,
    rates: tuple[int, ...] = (500, 2000),
    seconds: float = 1.5,
) -> list[Row]:
    """Log rows per writing rate (up to 2,000 lines/s per pod), then submit rows."""
    sys.path.insert(0, str(ROOT))
    from jupyter_ddl.backends.kubernetes import KubernetesBackend
    from jupyter_ddl.config import Config
    from jupyter_ddl.core.bundle import build_bundle

    repeats = 1 if quick else max(1, min(repeats, 3))
    samples: dict[tuple[int, str], list[dict[str, float]]] = {}
    _say("starting the API double")
    with (
        tempfile.TemporaryDirectory(prefix="k8s-bench-") as tmp,
        serve_double(Path(tmp) / "kc") as kc,
    ):
        root = Path(tmp)
        backend = KubernetesBackend(
            Config(backend="kubernetes"), kubeconfig=str(kc), sa_dir=root, usage_every=0
        )
        started, done = time.monotonic(), 0
        for r in range(repeats):
            for rate in rates:
                per = (time.monotonic() - started) / done if done else 0.0
                if done and time.monotonic() - _T0 + per + SUBMIT_PART_S > budget_s:
                    break  # the next repeat would not leave room for the submit rows
                for who in ("ours", "base"):
                    marks = root / f"marks-{r}-{rate}-{who}"
                    marks.mkdir()
                    spec = _spec(rate, seconds, marks)
                    _say(f"repeat {r}, {rate} lines/s, {who}")
                    backend.submit(spec, build_bundle(CELL))
                    got = (
                        ours(backend, spec.name)
                        if who == "ours"
                        else baseline(backend.conn, spec.name)
                    )
                    samples.setdefault((rate, who), []).append(
                        _stats(got, PODS * int(rate * seconds))
                    )
                    backend.delete(spec.name)
                done += 1
        _say("submit latency")
        n_sub = 2 if quick else 5
        sub_cm = submit_latency(backend, n_sub, None)
        reg = _registry(root)
        sub_img = None
        if reg is not None:
            backend.config.registry = f"{reg[0].host}/bench"
            backend.config.insecure_registries = [reg[0].host]
            sub_img = submit_latency(backend, n_sub, reg[1])
            reg[0].stop()
        backend.close()
    return _rows(samples, sub_cm, sub_img)


def _rows(
    samples: dict[tuple[int, str], list[dict[str, float]]],
    sub_cm: tuple[list[float], list[float]],
    sub_img: tuple[list[float], list[float]] | None,
) -> list[Row]:
    base_name = "pods followed one at a time (read_namespaced_pod_log follow)"
    rows = []
    for rate in sorted({r for r, _ in samples}):
        if (rate, "base") not in samples:
            continue

        def col(who: str, key: str, rate: int = rate) -> tuple[float, tuple[float, float]]:
            return summarize([s[key] for s in samples[(rate, who)]])

        load = f"{PODS} pods × {rate} lines/s"
        for key, measure, target, unit, ok in (
            ("median_ms", f"latency median, {load}", "≤ 250 ms", "ms", lambda o, b: o <= 250),
            ("p99_ms", f"latency p99, {load}", "≤ 1000 ms", "ms", lambda o, b: o <= 1000),
            (
                "throughput",
                f"throughput, {load}",
                "≥ baseline",
                "lines/s",
                lambda o, b: o >= 0.95 * b,
            ),
            ("lost", f"lines lost, {load}", "0", "", lambda o, b: o == 0),
        ):
            (o, o_r), (b, b_r) = col("ours", key), col("base", key)
            rows.append(Row(AREA, measure, o, b, base_name, target, ok(o, b), unit, o_r, b_r))
    direct = "creating the job object directly"
    for label, pair, target in (
        ("submit latency, code in a ConfigMap", sub_cm, 1.0),
        ("submit latency, image push", sub_img, 5.0),
    ):
        if pair is None:
            continue
        (o, o_r), (b, b_r) = summarize(pair[0]), summarize(pair[1])
        rows.append(
            Row(
                "submit, Kubernetes API double",
                label,
                o,
                b,
                direct,
                f"≤ {target:g} s",
                o <= target,
                "s",
                o_r,
                b_r,
            )
        )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(
            f"{row.measure:<44} {row.ours:10.2f}{row.unit:<8} baseline {row.baseline or 0:10.2f}  {row.target:<10} {'ok' if row.passed else 'MISSED'}"
        )
