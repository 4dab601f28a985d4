"""Every script in pipelines/sql/ has a YAML twin: both give the same spec and the same `etl explain`."""
import os
from pathlib import Path

import pytest

from etl.check import check_file
from etl.plan.explain import explain_plan

ROOT = Path(__file__).resolve().parents[2]
SQL = sorted((ROOT / "pipelines" / "sql").glob("*.sql"))
ENV = {"ROCKETMQ_NAMESRV": "127.0.0.1:9876"}  # the rest use their defaults


def _checked(path: Path):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return check_file(path.relative_to(ROOT), environ=ENV, programs=True)
    finally:
        os.chdir(cwd)


def _components(pipeline) -> dict:
    return {c.id: c.model_dump(by_alias=True) for c in pipeline.components()}


def test_every_script_has_a_twin():
    assert [p.name for p in SQL] == ["aggregate.sql", "aggregate_every.sql", "connectors.sql", "dedupe.sql", "dedupe_last.sql", "filter.sql",
                                     "functions.sql", "grok.sql", "interval_join.sql", "join_lookup.sql", "kafka_mysql.sql", "lateral.sql",
                                     "regular_join.sql", "rocketmq_es.sql", "rsqldb_style.sql", "temporal_join.sql", "topn.sql", "topn_continuous.sql",
                                     "window.sql",
                                     "window_join.sql",
                                     "window_late.sql", "window_tvf.sql", "windows.sql"]
    for p in SQL:
        assert p.with_suffix(".yaml").is_file(), p


@pytest.mark.parametrize("script", SQL, ids=[p.stem for p in SQL])
def test_sql_and_yaml_explain_the_same(script: Path):
    sql, yaml = _checked(script), _checked(script.with_suffix(".yaml"))
    assert sql.report.errors == [] and yaml.report.errors == []
    # W015 names where a script means something else than in its peer (rsqldb, Flink): YAML has no peer
    assert [d.code for d in sql.report.warnings if d.code != "W015"] == [d.code for d in yaml.report.warnings]
    assert [(d.code, d.span.line, d.span.col) for d in sql.report.warnings if d.code == "W015"] == \
        {"rsqldb_style": [("W015", 8, 5)], "regular_join": [("W015", 7, 5)]}.get(script.stem, [])  # the TTL's SET:
    # Flink's TTL expires a continuous GROUP BY's state too, etl only a regular join's
    assert explain_plan(sql.plan) == explain_plan(yaml.plan)
    assert _components(sql.pipeline) == _components(yaml.pipeline)
    assert sql.pipeline.name == yaml.pipeline.name


@pytest.mark.parametrize("script", SQL, ids=[p.stem for p in SQL])
def test_to_yaml_gives_the_same_plan(script: Path, tmp_path):
    """`etl to-yaml job.sql` prints a YAML pipeline that explains exactly as the script does."""
    from typer.testing import CliRunner

    from etl.cli import app

    res = CliRunner().invoke(app, ["to-yaml", str(script)], env=ENV)
    assert res.exit_code == 0, res.output
    (tmp_path / "sql").mkdir()
    for module in script.parent.glob("*.py"):  # the Python functions' modules, read beside the pipeline
        (tmp_path / "sql" / module.name).write_text(module.read_text())
    out = tmp_path / "sql" / f"{script.stem}.yaml"
    out.write_text(res.stdout)
    generated = check_file(out, environ=ENV, programs=True)
    assert generated.report.errors == []
    assert explain_plan(generated.plan) == explain_plan(_checked(script).plan)
