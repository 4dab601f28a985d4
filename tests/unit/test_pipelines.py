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
    """In the examples, YAML twins of the SQL scripts included (pipelines/sql/: a temporal_join)."""
    used: dict[str, set[str]] = {k: set() for k in registry.KINDS}
    twins = sorted((ROOT / "pipelines" / "sql").glob("*.yaml"))
    for path in PIPELINES + [p for p in twins if not p.name.endswith(".tests.yaml")]:
        p = check_file(path, environ={"ROCKETMQ_NAMESRV": "127.0.0.1:9876"}).pipeline
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


def _raw(path):
    """The file as an editor sees it: YAML before templating."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(path.read_text())


@pytest.fixture(scope="module")
def editor_schema():
    import json

    import jsonschema

    schema = json.loads((ROOT / "schemas" / "pipeline.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", PIPELINES + sorted((ROOT / "tests/fixtures/valid").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_editor_schema_accepts_example_pipelines(path, editor_schema):
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in editor_schema.iter_errors(_raw(path))]
    assert not errors


def test_editor_schema_rejects_unknown_keys_and_types(editor_schema):
    base = {"name": "x", "sources": [{"id": "g", "type": "generator", "fields": {"a": {"sequence": 1}}}],
            "sinks": [{"id": "o", "type": "print", "input": "g"}], "checkpoint": "ck",
            "dead_letter": {"type": "file", "path": "dl"}}
    assert editor_schema.is_valid(base)
    assert editor_schema.is_valid({**base, "sinks": [{"id": "o", "type": "print", "inputs": ["g"],
                                                      "max_rows": "{{ vars.n }}"}]})
    for bad in ({**base, "sink": []},
                {**base, "sinks": [{"id": "o", "type": "prnt", "inputs": ["g"]}]},
                {**base, "sinks": [{"id": "o", "type": "print", "inputs": ["g"], "max_rows": "many"}]},
                {**base, "dead_letter": {"type": "file"}}):
        assert not editor_schema.is_valid(bad), bad
