"""Per-language text of the workshop: which languages, their files, and their state.

English is written in the sources (``notebooks/src/``); every other language keeps one
YAML file per source in ``notebooks/i18n/<lang>/<source>.yaml``, one entry per text
key of that source::

    intro:
      source: '3f1c0a9e2b'    # fingerprint of the English this entry translates
      text: |-
        (the translation, Markdown)

``text: null`` is an entry nobody has translated yet. ``notebooks/i18n/languages.yaml``
lists the languages; ``pending: true`` there is the one switch per language: while it
is set, untranslated or outdated entries fall back to English and are only reported;
once the translators set it to ``false`` every such entry fails the check. Missing and
stale keys fail in every language: ``generate.py --scaffold`` adds the missing ones.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
I18N = HERE / "i18n"
ENGLISH = "en"


@dataclass(frozen=True)
class Language:
    code: str  # BCP 47: en, ko, zh-Hans, ja, zh-Hant
    name: str  # in the language itself
    pending: bool
    note: str = ""  # shown atop generated files while pending


@dataclass
class Problems:
    """What is wrong with one language file, per kind of problem."""

    missing: list[str] = field(default_factory=list)  # key in the source, not in the file
    stale: list[str] = field(default_factory=list)  # key in the file, not in the source
    untranslated: list[str] = field(default_factory=list)  # text: null
    outdated: list[str] = field(default_factory=list)  # the English changed since

    def blocking(self, pending: bool) -> list[str]:
        """The problems that fail the check for a language in this state."""
        out = [f"missing key {k}" for k in self.missing]
        out += [f"stale key {k}" for k in self.stale]
        if not pending:
            out += [f"untranslated {k}" for k in self.untranslated]
            out += [f"outdated {k} (the English changed)" for k in self.outdated]
        return out


def fingerprint(english: str) -> str:
    return hashlib.sha256(english.encode("utf-8")).hexdigest()[:10]


def languages(root: Path = I18N) -> list[Language]:
    """Every language, English first, from ``languages.yaml``."""
    data = yaml.safe_load((root / "languages.yaml").read_text(encoding="utf-8"))
    out = [
        Language(code, str(v["name"]), bool(v.get("pending", False)), str(v.get("note", "")))
        for code, v in data.items()
    ]
    assert out and out[0].code == ENGLISH, "languages.yaml must list en first"
    return out


def path_of(lang: str, source: str, root: Path = I18N) -> Path:
    return root / lang / f"{source}.yaml"


def load(lang: str, source: str, root: Path = I18N) -> dict[str, dict[str, str | None]]:
    """The entries of one language file ({} when the file does not exist)."""
    path = path_of(lang, source, root)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = {}
    for key, value in data.items():
        entry = dict(value or {})
        if entry.get("source") is not None:  # a fingerprint of digits reads as a number
            entry["source"] = str(entry["source"])
        out[str(key)] = entry
    return out


def check(english: dict[str, str], entries: dict[str, dict[str, str | None]]) -> Problems:
    """Compare one language file's entries with the English texts of its source."""
    p = Problems()
    p.missing = [k for k in english if k not in entries]
    p.stale = [k for k in entries if k not in english]
    for key, text in english.items():
        entry = entries.get(key)
        if entry is None:
            continue
        if not entry.get("text"):
            p.untranslated.append(key)
        elif entry.get("source") != fingerprint(text):
            p.outdated.append(key)
    return p


def texts(
    english: dict[str, str], entries: dict[str, dict[str, str | None]]
) -> tuple[dict[str, str], int]:
    """The text to print per key (the translation when current, else the English) and
    how many keys fell back to English."""
    out, fallback = {}, 0
    for key, text in english.items():
        entry = entries.get(key) or {}
        translated = entry.get("text")
        if translated and entry.get("source") == fingerprint(text):
            out[key] = str(translated).strip("\n")
        else:
            out[key], fallback = text, fallback + 1
    return out, fallback


def dump(english: dict[str, str], entries: dict[str, dict[str, str | None]]) -> str:
    """A language file with every key of the source, in source order, then any stale
    keys (kept for the translator to move); new keys get ``text: null``."""
    lines = []
    keys = list(english) + [k for k in entries if k not in english]
    for key in keys:
        entry = entries.get(key) or {}
        source = (
            entry["source"]
            if entry.get("source") is not None
            else fingerprint(english.get(key, ""))
        )
        lines += [f"{key}:", f"  source: '{source}'"]
        text = entry.get("text")
        if not text:
            lines.append("  text: null")
        else:
            lines.append("  text: |-")
            lines += [f"    {line}" if line else "" for line in str(text).strip("\n").split("\n")]
    return "\n".join(lines) + "\n"


def scaffold(lang: str, source: str, english: dict[str, str], root: Path = I18N) -> bool:
    """Add the keys a language file lacks (``text: null``). True when it changed."""
    path = path_of(lang, source, root)
    entries = load(lang, source, root)
    text = dump(english, entries)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def accept(lang: str, source: str, english: dict[str, str], root: Path = I18N) -> int:
    """Mark every translated entry of a file as translating today's English (the
    translator ran this after bringing the outdated ones up to date). Returns how many
    entries changed."""
    entries = load(lang, source, root)
    changed = 0
    for key, entry in entries.items():
        if (
            entry.get("text")
            and key in english
            and entry.get("source") != fingerprint(english[key])
        ):
            entry["source"] = fingerprint(english[key])
            changed += 1
    path_of(lang, source, root).write_text(dump(english, entries), encoding="utf-8")
    return changed
