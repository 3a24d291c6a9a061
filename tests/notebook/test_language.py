"""The magics in the learner's language: ``%ddl lang``, the config's ``language``,
and a ko kernel end to end (nbclient, the real local backend)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_ddl import i18n
from jupyter_ddl.errors import ShownError
from tests.support import require

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _english_after():
    yield
    i18n.choose(None)
    i18n.configure(None)


def test_ddl_lang_switches_this_kernels_messages(shell, magics, capsys):
    shell.run_line_magic("ddl", "lang ko")
    assert capsys.readouterr().out == "언어: ko\n"
    with pytest.raises(ShownError) as e:
        shell.run_line_magic("ddl", "stauts")
    assert str(e.value).startswith(
        "%ddl: 알 수 없는 명령 'stauts'입니다. 다음 중 하나를 사용하세요: list"
    )
    shell.run_line_magic("ddl", "lang zh_TW")
    assert capsys.readouterr().out == "語言：zh-Hant\n"
    shell.run_line_magic("ddl", "list")
    assert capsys.readouterr().out.startswith("還沒有作業；")
    shell.run_line_magic("ddl", "lang auto")
    capsys.readouterr()
    with pytest.raises(ShownError) as e:
        shell.run_line_magic("ddl", "stauts")
    assert str(e.value).startswith("%ddl: unknown command 'stauts'; use one of: list")


def test_ddl_lang_refuses_a_language_not_shipped_in_one_line(shell, magics):
    with pytest.raises(ShownError) as e:
        shell.run_line_magic("ddl", "lang fr")
    assert str(e.value) == (
        "%ddl lang: 'fr' is no language shipped; give one of en, ko, ja, zh-Hans, zh-Hant or auto"
    )
    assert i18n.language() == "en"


def test_the_configs_language_applies_at_once_and_when_the_magics_load(
    shell, magics, manager, capsys
):
    shell.run_line_magic("ddl", "config language=ja")
    capsys.readouterr()
    assert i18n.language() == "ja"
    shell.run_line_magic("ddl", "list")
    assert capsys.readouterr().out.startswith("ジョブはまだありません。")
    i18n.configure(None)
    from jupyter_ddl.notebook.magics import load

    load(shell, manager=manager)  # a new kernel reads the config's language
    assert i18n.language() == "ja"


# -- a real kernel whose locale is Korean ---------------------------------------------------
FAILING_CELL = """\
import sys
print(f"rank {rank} reading its shard")
if rank == 0:  # the master: a PyTorchJob whose master succeeds succeeds
    sys.exit(3)
"""


def _outputs(cell) -> str:
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type == "error":
            out.append("\n".join(o.traceback))
        else:
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


@pytest.mark.slow
def test_a_korean_kernel_shows_korean_error_lines_end_to_end(data_dir, tmp_path, monkeypatch):
    require.module("nbclient")
    require.module("ipykernel")
    require.module("torch")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "ko_KR.UTF-8")  # the kernel's locale: nothing else set
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_ddl"),
        nbformat.v4.new_code_cell("%%distribute --wokers 2\nx = 1"),
        nbformat.v4.new_code_cell(
            "%%distribute --strategy torch-ddp --replicas 2 --restart-policy Never --name ko-fail --wait\n"
            + FAILING_CELL
        ),
    ]
    client = NotebookClient(
        nb, timeout=240, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()
    refused = _outputs(nb.cells[1])
    assert "%%distribute: 알 수 없는 인자: --wokers 2; `%%distribute --help`로" in refused
    assert "Traceback" not in refused
    failed = _outputs(nb.cells[2])
    assert (
        "작업 ko-fail 실패: master-0 · rank 0이(가) 가장 먼저 실패했습니다: exit code 3" in failed
    )
    assert "모든 줄은 `%ddl logs ko-fail --replica master-0`로 볼 수 있습니다" in failed
    # the record the cell keeps: state, root cause and table headings in Korean
    assert "근본 원인: master-0 · rank 0이(가) 가장 먼저 실패했습니다: exit code 3" in failed
    assert " 실패 " in failed and "레플리카" in failed and "종료 코드" in failed
    assert "[master-0] rank 0 reading its shard" in failed  # what the job printed, as it was


# -- the acceptance: config `language=CODE`, a real kernel, each language -------------------
#: what each language's record must show, written out (the glossary's words)
RECORD_WORDS = {
    "ko": (
        "근본 원인: master-0 · rank 0이(가) 가장 먼저 실패했습니다: exit code 3",
        "레플리카",
        "종료 코드",
    ),
    "ja": (
        "根本原因: master-0 · rank 0 が最初に失敗しました: exit code 3",
        "レプリカ",
        "終了コード",
    ),
    "zh-Hans": ("根本原因：master-0 · rank 0 最先失败：exit code 3", "副本", "退出码"),
    "zh-Hant": ("根本原因：master-0 · rank 0 最先失敗：exit code 3", "副本", "結束代碼"),
}


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(RECORD_WORDS))
def test_the_configs_language_end_to_end_in_a_real_kernel(code, data_dir, tmp_path, monkeypatch):
    """`language=CODE` in the config, an English locale: a refused flag, a missing
    strategy, a failing job's one line and its record all print in that language."""
    require.module("nbclient")
    require.module("ipykernel")
    require.module("torch")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("JUPYTER_DDL_WIDGETS", "0")
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    (data_dir / "config.json").write_text(f'{{"language": "{code}"}}', encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_ddl"),
        nbformat.v4.new_code_cell("%%distribute --strategy torch-ddp --wokers 2\nx = 1"),
        nbformat.v4.new_code_cell("%%distribute --replicas 2\nx = 1"),
        nbformat.v4.new_code_cell(
            "%%distribute --strategy torch-ddp --replicas 2 --restart-policy Never "
            f"--name fail-{code.lower()} --wait\n" + FAILING_CELL
        ),
    ]
    client = NotebookClient(
        nb, timeout=240, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()
    with i18n.asking(code):
        refused = i18n.tr("unrecognized arguments: {words}", words="--wokers 2")
        missing = i18n.tr(
            "--strategy is missing; add --strategy NAME (`%ddl strategies` lists them)"
        )
        failed_word = i18n.tr("Failed")
    assert refused in _outputs(nb.cells[1]) and "Traceback" not in _outputs(nb.cells[1])
    assert missing in _outputs(nb.cells[2])
    failed = _outputs(nb.cells[3])
    root, replica, exit_code = RECORD_WORDS[code]
    assert root in failed, failed[-2000:]
    assert replica in failed and exit_code in failed and failed_word in failed
    assert "root cause" not in failed and "failed first" not in failed  # no English left
    assert "[master-0] rank 0 reading its shard" in failed  # what the job printed, as it was
