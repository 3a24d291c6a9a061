"""Which language messages are shown in, and what a missing translation shows."""

from __future__ import annotations

import pytest

from jupyter_ddl import i18n
from jupyter_ddl.config import Config
from jupyter_ddl.errors import ValidationError
from jupyter_ddl.i18n import catalog


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.choose(None)
    i18n.configure(None)


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("ko_KR.UTF-8", "ko"), ("ja_JP.eucJP", "ja"), ("ja", "ja"),
        ("zh_CN.UTF-8", "zh-Hans"), ("zh_SG", "zh-Hans"), ("zh-Hans", "zh-Hans"), ("zh", "zh-Hans"),
        ("zh_TW.UTF-8", "zh-Hant"), ("zh_HK", "zh-Hant"), ("zh-Hant-TW", "zh-Hant"),
        ("zh-hant", "zh-Hant"), ("en_US.UTF-8", "en"), ("C", "en"), ("POSIX", "en"),
        ("C.UTF-8", "en"), ("fr_FR.UTF-8", None), ("", None),
    ],
)  # fmt: skip
def test_a_locale_names_a_shipped_language_or_none(value, code):
    assert i18n.normalize(value) == code


def test_the_locale_is_read_as_gettext_reads_it():
    env = i18n.from_environment
    assert env({}) == "en"
    assert env({"LANG": "ko_KR.UTF-8"}) == "ko"
    assert env({"LANG": "ko_KR.UTF-8", "LC_ALL": "C.UTF-8"}) == "en"  # LC_ALL wins
    assert env({"LANG": "en_US.UTF-8", "LC_MESSAGES": "ja_JP.UTF-8"}) == "ja"
    assert env({"LANGUAGE": "fr:zh_TW:en", "LANG": "ko_KR.UTF-8"}) == "zh-Hant"  # a list
    assert env({"LANGUAGE": "fr", "LANG": "ja_JP.UTF-8"}) == "ja"  # none shipped: go on
    assert env({"LANG": "fr_FR.UTF-8"}) == "en"


def test_lang_beats_the_config_which_beats_the_locale(monkeypatch):
    monkeypatch.setenv("LANGUAGE", "ja")
    assert i18n.language() == "ja" and i18n.tr("Failed") == "失敗"
    i18n.configure("zh-Hant")
    assert i18n.language() == "zh-Hant" and i18n.tr("Failed") == "失敗"
    i18n.choose("ko")
    assert i18n.tr("Failed") == "실패"
    i18n.choose(None)
    i18n.configure(None)
    monkeypatch.setenv("LANGUAGE", "en")
    assert i18n.tr("Failed") == "Failed"


def test_english_is_the_source_and_fields_are_filled_in():
    i18n.choose("en")
    assert i18n.tr("restarts {n}", n=2) == "restarts 2"
    assert i18n.tr("a text no catalog has") == "a text no catalog has"
    i18n.choose("ko")
    assert i18n.tr("restarts {n}", n=2) == "재시작 2회"
    assert i18n.tr("a text no catalog has {n}", n=1) == "a text no catalog has 1"  # fallback


def test_a_po_file_is_read_with_continuations_escapes_and_fuzzy_entries():
    text = (
        'msgid ""\nmsgstr ""\n"Language: ko\\n"\n\n'
        '#: a.py\nmsgid "one "\n"line"\nmsgstr "한 "\n"줄 \\"따옴표\\""\n\n'
        '#, fuzzy\nmsgid "two"\nmsgstr "둘?"\n\n'
        'msgid "three"\nmsgstr ""\n'
    )
    entries = catalog.parse_po(text)
    assert [(e.msgid, e.msgstr, e.fuzzy) for e in entries] == [
        ("one line", '한 줄 "따옴표"', False), ("two", "둘?", True), ("three", "", False),
    ]  # fmt: skip
    cat = catalog.Catalog(entries)
    assert cat.gettext("one line") == '한 줄 "따옴표"'
    assert cat.gettext("two") == "two" and cat.gettext("three") == "three"  # English


def test_a_broken_po_file_is_refused_naming_the_line():
    with pytest.raises(ValueError, match=r"x\.po:2: not a \.po line"):
        catalog.parse_po('msgid "a"\nnonsense\n', "x.po")


def test_the_config_takes_a_shipped_language_and_refuses_others():
    cfg = Config()
    cfg.set("language", "zh-Hant")
    assert cfg.language == "zh-Hant"
    cfg.set("language", "none")
    assert cfg.language is None
    with pytest.raises(
        ValidationError,
        match=r"config: language 'fr' is no language shipped .*%ddl config language=ko",
    ):
        cfg.set("language", "fr")


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ("ko-KR,ko;q=0.9,en-US;q=0.8", "ko"),
        ("en;q=0.5, ja", "ja"),
        ("zh-TW", "zh-Hant"),
        ("zh-Hans-CN", "zh-Hans"),
        ("en-US", "en"),
        ("fr-FR, de;q=0.5", None),
        ("*", None),
        ("ko;q=abc, ja;q=0.1", "ja"),  # a broken weight leaves that tag out
        ("", None),
        (None, None),
    ],
)
def test_accept_language_picks_the_most_wanted_shipped_language(header, code):
    assert i18n.from_accept_language(header) == code


def test_a_request_language_beats_lang_and_ends_with_its_context():
    i18n.choose("ja")
    with i18n.asking("ko"):
        assert i18n.language() == "ko"
        with i18n.asking(None):
            assert i18n.language() == "ja"  # a request that asks for none
    assert i18n.language() == "ja"
