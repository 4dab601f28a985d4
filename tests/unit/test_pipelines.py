"""Every example pipeline validates, carries the schema modeline, and together they use every component type."""
from pathlib import Path

import pytest

from etl import registry
from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]
PIPELINES = sorted((ROOT / "pipelines").glob("*.yaml"))
MODELINE = "# yaml-language-server: $schema=../schemas/pipeline.schema.json"


def test_there_are_pipelines():
    assert len(PIPELINES) >= 4


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.name)
def test_pipeline_validates(path):
    checked = check_file(path, environ={})
    assert checked.ok, "\n".join(d.render() for d in checked.report.sorted())
    assert not [d for d in checked.report.diagnostics if d.code == "E999"]


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.name)
def test_modeline_first_line(path):
    assert path.read_text().splitlines()[0] == MODELINE


def test_pipelines_use_every_component_type():
    used: dict[str, set[str]] = {k: set() for k in registry.KINDS}
    for path in PIPELINES:
        p = check_file(path, environ={}).pipeline
        assert p is not None, path
        for kind, items in (("source", p.sources), ("transform", p.transforms), ("sink", p.sinks)):
            used[kind].update(c.type for c in items)
        if p.dead_letter is not None:
            used["sink"].add(p.dead_letter.type)
    missing = {k: sorted(set(registry.types(k)) - used[k]) for k in registry.KINDS}
    assert missing == {"source": [], "transform": [], "sink": []}


def test_committed_schema_is_current():
    from etl.commands.schema import schema_text

    committed = (ROOT / "schemas" / "pipeline.schema.json").read_text()
    assert committed == schema_text(), "schemas/pipeline.schema.json is stale: run `etl schema`"
