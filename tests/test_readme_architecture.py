"""README's Architecture section names every module of the package, so a module added,
renamed or removed without a word there fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jupyter_ddl"
SKIP = {"__init__.py", "__main__.py", "_version.py"}


def _architecture() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Architecture")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _modules() -> list[Path]:
    return sorted(
        p.relative_to(PACKAGE)
        for p in PACKAGE.rglob("*.py")
        if p.name not in SKIP and "labextension" not in p.parts
    )


def test_every_module_is_named_in_the_architecture_section():
    section = _architecture()
    missing = [
        str(m)
        for m in _modules()
        if m.name not in section and str(m.with_suffix("")) not in section
    ]
    assert not missing, f"README's Architecture section does not name: {missing}"


def test_the_section_names_no_module_that_is_gone():
    section = _architecture()
    names = {m.name for m in _modules()}
    # the modules named in backquotes (tests/… are test files, not modules)
    named = set(re.findall(r"`(?!tests/)(?:[\w/]+/)?(\w+\.py)`", section))
    runtime = {p.name for p in (PACKAGE / "runtime").glob("*.py")}
    assert named - names - runtime == set()
