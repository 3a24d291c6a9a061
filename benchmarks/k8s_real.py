"""Kubernetes on the real tier, 50 ms away: from the cell to the job object created and
to the job's first log line in the notebook, per kind, beside ``kubectl create -f`` of
our dry-run YAML and the Kubeflow SDKs' own create calls for the same job.

Needs the real tier up (``scripts/cluster up``; ``tests/cluster`` brings it up itself)
and the SDKs' environment (``scripts/setup --test``), so the suite's runner leaves it
out (``runner.NOT_BENCHMARKS``): ``python -m benchmarks.k8s_real [--repeats N]``.

Every request crosses ``delay_proxy`` (50 ms per round trip, TCP and TLS handshakes
included) to the real kube-apiserver, as the notebook user in namespace ``notebook``.

- **ours**: ``JobManager.submit`` of a cell that prints one line, timed to the job's
  create returning (the ownerReferences come after, untimed), then ``JobManager.watch``
  to that line. One PyTorchJob submit first, untimed in the kind rows (its own row):
  a notebook's first submit reads discovery and asks the access reviews, later ones
  find them kept.
- **kubectl create -f**: the YAML ``%%distribute --dry-run`` prints for the same cell,
  with kubectl's discovery cache filled first (as a user's shell has it). The dry-run
  YAML names the code's ConfigMap but does not hold it: kubectl creates one object
  fewer than our submit (its pods never start, and are deleted).
- **Training SDK v1** (``kubeflow-training``, PyTorchJob and TFJob) and **Trainer SDK
  v2** (``kubeflow``, TrainJob): see ``k8s_real_sdk`` (their create call alone; their
  first line after their own wait, polled each second). Neither creates an MPIJob
  v2beta1, so that kind has kubectl only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.table import Row, summarize

ROOT = Path(__file__).resolve().parent.parent
AREA = "Kubernetes, real tier 50 ms away"
DELAY_S = 0.05
TARGET = 1.5  # × kubectl create -f, for the job created
NAMESPACE = "notebook"
FIRST_LINE_S = 90.0  # a job whose line has not come by then is reported, not waited on
MARK = "first-line"
CELL = "import time\nprint('first-line', flush=True)\ntime.sleep(3)\n"
KINDS = {  # kind: (strategy, replicas, target, the SDK that creates it)
    "PyTorchJob": ("torch-ddp", {"Master": 1, "Worker": 1}, None, "v1"),
    "TFJob": ("tf-multi-worker-mirrored", {"Worker": 2}, None, "v1"),
    "MPIJob": ("horovod", {"Launcher": 1, "Worker": 1}, None, None),
    "TrainJob": ("torch-ddp", {"Node": 2}, "TrainJob", "v2"),
}
SDK_NAMES = {
    "v1": "Training SDK v1 create_job",
    "v2": "Trainer SDK v2 train()",
}


def _say(msg: str) -> None:
    print(f"[k8s_real] {msg}", file=sys.stderr, flush=True)


def spec_for(kind: str, **extra: Any) -> Any:
    from jupyter_ddl.models import JobSpec

    strategy, replicas, target, _ = KINDS[kind]
    if target:
        extra["target"] = target
    return JobSpec(name=f"b-{uuid.uuid4().hex[:6]}", strategy=strategy, replicas=replicas,
                   backend="kubernetes", namespace=NAMESPACE, **extra)  # fmt: skip


def sdk_python() -> Path:
    from benchmarks.k8s_real_sdk import SDK_VENV

    python = SDK_VENV / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"no Kubeflow SDK environment at {SDK_VENV}: run scripts/setup --test")
    return python


def namespaced_runtime(admin: Path, name: str = "torch-distributed") -> None:
    """The ClusterTrainingRuntime ``name`` copied into the notebook's namespace as a
    TrainingRuntime, unless one is there. Kubeflow's ``kubeflow-trainer-edit`` role
    (Trainer v2.3.0's platform overlay) lets a profile's user read TrainingRuntimes but
    not ClusterTrainingRuntimes, and the Trainer SDK's ``get_runtime`` must read one: a
    platform engineer gives each profile its runtimes so, and so does the tier here."""
    base = ["kubectl", "--kubeconfig", str(admin)]
    have = subprocess.run([*base, "-n", NAMESPACE, "get", "trainingruntime", name],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if have.returncode == 0:
        return
    got = subprocess.run([*base, "get", "clustertrainingruntime", name, "-o", "json"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    if got.returncode != 0:
        raise RuntimeError(f"no ClusterTrainingRuntime {name}: {got.stderr.strip()[-200:]}")
    obj = json.loads(got.stdout)
    labels = obj["metadata"].get("labels") or {}
    # the Trainer SDK tells a runtime's framework by this label, which Trainer v2.1 on
    # puts on its runtimes and v2.0's lack (kubeflow/trainer v2.0.0 and v2.1.0,
    # manifests/base/runtimes): the copy names the framework its mlPolicy names
    policy = obj.get("spec", {}).get("mlPolicy") or {}
    framework = next((f for f in ("torch", "mpi") if f in policy), None)
    if framework is not None:
        labels.setdefault("trainer.kubeflow.org/framework", framework)
    obj["kind"] = "TrainingRuntime"
    obj["metadata"] = {"name": name, "namespace": NAMESPACE, "labels": labels}
    made = subprocess.run([*base, "create", "-f", "-"], input=json.dumps(obj),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    if made.returncode != 0 and "AlreadyExists" not in made.stderr:
        raise RuntimeError(f"TrainingRuntime {name}: {made.stderr.strip()[-200:]}")


def call_sdk(args: dict[str, Any], timeout: float = 900) -> dict[str, Any]:
    """Run ``k8s_real_sdk`` in the SDKs' environment; its RESULT, or one clear error."""
    r = subprocess.run([str(sdk_python()), "-m", "benchmarks.k8s_real_sdk", json.dumps(args)],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       capture_output=True, text=True, timeout=timeout)  # fmt: skip
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    said = r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["?"]
    # the helper's own FAILED line carries the SDK's error chain down to the API's answer
    failed = [ln[7:] for ln in said if ln.startswith("FAILED ")]
    why = failed[-1][:1200] if failed else said[-1][-250:]
    raise RuntimeError(f"Kubeflow SDK {args.get('sdk')} {args.get('op')}: {why}")


class Ours:
    """Our submit and watch, with the moment each job's create returned."""

    def __init__(self) -> None:
        from jupyter_ddl.backends.kubernetes import submit
        from jupyter_ddl.config import Config
        from jupyter_ddl.manager import JobManager

        self.manager = JobManager(config=Config(backend="kubernetes", namespace=NAMESPACE))
        self.created_at: list[float] = []
        self._submit, self._real = submit, submit._create_job

        def timed_create(*args: Any, **kwargs: Any) -> Any:
            got = self._real(*args, **kwargs)
            self.created_at.append(time.perf_counter())
            return got

        submit._create_job = timed_create  # the job's create returning: the figure's end

    def close(self) -> None:
        self._submit._create_job = self._real
        self.manager.close()

    def run(self, kind: str, first_line: bool) -> tuple[float, float | None]:
        """Seconds to the job created, and to its first line (None: not within
        ``FIRST_LINE_S``, or not asked)."""
        from jupyter_ddl.core.bundle import build_bundle
        from jupyter_ddl.models import EventKind

        spec = spec_for(kind)
        t0 = time.perf_counter()
        self.manager.submit(spec, build_bundle(CELL))
        created = self.created_at[-1] - t0
        line_at = None
        stop = threading.Event()
        timer = threading.Timer(FIRST_LINE_S, stop.set)
        timer.start()
        try:
            if first_line:
                for ev in self.manager.watch(spec.name, stop=stop):
                    if ev.kind == EventKind.LOG and ev.log is not None and MARK in ev.log.text:
                        line_at = time.perf_counter() - t0
                        break
        finally:
            timer.cancel()
            self.manager.delete(spec.name)
        return created, line_at


def kubectl_run(kubectl: str, kubeconfig: Path, home: Path, *args: str) -> float:
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    t0 = time.perf_counter()
    done = subprocess.run([kubectl, "-n", NAMESPACE, *args], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"kubectl {args[0]}: {done.stderr.strip()[-300:]}")
    return took


def kubectl_create(
    ours: Ours, kind: str, kubectl: str, kc: Path, direct: Path, home: Path
) -> float:
    """``kubectl create -f`` of the dry-run YAML of a fresh job of ``kind``, then its
    deletion (untimed, not through the delay)."""
    from jupyter_ddl.core.bundle import build_bundle

    path = home / f"dry-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(ours.manager.dry_run(spec_for(kind), build_bundle(CELL)))
    took = kubectl_run(kubectl, kc, home, "create", "-f", str(path))
    kubectl_run(kubectl, direct, home, "delete", "--wait=false", "-f", str(path))
    return took


def measure(
    kubeconfig: Path, repeats: int = 3, first_line: tuple[str, ...] = tuple(KINDS)
) -> list[Row]:
    """Every row, measured in one run against the tier behind ``kubeconfig`` (its
    admin's kubeconfig beside it, ``admin.kubeconfig``, gives the namespace its Trainer
    runtime); ``first_line``: the kinds whose first log line is waited for."""
    from benchmarks.delay_proxy import delayed

    if not 1 <= repeats <= 20:
        raise ValueError(f"repeats {repeats} is outside 1-20")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise RuntimeError("kubectl is not on PATH (scripts/cluster up installs it)")
    kinds, missing = list(KINDS), {}
    try:
        namespaced_runtime(kubeconfig.with_name("admin.kubeconfig"))
    except RuntimeError as e:  # the Trainer did not come up: the other kinds still measure
        kinds.remove("TrainJob")
        missing["TrainJob"] = f"{e} (is the Trainer running? .cluster/logs/trainer.log)"[:300]
    ours_c: dict[str, list[float]] = {k: [] for k in KINDS}
    ours_l: dict[str, list[float | None]] = {k: [] for k in KINDS}
    kubectl_c: dict[str, list[float]] = {k: [] for k in KINDS}
    sdk: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="k8s-real-") as tmp, \
            delayed(kubeconfig, Path(tmp) / "kc", DELAY_S) as kc:  # fmt: skip
        home = Path(tmp)
        os.environ["KUBECONFIG"] = str(kc)
        ours = Ours()
        try:
            # a notebook's first submit (nothing kept yet); its own row
            first, _ = ours.run("PyTorchJob", first_line=False)
            _say(f"first submit {first:.3f} s")
            kubectl_run(kubectl, kc, home, "api-resources")  # kubectl's discovery cache
            for i in range(repeats):
                for kind in kinds:
                    c, line = ours.run(kind, kind in first_line)
                    ours_c[kind].append(c)
                    if kind in first_line:
                        ours_l[kind].append(line)
                    kubectl_c[kind].append(
                        kubectl_create(ours, kind, kubectl, kc, kubeconfig, home)
                    )
                    _say(
                        f"{i} {kind}: ours {c:.3f} s (line {line}), kubectl {kubectl_c[kind][-1]:.3f} s"
                    )
        finally:
            ours.close()
        for kind, (*_, which) in KINDS.items():
            if which is None or kind not in kinds:
                continue
            try:
                sdk[kind] = call_sdk({"op": "bench", "sdk": which, "kind": kind, "kubeconfig": str(kc),
                                      "namespace": NAMESPACE, "repeats": repeats, "first_line": kind in first_line})  # fmt: skip
                _say(f"{kind}: SDK {which} {sdk[kind]}")
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                sdk[kind] = {"error": str(e)[:300]}
    return rows(first, ours_c, ours_l, kubectl_c, sdk, missing)


