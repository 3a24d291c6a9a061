"""The Kubeflow Trainer SDK's ``LocalProcessBackend`` as a launch peer (helper, no ``run``).

``TrainerClient(LocalProcessBackendConfig()).train(CustomTrainer(func))`` makes a fresh
virtual environment per job, pip-installs the runtime's packages into it and runs
the function under that environment's ``torchrun``. Its figure is from ``train()`` to
both ranks' gloo process group being up (each rank writes the time to a file).

The SDK itself (``kubeflow``) caps kubernetes below 36, which jupyter-ddl needs, so it
cannot live in the project's environment: it gets a venv of its own, made once in the
user's cache directory (``SDK_VENV``), and the measurement runs there
(``python -m benchmarks.trainer_sdk SPEC``).

Configured so it can never install a CUDA build of torch: the runtime's ``torch``
requirement is replaced (the SDK lets a trainer's packages override the runtime's)
by the exact version installed here, local label included (``torch==2.13.0+cpu``),
which only the CPU wheel satisfies; pip finds it through this machine's own pip
configuration (``find-links``), passed on in the job's environment. If that wheel
cannot be found, the install fails and the row says so: nothing else is tried.
Two ranks come from torchrun's own environment variables (``PET_NPROC_PER_NODE``),
on a free port (``PET_MASTER_PORT``), since the SDK's local runtime asks for one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDK = "kubeflow==0.5.0"
SDK_VENV = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "jupyter-ddl"
    / "bench-trainer-sdk"
)
TIMEOUT_S = 240.0


def rank_ready(args: dict) -> None:
    """The job's function: its source is shipped (so it imports what it uses) and
    called with ``func_args`` as one dict."""
    import os
    import time

    import torch.distributed as dist

    dist.init_process_group("gloo")
    with open(os.path.join(args["directory"], f"ready-{dist.get_rank()}"), "w") as f:
        f.write(repr(time.time()))
    dist.barrier()
    dist.destroy_process_group()


def torch_requirement() -> str:
    """``torch==<the installed version>``, e.g. ``torch==2.13.0+cpu``."""
    return f"torch=={version('torch')}"


def job_env(port: int) -> dict[str, str]:
    """The job's whole environment (the SDK replaces it, it does not add to it)."""
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update(PET_NPROC_PER_NODE="2", PET_MASTER_PORT=str(port), PET_MASTER_ADDR="127.0.0.1")
    return env


def sdk_python() -> Path:
    """The interpreter of the SDK's own venv, made (one pip install) on first use."""
    python, done = SDK_VENV / "bin" / "python", SDK_VENV / ".installed"
    if done.exists() and done.read_text() == SDK and python.exists():
        return python
    shutil.rmtree(SDK_VENV, ignore_errors=True)
    SDK_VENV.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(SDK_VENV)], check=True)
    r = subprocess.run([str(python), "-m", "pip", "install", "-q", SDK],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"installing {SDK} into {SDK_VENV} failed: {last}")
    done.write_text(SDK)
    return python


def time_trainer_sdk() -> float:
    """Seconds from ``train()`` to both ranks ready, measured in the SDK's venv."""
    from benchmarks.launchers import free_port

    spec = json.dumps({"torch": torch_requirement(), "env": job_env(free_port())})
    r = subprocess.run(
        [str(sdk_python()), "-m", "benchmarks.trainer_sdk", spec],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S + 120,
    )
    for line in r.stdout.splitlines():
        if line.startswith("BENCH "):
            return float(json.loads(line[6:])["seconds"])
    last = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or ["?"])[-1]
    raise RuntimeError(f"Trainer SDK: {last[-250:]}")


def measure(torch: str, env: dict[str, str]) -> float:
    """In the SDK's venv: one job, from ``train()`` to both ranks ready."""
    from kubeflow.trainer import CustomTrainer, TrainerClient
    from kubeflow.trainer.backends.localprocess.types import LocalProcessBackendConfig

    client = TrainerClient(backend_config=LocalProcessBackendConfig(cleanup_venv=True))
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as marks:
        trainer = CustomTrainer(
            func=rank_ready, func_args={"directory": marks}, packages_to_install=[torch], env=env
        )
        start = time.time()
        name = client.train(runtime=client.get_runtime("torch-distributed"), trainer=trainer)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while len(os.listdir(marks)) < 2 and time.monotonic() < deadline:
                if client.get_job(name).status == "Failed":
                    tail = list(client.get_job_logs(name))[-3:]
                    raise RuntimeError(f"the job failed: {' | '.join(tail)[-250:]}")
                time.sleep(0.05)
            if len(os.listdir(marks)) < 2:
                raise RuntimeError(f"ranks not ready within {TIMEOUT_S:.0f} s")
            ready = max(float(Path(marks, f).read_text()) for f in os.listdir(marks))
            client.wait_for_job_status(name, timeout=120, polling_interval=1)
        finally:
            client.delete_job(name)
            # the SDK removes its venv only when the job succeeds
            for venv in Path(tempfile.gettempdir()).glob(f"{name}*"):
                if (venv / "bin" / "python").exists():
                    shutil.rmtree(venv, ignore_errors=True)
    return ready - start


if __name__ == "__main__":
    args = json.loads(sys.argv[1])
    print("BENCH " + json.dumps({"seconds": measure(args["torch"], args["env"])}), flush=True)
