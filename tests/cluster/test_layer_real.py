"""A cell's code shipped as an image layer on the real tier: the product appends the
bundle to a base in a test registry (a real docker-registry on this machine, which the
tier is told about through `.cluster/registries`), the node agent pulls the pushed image
and each rank runs the layer's files; no ConfigMap is made. And a tag the registry does
not have: the cell shows the kubelet's ErrImagePull / ImagePullBackOff naming the image.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator

import pytest

from jupyter_ddl.config import Config
from jupyter_ddl.core.bundle import build_bundle
from jupyter_ddl.errors import JobNotFound
from jupyter_ddl.manager import JobManager
from jupyter_ddl.manifests import configmap_name
from jupyter_ddl.models import JobEvent, JobSpec, JobState
from tests.cluster.test_distribute_real import TORCH_CELL, lines
from tests.cluster.tier import KUBECONFIG, MARKS, NAMESPACE, built, kubectl, listed_registry
from tests.image.bases import make_layout, push_base
from tests.image.registries import Registry

pytestmark = MARKS


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Iterator[Registry]:
    """A plain-HTTP registry on 127.0.0.1 that the tier's node agent pulls from."""
    with listed_registry("plain", tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="module")
def base(registry, tmp_path_factory) -> str:
    return push_base(registry, make_layout(tmp_path_factory.mktemp("base")), "bases/small")


def _manager(monkeypatch, **cfg) -> JobManager:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KUBECONFIG", str(KUBECONFIG))
    return JobManager(config=Config(backend="kubernetes", namespace=NAMESPACE, **cfg))


def _follow(m: JobManager, name: str, seconds: float, until=None) -> list[JobEvent]:  # type: ignore[no-untyped-def]
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    events: list[JobEvent] = []
    try:
        for e in m.watch(name, stop=stop):
            events.append(e)
            if until is not None and until(e):
                stop.set()
    finally:
        timer.cancel()
    return events


# the mount the code file lies under (the nearest mount point above it) and its source
MOUNTED = """
import os
here = os.path.realpath(__file__)
mounts = [l.split() for l in open('/proc/self/mountinfo')]
def source(m):
    # an overlay names the directory below it in its options: lowerdir=...
    kind, opts = m[m.index('-') + 1], m[m.index('-') + 3]
    low = [o[len('lowerdir='):] for o in opts.split(',') if o.startswith('lowerdir=')]
    return 'overlay of ' + low[0] if kind == 'overlay' and low else m[3]
under = [(len(m[4]), source(m)) for m in mounts if here.startswith(m[4].rstrip('/') + '/')]
print('code', here, 'from', max(under)[1] if under else 'nowhere')
"""


def test_torch_ddp_runs_from_the_appended_layer(tier, registry, base, monkeypatch):
    built("training-operator")
    host = registry.host
    m = _manager(
        monkeypatch,
        registry=f"{host}/team",
        insecure_registries=[host],
        base_images={"pytorch": base},
    )
    spec = JobSpec(
        name=f"layer-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        backend="kubernetes",
        namespace=NAMESPACE,
    )
    try:
        m.submit(spec, build_bundle(TORCH_CELL + MOUNTED))
        job = kubectl("-n", NAMESPACE, "get", "pytorchjob", spec.name, "-o",
                      "jsonpath={.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image}")  # fmt: skip
        image = job.stdout.strip()
        assert image.startswith(f"{host}/team/ddl-") and "@sha256:" in image, image
        gone = kubectl("-n", NAMESPACE, "get", "configmap", configmap_name(spec.name), check=False)
        assert "NotFound" in gone.stderr, gone.stdout  # the code travels in the image only
        events = _follow(m, spec.name, 240)
        final = [e.status for e in events if e.status is not None]
        status = final[-1] if final else m.get(spec.name)
        got = lines(events)
        assert status.state is JobState.SUCCEEDED, (status.message, got)
        assert "rank 0 of 2 sum 3.0" in got.get("master-0", []), got
        assert "rank 1 of 2 sum 3.0" in got.get("worker-0", []), got
        # each rank's code is the pulled layer's file: an overlay whose read-only lower
        # directory is the agent's unpacked copy of that image (by its manifest digest)
        digest = image.split("@sha256:")[1]
        for replica in ("master-0", "worker-0"):
            code = [ln for ln in got[replica] if ln.startswith("code ")]
            assert code and code[0].startswith("code /opt/jupyter-ddl/code/"), got[replica]
            assert "from overlay of " in code[0], code
            assert f"images/sha256-{digest}/rootfs/opt/jupyter-ddl" in code[0], code
        pulled = [p for meth, p, st in registry.access_lines() if meth == "GET" and st == 200]
        assert any(p.endswith(f"/manifests/sha256:{digest}") for p in pulled), pulled
    finally:
        with contextlib.suppress(JobNotFound):
            m.delete(spec.name)
        m.close()


def test_a_missing_tag_shows_the_pull_error_naming_the_image(tier, registry, base, monkeypatch):
    built("training-operator")
    m = _manager(monkeypatch)
    missing = base.rsplit(":", 1)[0] + ":no-such-tag"
    spec = JobSpec(
        name=f"nopull-{uuid.uuid4().hex[:6]}",
        strategy="torch-ddp",
        replicas={"Master": 1, "Worker": 1},
        backend="kubernetes",
        namespace=NAMESPACE,
        image=missing,
    )

    def pull_line(e: JobEvent) -> bool:
        text = e.message or (e.status.message if e.status else "") or ""
        return missing in text and ("ErrImagePull" in text or "ImagePullBackOff" in text)

    try:
        m.submit(spec, build_bundle(TORCH_CELL))
        events = _follow(m, spec.name, 90, pull_line)
        shown = [e.message or (e.status.message if e.status else "") for e in events]
        said = [s for s in shown if s and missing in s]
        assert said, shown
        assert any("MANIFEST_UNKNOWN" in s or "not found" in s.lower() for s in said), said
    finally:
        with contextlib.suppress(JobNotFound):
            m.delete(spec.name)
        m.close()
