"""Reading the message catalogs (pure Python, standard ``gettext`` objects).

The catalogs are gettext ``.po`` files shipped in the package
(``locale/<lang>/LC_MESSAGES/jupyter_ddl.po``). They are read as text, so the package
needs no ``msgfmt`` step at build time and no compiled ``.mo`` in git; what a
``.po`` holds becomes a ``gettext.NullTranslations`` whose fallback is English, the
same object ``gettext.translation`` returns, so a missing or empty entry falls back
to the source text.
"""

from __future__ import annotations

import ast
import gettext
from dataclasses import dataclass
from pathlib import Path

DOMAIN = "jupyter_ddl"
LOCALE_DIR = Path(__file__).parent / "locale"


@dataclass(frozen=True)
class Entry:
    """One ``msgid``/``msgstr`` pair of a ``.po`` file (``fuzzy`` entries are kept
    but not used: a translator marked them as not yet right)."""

    msgid: str
    msgstr: str
    fuzzy: bool = False


def _unquote(text: str, where: str) -> str:
    text = text.strip()
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        raise ValueError(f"{where}: expected a quoted string, got {text[:40]!r}")
    # a .po string is a C string: the escapes Python's literal syntax also reads
    value = ast.literal_eval(text)
    assert isinstance(value, str)
    return value


def parse_po(text: str, where: str = "catalog") -> list[Entry]:
    """The entries of a ``.po`` file's text, the header (empty msgid) left out.
    ValueError naming the line for a file that is not a .po file."""
    entries: list[Entry] = []
    fields: dict[str, str] = {}
    current: str | None = None
    fuzzy = False

    def flush() -> None:
        nonlocal fields, fuzzy, current
        if "msgid" in fields and fields["msgid"]:
            entries.append(Entry(fields["msgid"], fields.get("msgstr", ""), fuzzy))
        fields, fuzzy, current = {}, False, None

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("#"):
            if current is not None and "msgstr" in fields:
                flush()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
        elif line.startswith(("msgid ", "msgstr ")):
            key, _, rest = line.partition(" ")
            if key == "msgid" and "msgid" in fields:
                flush()
            current = key
            fields[key] = _unquote(rest, f"{where}:{n}")
        elif line.startswith('"') and current is not None:
            fields[current] += _unquote(line, f"{where}:{n}")
        else:
            raise ValueError(f"{where}:{n}: not a .po line: {line[:40]!r}")
    flush()
    return entries


class Catalog(gettext.NullTranslations):
    """A translation read from a ``.po`` file: ``gettext(msgid)`` gives the
    translation, or the fallback's answer (the English source) when there is none."""

    def __init__(self, entries: list[Entry]) -> None:
        super().__init__()
        self.messages = {e.msgid: e.msgstr for e in entries if e.msgstr and not e.fuzzy}

    def gettext(self, message: str) -> str:
        found = self.messages.get(message)
        if found is not None:
            return found
        return super().gettext(message)


def po_path(code: str) -> Path:
    """The ``.po`` file of a catalog code (``ko``, ``zh_Hant``)."""
    return LOCALE_DIR / code / "LC_MESSAGES" / f"{DOMAIN}.po"


def load(code: str) -> Catalog:
    """The catalog of ``code``, English (an empty catalog) when there is no file."""
    path = po_path(code)
    if not path.is_file():
        return Catalog([])
    return Catalog(parse_po(path.read_text(encoding="utf-8"), str(path)))
