"""Golden tests: `etl explain` text of fixed pipelines, byte for byte.

Regenerate after an intended change with:
    make goldens   (ETL_UPDATE_GOLDEN=1, tests/goldens.py: every golden file of tests/golden and tests/optimize)
and review the diff.
"""
import os
from pathlib import Path

import pytest

from etl.check import check_file
from etl.physical import Target, physical_plan
from etl.physical.explain import explain_text
from tests.goldens import update_goldens

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
CASES = {
    "all_transforms": "tests/fixtures/valid/all_transforms.yaml",
    "rules_and_grok": "tests/fixtures/valid/rules_and_grok.yaml",
    "unknown_columns": "tests/fixtures/valid/unknown_columns.yaml",
    # file sources without a schema: their columns inferred from the data (etl.load.infer), the sample named
    "inferred_schema": "tests/fixtures/valid/inferred_schema.yaml",
    "kafka_window_mysql": "pipelines/kafka_window_mysql.yaml",
    "kafka_grok_opensearch": "pipelines/kafka_grok_opensearch.yaml",
    "rocketmq_filter_rocketmq": "pipelines/rocketmq_filter_rocketmq.yaml",
    # Spark's real-time mode: at-least-once delivery, the real-time query and the dead letters' micro-batches
    "realtime_kafka_filter": "pipelines/realtime_kafka_filter.yaml",
    "lookup_mysql": "pipelines/lookup_mysql.yaml",
    # a continuously updated TopN (its SQL script explains the same: tests/sql/test_sql_twins.py)
    "topn_continuous": "pipelines/sql/topn_continuous.yaml",
    # a continuous aggregate with a Python aggregate function and `every` (SQL: aggregate_every.sql, EMIT WITH DELAY)
    "aggregate_every": "pipelines/sql/aggregate_every.yaml",
}
# every example pipeline and SQL script too: a component's traits, the planner and the SQL front end change without
# changing what runs (issue 39's "explain output identical"), so each example's text is kept byte for byte
CASES.update({f"example_{p.stem.removeprefix('example_')}": str(p.relative_to(ROOT))
              for p in sorted((ROOT / "pipelines").glob("example_*.yaml"))})
CASES.update({f"sql_{p.stem}": str(p.relative_to(ROOT)) for p in sorted((ROOT / "pipelines" / "sql").glob("*.sql"))})


def _explain(rel: str) -> str:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        checked = check_file(rel, environ={}, programs=True)
    finally:
        os.chdir(cwd)
    assert checked.plan is not None, "\n".join(d.render() for d in checked.report.sorted())
    # the physical plan for a fixed target (local master, etl's jar present, every switch on): the text
    # depends on the pipeline only
    return explain_text(checked.plan, physical_plan(checked.plan, Target()))


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_matches_golden(name):
    text = _explain(CASES[name])
    path = GOLDEN / f"{name}.txt"
    if update_goldens():
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with ETL_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_is_deterministic(name):
    assert _explain(CASES[name]) == _explain(CASES[name])
