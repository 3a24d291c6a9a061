"""The workshop's translation machinery: language files, the pending switch, fallbacks,
stale and missing keys, the glossary, and that generation is deterministic."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import yaml

from .conftest import ALL_LANGS, NOTEBOOKS, load_script

gen = load_script("generate")
tr = gen.tr  # the translations module generate.py imports

ENGLISH = {"intro": "# Title\n\nSome text.", "step": "Run `x`."}


def _entries(**texts):
    return {k: {"source": tr.fingerprint(ENGLISH[k]), "text": t} for k, t in texts.items()}


def test_the_five_languages_english_first_and_their_pending_switches():
    langs = tr.languages()
    assert [lang.code for lang in langs] == ["en", "ko", "zh-Hans", "ja", "zh-Hant"]
    assert [lang.code for lang in langs] == ALL_LANGS
    # Until the translators flip their switch (notebooks/i18n/languages.yaml).
    assert {lang.code: lang.pending for lang in langs} == {
        "en": False, "ko": False, "zh-Hans": False, "ja": False, "zh-Hant": False,
    }  # fmt: skip
    assert all(lang.note for lang in langs[1:])


def test_a_missing_translation_fails_once_the_language_is_no_longer_pending():
    problems = tr.check(ENGLISH, _entries(intro="# 제목\n\n본문.", step=None))
    assert problems.untranslated == ["step"]
    assert problems.blocking(pending=True) == []
    assert problems.blocking(pending=False) == ["untranslated step"]


def test_missing_and_stale_keys_fail_even_while_pending():
    entries = _entries(intro="x")
    entries["gone"] = {"source": "0", "text": "old"}
    problems = tr.check(ENGLISH, entries)
    assert problems.blocking(pending=True) == ["missing key step", "stale key gone"]


def test_an_outdated_translation_falls_back_to_english_and_fails_when_not_pending():
    entries = _entries(intro="# 제목", step="`x` 실행.")
    entries["step"]["source"] = tr.fingerprint("Run `y`.")  # translated from older English
    problems = tr.check(ENGLISH, entries)
    assert problems.outdated == ["step"]
    assert problems.blocking(pending=False) == ["outdated step (the English changed)"]
    texts, fallback = tr.texts(ENGLISH, entries)
    assert texts == {"intro": "# 제목", "step": "Run `x`."} and fallback == 1


def test_scaffold_adds_keys_keeps_translations_and_accept_marks_them_current(tmp_path):
    (tmp_path / "ko").mkdir()
    path = tr.path_of("ko", "demo", tmp_path)
    path.write_text("intro:\n  source: 0000000000\n  text: |-\n    # 제목\n\n    본문.\n")
    assert tr.scaffold("ko", "demo", ENGLISH, tmp_path) is True
    entries = tr.load("ko", "demo", tmp_path)
    assert entries["intro"]["text"] == "# 제목\n\n본문."
    assert entries["step"] == {"source": tr.fingerprint(ENGLISH["step"]), "text": None}
    assert tr.scaffold("ko", "demo", ENGLISH, tmp_path) is False  # nothing left to add
    assert tr.check(ENGLISH, entries).outdated == ["intro"]
    assert tr.accept("ko", "demo", ENGLISH, tmp_path) == 1
    assert tr.check(ENGLISH, tr.load("ko", "demo", tmp_path)).outdated == []


def test_every_language_file_exists_with_exactly_the_sources_keys():
    for lang in ALL_LANGS[1:]:
        for stem in gen.source_names():
            path = tr.path_of(lang, stem)
            assert path.exists(), f"{path} is missing: run python3 notebooks/generate.py --scaffold"
            problems = tr.check(gen.english(stem), tr.load(lang, stem))
            assert problems.missing == [] and problems.stale == [], (lang, stem)


def test_a_translated_notebook_has_the_translation_and_identical_code():
    source = "# %% [markdown] intro\n# # Title\n#\n# Some text.\n\n# %%\nprint(1)  # stays\n"
    cells = gen.parse_cells(source)
    texts, fallback = tr.texts(
        {"intro": cells[0].source},
        {"intro": {"source": tr.fingerprint(cells[0].source), "text": "# 标题\n\n正文。"}},
    )
    nb = nbformat.reads(gen.build("demo", cells, texts), as_version=4)
    assert fallback == 0
    assert [c.source for c in nb.cells] == ["# 标题\n\n正文。", "print(1)  # stays"]
    pending = nbformat.reads(gen.build("demo", cells, {"intro": cells[0].source}, "in progress"), 4)
    assert pending.cells[0].source == "> in progress" and pending.cells[0].id == "demo-i18n-note"


def test_generation_is_deterministic_and_covers_every_file():
    first, second = gen.outputs(), gen.outputs()
    assert first == second
    names = {str(p.relative_to(NOTEBOOKS)) for p in first}
    assert {"GLOSSARY.md", "WORKSHOP.md", "WORKSHOP.ko.md", "ja/when-it-breaks.ipynb"} <= names
    sources = len(list((NOTEBOOKS / "src").glob("*.py")))
    assert len(names) == len(ALL_LANGS) * (sources + 1) + 1


def test_guide_links_point_at_each_languages_notebooks():
    assert gen.localise_links("[a](quickstart.ipynb) [b](https://x/y.ipynb)", "ja") == (
        "[a](ja/quickstart.ipynb) [b](https://x/y.ipynb)"
    )
    assert gen.localise_links("[a](quickstart.ipynb)", "en") == "[a](quickstart.ipynb)"


def test_the_glossary_has_the_workshops_terms_in_all_five_languages():
    terms = yaml.safe_load((NOTEBOOKS / "i18n" / "glossary.yaml").read_text(encoding="utf-8"))
    english = {t["en"] for t in terms}
    for needed in (
        "replica", "rank", "world size", "all-reduce", "ring-allreduce", "parameter server",
        "gang scheduling", "data parallelism", "model parallelism", "pipeline parallelism",
        "backoff limit", "rendezvous", "launcher",
    ):  # fmt: skip
        assert needed in english, needed
    for term in terms:
        assert all(term.get(lang) for lang in ALL_LANGS) and term.get("meaning"), term
    table = (NOTEBOOKS / "GLOSSARY.md").read_text(encoding="utf-8")
    assert "| English | 한국어 | 简体中文 | 日本語 | 繁體中文 | meaning |" in table


def test_a_glossary_entry_missing_a_language_is_refused(monkeypatch, tmp_path):
    (tmp_path / "languages.yaml").write_text(
        (NOTEBOOKS / "i18n" / "languages.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "glossary.yaml").write_text("- {en: rank, ko: 랭크, meaning: m}\n", "utf-8")
    monkeypatch.setattr(tr, "I18N", Path(tmp_path))
    with pytest.raises(ValueError, match="'rank' lacks zh-Hans, ja, zh-Hant"):
        gen.render_glossary()


TERMS = yaml.safe_load((NOTEBOOKS / "i18n" / "terms.yaml").read_text(encoding="utf-8"))


def _texts_of(lang: str) -> list[tuple[str, str]]:
    """(where, text) for every translated text of a language and its glossary column."""
    out = []
    for path in sorted((NOTEBOOKS / "i18n" / lang).glob("*.yaml")):
        for key, entry in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if entry and entry.get("text"):
                out.append((f"{path.name}:{key}", str(entry["text"])))
    glossary = yaml.safe_load((NOTEBOOKS / "i18n" / "glossary.yaml").read_text("utf-8"))
    out += [(f"glossary.yaml:{t['en']}", t[lang]) for t in glossary]
    return out


def _violations(lang: str, texts: list[tuple[str, str]]) -> list[str]:
    import re

    found = []
    for rule in TERMS[lang]:
        for where, text in texts:
            for m in re.finditer(rule["avoid"], text):
                found.append(f"{lang} {where}: {m.group(0)!r} -> {rule['use']} ({rule['why']})")
    return found


def test_every_language_uses_its_chosen_terms():
    assert set(TERMS) == set(ALL_LANGS) - {"en"}
    problems = [v for lang in TERMS for v in _violations(lang, _texts_of(lang))]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize(
    ("lang", "bad"),
    [
        ("ko", "이 노트북은 노트북(laptop)에서는"),
        ("ko", "*Kernel → Restart Kernel and Clear Outputs of All Cells…*로 시작하세요"),
        ("ja", "パラメータサーバでは、各ワーカーが勾配をサーバーに送り"),
        ("ja", "ギャング（コ）スケジューリングはこのように動きます"),
        ("zh-Hans", "两个工作节点对梯度做全规约"),
        ("zh-Hant", "兩個 MultiWorkerMirrored 工作節點"),
        ("zh-Hant", "作業的記錄（狀態、根本原因）"),
        ("zh-Hant", "上方的記錄會顯示"),
    ],
)
def test_the_term_check_catches_the_words_it_forbids(lang, bad):
    assert _violations(lang, [("sample", bad)])


def test_the_term_check_leaves_the_verb_record_alone():
    assert not _violations("zh-Hant", [("sample", "訓練過程記錄在主行程的日誌裡")])


def test_the_term_check_leaves_rendering_emphasis_alone():
    assert not _violations("ko", [("sample", "**재시작 정책**에 따라 *All Cells…* 메뉴로")])
