"""The lab extension's settings: "Default backend" is a choice of the installed
backends (the settings editor shows a list), not free text where a typo is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_ddl.backends.names import backend_names
from tests.support import require

SCHEMA = Path(__file__).resolve().parents[1] / "labextension/schema/plugin.json"


def _backend_setting() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))["properties"]["defaultBackend"]


def test_default_backend_is_a_choice_of_the_installed_backends():
    setting = _backend_setting()
    choices = [c["const"] for c in setting["oneOf"]]
    assert choices == ["", *backend_names()]
    assert all(c["title"] for c in setting["oneOf"])  # each named in the list
    assert setting["default"] == ""


@pytest.mark.parametrize("value, valid", [("", True), ("local", True), ("kubernets", False)])
def test_the_schema_refuses_a_backend_that_is_not_offered(value, valid):
    require.module("jsonschema")  # what JupyterLab's server validates settings with
    import jsonschema

    ok = jsonschema.Draft7Validator(_backend_setting()).is_valid(value)
    assert ok is valid
