"""The CRD copies in tests/data/crds are what SOURCES.md says they are (upstream blob ids)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

CRDS = Path(__file__).parent / "data" / "crds"


def _listed() -> dict[str, str]:
    rows = {}
    for line in (CRDS / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 5 and cells[0].endswith(".yaml"):
            rows[cells[0]] = cells[-1]
    return rows


def test_every_yaml_is_listed_with_its_upstream_blob():
    listed = _listed()
    files = sorted(str(p.relative_to(CRDS)) for p in CRDS.rglob("*.yaml"))
    assert files, "no CRD files in tests/data/crds"
    assert sorted(listed) == files
    for rel, blob in listed.items():
        assert re.fullmatch(r"[0-9a-f]{40}", blob), rel
        got = subprocess.run(
            ["git", "hash-object", str(CRDS / rel)], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert got == blob, f"{rel} differs from its upstream blob"
