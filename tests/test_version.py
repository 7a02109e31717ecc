"""`fourfold --version` prints the version the package declares, wherever the option stands."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fourfold
from fourfold.cli.app import app

DECLARED = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]["version"]


def test_the_package_version_is_the_declared_one() -> None:
    assert fourfold.__version__ == DECLARED


@pytest.mark.parametrize("args", [["--version"], ["recall", "anything", "--version"]])
def test_version_prints_and_exits(args: list[str], tmp_path: Path) -> None:
    ran = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "none"), *args])
    assert ran.exit_code == 0, ran.output
    assert ran.output == f"fourfold {DECLARED}\n"
    assert not (tmp_path / "none").exists()  # nothing was opened
