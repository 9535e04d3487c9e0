"""What the wheel ships: the license, the console script, the type-checker in the dev extra."""

from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_file_is_declared_and_present() -> None:
    # license-files puts it into the wheel's .dist-info/licenses/ (setuptools >= 77)
    assert PROJECT["project"]["license"] == "MIT"
    assert PROJECT["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) the plait authors" in text


def test_console_script_and_dev_tools() -> None:
    assert PROJECT["project"]["scripts"] == {"plait": "plait.cli:main"}
    assert any(req.startswith("mypy") for req in PROJECT["project"]["optional-dependencies"]["dev"])
    assert PROJECT["tool"]["mypy"]["strict"] is True
