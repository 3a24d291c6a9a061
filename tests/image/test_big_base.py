"""A 200 MB base layer in another registry: streamed with bounded memory (peak RSS of
the building process measured from a child, far below the layer's size), with the
progress callback reporting the copy."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.image import ours
from tests.support.require import executable

from .bases import make_layout, push_base
from .registries import start_registry

LAYER_MB = 200


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_big_base_from_another_registry_streams_with_bounded_memory(tmp_path):
    for name in ("docker-registry", "skopeo"):
        executable(name)
    a = start_registry("plain", tmp_path / "a")
    b = start_registry("plain", tmp_path / "b")
    try:
        layout = make_layout(tmp_path / "layout", "oci", big=LAYER_MB * 1024 * 1024)
        base = push_base(a, layout, "bases/big")
        shutil.rmtree(layout)
        result = ours(base, f"{b.host}/team/ddl-big", "print('big')\n")
        layer = LAYER_MB * 1024 * 1024
        assert result["pushed"] and result["bytes_up"] > layer
        assert result["rss_mb"] < 0.4 * LAYER_MB, result  # far below the 200 MB layer
        first, last = result["progress"][0], result["progress"][-1]
        assert last[0] == last[1] > layer and first[0] < last[0]
        assert result["progress_calls"] >= layer // (4 * 1024 * 1024)
        # the registry holds the whole base and the image is complete
        lines = b.access_lines()
        assert [s for m, p, s in lines if m == "PUT" and "/manifests/" in p] == [201]
        assert json.loads(json.dumps(result))["digest"].startswith("sha256:")
    finally:
        a.stop()
        b.stop()
