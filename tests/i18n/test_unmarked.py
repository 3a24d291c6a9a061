"""No message a user reads bypasses the catalogs: the sources are searched for words
shown without ``tr``/``N_`` (Python) or ``trans.__`` (the lab extension), so a new
message fails here until it is marked, and then in test_catalogs until translated."""

from __future__ import annotations

from pathlib import Path

from jupyter_ddl.i18n import unmarked


def test_every_python_message_a_learner_meets_is_marked():
    # every module, the Kubernetes and image-building paths included: a new message
    # fails here until it is marked (or opted out with an `i18n:` comment saying why)
    found = unmarked.python_unmarked()
    assert found == {}, (
        "mark these with tr(...) (fields as {name}, filled by keyword) and translate them: "
        f"{found}"
    )


def test_every_lab_string_shown_goes_through_the_translator():
    assert unmarked.lab_unmarked() == {}, "wrap them in trans.__('...') (placeholders %1, %2)"


def _package(tmp_path: Path, body: str) -> Path:
    root = tmp_path / "pkg"
    (root / "notebook").mkdir(parents=True)
    (root / "errors.py").write_text("class DDLError(Exception):\n    pass\n")
    (root / "notebook" / "x.py").write_text(body)
    return root


def test_the_python_search_finds_an_unmarked_error_hint_flag_and_print(tmp_path):
    root = _package(
        tmp_path,
        "from pkg.errors import DDLError\n"
        "class Refused(DDLError):\n    pass\n"
        "def f(name, tr, flag):\n"
        "    flag(help='how many replicas in total')\n"
        "    print(f'the job {name} is gone now')\n"
        "    raise Refused(f'no job named {name}', hint='run it again')\n",
    )
    found = unmarked.python_unmarked(root)["notebook/x.py"]
    assert sorted(found) == sorted(
        ["how many replicas in total", "the job {} is gone now", "no job named {}", "run it again"]
    )


def test_marked_messages_code_and_an_opt_out_are_not_reported(tmp_path):
    root = _package(
        tmp_path,
        "from pkg.errors import DDLError\n"
        "def f(name, tr, N_, flag):\n"
        "    flag(help=N_('how many replicas in total'))\n"
        "    print(f'--replicas {name}')\n"
        "    print('jupyter-ddl: x')  # i18n: a log prefix\n"
        "    raise DDLError(tr('no job named {name}', name=name), hint=f'%ddl list {name}')\n",
    )
    assert unmarked.python_unmarked(root) == {}


def test_the_lab_search_finds_a_label_an_element_text_and_a_sentence(tmp_path):
    (tmp_path / "pure").mkdir()
    (tmp_path / "view.ts").write_text(
        "const b = new ToolbarButton({ label: 'Cancel', tooltip: trans.__('Stop it') });\n"
        "head.appendChild(el('h3', 'jp-DDL-section', 'Metrics'));\n"
        "node.setAttribute('aria-label', `Open ${name}`);\n"
        "// a comment with many words in it is fine\n"
        "console.warn(`settings not loaded: ${e}`);\n"
        "node.className = 'jp-DDL-log jp-mod-styled';\n"
    )
    (tmp_path / "pure" / "words.ts").write_text(
        "export const why = `${name} has ended: nothing to cancel`;\n"
        "export const ok = trans.__('%1 has ended: nothing to cancel', name);\n"
        "// i18n: code\n"
        "export const code = '%%distribute --wait and more';\n"
    )
    found = unmarked.lab_unmarked(tmp_path)
    assert found == {
        "view.ts": ["'Cancel'", "'Metrics'", "`Open ${name}`"],
        "pure/words.ts": ["`${name} has ended: nothing to cancel`"],
    }
