"""`etl init --template sql` writes a script whose tests (pipeline.tests.yaml) pass on Spark, in this process
(the session-wide Spark session; `etl test` runs the same run_tests). The other templates' tests run the same
machinery; each one validates in tests/unit/test_init.py."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from etl.check import check_paths
from etl.cli import app
from etl.runtime.testing import run_tests

pytestmark = pytest.mark.spark


def test_the_sql_template_s_tests_pass(spark, tmp_path):
    assert CliRunner().invoke(app, ["init", str(tmp_path), "--template", "sql"]).exit_code == 0
    (checked,) = check_paths([tmp_path], programs=True)
    results = run_tests(checked, spark)
    assert [(r.name, r.ok, r.message) for r in results] == [("big paid orders and test orders pass", True, "")]
