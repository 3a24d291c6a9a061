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
MARKED = extract.all_messages()  # the package's and the lab extension's
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
        "Training jobs",  # the sidebar
        "GPUs per replica",  # the lab's form
    ):
        assert message in MARKED
    assert len(MARKED) >= 120


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
    """A message without its placeholders, `code` and --flags (which stay English)."""
    return re.sub(r"`[^`]*`|\{[^}]*\}|--[\w-]+", "", text)


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


# -- the JupyterLab extension's catalogs ----------------------------------------------------
@pytest.mark.parametrize("code", CODES)
def test_the_lab_catalogs_are_written_from_the_po_files(code):
    path = extract.lab_path(code)
    assert path.read_text(encoding="utf-8") == extract.lab_text(code), (
        f"{path} is stale: run `python -m jupyter_ddl.i18n.extract`"
    )
    data = extract.lab_catalog(code)
    assert set(data) - {""} == set(extract.lab_messages())  # every sidebar/form string


def test_the_lab_sources_mark_the_sidebar_and_form_strings():
    lab = extract.lab_messages()
    assert {"Training jobs", "Filter jobs", "Distribute this cell", "More flags"} <= set(lab)
    assert "Proposed from the notebook's imports: %1." in lab  # a quote inside the string
    assert extract.fields("Open job %1, %2") == {"%1", "%2"}


def test_jupyterlab_server_serves_the_catalog_of_the_language_pack_set(monkeypatch):
    """jupyterlab_server reads our catalogs through the `jupyterlab.locale` entry point,
    the way it does for any extension; the entry point itself is pyproject's."""
    tu = pytest.importorskip("jupyterlab_server.translation_utils")
    import importlib

    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(
        r'\[project.entry-points."jupyterlab.locale"\]\njupyter_ddl = "([\w.]+)"', pyproject
    )
    assert declared is not None, "pyproject.toml lacks the jupyterlab.locale entry point"
    module = declared.group(1)
    folder = str(Path(importlib.import_module(module).__file__).parent)
    monkeypatch.setattr(tu, "_get_installed_package_locales", lambda: ({"jupyter_ddl": folder}, ""))
    data, message = tu.get_installed_packages_locale("ko_KR")
    assert message == ""
    assert data["jupyter_ddl"]["Training jobs"] == ["학습 작업"]
    assert data["jupyter_ddl"][""]["language"] == "ko-KR"
    assert tu.get_installed_packages_locale("zh_TW")[0]["jupyter_ddl"]["Training jobs"] == [
        "訓練作業"
    ]
