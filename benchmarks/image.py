"""Image builder benchmark: appending code to a 250 MB base image.

Scenarios, each measured in a child process (wall time of the ``build_and_push``
call, peak RSS of the process as its ``VmHWM``) against real ``docker-registry``
processes on loopback, with requests counted from the registries' access logs:

- **nothing changed**: the same code pushed again into the same repository;
- **code changed**: new code into the same repository;
- **new repository**: the code into a repository the registry has not seen;
- **base in another registry**: the base streamed from registry A into a fresh B.

Our wall time is the ``build_and_push`` call (imports done, as in a kernel); skopeo's
is its whole process. The baseline is ``skopeo copy`` of the base itself, measured in the same run: into a
new repository of the same registry (skopeo mounts there, from its blob-info cache),
and into another registry (the full copy every push would cost without mounts or
content tags; the "≥ 10× faster" rows compare with that one). Bytes uploaded are
the sizes of the blobs each client completed (``PUT ...?digest=``) plus its manifest.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.table import Row, summarize

AREA = "image"
#: the base stays 250 MB in quick runs too: the "≥ 10× faster" targets are about it
BASE_MB = 250
RSS_TARGET_MB = 100


def _child_build(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one build in this (child) process; the caller reads the JSON line."""
    from jupyter_ddl.config import Config
    from jupyter_ddl.image import build_and_push
    from jupyter_ddl.models import CodeBundle

    bundle = CodeBundle(files={"main.py": spec["code"].encode()}, source_notebook="bench.ipynb")
    seen: list[tuple[int, int]] = []
    t0 = time.perf_counter()
    built = build_and_push(
        bundle,
        base=spec["base"],
        target_repo=spec["target"],
        config=Config(),
        progress=lambda done, total: seen.append((done, total)),
    )
    wall = time.perf_counter() - t0
    s = built.stats
    return {
        "wall": wall,
        "digest": built.digest,
        "tag": built.tag,
        "pushed": built.pushed,
        "requests": s.requests,
        "bytes_up": s.bytes_up,
        "bytes_down": s.bytes_down,
        "rss_self_mb": _hwm_mb("self"),
        "progress": seen[:3] + seen[-2:],
        "progress_calls": len(seen),
    }


