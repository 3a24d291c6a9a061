"""The marked messages of the package, and the catalogs kept in step with them.

``python -m jupyter_ddl.i18n.extract`` finds every ``tr("...")`` and ``N_("...")`` in
the package (``tr(name)`` translates a constant marked with ``N_`` where it is made), writes the template
``locale/jupyter_ddl.pot`` and adds each message a language's ``.po`` lacks, with an
empty ``msgstr`` for its translator; a message no longer marked is dropped from
them. The tests fail while any ``msgstr`` is empty (``missing``).
"""

from __future__ import annotations

import ast
import json
import re
import string
import sys
from pathlib import Path

from jupyter_ddl.i18n import LANGUAGES
from jupyter_ddl.i18n.catalog import DOMAIN, LOCALE_DIR, Entry, parse_po, po_path

PACKAGE = Path(__file__).parent.parent
MARKERS = ("tr", "N_")
#: the JupyterLab extension's sources (a checkout has them; an installed package not)
LAB_SOURCES = PACKAGE.parent / "labextension" / "src"
#: ``trans.__('...')`` (or ``this._trans.__``): a message JupyterLab's translator
#: shows (its first argument)
_LAB_CALL = re.compile(r"""(?<![\w$])_?trans\.__\(\s*('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")
#: JupyterLab's locales (its language packs' names) of each catalog
LAB_LOCALES = {"ko": "ko_KR", "ja": "ja_JP", "zh_Hans": "zh_CN", "zh_Hant": "zh_TW"}
LAB_DIR = Path(__file__).parent / "lab" / "locale"


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


def lab_messages(src: Path = LAB_SOURCES) -> dict[str, list[str]]:
    """Every ``trans.__('...')`` of the lab extension → the files that show it."""
    found: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.ts")) if src.is_dir() else []:
        where = f"labextension/src/{path.relative_to(src).as_posix()}"
        for m in _LAB_CALL.finditer(path.read_text(encoding="utf-8")):
            message = ast.literal_eval(m.group(1))  # a plain TS string reads as Python's
            places = found.setdefault(message, [])
            if where not in places:
                places.append(where)
    return found


def all_messages() -> dict[str, list[str]]:
    """The Python package's messages and the lab extension's, one catalog for both."""
    found = messages()
    for message, places in lab_messages().items():
        found.setdefault(message, []).extend(places)
    return found


def fields(message: str) -> set[str]:
    """The placeholders of a message: ``{name}`` as ``str.format`` reads them, and
    JupyterLab's ``%1``."""
    if re.search(r"%\d", message):
        return set(re.findall(r"%\d", message))
    return {
        f"{name}!{conv}" if conv else name
        for _, name, _, conv in string.Formatter().parse(message)
        if name is not None
    }


def lab_catalog(code: str, lab: dict[str, list[str]] | None = None) -> dict[str, object]:
    """A language's translations of the lab extension's messages, in the JSON a
    JupyterLab language pack ships (``<locale>/LC_MESSAGES/jupyter_ddl.json``)."""
    lab = lab_messages() if lab is None else lab
    have = catalog_entries(code)
    data: dict[str, object] = {
        "": {
            "domain": DOMAIN,
            "language": LAB_LOCALES[code].replace("_", "-"),
            "plural_forms": "nplurals=1; plural=0;",  # none of the four has plurals
        }
    }
    for message in sorted(lab):
        if message in have and have[message].msgstr and not have[message].fuzzy:
            data[message] = [have[message].msgstr]
    return data


def lab_path(code: str) -> Path:
    return LAB_DIR / LAB_LOCALES[code] / "LC_MESSAGES" / f"{DOMAIN}.json"


def lab_text(code: str, lab: dict[str, list[str]] | None = None) -> str:
    return json.dumps(lab_catalog(code, lab), ensure_ascii=False, indent=1, sort_keys=True) + "\n"


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
    marked = all_messages() if marked is None else marked
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
    marked = all_messages() if marked is None else marked
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
    if LAB_SOURCES.is_dir():
        lab = lab_messages()
        for code in codes():
            path = lab_path(code)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(lab_text(code, lab), encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    for path in update():
        print(path)
    gaps = {code: len(missing(code)) for code in codes()}
    print("untranslated:", ", ".join(f"{c} {n}" for c, n in gaps.items()))
    sys.exit(1 if any(gaps.values()) else 0)
