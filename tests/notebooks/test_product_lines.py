"""The workshop quotes what the product prints ("What you should see"); in each
language the quote is what the product prints in that language: rendered here through
the product's own catalogs and functions, so a changed translation fails until the
notebook's text follows it (`python3 notebooks/generate.py` after editing the yaml)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from jupyter_ddl import i18n
from jupyter_ddl.i18n import tr

from .conftest import ALL_LANGS, NOTEBOOKS


def _crash_line() -> str:
    """The failed crash cell's one line, cut where the notebook's quote ends."""
    cause = tr(
        "{replica} failed first: {summary}", replica="worker-1 · rank 2", summary="exit code 3"
    )
    cause += " " + tr("(last lines: {lines})", lines="...")
    cause += tr("; then {replicas}", replicas="...")
    whole = tr(
        "job {name} failed: {cause}; `%ddl logs {name}{where}` shows every line",
        name="...", cause=cause, where="",
    )  # fmt: skip
    return whole[: whole.index(cause) + len(cause)]


def _restarts(n: int, limit: int) -> Callable[[], str]:
    return lambda: tr("restarts {n} of {limit} (backoff limit)", n=n, limit=limit)


#: (notebook, key of its text) → what the product prints there
QUOTED = [
    ("when-it-breaks", "crash", _crash_line),
    ("when-it-breaks", "restarts", _restarts(1, 3)),
    ("when-it-breaks", "backoff", _restarts(1, 1)),
]


def _text(name: str, key: str, lang: str) -> str:
    if lang == "en":
        source = (NOTEBOOKS / "src" / f"{name}.py").read_text(encoding="utf-8")
        start = source.index(f"# %% [markdown] {key}\n")
        return source[start : source.index("# %%", start + 5)]
    data = yaml.safe_load((NOTEBOOKS / "i18n" / lang / f"{name}.yaml").read_text("utf-8"))
    return str(data[key]["text"])


def _flat(text: str) -> str:
    """Markdown prose with its line breaks and comment marks gone (a quote may wrap)."""
    lines = [line.removeprefix("# ").removeprefix("#").strip() for line in text.splitlines()]
    return " ".join(line for line in lines if line)


@pytest.mark.parametrize("lang", ALL_LANGS)
@pytest.mark.parametrize(("name", "key", "render"), QUOTED, ids=[f"{n}:{k}" for n, k, _ in QUOTED])
def test_a_quoted_product_line_is_what_the_product_prints_in_that_language(lang, name, key, render):
    with i18n.asking(lang):
        said = render()
    assert f"`{said}`" in _flat(_text(name, key, lang)), (
        f"{lang} {name}.yaml:{key} should quote `{said}`"
    )


def test_the_quotes_differ_by_language():
    shown = set()
    for lang in ALL_LANGS:
        with i18n.asking(lang):
            shown.add(_crash_line())
    assert len(shown) == len(ALL_LANGS)
