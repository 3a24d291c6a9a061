"""The REST API answers in the language the client asks for (``Accept-Language``; the
lab sends JupyterLab's), through the real server and the real local backend."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_ddl import i18n

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _english_locale(monkeypatch):
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    i18n.configure(None)
    yield
    i18n.choose(None)


async def _message(jp_fetch, *parts, language: str | None = None, **kw) -> tuple[int, str]:
    headers = {"Accept-Language": language} if language else {}
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("jupyter-ddl", *parts, headers=headers, **kw)
    return info.value.code, json.loads(info.value.response.body)["message"]


@pytest.mark.parametrize(
    ("language", "state", "job"),
    [
        (None, "unknown job state 'Done'", "no job named 'nope' in local"),
        ("fr-FR,fr;q=0.9", "unknown job state 'Done'", "no job named 'nope' in local"),
        (
            "ko-KR,ko;q=0.9,en;q=0.8",
            "알 수 없는 작업 상태 'Done'",
            "local에 이름이 'nope'인 작업이 없습니다",
        ),
        ("ja", "不明なジョブの状態 'Done'", "local に 'nope' という名前のジョブはありません"),
        ("en;q=0.5, zh-CN", "未知的任务状态 'Done'", "local 中没有名为 'nope' 的任务"),
        ("zh-TW", "未知的作業狀態 'Done'", "local 中沒有名為 'nope' 的作業"),
    ],
)
async def test_errors_come_in_the_language_asked_for(jp_fetch, language, state, job):
    code, message = await _message(jp_fetch, "jobs", params={"state": "Done"}, language=language)
    assert code == 400 and message.startswith("state: " + state), message
    code, message = await _message(jp_fetch, "jobs", "nope", language=language)
    assert code == 404 and message.startswith(job), message


async def test_a_request_language_does_not_leak_into_the_next_request(jp_fetch):
    await _message(jp_fetch, "jobs", "nope", language="ko")
    _, message = await _message(jp_fetch, "jobs", "nope")
    assert message.startswith("no job named 'nope' in local"), message
    assert i18n.language() == "en"  # nor into the server's own context
