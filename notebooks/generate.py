"""Write the workshop notebooks from their text sources in ``notebooks/src/``.

The sources use the "percent" format (the one jupytext reads): a line ``# %%`` starts
a code cell, ``# %% [markdown]`` a markdown cell whose lines are ``# ``-prefixed. The
text form is what we review and diff; the ``.ipynb`` files are generated from it and
stored without outputs, with stable cell ids so regenerating changes nothing.

    python3 notebooks/generate.py          # rewrite notebooks/*.ipynb
    python3 notebooks/generate.py --check  # exit 1 if a stored notebook is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def parse_cells(text: str) -> list[tuple[str, str]]:
    """Split percent-format text into ``(kind, source)`` pairs, kind "code"/"markdown"."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            kind = "markdown" if "[markdown]" in line else "code"
            cells.append((kind, []))
        elif cells:
            kind, lines = cells[-1]
            if kind == "markdown":
                line = line[2:] if line.startswith("# ") else line.lstrip("#")
            lines.append(line)
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in cells]


def build(stem: str, text: str) -> nbformat.NotebookNode:
    """The notebook for one source: no outputs, ids ``<stem>-<n>``."""
    nb = new_notebook(metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    for n, (kind, source) in enumerate(parse_cells(text)):
        cell = new_markdown_cell(source) if kind == "markdown" else new_code_cell(source)
        cell["id"] = f"{stem}-{n}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(stem: str) -> str:
    nb = build(stem, (SOURCES / f"{stem}.py").read_text(encoding="utf-8"))
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report stale notebooks")
    args = ap.parse_args(argv)
    stale = []
    for src in sorted(SOURCES.glob("*.py")):
        target = HERE / f"{src.stem}.ipynb"
        text = render(src.stem)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(target.name)
        if not args.check:
            target.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"stale notebooks: {', '.join(stale)}; run python3 notebooks/generate.py")
        return 1
    for name in stale:
        print(f"wrote notebooks/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
