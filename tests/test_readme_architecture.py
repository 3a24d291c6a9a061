"""The architecture is documented where a newcomer looks: README's Architecture section
fits one screen and points to docs/architecture.md, and the two together name every
module of the package, so a module added, renamed or removed without a word fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jupyter_ddl"
SKIP = {"__init__.py", "__main__.py", "_version.py"}


MAX_README_LINES = 80


def _readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Architecture")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _architecture() -> str:
    return _readme_section() + (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_the_readme_section_is_one_screen_and_points_to_the_rest():
    section = _readme_section().strip().splitlines()
    assert len(section) <= MAX_README_LINES, f"{len(section)} lines"
    assert "(docs/architecture.md)" in "\n".join(section)


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
    assert not missing, (
        f"README's Architecture section and docs/architecture.md do not name: {missing}"
    )


def test_the_section_names_no_module_that_is_gone():
    section = _architecture()
    names = {m.name for m in _modules()}
    # the modules named in backquotes (tests/… are test files, not modules)
    named = set(re.findall(r"`(?!tests/)(?:[\w/]+/)?(\w+\.py)`", section))
    runtime = {p.name for p in (PACKAGE / "runtime").glob("*.py")}
    assert named - names - runtime == set()