def _hwm_mb(pid: int | str) -> float:
    """Peak resident memory of a process's own address space (``VmHWM``), in MB.

    Not ``ru_maxrss``: Linux carries that across exec, so a child forked from a big
    parent (pytest) would report the parent's size."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, float]:
    """(exit status, peak RSS in MB) of one child, polling its VmHWM until it exits."""
    deadline = time.monotonic() + timeout
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _hwm_mb(proc.pid))
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.01)
    return proc.returncode, peak


def ours(base: str, target: str, code: str, timeout: float = 300) -> dict[str, Any]:
    """One build in a child process; adds ``rss_mb`` (peak RSS of the child)."""
    spec = json.dumps({"base": base, "target": target, "code": code})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.image", "--child", spec],
            stdout=out,
            stderr=err,
            cwd=Path(__file__).resolve().parent.parent,
        )
        rc, rss = _wait(proc, timeout)
        out.seek(0)
        err.seek(0)
        if rc != 0:
            raise RuntimeError(
                f"build child failed: {err.read().decode(errors='replace').strip().splitlines()[-1:]}"
            )
        result: dict[str, Any] = json.loads(out.read().decode().strip().splitlines()[-1])
    result["rss_mb"] = max(rss, result["rss_self_mb"])
    return result


def skopeo_copy(src: str, dst: str, timeout: float = 300) -> dict[str, Any]:
    """``skopeo copy`` of the base: wall time and peak RSS of the process."""
    cmd = [
        "skopeo",
        "--insecure-policy",
        "copy",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        f"docker://{src}",
        f"docker://{dst}",
    ]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        rc, rss = _wait(proc, timeout)
        err.seek(0)
        if rc != 0:
            raise RuntimeError(
                f"skopeo copy failed: {err.read().decode(errors='replace').strip()[-300:]}"
            )
    return {"wall": time.perf_counter() - t0, "rss_mb": rss}


def uploaded(lines: list[tuple[str, str, int]], sizes: dict[str, int], manifest_size: int) -> int:
    """Bytes a client uploaded: completed blob uploads (by digest) plus the manifest."""
    done = [
        p.rsplit("digest=", 1)[1].replace("%3A", ":")
        for m, p, s in lines
        if m == "PUT" and "digest=" in p and s == 201
    ]
    return sum(sizes.get(d, 0) for d in done) + manifest_size


class _Bench:
    def __init__(self, root: Path, base_mb: int) -> None:
        from tests.image.bases import make_layout, push_base
        from tests.image.registries import start_registry

        self.root, self.start = root, start_registry
        self.a = start_registry("plain", root / "reg-a")
        layout = make_layout(root / "layout", "oci", big=base_mb * 1024 * 1024)
        self.base = push_base(self.a, layout, "bases/big")
        shutil.rmtree(layout)  # the registry holds it now; keep /tmp small
        m = json.loads(self._get(self.a.host, "bases/big", "base"))
        self.sizes = {d["digest"]: d["size"] for d in [m["config"], *m["layers"]]}
        self.layer_mb = max(d["size"] for d in m["layers"]) / 1e6

    @staticmethod
    def _get(host: str, repo: str, ref: str) -> bytes:
        import requests

        accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
        r = requests.get(
            f"http://{host}/v2/{repo}/manifests/{ref}", headers={"Accept": accept}, timeout=30
        )
        r.raise_for_status()
        return r.content

    def skopeo(self, reg, repo: str) -> dict[str, Any]:
        mark = reg.mark()
        res = skopeo_copy(self.base, f"{reg.host}/{repo}:copy")
        lines = reg.access_lines(mark) + (
            self.a.access_lines(self._amark) if reg is not self.a else []
        )
        res["requests"] = len(lines)
        res["bytes_up"] = uploaded(
            reg.access_lines(mark), self.sizes, len(self._get(reg.host, repo, "copy"))
        )
        return res

    def build(self, reg, repo: str, code: str) -> dict[str, Any]:
        mark = reg.mark()
        res = ours(self.base, f"{reg.host}/{repo}", code)
        lines = reg.access_lines(mark) + (
            self.a.access_lines(self._amark) if reg is not self.a else []
        )
        res["logged_requests"] = len(lines)
        return res

    def repeat(self, i: int) -> dict[str, dict[str, Any]]:
        self._amark = self.a.mark()
        out = {"skopeo_same": self.skopeo(self.a, f"skopeo/new-{i}")}
        out["new"] = self.build(self.a, f"team/new-{i}", f"print({i})\n")
        out["unchanged"] = self.build(self.a, f"team/new-{i}", f"print({i})\n")
        out["changed"] = self.build(self.a, f"team/new-{i}", f"print({i}, 'changed')\n")
        b = self.start("plain", self.root / f"reg-b-{i}")
        try:
            self._amark = self.a.mark()
            out["skopeo_other"] = self.skopeo(b, "skopeo/other")
            self._amark = self.a.mark()
            out["other"] = self.build(b, "team/other", f"print({i})\n")
        finally:
            b.stop()
            shutil.rmtree(b.root, ignore_errors=True)
        return out

    def close(self) -> None:
        self.a.stop()


def _rows(samples: list[dict[str, dict[str, Any]]], layer_mb: float) -> list[Row]:
    def col(key: str, field: str) -> tuple[float, tuple[float, float]]:
        return summarize([float(s[key][field]) for s in samples])

    rows: list[Row] = []
    same = "skopeo copy of the base, same registry"
    other = "skopeo copy of the base, other registry"
    for key, area, req_target, req_max in (
        ("unchanged", "image, nothing changed", "≤ 3", 3),
        ("changed", "image, code changed", "≤ 13", 13),
        ("new", "image, new repository", "≤ 13", 13),
    ):
        req, req_r = col(key, "logged_requests")
        breq, breq_r = col("skopeo_same", "requests")
        up, up_r = col(key, "bytes_up")
        bup, bup_r = col("skopeo_same", "bytes_up")
        wall, wall_r = col(key, "wall")
        bwall, bwall_r = col("skopeo_other", "wall")
        up_max = 0 if key == "unchanged" else 10_000
        rows += [
            Row(area, "requests", req, breq, same, req_target, req <= req_max, "", req_r, breq_r),
            Row(
                area,
                "bytes uploaded",
                up,
                bup,
                same,
                f"≤ {up_max} B",
                up <= up_max,
                "B",
                up_r,
                bup_r,
            ),
            Row(
                area,
                "wall time",
                wall,
                bwall,
                other,
                "≥ 10× faster",
                wall * 10 <= bwall,
                "s",
                wall_r,
                bwall_r,
            ),
        ]
    wall, wall_r = col("new", "wall")
    bwall, bwall_r = col("skopeo_same", "wall")
    rows.append(
        Row(
            "image, new repository",
            "wall time vs a mounting copy",
            wall,
            bwall,
            same,
            "≤ 1× baseline",
            wall <= bwall,
            "s",
            wall_r,
            bwall_r,
        )
    )
    area = "image, base in another registry"
    up, up_r = col("other", "bytes_up")
    bup, bup_r = col("skopeo_other", "bytes_up")
    wall, wall_r = col("other", "wall")
    bwall, bwall_r = col("skopeo_other", "wall")
    rss, rss_r = col("other", "rss_mb")
    brss, brss_r = col("skopeo_other", "rss_mb")
    req, req_r = col("other", "logged_requests")
    breq, breq_r = col("skopeo_other", "requests")
    rows += [
        Row(area, "requests (both registries)", req, breq, other, "n/a", None, "", req_r, breq_r),
        Row(
            area,
            "bytes uploaded",
            up,
            bup,
            other,
            "≤ 1.01× baseline",
            up <= 1.01 * bup,
            "B",
            up_r,
            bup_r,
        ),
        Row(
            area,
            "wall time",
            wall,
            bwall,
            other,
            "≤ 1.5× baseline",
            wall <= 1.5 * bwall,
            "s",
            wall_r,
            bwall_r,
        ),
        Row(
            area,
            f"peak RSS ({layer_mb:.0f} MB layer)",
            rss,
            brss,
            other,
            f"≤ {RSS_TARGET_MB} MB",
            rss <= RSS_TARGET_MB,
            "MB",
            rss_r,
            brss_r,
        ),
    ]
    return rows


def run(repeats: int = 3, quick: bool = False, budget_s: float | None = None) -> list[Row]:
    """Median figures over ``repeats`` (stops early when another repeat would not fit
    in 80% of ``budget_s``); returns the rows of the image area."""
    t0 = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="ddl-bench-image-", dir="/tmp"))
    bench = None
    try:
        bench = _Bench(root, BASE_MB)
        samples: list[dict[str, dict[str, Any]]] = []
        for i in range(1 if quick else max(1, repeats)):
            r0 = time.monotonic()
            samples.append(bench.repeat(i))
            took = time.monotonic() - r0
            if budget_s and time.monotonic() - t0 + took > 0.8 * budget_s:
                break
        return _rows(samples, bench.layer_mb)
    finally:
        if bench:
            bench.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(_child_build(json.loads(sys.argv[2]))))
    else:
        from benchmarks.table import render_text

        quick = "--quick" in sys.argv
        print(render_text(run(quick=quick)))
