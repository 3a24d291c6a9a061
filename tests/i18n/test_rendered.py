"""What a learner reads, rendered in each language from real failing jobs' logs
(tests/data/failures): English exactly as before, the others translated around the
replica names, exit codes and log lines, which stay as they are."""

from __future__ import annotations

import pytest

from jupyter_ddl import i18n
from jupyter_ddl.core.failures import diagnose
from jupyter_ddl.errors import JobFailed, ValidationError
from jupyter_ddl.notebook.flags import argparse_words, build_parser
from jupyter_ddl.present.text import cause_line, localized_message, root_cause_text
from tests.core.test_failures import CASES, outcomes


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.choose(None)
    i18n.configure(None)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_english_cause_line_is_the_one_the_backends_write(case):
    i18n.choose("en")
    found = diagnose(outcomes(case))
    assert cause_line(found) == found.line
    message = f"{found.line} — PyTorchJob demo failed"
    assert localized_message(message, found) == message


@pytest.mark.parametrize(
    ("code", "root", "then"),
    [
        (
            "ko",
            "근본 원인: worker-1 · rank 2이(가) 가장 먼저 실패했습니다: exit code 3",
            "이어서: worker-0",
        ),
        ("ja", "根本原因: worker-1 · rank 2 が最初に失敗しました: exit code 3", "続いて: worker-0"),
        ("zh-Hans", "根本原因：worker-1 · rank 2 最先失败：exit code 3", "随后：worker-0"),
        ("zh-Hant", "根本原因：worker-1 · rank 2 最先失敗：exit code 3", "接著：worker-0"),
    ],
)
def test_a_root_cause_in_each_language(code, root, then):
    found = diagnose(outcomes("exit-no-traceback"))
    i18n.choose(code)
    text = root_cause_text(found)
    assert text.startswith(root) and then in text and "Connection closed by peer" in text
    message = localized_message(f"{found.line} — PyTorchJob demo failed", found)
    assert message.endswith(" — PyTorchJob demo failed")  # the operator's reason as it came
    error = str(JobFailed.of("demo", message, found.root))
    assert "worker-1 · rank 2" in error and "failed first" not in error
    assert error.startswith(
        i18n.tr("job {name} failed: {cause}; `%ddl logs {name}{where}` shows every line").split(
            "{"
        )[0]
    )
    assert "`%ddl logs demo --replica worker-1`" in error  # the next step, in code


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (
            "en",
            "%%distribute: unrecognized arguments: --wokers 2; `%%distribute --help` lists the flags",
        ),
        (
            "ko",
            "%%distribute: 알 수 없는 인자: --wokers 2; `%%distribute --help`로 플래그 목록을 볼 수 있습니다",
        ),
        (
            "ja",
            "%%distribute: 認識できない引数: --wokers 2; `%%distribute --help` でフラグの一覧を表示できます",
        ),
        (
            "zh-Hans",
            "%%distribute: 无法识别的参数：--wokers 2; `%%distribute --help` 会列出所有选项",
        ),
        (
            "zh-Hant",
            "%%distribute: 無法辨識的參數：--wokers 2; `%%distribute --help` 會列出所有選項",
        ),
    ],
)
def test_a_refused_flag_in_each_language(code, said):
    i18n.choose(code)
    with pytest.raises(ValidationError) as e:
        build_parser().parse_words(["--wokers", "2"])
    assert str(e.value) == said


def test_argparse_refusals_we_know_are_translated_and_others_pass_through():
    i18n.choose("ko")
    with pytest.raises(
        ValidationError, match="인자 --replicas/-n: int 값으로 올바르지 않습니다: 'two'"
    ):
        build_parser().parse_words(["--replicas", "two"])
    with pytest.raises(ValidationError, match="인자 --replicas/-n: 값이 하나 필요합니다"):
        build_parser().parse_words(["--replicas"])
    assert argparse_words("something argparse says one day") == "something argparse says one day"


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("en", "--gpus -1: give 0 or more per replica"),
        ("ko", "--gpus -1: 레플리카당 0 이상을 지정하세요"),
        ("ja", "--gpus -1: レプリカあたり 0 以上を指定してください"),
        ("zh-Hans", "--gpus -1: 每个副本的数量须为 0 或更多"),
        ("zh-Hant", "--gpus -1: 每個副本的數量須為 0 或更多"),
    ],
)
def test_an_out_of_range_flag_in_each_language(code, said):
    from jupyter_ddl.notebook.args import parse_line, spec_from_args

    i18n.choose(code)
    with pytest.raises(ValidationError) as e:
        spec_from_args(parse_line("--strategy torch-ddp --gpus -1"), name="n", backend="local")
    assert str(e.value) == said


def test_a_message_written_before_a_peer_was_stopped_is_still_translated():
    """The backend writes the line while its replicas fail; the final diagnosis may
    name one more consequence (a peer the job's end stopped). The line shown is the
    final one, in the reader's language."""
    found = diagnose(outcomes("gloo-closed"))
    assert found.consequences, "the stopped peer is a consequence"
    assert found.root is not None
    written = f"{found.root.label} failed first: {found.root.summary} — PyTorchJob demo failed"
    i18n.choose("ko")
    message = localized_message(written, found)
    assert message == f"{cause_line(found)} — PyTorchJob demo failed"
    assert "가장 먼저 실패했습니다" in message and "failed first" not in message
