"""GROK in SQL on Spark: pipelines/sql/grok.sql and its YAML twin give the same sink rows and dead letters (their
one test case, exact rows), on the session's Spark."""
from pathlib import Path

import pytest

from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["grok.sql", "grok.yaml"])
def test_grok_twins_write_the_same_rows(spark, name):
    from etl.runtime.testing import run_tests

    c = check_file(ROOT / "pipelines" / "sql" / name, programs=True)
    assert c.plan is not None and len(c.pipeline.tests) == 1
    results = run_tests(c, spark)
    assert [r.ok for r in results] == [True], "\n".join(r.message for r in results)
