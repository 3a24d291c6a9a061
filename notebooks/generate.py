"""Write the workshop (notebooks, guide, glossary) in every language from its sources.

Sources, in ``notebooks/src/``:

- ``<name>.py`` in the "percent" format (the one jupytext reads). ``# %%`` starts a
  code cell, ``# %% solution`` a code cell shown collapsed (an exercise's solution),
  ``# %% raises`` a code cell that fails on purpose, and ``# %% [markdown] KEY`` a Markdown cell whose ``# ``-prefixed lines are its
  English text. ``KEY`` names the text in every language's file.
- ``WORKSHOP.md``: the instructor's guide, cut into texts by ``<!-- i18n: KEY -->``
  lines.

Other languages: ``notebooks/i18n/<lang>/<name>.yaml`` (see ``translations.py``);
``notebooks/i18n/glossary.yaml`` holds the glossary in all languages.

Written: ``notebooks/<name>.ipynb`` and ``WORKSHOP.md`` (English),
``notebooks/<lang>/<name>.ipynb`` and ``WORKSHOP.<lang>.md`` (each other language) and
``GLOSSARY.md``. Code is the same in every language; notebooks are stored without
outputs, with stable cell ids, so regenerating changes nothing.

    python3 notebooks/generate.py            # write everything
    python3 notebooks/generate.py --check    # exit 1 if a file is stale or a translation file is wrong
    python3 notebooks/generate.py --status   # per language: untranslated, outdated entries
    python3 notebooks/generate.py --scaffold # add the keys the language files lack
    python3 notebooks/generate.py --accept ko  # ko's translations now match today's English
    python3 notebooks/generate.py --student DIR  # learners' copies, every language, no solutions

A student copy has each exercise's solution cells (and the checks among them) replaced by
one empty cell to write the answer in; everything else is the teacher's copy.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import translations as tr  # noqa: E402

SOURCES = HERE / "src"
GUIDE = "WORKSHOP"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
YOUR_TURN = "# Your turn: do the exercise above here, then check what it expects."
_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_GUIDE_MARK = re.compile(r"^<!-- i18n: ([a-z0-9-]+) -->$")


@dataclass(frozen=True)
class Cell:
    kind: str  # "code" or "markdown"
    source: str  # code, or the English text
    key: str = ""  # markdown: the text's key
    solution: bool = False  # code shown collapsed
    raises: bool = False  # code that fails on purpose (the failure is the lesson)


def parse_cells(text: str) -> list[Cell]:
    """Split a percent-format source into cells (markdown ``# `` prefixes removed)."""
    cells: list[tuple[str, str, str, list[str]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# %%"):
            words = line[4:].split()
            if words[:1] == ["[markdown]"]:
                if len(words) != 2 or not _KEY.match(words[1]):
                    raise ValueError(f"line {n}: write `# %% [markdown] KEY` (a-z, 0-9, -)")
                cells.append(("markdown", words[1], "", []))
            elif words in ([], ["solution"], ["raises"]):
                cells.append(("code", "", words[0] if words else "", []))
            else:
                raise ValueError(f"line {n}: unknown cell marker {line!r}")
        elif cells:
            if cells[-1][0] == "markdown":
                line = line[2:] if line.startswith("# ") else line.lstrip("#")
            cells[-1][3].append(line)
    out = [
        Cell(k, "\n".join(lines).strip("\n"), key, flag == "solution", flag == "raises")
        for k, key, flag, lines in cells
    ]
    keys = [c.key for c in out if c.key]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValueError(f"text keys used twice: {', '.join(dupes)}")
    return out


def parse_guide(text: str) -> dict[str, str]:
    """The guide's English texts by key, in order."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = _GUIDE_MARK.match(line)
        if m:
            current = m.group(1)
            if current in out:
                raise ValueError(f"{GUIDE}.md: text key used twice: {current}")
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip("\n") for k, v in out.items()}


def english(stem: str) -> dict[str, str]:
    """Every English text of a source, by key."""
    text = (SOURCES / (f"{stem}.md" if stem == GUIDE else f"{stem}.py")).read_text("utf-8")
    if stem == GUIDE:
        return parse_guide(text)
    return {c.key: c.source for c in parse_cells(text) if c.key}


def source_names() -> list[str]:
    return sorted(p.stem for p in SOURCES.glob("*.py")) + [GUIDE]


def student_cells(cells: list[Cell]) -> list[Cell]:
    """The cells of a learner's copy: each run of solution cells becomes one empty cell."""
    out: list[Cell] = []
    for c in cells:
        if c.solution:
            if not (out and out[-1].source == YOUR_TURN):
                out.append(Cell("code", YOUR_TURN))
        else:
            out.append(c)
    return out


def build(stem: str, cells: list[Cell], texts: dict[str, str], note: str = "") -> str:
    """One notebook as stored: no outputs, ids ``<stem>-<n>``."""
    nb = new_notebook(metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    if note:
        nb.cells.append(new_markdown_cell(f"> {note}", id=f"{stem}-i18n-note"))
    for n, c in enumerate(cells):
        if c.kind == "markdown":
            cell = new_markdown_cell(texts[c.key])
        else:
            cell = new_code_cell(c.source)
            if c.solution:  # collapsed in JupyterLab until the learner opens it
                cell.metadata.update(tags=["solution"], jupyter={"source_hidden": True})
            if c.raises:  # nbclient (and "Run All") go on past this cell's error
                cell.metadata.update(tags=["raises-exception"])
        cell["id"] = f"{stem}-{n}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def localise_links(markdown: str, lang: str) -> str:
    """Links to ``X.ipynb`` from a guide point at that language's copy."""
    if lang == tr.ENGLISH:
        return markdown
    return re.sub(r"\]\((?![a-z]+:)([\w.-]+\.ipynb)\)", rf"]({lang}/\1)", markdown)


def render_guide(texts: dict[str, str], lang: str, note: str = "") -> str:
    head = f"<!-- generated by notebooks/generate.py from src/{GUIDE}.md: edit that -->\n\n"
    body = "\n\n".join(localise_links(t, lang) for t in texts.values())
    return head + (f"> {note}\n\n" if note else "") + body + "\n"


def render_glossary() -> str:
    """GLOSSARY.md: one row per term, a column per language, then the meaning."""
    langs = tr.languages()
    terms = yaml.safe_load((tr.I18N / "glossary.yaml").read_text(encoding="utf-8"))
    head = "| " + " | ".join(lang.name for lang in langs) + " | meaning |"
    rows = [head, "|" + "---|" * (len(langs) + 1)]
    for term in terms:
        missing = [lang.code for lang in langs if not term.get(lang.code)]
        if missing:
            raise ValueError(f"glossary: {term.get('en')!r} lacks {', '.join(missing)}")
        cells = [term[lang.code] for lang in langs] + [term["meaning"]]
        rows.append("| " + " | ".join(cells) + " |")
    intro = (
        "<!-- generated by notebooks/generate.py from i18n/glossary.yaml: edit that -->\n\n"
        "# Glossary\n\nThe words of the workshop in its five languages. Translations of "
        "the notebooks use these terms; a term that is usually left in English in a "
        "language is written in English there too.\n\n"
    )
    return intro + "\n".join(rows) + "\n"


def outputs(student: Path | None = None) -> dict[Path, str]:
    """Every generated file and its content; with ``student``, only the learners'
    notebooks, under that folder (English at its top, other languages in ``<lang>/``)."""
    out: dict[Path, str] = {}
    for lang in tr.languages():
        for stem in source_names():
            eng = english(stem)
            texts, fallback = (
                tr.texts(eng, tr.load(lang.code, stem)) if lang.code != tr.ENGLISH else (eng, 0)
            )
            note = lang.note if fallback and lang.pending else ""
            if stem == GUIDE:
                suffix = "" if lang.code == tr.ENGLISH else f".{lang.code}"
                out[HERE / f"{GUIDE}{suffix}.md"] = render_guide(texts, lang.code, note)
                continue
            root = student or HERE
            folder = root if lang.code == tr.ENGLISH else root / lang.code
            cells = parse_cells((SOURCES / f"{stem}.py").read_text(encoding="utf-8"))
            if student:
                cells = student_cells(cells)
            out[folder / f"{stem}.ipynb"] = build(stem, cells, texts, note)
    if not student:
        out[HERE / "GLOSSARY.md"] = render_glossary()
    return out


def translation_report(strict_only: bool) -> list[str]:
    """One line per problem (only blocking ones when ``strict_only``)."""
    lines = []
    for lang in tr.languages()[1:]:
        for stem in source_names():
            problems = tr.check(english(stem), tr.load(lang.code, stem))
            shown = problems.blocking(lang.pending)
            if not strict_only:
                shown = shown or [
                    f"{len(problems.untranslated)} untranslated, {len(problems.outdated)} outdated"
                ]
            lines += [f"i18n/{lang.code}/{stem}.yaml: {p}" for p in shown]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="only report stale files")
    group.add_argument("--status", action="store_true", help="translation state per language")
    group.add_argument("--scaffold", action="store_true", help="add missing keys to language files")
    group.add_argument("--accept", metavar="LANG", help="mark LANG's translations current")
    group.add_argument(
        "--student", metavar="DIR", type=Path, help="write learners' copies (no solutions) to DIR"
    )
    args = ap.parse_args(argv)
    if args.student:
        if args.student.resolve() in (HERE, HERE.parent):
            ap.error("--student needs a folder of its own, not the notebooks' or the repository's")
        for path, text in outputs(student=args.student.resolve()).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        # the scaling notebook shows the reference plot stored beside the notebooks
        shutil.copytree(HERE / "reference", args.student / "reference", dirs_exist_ok=True)
        print(f"wrote the learners' notebooks, without solutions, to {args.student}")
        return 0
    if args.status:
        print("\n".join(translation_report(strict_only=False)))
        return 0
    if args.scaffold or args.accept:
        for lang in tr.languages()[1:]:
            for stem in source_names():
                if args.scaffold and tr.scaffold(lang.code, stem, english(stem)):
                    print(f"wrote notebooks/i18n/{lang.code}/{stem}.yaml")
                if args.accept == lang.code:
                    tr.accept(lang.code, stem, english(stem))
        return 0
    problems = translation_report(strict_only=True)
    stale = []
    for path, text in outputs().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(str(path.relative_to(HERE)))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote notebooks/{stale[-1]}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run python3 notebooks/generate.py")
    for line in problems:
        print(line)
    return 1 if (args.check and stale) or problems else 0


if __name__ == "__main__":
    sys.exit(main())
