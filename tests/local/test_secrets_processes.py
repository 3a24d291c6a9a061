"""A secret in the kernel's environment that no job asked for reaches no process of a
job: a replica searches ``/proc/self/environ``, its parent's, the frames above its
code and its own writable memory for it, cold and warm, and a spare started by one
kernel carries nothing of that kernel's environment into another kernel's job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_ddl.backends.local import LocalBackend
from jupyter_ddl.backends.local.warm import spare_environ
from jupyter_ddl.config import Config
from jupyter_ddl.models import JobState
from tests.local.conftest import ready_spare, submit, wait
from tests.support import require

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

SECRET = "kern3l-s3cr3t-48c1-value"
PROXY_A = "proxy-passw0rd-of-kernel-a-93d2"

# The needles travel hex-encoded, so the code holds them only where it excludes them.
SEARCH = r"""
import ctypes, json, os, sys
needles = [bytes.fromhex(h) for h in os.environ["NEEDLES"].split(",")]
found = []
buf = bytearray(1 << 20)
lo = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
own = {id(n) + sys.getsizeof(b"") - 1 for n in needles}
with open("/proc/self/maps") as f:
    regions = [line.split() for line in f]
with open("/proc/self/mem", "rb", buffering=0) as mem:
    for r in regions:
        start, end = (int(x, 16) for x in r[0].split("-"))
        name = r[5] if len(r) > 5 else ""
        if r[1][0] != "r" or name in ("[vvar]", "[vsyscall]", "[vdso]"):
            continue
        if "w" not in r[1] and name and not name.startswith("["):
            continue  # read-only file mappings: code and constants
        at = start
        while at < end:
            try:
                mem.seek(at)
                got = mem.readinto(memoryview(buf)[: min(len(buf), end - at)])
            except OSError:
                break
            for i, n in enumerate(needles):
                hit = buf.find(n, 0, got)
                while hit >= 0:
                    where = at + hit
                    if where not in own and not lo <= where < lo + len(buf):
                        found.append(f"memory {r[0]} {name}: needle {i}")
                    hit = buf.find(n, hit + 1, got)
            at += max(1, got - 64)
            if got < 64:
                break
for path in ("/proc/self/environ", f"/proc/{os.getppid()}/environ"):
    with open(path, "rb") as f:
        data = f.read()
    found += [f"{path}: needle {i}" for i, n in enumerate(needles) if n in data]
seen = {id(n) for n in needles} | {id(buf)}  # the search's own copies
def walk(o, where, depth=0):
    if depth > 6 or id(o) in seen or type(o).__name__ == "module":
        return
    seen.add(id(o))
    if isinstance(o, (str, bytes)):
        b = o.encode("utf-8", "ignore") if isinstance(o, str) else o
        found.extend(f"{where}: needle {i}" for i, n in enumerate(needles) if n in b)
    elif isinstance(o, dict):
        for k, v in list(o.items()):
            walk(k, where, depth + 1)
            walk(v, where, depth + 1)
    elif isinstance(o, (list, tuple, set, frozenset)):
        for v in list(o):
            walk(v, where, depth + 1)
    elif hasattr(o, "__dict__") and not isinstance(o, type):
        walk(vars(o), where, depth + 1)
frame = sys._getframe().f_back
while frame is not None:
    walk(dict(frame.f_locals), f"frame {frame.f_code.co_name}")
    frame = frame.f_back
print("FOUND " + json.dumps(sorted(set(found))), flush=True)
"""


def found(backend: LocalBackend, name: str) -> list[str]:
    status = wait(backend, name)
    assert status.state == JobState.SUCCEEDED, status.message
    out = [
        json.loads(line.text[len("FOUND ") :])
        for line in backend.logs(name)
        if line.text.startswith("FOUND ")
    ]
    assert out, [line.text for line in backend.logs(name)][-20:]
    return [hit for hits in out for hit in hits]


def _needles(*values: str) -> dict[str, str]:
    return {"NEEDLES": ",".join(v.encode().hex() for v in values)}


def test_a_cold_job_finds_no_kernel_secret_in_any_of_its_processes(data_dir, monkeypatch):
    require.module("torch")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    backend = LocalBackend(Config(local_warm_seconds=0))
    name = submit(backend, SEARCH, "torch-ddp", {"Master": 1}, env=_needles(SECRET))
    assert found(backend, name) == []


def test_a_warm_job_finds_no_secret_of_its_kernel_or_of_the_kernel_that_started_the_spare(
    data_dir, monkeypatch
):
    require.module("torch")
    # kernel A starts the spare: a proxy with a password, and a secret of its own
    monkeypatch.setenv("HTTPS_PROXY", f"http://a:{PROXY_A}@proxy.invalid:3128")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PROXY_A)
    spare = ready_spare(data_dir, timeout=400)  # the spare imports only on spare CPU
    # kernel B submits: another proxy, its own secret it does not pass on
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy-b.invalid:3128")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    backend = LocalBackend()
    name = submit(backend, SEARCH, "torch-ddp", {"Master": 1}, env=_needles(SECRET, PROXY_A))
    hits = found(backend, name)
    record = json.loads((backend.job_dir(name) / "supervisor.json").read_text())
    assert record.get("warm") and record.get("spare") == spare, record
    assert hits == []


SCRUB = r"""
import os, sys
from jupyter_ddl.backends.local.spare import scrub_initial_environ
needle = bytes.fromhex(sys.argv[1])
keep = {"KEPT": os.environ["KEPT"]}
os.environ.clear()
os.environ.update(keep)
scrub_initial_environ(keep)
with open("/proc/self/environ", "rb") as f:
    mine = f.read()
pid = os.fork()
if pid == 0:
    with open("/proc/self/environ", "rb") as f:
        child = f.read()
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        parent = f.read()
    os._exit(0 if needle not in child and needle not in parent and b"KEPT=yes" in child else 3)
_, status = os.waitpid(pid, 0)
print(needle in mine, b"KEPT=yes" in mine, os.waitstatus_to_exitcode(status))
"""


def test_the_environment_block_a_process_started_with_is_scrubbed_for_it_and_its_children():
    repo = str(Path(__file__).resolve().parents[2])
    env = {"PYTHONPATH": repo, "KEPT": "yes", "PROXY": f"http://a:{PROXY_A}@p.invalid"}
    done = subprocess.run(
        [sys.executable, "-c", SCRUB, PROXY_A.encode().hex()],
        env={**env, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "0"]


def test_a_spare_starts_with_what_the_framework_reads_and_nothing_a_job_brings():
    kernel = {
        "PATH": "/usr/bin", "HOME": "/home/u", "OMP_NUM_THREADS": "2", "LANG": "C.UTF-8",
        "HTTPS_PROXY": f"http://a:{PROXY_A}@p.invalid", "AWS_SECRET_ACCESS_KEY": SECRET,
        "WANDB_API_KEY": SECRET, "PYTHONPATH": "/src",
    }  # fmt: skip
    env = spare_environ(kernel, passthrough=["WANDB_API_KEY"])
    assert env == {
        "PATH": "/usr/bin", "HOME": "/home/u", "OMP_NUM_THREADS": "2", "LANG": "C.UTF-8",
        "PYTHONPATH": "/src",
    }  # fmt: skip
