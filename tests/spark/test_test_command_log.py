"""`etl test` keeps Spark's lines in a log inside a folder of mkdtemp, removed when the cases are done: nothing is
written through a symlink planted at a predictable name (it was <tmp>/etl-test-<pid>.log), nothing is left."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def test_etl_test_logs_in_its_own_folder_and_removes_it(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from etl import settings
    from etl.cli import app

    shared = tmp_path / "tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.delenv("ETL_LOG_LEVEL", raising=False)  # quiet: Spark's lines go to the log file
    settings.reset()
    victim = tmp_path / "victim.log"
    (shared / f"etl-test-{os.getpid()}.log").symlink_to(victim)
    jvm = spark.sparkContext._jvm
    err = jvm.java.lang.System.err  # `etl test` sends the JVM's stderr to its log: given back after
    try:
        res = CliRunner().invoke(app, ["test", str(ROOT / "pipelines" / "example_filter.yaml")])
    finally:
        jvm.java.lang.System.setErr(err)
        settings.reset()
    assert res.exit_code == 0, res.output
    assert "1 test: 1 passed, 0 failed" in res.output
    assert not victim.exists()
    assert [p.name for p in shared.iterdir() if p.name.startswith("etl-test")] == [f"etl-test-{os.getpid()}.log"]
