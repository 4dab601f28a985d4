"""`etl init`: each template is written with its sample data, validates, and is never written over a file."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from etl.check import check_paths
from etl.cli import app
from etl.commands.init import TEMPLATES, template_files

runner = CliRunner()
FILES = {
    "filter": ["data/orders.jsonl", "pipeline.yaml"],
    "grok": ["data/access.log", "pipeline.yaml"],
    "window": ["pipeline.yaml"],
    "sigma": ["data/procs.jsonl", "pipeline.yaml", "rules/encoded_powershell.yml", "rules/whoami.yml"],
    "sql": ["data/orders.jsonl", "pipeline.sql", "pipeline.tests.yaml"],
}
TESTS = {"filter": 1, "grok": 1, "window": 1, "sigma": 1, "sql": 1}


@pytest.mark.parametrize("template", TEMPLATES)
def test_each_template_is_written_valid_with_its_tests(tmp_path, template):
    r = runner.invoke(app, ["init", str(tmp_path / "p"), "--template", template])
    assert r.exit_code == 0, r.output
    got = sorted(str(p.relative_to(tmp_path / "p")) for p in (tmp_path / "p").rglob("*") if p.is_file())
    assert got == FILES[template]
    assert [(tmp_path / "p" / f).read_bytes() for f in got] == list(template_files(template).values())
    (checked,) = check_paths([tmp_path / "p"], programs=True)
    assert checked.file.endswith("pipeline.sql" if template == "sql" else "pipeline.yaml")
    assert [d.render() for d in checked.report.diagnostics] == []
    assert checked.plan is not None and len(checked.plan.graph.pipeline.tests) == TESTS[template]


def test_an_existing_file_is_never_overwritten(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "orders.jsonl").write_text("mine\n")
    r = runner.invoke(app, ["init", str(tmp_path)])
    assert r.exit_code == 1
    assert r.stderr == (f"etl init: {tmp_path}/data/orders.jsonl exists: nothing written (choose another FOLDER, "
                        "or move them)\n")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data", "orders.jsonl"]
    assert (tmp_path / "data" / "orders.jsonl").read_text() == "mine\n"
    r = runner.invoke(app, ["init", str(tmp_path), "--template", "sigmaa"])
    assert r.exit_code == 2 and "Invalid value for --template: expected one of filter, grok, window, sigma," in r.output
    assert not (tmp_path / "pipeline.yaml").exists()


def test_the_default_template_goes_into_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["init"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == ["wrote 2 files into .: the filter pipeline pipeline.yaml",
                                     "next: etl validate pipeline.yaml   etl test pipeline.yaml   "
                                     "etl run pipeline.yaml --once"]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == FILES["filter"]
