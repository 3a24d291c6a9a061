"""docs/operator-contract.md stands alone: every section the code cites exists, and
nothing in the repository points outside it to a sibling reference directory."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "operator-contract.md"

#: where code and tests cite the contract by section number
CITING = ("jupyter_ddl", "tests", "benchmarks", "notebooks/src")
#: where a path to a reference outside the repository must not appear
SEARCHED = (
    "jupyter_ddl",
    "tests",
    "benchmarks",
    "notebooks",
    "docs",
    "scripts",
    ".ci",
    "jupyter-config",
    "labextension/src",
    "README.md",
    "pyproject.toml",
)
SKIPPED_DIRS = {"__pycache__", "node_modules", ".venv", ".git", ".ipynb_checkpoints"}

SECTION = re.compile(r"§(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
# Assembled from parts so that this file does not match its own patterns.
OUTSIDE = re.compile(r"(?:\.\./)+" + "shared" + r"\b|/work/" + "shared" + r"\b")


def _text_files(*tops: str) -> list[Path]:
    files: list[Path] = []
    for top in tops:
        path = ROOT / top
        if path.is_file():
            files.append(path)
            continue
        for p in sorted(path.rglob("*")):
            if p.is_file() and not SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts):
                files.append(p)
    return files


def _read(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:4096]:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def _headings() -> list[str]:
    return HEADING.findall(DOC.read_text(encoding="utf-8"))


def _citations() -> dict[str, set[str]]:
    """section -> the files citing it."""
    cited: dict[str, set[str]] = {}
    for path in _text_files(*CITING):
        text = _read(path)
        if text is None or path == DOC:
            continue
        for number in SECTION.findall(text):
            cited.setdefault(number, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_every_cited_section_is_a_heading_of_the_contract():
    headings = set(_headings())
    cited = _citations()
    assert cited, "no § citations found: the scan itself is broken"
    missing = {n: sorted(files) for n, files in cited.items() if n not in headings}
    assert not missing, f"sections cited but not in {DOC.name}: {missing}"


def test_section_numbers_are_unique_and_in_order():
    numbers = _headings()
    assert numbers[:2] == ["0", "1"], numbers[:2]
    assert len(numbers) == len(set(numbers)), "a section number appears twice"
    keys = [tuple(int(x) for x in n.split(".")) for n in numbers]
    assert keys == sorted(keys), "section headings are out of order"
    for major in {k[0] for k in keys}:
        minors = [k[1] for k in keys if k[0] == major and len(k) == 2]
        assert minors == list(range(1, len(minors) + 1)), f"§{major} skips a subsection"


def test_citations_inside_the_contract_point_at_its_own_headings():
    headings = set(_headings())
    text = DOC.read_text(encoding="utf-8")
    dangling = sorted({n for n in SECTION.findall(text) if n not in headings})
    assert not dangling, f"{DOC.name} refers to sections it does not have: {dangling}"


def test_no_file_points_at_a_reference_outside_the_repository():
    hits = []
    for path in _text_files(*SEARCHED):
        if path == Path(__file__).resolve():
            continue
        text = _read(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not hits, "references outside the repository:\n" + "\n".join(hits)


def test_the_scans_see_what_they_should():
    # A pattern or walk that matched nothing would make the tests above pass vacuously.
    assert OUTSIDE.search("see ../" + "shared/toolchain.md")
    assert OUTSIDE.search("/work/" + "shared/design.md")
    assert not OUTSIDE.search("shared memory, shared_ptr, sharedir")
    assert SECTION.findall("(§1.2, §10.3) and §7.") == ["1.2", "10.3", "7"]
    names = {p.name for p in _text_files(*SEARCHED)}
    assert {"contract.py", "operator-contract.md", "README.md"} <= names
