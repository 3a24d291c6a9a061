"""The guide's agendas: a 90-minute and a 3-hour path beside the day, the same in every
language, and the parts of notebooks the short ones run, executed on their own as a
learner who skips the other sections would run them."""

from __future__ import annotations

import re
import time

import nbformat
import pytest

from .conftest import LANGS, NOTEBOOKS, load_script, notebook_path
from .test_notebooks import NAMES, _notebook


def _agenda(guide: str, heading: str) -> list[tuple[int, int, list[str]]]:
    """(start, end in minutes, notebooks linked) per row of the table after ``heading``."""
    body = guide.split(heading + "\n", 1)[1].split("\n#", 1)[0]
    rows = []
    for m in re.finditer(r"^\| (\d+):(\d\d)–(\d+):(\d\d) \|(.*)$", body, re.M):
        h1, m1, h2, m2, rest = m.groups()
        rows.append(
            (
                int(h1) * 60 + int(m1),
                int(h2) * 60 + int(m2),
                re.findall(r"\(([\w/-]+)\.ipynb\)", rest),
            )
        )
    return rows


@pytest.mark.parametrize("lang", LANGS)
def test_the_guide_has_a_90_minute_and_a_3_hour_agenda_beside_the_day(lang):
    guide = (NOTEBOOKS / ("WORKSHOP.md" if lang == "en" else f"WORKSHOP.{lang}.md")).read_text(
        "utf-8"
    )
    headings = re.findall(r"^### .+$", guide, re.M)[:2]
    assert len(headings) == 2 and "90" in headings[0] and "3" in headings[1], headings
    for heading, minutes in ((headings[0], 90), (headings[1], 180)):
        rows = _agenda(guide, heading)
        assert rows[0][0] == 0 and rows[-1][1] == minutes, (heading, rows)
        assert all(a[1] == b[0] for a, b in zip(rows, rows[1:], strict=False)), (
            f"{heading}: a gap or an overlap"
        )
        linked = [n.split("/")[-1] for _, _, names in rows for n in names]
        assert "quickstart" in linked and set(linked) <= set(NAMES)
        # the day's order (mpi-horovod is the alternative to the TensorFlow slot)
        path = [n for n in linked if n != "mpi-horovod"]
        assert path == sorted(path, key=NAMES.index), heading


def _sections(row_rest: str) -> list[int]:
    """The numbered sections a row names after its link (``1–3``, ``1, 4 and 6``)."""
    named = row_rest.split(")", 1)[1].split("|", 1)[0] if ")" in row_rest else ""
    out: list[int] = []
    for a, b in re.findall(r"(\d+)(?:\s*[–〜～-]\s*(\d+))?", named):
        out += list(range(int(a), int(b or a) + 1))
    return out


def _agenda_cuts(guide: str) -> list[tuple[str, str, list[int]]]:
    """(agenda heading, notebook, sections) for each row that runs part of a notebook."""
    cuts = []
    for heading in re.findall(r"^### .+$", guide, re.M)[:2]:
        body = guide.split(heading + "\n", 1)[1].split("\n#", 1)[0]
        for line in body.splitlines():
            names = re.findall(r"\(([\w/-]+)\.ipynb\)", line)
            sections = _sections(line.rsplit(".ipynb)", 1)[-1] and line[line.rfind(".ipynb") :])
            if len(names) == 1 and sections:
                cuts.append((heading, names[0].split("/")[-1], sections))
    return cuts


def _cut(nb: nbformat.NotebookNode, sections: list[int]) -> nbformat.NotebookNode:
    """What a learner runs for these sections: every cell before section 1 (set-up,
    shared code), then the cells of each section named, up to the next ``## `` heading."""
    kept, current = [], 0
    for cell in nb.cells:
        heading = (
            re.search(r"^## (\d+)\.", cell.source, re.M) if cell.cell_type == "markdown" else None
        )
        if heading:
            current = int(heading.group(1))
        elif current and cell.cell_type == "markdown" and re.search(r"^## ", cell.source, re.M):
            current = -1  # an unnumbered section after the numbered ones: the summary
        if current == 0 or current in sections:
            kept.append(cell)
    out = nbformat.v4.new_notebook(metadata=nb.metadata)
    out.cells = kept
    return out


def test_the_short_agendas_name_the_same_sections_in_every_language():
    english = _agenda_cuts((NOTEBOOKS / "WORKSHOP.md").read_text("utf-8"))
    assert [(n, s) for _, n, s in english] == [
        ("pytorch", [2]),
        ("when-it-breaks", [1, 2, 3]),
        ("laptop-to-cluster", [1, 4, 6]),
        ("laptop-to-cluster", [1, 4]),
    ]
    for lang in LANGS[1:]:
        cuts = _agenda_cuts((NOTEBOOKS / f"WORKSHOP.{lang}.md").read_text("utf-8"))
        assert [(n, s) for _, n, s in cuts] == [(n, s) for _, n, s in english], lang


# Each short agenda in English and one other language. Whole notebooks are executed
# by the tests above in every language; here only the parts of notebooks the short
# agendas run, on their own, as a learner who skips the other sections would.
_AGENDA_LANGS = {"90 minutes": ("en", "ko"), "3 hours": ("en", "zh-Hans")}
_CUTS = [
    (agenda, name, tuple(sections), lang)
    for agenda, name, sections in (
        (h.lstrip("# "), n, s) for h, n, s in _agenda_cuts((NOTEBOOKS / "WORKSHOP.md").read_text())
    )
    for lang in _AGENDA_LANGS[agenda]
    if lang in LANGS
]


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.parametrize(("agenda", "name", "sections", "lang"), _CUTS)
def test_a_short_agenda_runs_its_sections_alone(notebook_env, agenda, name, sections, lang):
    from nbclient import NotebookClient

    runner = load_script("execute")
    path = notebook_path(name, lang)
    nb = _cut(_notebook(name, lang), list(sections))
    assert any(c.cell_type == "code" for c in nb.cells)
    start = time.monotonic()
    try:
        NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute(env=runner.kernel_env())
    finally:
        print(f"{agenda}: {lang}/{name} sections {sections}: {time.monotonic() - start:.1f} s")
    errors = [
        out
        for c in nb.cells
        if "raises-exception" not in c.metadata.get("tags", [])
        for out in c.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors
