"""`etl run` compiles what `etl validate` accepts at its limits: the valid files of the hostile corpus
whose sources need no server (a 365d window and watermark, a 0.5 s window, a 1PiB buffer, nested grok
definitions just under the expansion cap) become Spark queries without error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from etl.check import check_file

pytestmark = pytest.mark.spark
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "hostile_validate"


@pytest.mark.parametrize("name", ["ok_dur_max.yaml", "ok_dur_float_seconds.yaml", "ok_size_max.yaml",
                                  "ok_grok_nested_small.yaml"])
def test_compiles(spark, tmp_path, name):
    from etl.compile import CompileContext, Compiler

    shutil.copy(CORPUS / name, tmp_path / name)
    (tmp_path / "in").mkdir()  # the grok case's text source
    checked = check_file(tmp_path / name, environ={}, programs=True)
    assert checked.plan is not None, [d.render() for d in checked.report.errors]
    queries = Compiler(CompileContext(spark, checked.plan.graph, str(tmp_path / "ck"))).queries()
    assert queries and all(q.outputs for q in queries)
