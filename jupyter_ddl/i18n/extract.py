"""The marked messages of the package, and the catalogs kept in step with them.

``python -m jupyter_ddl.i18n.extract`` finds every ``tr("...")`` and ``N_("...")`` in
the package (``tr(name)`` translates a constant marked with ``N_`` where it is made), writes the template
``locale/jupyter_ddl.pot`` and adds each message a language's ``.po`` lacks, with an
empty ``msgstr`` for its translator; a message no longer marked is dropped from
them. The tests fail while any ``msgstr`` is empty (``missing``).
"""

from __future__ import annotations

import ast
import string
import sys
from pathlib import Path

from jupyter_ddl.i18n import LANGUAGES
from jupyter_ddl.i18n.catalog import DOMAIN, LOCALE_DIR, Entry, parse_po, po_path

PACKAGE = Path(__file__).parent.parent
MARKERS = ("tr", "N_")


def messages(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Every marked message → the modules that mark it (``notebook/flags.py``)."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in MARKERS or not node.args:
                continue
            first = node.args[0]
            where = str(path.relative_to(root))  # no line: a catalog changes with its texts only
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                if node.func.id == "N_":
                    raise ValueError(f"{where}: N_() needs a literal message")
                continue  # tr(x): x is a constant marked with N_ where it is made
            places = found.setdefault(first.value, [])
            if where not in places:
                places.append(where)
    return found


def fields(message: str) -> set[str]:
    """The ``{placeholders}`` of a message, as ``str.format`` reads them."""
    return {
        f"{name}!{conv}" if conv else name
        for _, name, _, conv in string.Formatter().parse(message)
        if name is not None
    }


def codes() -> list[str]:
    """The catalogs' codes: every shipped language but the English source."""
    return [code.replace("-", "_") for code in LANGUAGES if code != "en"]


def catalog_entries(code: str) -> dict[str, Entry]:
    path = po_path(code)
    if not path.is_file():
        return {}
    return {e.msgid: e for e in parse_po(path.read_text(encoding="utf-8"), str(path))}


def missing(code: str, marked: dict[str, list[str]] | None = None) -> list[str]:
    """The marked messages ``code``'s catalog has no (usable) translation of."""
    marked = messages() if marked is None else marked
    have = catalog_entries(code)
    return [m for m in marked if m not in have or not have[m].msgstr or have[m].fuzzy]


def _quote(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def render(entries: list[tuple[str, str, list[str]]], language: str) -> str:
    """A ``.po`` (or ``.pot``, ``language`` empty) file's text."""
    out = [
        'msgid ""',
        'msgstr ""',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        f'"Language: {language}\\n"',
        "",
    ]
    for msgid, msgstr, where in entries:
        out += [f"#: {w}" for w in where[:3]]
        out += [f"msgid {_quote(msgid)}", f"msgstr {_quote(msgstr)}", ""]
    return "\n".join(out)


def update(marked: dict[str, list[str]] | None = None) -> list[Path]:
    """Write the template and bring every catalog in step with the marked messages."""
    marked = messages() if marked is None else marked
    written = []
    pot = LOCALE_DIR / f"{DOMAIN}.pot"
    pot.write_text(render([(m, "", w) for m, w in marked.items()], ""), encoding="utf-8")
    written.append(pot)
    for code in codes():
        have = catalog_entries(code)
        rows = [(m, have[m].msgstr if m in have else "", w) for m, w in marked.items()]
        path = po_path(code)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(rows, code), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in update():
        print(path)
    gaps = {code: len(missing(code)) for code in codes()}
    print("untranslated:", ", ".join(f"{c} {n}" for c, n in gaps.items()))
    sys.exit(1 if any(gaps.values()) else 0)
