"""Tests that start Spark are marked `spark` by tests/conftest.py; under ETL_NO_SPARK=on (`make test-fast`) no
session starts, in this process or in an `etl` it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _collected(*args: str) -> list[str]:
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    return [ln for ln in p.stdout.splitlines() if "::" in ln]


def test_a_test_asking_for_a_session_is_marked_spark_without_saying_so():
    # none of these says @pytest.mark.spark: each asks for the `spark` fixture
    unmarked = ["tests/spark/test_session.py::test_python_workers_are_reached_over_unix_domain_sockets",
                "tests/spark/test_session.py::test_python_workers_and_data_source_planners_import_the_installed_pyspark",
                "tests/spark/test_session.py::test_a_local_session_commits_and_touches_its_heap_at_start",
                "tests/spark/test_session.py::test_the_quick_jit_setting_reaches_the_jvm"]
    assert _collected("-m", "spark", "tests/spark/test_session.py") == unmarked
    assert _collected("-m", "not spark", "tests/spark/test_session.py") == [
        "tests/spark/test_session.py::test_huge_pages_follow_the_kernels_setting"]


def test_a_module_importing_pyspark_marks_its_tests(tmp_path):
    from tests.conftest import _imports_pyspark

    top, inner = tmp_path / "test_top.py", tmp_path / "test_inner.py"
    top.write_text("import os\nfrom pyspark.sql import functions as F\n")
    inner.write_text("def test_x():\n    from pyspark.sql import functions as F\n")
    assert (_imports_pyspark(top), _imports_pyspark(inner)) == (True, False)
    assert _imports_pyspark(ROOT / "tests" / "windows" / "batches_source.py") is True


def test_no_session_starts_under_the_switch(monkeypatch):
    from pyspark import SparkContext

    from etl.runtime.session import SparkForbidden, build_session

    before = SparkContext._active_spark_context  # an earlier Spark test of the same run may have one
    monkeypatch.setenv("ETL_NO_SPARK", "on")
    with pytest.raises(SparkForbidden) as e:
        build_session("x", "local[1]")
    assert str(e.value) == "ETL_NO_SPARK is on: this process may not start Spark (the fast tests set it)"
    assert SparkContext._active_spark_context is before  # none was started (nor joined)


def test_etl_run_under_the_switch_is_one_line_and_starts_no_jvm(tmp_path):
    p = subprocess.run([sys.executable, "-m", "etl", "run", str(ROOT / "pipelines" / "quickstart.yaml"), "--once",
                        "--checkpoint", str(tmp_path / "ck")], cwd=tmp_path, capture_output=True, text=True,
                       env={**ENV, "ETL_NO_SPARK": "on"}, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (
        2, "", "etl run: ETL_NO_SPARK is on: this process may not start Spark (the fast tests set it)\n")


def test_the_switch_also_stops_pyspark_s_own_launcher():
    code = ("import tests.conftest as c, pytest\n"
            "class C: pass\n"
            "c.pytest_configure(C())\n"
            "from pyspark import SparkContext\n"
            "try:\n    SparkContext('local[1]', 'x')\nexcept RuntimeError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**ENV, "ETL_NO_SPARK": "on"},
                       capture_output=True, text=True, timeout=120)
    assert p.stdout == "ETL_NO_SPARK is on: this test starts a JVM; mark it `spark` (tests/conftest.py)\n"
