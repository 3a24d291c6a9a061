"""Words a user reads that bypass the catalogs: found in the sources, not from a list.

The extractor (``extract.py``) sees only what is marked (``tr``/``N_`` in Python,
``trans.__`` in the lab extension). This module finds what should have been marked
and was not, so that a new message cannot slip past the translators:

- Python: the message and ``hint=`` of every error a user meets (any ``DDLError``
  subclass, found by walking the package's class definitions), the ``help=`` of a
  flag, and ``print`` in the notebook surface, when written as a plain string or
  f-string with words in it; in the packages that only make what a user reads
  (``present/``, ``widgets/``, ``validation/``), every such string but docstrings and
  log calls.
- Lab extension: a string with words in it anywhere outside ``trans.__``, and any
  string with letters where the page shows it (a label, title, tooltip, dialog text,
  notification, an element's text or its ``aria-label``).

A line may opt out with a ``i18n:`` comment that says why (code shown as code, metadata
read before a translator exists), on it or on the line above.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parent.parent
LAB_SOURCES = PACKAGE.parent / "labextension" / "src"

#: two words of prose ("cannot split", "Open the"), not an identifier or a CSS class
_WORDS = re.compile(r"(?<![-\w/.:%@$])[A-Za-z][a-z]+ [a-z]{2,}(?![-\w(])")
_OPT_OUT = "i18n:"


def _prose(text: str) -> bool:
    return bool(_WORDS.search(text))


# -- Python ---------------------------------------------------------------------------------
def _error_classes(trees: dict[Path, ast.Module]) -> set[str]:
    """``DDLError`` and every class of the package derived from it, by name."""
    found = {"DDLError"}
    grew = True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in found:
                    bases = {
                        b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                        for b in node.bases
                    }
                    if bases & found:
                        found.add(node.name)
                        grew = True
    return found


def _visible(node: ast.expr) -> str | None:
    """The text a plain string or f-string shows (fields blanked), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        parts = [_visible(node.left), _visible(node.right)]
        shown = [p for p in parts if p is not None]
        return " ".join(shown) if shown else None
    return None


def _messages_of(call: ast.Call, errors: set[str], surface: bool) -> list[ast.expr]:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name in errors:
        said = list(call.args[:1]) + [
            k.value for k in call.keywords if k.arg in ("hint", "message")
        ]
        out: list[ast.expr] = []
        for node in said:
            out.extend(node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node])
        return out
    if name in ("flag", "add_argument"):
        return [k.value for k in call.keywords if k.arg == "help"]
    if surface and name == "print":
        return list(call.args)
    return []


#: packages that only make what a user reads (text, HTML, widgets, refusals): every
#: string with words in it there is a message, wherever it is written
_ALL_WORDS = ("present/", "widgets/", "validation/")
_LOG_CALLS = {"debug", "info", "warning", "error", "exception", "critical"}


def _quiet(tree: ast.Module) -> set[int]:
    """ids of the nodes that are no message: docstrings, what ``tr``/``N_`` mark, log
    calls (for the developer, in English)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            out.add(id(first.value))
        if isinstance(node, ast.Call):
            name = (
                node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            )
            if name in ("tr", "N_") or name in _LOG_CALLS:
                out.update(id(n) for n in ast.walk(node))
    return out


def _every_string(tree: ast.Module) -> list[ast.expr]:
    """Each string and f-string of a module, outside docstrings, marks and log calls."""
    quiet = _quiet(tree)
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if id(node) in quiet:
            continue
        if isinstance(node, ast.JoinedStr):
            quiet.update(id(v) for v in node.values)
            out.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node)
    return out


def python_unmarked(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Module (``notebook/commands.py``) → the unmarked messages it shows."""
    paths = [p for p in sorted(root.rglob("*.py")) if "i18n" not in p.relative_to(root).parts]
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in paths}
    errors = _error_classes(trees)
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        where = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        if where.startswith(_ALL_WORDS):
            said = _every_string(tree)
        else:
            surface = where.startswith("notebook/")
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
            said = [m for call in calls for m in _messages_of(call, errors, surface)]
        for message in said:
            text = _visible(message)
            if text is None or not _prose(re.sub(r"<[^>]*>", " ", text)):  # markup's text only
                continue
            near = lines[max(0, message.lineno - 2) : message.lineno]
            if any(_OPT_OUT in line for line in near):
                continue
            found.setdefault(where, []).append(text)
    return found


# -- the lab extension ----------------------------------------------------------------------
_LIT = re.compile(r"""'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`""")
_SHOWN = re.compile(
    r"(?:\b(?:label|caption|tooltip|title|body|accept|reject|why|placeholder|textContent)"
    r"\s*[:=]\s*(?:\w+\s*=>\s*\(?[^?;]*\?\s*)?"
    r"|\bsetAttribute\(\s*'(?:aria-label|title|placeholder)'\s*,\s*"
    r"|\bel\(\s*'[\w-]+'\s*,\s*(?:'[^']*'|`[^`]*`|[\w.]+)\s*,\s*"
    r"|\bNotification\.\w+\(\s*|\bcreateTextNode\(\s*|\.append\(\s*)"
    r"(" + _LIT.pattern + ")"
)
_MARKED_BEFORE = re.compile(r"(?<![\w$])_?trans\.__\(\s*$")


def _without_comments(text: str) -> str:
    """``text`` with its comments blanked out (strings and line numbers kept)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        m = _LIT.match(text, i) if text[i] in "'\"`" else None
        if m:
            out.append(m.group())
            i = m.end()
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            j = len(text) if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _shown_text(literal: str) -> str:
    """A TS string's text with its ``${...}`` fields blanked."""
    return re.sub(r"\$\{[^}]*\}", " ", literal[1:-1])


def lab_unmarked(src: Path = LAB_SOURCES) -> dict[str, list[str]]:
    """Source file (``jobview.ts``) → the strings it shows without ``trans.__``."""
    found: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.ts")) if src.is_dir() else []:
        raw = path.read_text(encoding="utf-8")
        lines = raw.splitlines()
        text = _without_comments(raw)
        hits: dict[int, str] = {}
        for m in _LIT.finditer(text):
            marked = _MARKED_BEFORE.search(text[max(0, m.start() - 40) : m.start()])
            markup = m.group()[1:].startswith("<")  # an SVG icon
            if not marked and not markup and _prose(_shown_text(m.group())):
                hits[m.start()] = m.group()
        for m in _SHOWN.finditer(text):
            if re.search(r"[A-Za-z]{2,}", _shown_text(m.group(1))):
                hits[m.start(1)] = m.group(1)
        for pos, literal in sorted(hits.items()):
            n = text.count("\n", 0, pos)  # 0-based line
            if any(_OPT_OUT in line for line in lines[max(0, n - 1) : n + 1]):
                continue
            line = lines[n].strip()
            if line.startswith("console.") or re.match(r"console\.\w+\(", line):
                continue
            found.setdefault(path.relative_to(src).as_posix(), []).append(literal)
    return found
