"""The message catalogs: every marked message translated in every language, the
placeholders kept, the glossary's terms used, English untouched."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from jupyter_ddl import i18n
from jupyter_ddl.i18n import catalog, extract

REPO = Path(__file__).resolve().parents[2]
MARKED = extract.messages()
CODES = extract.codes()


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.choose(None)
    i18n.configure(None)


def test_the_package_marks_the_messages_a_learner_sees():
    # a few of each kind: an error's cause and next step, a state, a record heading, a form label
    for message in (
        "job {name} failed: {cause}; `%ddl logs {name}{where}` shows every line",
        "unrecognized arguments: {words}",
        "Failed",
        "root cause: {replica} failed first: {summary}",
        "Replicas (total)",
    ):
        assert message in MARKED
    assert len(MARKED) >= 80


@pytest.mark.parametrize("code", CODES)
def test_every_marked_message_has_a_translation(code):
    gaps = extract.missing(code, MARKED)
    assert gaps == [], (
        f"{code} lacks {len(gaps)} translation(s): {gaps[:5]}; run "
        "`python -m jupyter_ddl.i18n.extract` and fill in their msgstr"
    )


def test_a_message_marked_without_translations_is_reported_by_name():
    marked = {**MARKED, "a brand-new message {n}": ["x.py"]}
    for code in CODES:
        assert extract.missing(code, marked) == ["a brand-new message {n}"]


@pytest.mark.parametrize("code", CODES)
def test_no_catalog_keeps_a_message_the_package_no_longer_marks(code):
    stale = sorted(set(extract.catalog_entries(code)) - set(MARKED))
    assert stale == [], f"{code}: drop {stale} (`python -m jupyter_ddl.i18n.extract`)"


def test_the_template_lists_exactly_the_marked_messages():
    pot = catalog.LOCALE_DIR / f"{catalog.DOMAIN}.pot"
    held = {e.msgid for e in catalog.parse_po(pot.read_text(encoding="utf-8"))}
    assert held == set(MARKED), "run `python -m jupyter_ddl.i18n.extract`"


@pytest.mark.parametrize("code", CODES)
def test_every_translation_keeps_the_placeholders_and_formats(code):
    entries = extract.catalog_entries(code)
    for msgid in MARKED:
        said = entries[msgid].msgstr
        assert extract.fields(said) == extract.fields(msgid), (code, msgid, said)
        values = {name.split("!")[0]: "X" for name in extract.fields(msgid)}
        said.format(**values)  # no stray brace


def test_the_placeholder_check_sees_a_lost_or_renamed_field():
    assert extract.fields("job {name} failed: {cause}") == {"name", "cause"}
    assert extract.fields("작업 {이름} 실패: {cause}") != extract.fields(
        "job {name} failed: {cause}"
    )
    assert extract.fields("{job!r}") == {"job!r"} != extract.fields("{job}")


# -- the glossary's terms -------------------------------------------------------------------
TERMS = yaml.safe_load((REPO / "notebooks/i18n/terms.yaml").read_text(encoding="utf-8"))
GLOSSARY = yaml.safe_load((REPO / "notebooks/i18n/glossary.yaml").read_text(encoding="utf-8"))
#: English words of the messages whose glossary term a translation must use
CHECKED = {
    "replica": r"\breplicas?\b",
    "job": r"\bjobs?\b",
    "cell": r"\bcells?\b",
    "root cause": r"\broot cause\b",
    "backoff limit": r"\bbackoff limit\b",
    "dry run": r"\bdry run\b",
    "gang scheduling": r"\bgang scheduling\b",
}


def _term(code: str, english: str) -> str:
    """The glossary's word for ``english`` in a workshop language, without the
    parenthesised gloss: ``레플리카 (복제본)`` → ``레플리카``."""
    lang = code.replace("_", "-")
    entry = next(t for t in GLOSSARY if t["en"] == english)
    return re.split(r"\s*[（(]", entry[lang], maxsplit=1)[0].strip()


def _prose(text: str) -> str:
    """A message without its placeholders and `code` (which stay English)."""
    return re.sub(r"`[^`]*`|\{[^}]*\}", "", text)


@pytest.mark.parametrize("code", CODES)
def test_translations_use_the_workshops_terms(code):
    entries = extract.catalog_entries(code)
    wrong = []
    for msgid in MARKED:
        said = entries[msgid].msgstr
        for english, pattern in CHECKED.items():
            if re.search(pattern, _prose(msgid), re.I) and _term(code, english) not in said:
                wrong.append(f"{msgid!r} → {said!r} lacks {_term(code, english)!r}")
        for rule in TERMS.get(code.replace("_", "-"), []):
            if re.search(rule["avoid"], said):
                wrong.append(
                    f"{said!r} uses {rule['avoid']!r}: write {rule['use']} ({rule['why']})"
                )
    assert wrong == []


def test_the_term_check_reads_the_glossary():
    assert _term("ko", "replica") == "레플리카"
    assert _term("zh_Hant", "job") == "作業"
    assert _term("ja", "dry run") == "ドライラン"
