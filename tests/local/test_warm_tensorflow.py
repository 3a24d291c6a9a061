"""TensorFlow jobs from a warm interpreter, with real processes: a replica forked from
a spare that imported tensorflow is what a fresh one is (modules, environment, paths,
streams, its C++ log level) and trains under MultiWorkerMirroredStrategy; a torch spare
never serves a TensorFlow job; and no replica is forked while a thread Python did not
start runs in the process (the case that makes forking TensorFlow unsafe)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jupyter_ddl.backends.local import LocalBackend, warm
from jupyter_ddl.config import Config
from jupyter_ddl.models import JobState
from tests.local.conftest import lines, ready_spare, submit, wait
from tests.local.test_faults import nothing_left
from tests.local.test_warm import states, supervisor_record
from tests.support import require

pytestmark = [pytest.mark.timeout(400), pytest.mark.slow]
WORKERS = {"Worker": 2}

# What a TensorFlow replica is, then two steps of training under the shim's strategy.
PROBE = r"""
import json, os, signal, sys
import tensorflow as tf

_state = {
    "env": dict(os.environ),
    "modules": sorted(m for m in sys.modules if m.partition(".")[0] not in sys.stdlib_module_names),
    "path": sys.path, "argv": sys.argv, "orig_argv": sys.orig_argv, "cwd": os.getcwd(),
    "flags": list(sys.flags), "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "own_session": os.getsid(0) == os.getpid() == os.getpgid(0),
    "signals": {s.name: repr(signal.getsignal(s)) for s in (
        signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD)},
    "stdio": [(s.encoding, s.errors, s.write_through) for s in (sys.stdout, sys.stderr)],
    "keras": tf.keras.__name__.partition(".")[0],
    "parent": os.getppid(),
}
print("STATE " + json.dumps(_state), flush=True)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
x = tf.ones((32, 4))
history = model.fit(x, tf.ones((32, 1)), epochs=2, batch_size=8, verbose=0)
print(f"trained {len(history.history['loss'])} epochs", flush=True)
"""
DIFFERENT = {"parent"}


def without_ports(env: dict[str, str]) -> dict[str, str]:
    """TF_CONFIG names ports reserved anew for each run; the rest must be equal."""
    env = dict(env)
    config = json.loads(env.pop("TF_CONFIG"))
    env["TF_CONFIG task"] = json.dumps(config["task"])
    return env


def tf_lines(logs: list[str]) -> list[str]:
    """TensorFlow's C++ log lines (``I0000 00:00:<time> <thread> file:line] text``),
    without their time and thread."""
    return [t.split("]", 1)[-1] for t in logs if t[:1] in "IWEF" and t[1:5] == "0000"]


def test_a_warm_tensorflow_replica_is_what_a_cold_one_is_and_trains(data_dir):
    require.module("tensorflow")
    require.module("torch")
    cold_backend = LocalBackend(Config(local_warm_seconds=0))
    name = submit(cold_backend, PROBE, "tf-multi-worker-mirrored", WORKERS, name="tfprobe")
    status = wait(cold_backend, name, timeout=300)
    assert status.state == JobState.SUCCEEDED, status.message
    assert not supervisor_record(cold_backend, name).get("warm")
    cold = states(cold_backend, name)
    cold_logs = {r: lines(cold_backend, name, r) for r in cold}
    cold_backend.delete(name)

    torch_spare = ready_spare(data_dir)
    spare = ready_spare(data_dir, timeout=300, module="tensorflow")
    assert spare != torch_spare
    backend = LocalBackend()
    submit(backend, PROBE, "tf-multi-worker-mirrored", WORKERS, name="tfprobe")
    status = wait(backend, name, timeout=300)
    assert status.state == JobState.SUCCEEDED, status.message
    record = supervisor_record(backend, name)
    # the TensorFlow spare forked the supervisor, not the torch one beside it
    assert record["warm"] and record["spare"] == spare and record["pid"] != spare
    forked = states(backend, name)
    assert set(forked) == set(cold) == {"worker-0", "worker-1"}
    for rid, got in forked.items():
        want = cold[rid]
        assert got["parent"] == record["pid"]
        got["env"], want["env"] = without_ports(got["env"]), without_ports(want["env"])
        for key in sorted(set(want) - DIFFERENT):
            assert got[key] == want[key], (rid, key, got[key], want[key])
        assert got["env"]["TF_CPP_MIN_LOG_LEVEL"] == "2" and got["own_session"]
        logs = lines(backend, name, rid)
        # forked, not started fresh by a warm supervisor: no "cold start: ..." line
        assert not any(t.startswith("cold start") for t in logs), logs[:3]
        assert logs[-1] == "trained 2 epochs" == cold_logs[rid][-1]
        # the C++ log level the spare imported with is the shim's: TensorFlow's own
        # lines (time and thread aside) are those the cold replica printed
        assert tf_lines(logs) == tf_lines(cold_logs[rid])
    nothing_left(backend.job_dir(name))


def test_a_tensorflow_job_is_never_handed_to_a_torch_spare(data_dir):
    require.module("torch")
    require.module("tensorflow")
    torch_spare = ready_spare(data_dir)
    backend = LocalBackend()
    cell = "import tensorflow\nprint('ran', flush=True)\n"
    name = submit(backend, cell, "tf-mirrored", {"Worker": 1})
    assert wait(backend, name, timeout=300).state == JobState.SUCCEEDED
    first = lines(backend, name, "worker-0")[0]
    assert first.startswith("cold start: no warm interpreter was running"), first
    assert supervisor_record(backend, name).get("spare") != torch_spare
    records = [json.loads(p.read_text()) for p in warm.warm_dir(data_dir).glob("*.json")]
    # the job started one of its own framework for the next TensorFlow job
    assert sorted(r["module"] for r in records) == ["tensorflow", "torch"]


CHECK = (
    "import threading, time\n"
    "{imports}\n"
    "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
    "from jupyter_ddl.backends.local import forked\n"
    "print(forked.why_not_now())\n"
)


@pytest.mark.parametrize(
    ("imports", "blas_threads", "answer"),
    [
        ("", "2", "None"),  # a Python thread is no reason
        ("import numpy", "1", "None"),  # one BLAS thread: none started
        ("import numpy", "2", "the warm interpreter runs threads Python did not start (python)"),
    ],
)
def test_no_replica_is_forked_beside_a_thread_python_did_not_start(imports, blas_threads, answer):
    require.module("numpy")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": blas_threads}
    out = subprocess.run(
        [sys.executable, "-c", CHECK.format(imports=imports)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == answer, out.stderr[-2000:]
