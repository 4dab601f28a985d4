"""etl as a product: its distribution's name, version and licence, `etl --version`, shell completion."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import metadata, version
from pathlib import Path

from typer.testing import CliRunner

import etl
from etl.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_version_is_the_installed_distribution_s():
    r = runner.invoke(app, ["--version"])
    assert (r.exit_code, r.stdout) == (0, f"etl-streams {version('etl-streams')}\n")
    assert etl.__version__ == etl.version() == version("etl-streams")
    # setuptools-scm: a tag's version, or the next one's .devN (+g<commit>, .d<date> when the tree is dirty)
    assert re.fullmatch(r"\d+(\.\d+)+(\.dev\d+)?(\+g[0-9a-f]+(\.d\d{8})?)?", etl.version()), etl.version()


def test_the_distribution_has_a_name_and_licence_of_its_own():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert (project["name"], project["dynamic"], project["license"]) == ("etl-streams", ["version"], "Apache-2.0")
    assert project["scripts"] == {"etl": "etl.cli:main"}
    meta = metadata("etl-streams")
    assert (meta["Name"], meta["License-Expression"]) == ("etl-streams", "Apache-2.0")
    assert sorted(meta.get_all("License-File")) == ["LICENSE", "NOTICE"]
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "Detection Rule License (DRL) 1.1" in (ROOT / "NOTICE").read_text()
    assert (ROOT / "tests" / "fixtures" / "sigma_corpus" / "LICENSE.Detection.Rules.md").read_text().startswith(
        "# Detection Rule License (DRL) 1.1")
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text()


def test_shell_completion_is_offered(monkeypatch):
    r = runner.invoke(app, ["--help"])
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout
    # typer finds the shell from the process tree: under `make` that is make's /bin/sh, which it does not serve
    import typer.completion

    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")
    r = runner.invoke(app, ["--show-completion"], prog_name="etl")
    assert r.exit_code == 0
    assert r.stdout.rstrip().endswith("complete -o default -F _etl_completion etl")
