"""The product's messages in the learner's language (English the source).

``tr("job {name} failed", name=n)`` marks a message and translates it into the
current language; ``N_("...")`` only marks one (a constant translated where it is
shown). The catalogs are gettext ``.po`` files (``catalog.py``); a message a catalog
lacks is shown in English.

The language, first that is set: a REST request's ``Accept-Language`` (``asking``,
that request only), ``%ddl lang CODE`` (this kernel only), the config's
``language`` key, then the kernel's locale (``LANGUAGE``, ``LC_ALL``,
``LC_MESSAGES``, ``LANG``, as gettext reads them); else English. Terms follow the
workshop's glossary (notebooks/i18n/glossary.yaml), so a learner reads the same word
in the notebook, the slides and the product's output.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

from jupyter_ddl.i18n.catalog import Catalog, load

#: the languages shipped, as the workshop names them; English is the source
LANGUAGES = ("en", "ko", "ja", "zh-Hans", "zh-Hant")

_ALIASES = {
    "zh-cn": "zh-Hans", "zh-sg": "zh-Hans", "zh-hans": "zh-Hans", "zh": "zh-Hans",
    "zh-tw": "zh-Hant", "zh-hk": "zh-Hant", "zh-mo": "zh-Hant", "zh-hant": "zh-Hant",
}  # fmt: skip

_chosen: str | None = None  # %ddl lang
_configured: str | None = None  # the config's `language`
#: a REST request's language: a context variable, so that concurrent requests (and the
#: executor threads their calls run on, given a copy of the context) each keep theirs
_asked: ContextVar[str | None] = ContextVar("jupyter_ddl_language", default=None)


def normalize(value: str) -> str | None:
    """The shipped language a locale or tag names (``ko_KR.UTF-8`` → ``ko``,
    ``zh_TW`` → ``zh-Hant``, ``en_US`` → ``en``), or None when it names none."""
    tag = value.split(".", 1)[0].split("@", 1)[0].replace("_", "-").strip().lower()
    if not tag:
        return None
    parts = tag.split("-")
    if parts[0] == "zh":
        if "hant" in parts[1:] or any(p in ("tw", "hk", "mo") for p in parts[1:]):
            return "zh-Hant"
        return "zh-Hans"
    if tag in _ALIASES:
        return _ALIASES[tag]
    base = parts[0]
    if base in ("c", "posix"):
        return "en"
    return base if base in LANGUAGES else None


def from_environment(env: Any = None) -> str:
    """The language of a locale environment, as gettext looks it up; English when
    none of its languages is shipped."""
    env = os.environ if env is None else env
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var)
        if not value:
            continue
        for item in value.split(":"):  # LANGUAGE is a priority list
            found = normalize(item)
            if found is not None:
                return found
        if var != "LANGUAGE":  # the first of LC_ALL, LC_MESSAGES, LANG set decides
            return "en"
    return "en"


def choose(code: str | None) -> None:
    """``%ddl lang CODE``: this kernel's language (None: back to config and locale)."""
    global _chosen
    _chosen = code


def configure(code: str | None) -> None:
    """The config's ``language`` key (None: the kernel's locale decides)."""
    global _configured
    _configured = code


def from_accept_language(header: str | None) -> str | None:
    """The shipped language an HTTP ``Accept-Language`` prefers most (``ko-KR,ko;q=0.9``
    → ``ko``), English for ``en``; None when it names none of them (or is absent)."""
    ranked: list[tuple[float, int, str]] = []
    for i, item in enumerate((header or "").split(",")[:20]):  # a header is bounded here
        tag, _, params = item.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                continue
        if tag and tag != "*" and 0 < q <= 1:
            ranked.append((-q, i, tag))
    for _, _, tag in sorted(ranked):
        found = normalize(tag)
        if found is not None:
            return found
    return None


@contextmanager
def asking(code: str | None) -> Iterator[None]:
    """Messages made inside are in ``code`` (None: as set otherwise), in this context only."""
    token = _asked.set(code)
    try:
        yield
    finally:
        _asked.reset(token)


def ask(code: str | None) -> None:
    """``asking`` for the rest of the current context (a request handler's task)."""
    _asked.set(code)


def language() -> str:
    """The language messages are shown in now."""
    return _asked.get() or _chosen or _configured or from_environment()


@cache
def translations(code: str) -> Catalog:
    """The catalog of a shipped language (English: an empty one)."""
    return load(code.replace("-", "_")) if code != "en" else Catalog([])


def tr(message: str, /, **fields: Any) -> str:
    """``message`` in the current language, its ``{fields}`` filled in; the English
    when the catalog has no translation. ``message`` is positional only, so that a
    field may be called ``message`` too."""
    text = translations(language()).gettext(message)
    return text.format(**fields) if fields else text


def N_(message: str) -> str:  # gettext's name for "mark, do not translate"
    """Marks a message for the catalogs without translating it (a constant)."""
    return message