def _finite(samples: list[float | None]) -> list[float]:
    return [s for s in samples if s is not None and math.isfinite(s)]


def rows(first: float, ours_c: dict[str, list[float]], ours_l: dict[str, list[float | None]],
         kubectl_c: dict[str, list[float]], sdk: dict[str, dict[str, Any]],
         missing: dict[str, str] | None = None) -> list[Row]:  # fmt: skip
    out = []
    kubectl_name = "kubectl create -f (dry-run YAML)"
    for kind, (*_, which) in KINDS.items():
        if kind in (missing or {}):
            out.append(Row(AREA, f"{kind}: not measured", math.nan, None, kubectl_name, "n/a",
                           None, error=(missing or {})[kind]))  # fmt: skip
            continue
        o, o_r = summarize(ours_c[kind])
        b, b_r = summarize(kubectl_c[kind])
        out.append(Row(AREA, f"{kind}: cell to job created", o, b, kubectl_name,
                       f"≤ {TARGET}× baseline", o <= TARGET * b, "s", o_r, b_r))  # fmt: skip
        lines = _finite(ours_l[kind])
        missed = len(ours_l[kind]) - len(lines)
        if which is None:
            if lines:
                ol, ol_r = summarize(lines)
                out.append(Row(AREA, f"{kind}: cell to first log line", ol, None,
                               "no SDK creates an MPIJob v2beta1", "n/a", None, "s", ol_r))  # fmt: skip
            elif ours_l[kind]:
                out.append(Row(AREA, f"{kind}: cell to first log line", math.nan, None,
                               "no SDK creates an MPIJob v2beta1", "n/a", None,
                               error=f"no first line within {FIRST_LINE_S:.0f} s"))  # fmt: skip
            continue
        got, name = sdk.get(kind, {}), SDK_NAMES[which]
        if "error" in got or not got:
            out.append(Row(AREA, f"{kind}: SDK", math.nan, None, name, "n/a", None,
                           error=got.get("error", "not measured")))  # fmt: skip
            continue
        s, s_r = summarize(got["created"])
        out.append(
            Row(AREA, f"{kind}: cell to job created", o, s, name, "n/a", None, "s", o_r, s_r)
        )
        theirs = _finite(got["first_line"])
        if lines and theirs:
            ol, ol_r = summarize(lines)
            sl, sl_r = summarize(theirs)
            out.append(Row(AREA, f"{kind}: cell to first log line", ol, sl, f"{name}, wait, logs",
                           "n/a", None, "s", ol_r, sl_r))  # fmt: skip
        elif ours_l[kind]:
            out.append(Row(AREA, f"{kind}: cell to first log line", math.nan, None, name, "n/a",
                           None, error=f"no first line within {FIRST_LINE_S:.0f} s "
                           f"(ours missed {missed}, the SDK {len(got['first_line']) - len(theirs)})"))  # fmt: skip
    b, b_r = summarize(kubectl_c["PyTorchJob"])
    out.append(Row(AREA, "PyTorchJob: a notebook's first submit (nothing kept yet)", first, b,
                   kubectl_name, "n/a", None, "s", None, b_r))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks.table import render_markdown, render_text

    p = argparse.ArgumentParser(
        prog="python -m benchmarks.k8s_real", description=__doc__.split("\n")[0]
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--kubeconfig", type=Path, default=ROOT / ".cluster" / "kubeconfig")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    a = p.parse_args(argv)
    if not a.kubeconfig.exists():
        print(
            f"k8s_real: no kubeconfig at {a.kubeconfig}; bring the tier up with scripts/cluster up"
        )
        return 2
    got = measure(a.kubeconfig, a.repeats)
    print((render_markdown if a.markdown else render_text)(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
