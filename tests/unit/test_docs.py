"""`etl docs`: the reference pages under docs/reference/ are what the code says, and every example validates."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

import pytest
from pydantic import Field
from typer.testing import CliRunner

from etl.check import check_file
from etl.cli import app
from etl.commands.docs import stale
from etl.commands.reference import ROOT, builtins, example, pages, read_pipelines, traits, type_text
from etl.diagnostics import CODES
from etl.registry import KINDS
from etl.spec.base import Duration, SinkBase

REFERENCE = ROOT / "docs" / "reference"


@pytest.fixture(scope="module")
def written() -> dict[str, str]:
    return pages()


def test_the_reference_pages_are_current():
    assert stale(REFERENCE) == [], "run `make docs` (etl docs) and commit docs/reference/"


def test_check_names_each_stale_page_and_exits_1(tmp_path, written):
    runner = CliRunner()
    out = runner.invoke(app, ["docs", "--out", str(tmp_path)])
    assert out.exit_code == 0 and sorted(p.name for p in tmp_path.iterdir()) == sorted(pages())
    (tmp_path / "errors.md").write_text("old\n")
    (tmp_path / "sinks.md").unlink()
    out = runner.invoke(app, ["docs", "--out", str(tmp_path), "--check"])
    assert out.exit_code == 1
    assert out.stderr.splitlines() == [f"{tmp_path / 'sinks.md'} is stale: run `etl docs` (make docs)",
                                       f"{tmp_path / 'errors.md'} is stale: run `etl docs` (make docs)"]
    for name in ("errors.md", "sinks.md"):
        (tmp_path / name).write_text(written[name])
    out = runner.invoke(app, ["docs", "--out", str(tmp_path), "--check"])
    assert (out.exit_code, out.stdout) == (0, f"{tmp_path}: {len(pages())} pages up to date\n")


def test_every_component_has_an_example_that_validates(tmp_path):
    """Each example is a component of a pipeline under pipelines/ (validated whole), or the spec's EXAMPLE: a
    whole pipeline, validated from a file of its own."""
    checked: dict[str, list[str]] = {}
    pipelines = read_pipelines()
    for kind in KINDS:
        for type_, entry in builtins(kind).items():
            ex = example(kind, type_, entry.spec, pipelines)
            assert ex is not None, f"{kind} {type_}: no example"
            path = ROOT / ex.pipeline if ex.pipeline else tmp_path / f"{kind}_{type_}.yaml"
            if ex.pipeline is None:
                path.write_text(ex.text)
            if str(path) not in checked:
                checked[str(path)] = [d.render() for d in check_file(path, environ={}).report.errors]
            assert checked[str(path)] == [], f"{kind} {type_}: its example does not validate"
    assert len(checked) == 21  # the pipelines the 27 built-in components' examples come from


class _Toy(SinkBase):
    """A toy sink."""

    EXAMPLE: ClassVar[str] = "name: toy\n"
    DRIVER_ONLY: ClassVar[str] = "writes a file on the driver"
    type: Literal["toy"]
    every: Duration = Field(default=Duration(90), description="how often")


def test_a_declared_example_and_traits_are_read_generically():
    assert example("sink", "toy", _Toy).text == "name: toy\n" and example("sink", "toy", _Toy).pipeline is None
    assert traits(_Toy, SinkBase) == [("DRIVER_ONLY", "writes a file on the driver")]
    blocks: dict = {}
    assert [type_text(_Toy.model_fields[n].annotation, blocks) for n in ("type", "every", "retry", "inputs")] == [
        "`toy`", "duration", "[Retry](#retry-block)", "list of string"]
    assert list(blocks) == ["Retry"]


def test_the_pages_show_a_component_s_fields_and_example(written):
    page = written["sinks.md"]
    assert "| `path` | string |  | yes |" in page.split("## file\n")[1].split("\n## ")[0]
    assert "\n## print\n" in page and "\n### Retry block\n" in page
    codes = [line.split(" | ")[0][2:] for line in written["errors.md"].splitlines() if line.startswith("| E")
             or line.startswith("| W")]
    assert codes == list(CODES)


def test_the_reference_folder_holds_only_generated_pages(written):
    assert sorted(p.name for p in REFERENCE.iterdir()) == sorted(written)


def test_the_readme_is_a_short_guide_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    assert "make run     # installs everything" in text and "make test    # installs everything" in text
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(targets) >= 20 and [t for t in targets if not (ROOT / t).is_file()] == []
