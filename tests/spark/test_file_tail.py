"""A tailing file source (`tail: true`) under log rotation, into an exactly-once file sink: appends, logrotate's
create (rename + recreate) and copytruncate between runs lose and duplicate no line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from etl.runtime.runner import PipelineRun, RunOptions
from tests.spark.helpers import checked

pytestmark = pytest.mark.spark

PIPELINE = """
name: tail
sources:
  - {id: logs, type: file, path: logs, format: text, tail: true}
sinks:
  - {id: out, type: file, input: logs, path: out, format: jsonl}
"""


def written(out) -> list[str]:
    lines = []
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".json") or f.endswith(".jsonl"):
                lines += [json.loads(x)["line"] for x in Path(root, f).read_text().splitlines() if x.strip()]
    return lines


def test_rotation_loses_and_duplicates_nothing(spark, tmp_path):
    c = checked(tmp_path, PIPELINE)
    logs = tmp_path / "logs"
    logs.mkdir()
    app = logs / "app.log"

    def run() -> None:
        r = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(tmp_path / "ck"), progress="none"))
        r.start()
        r.wait()

    app.write_text("l1\nl2\n")
    run()
    with open(app, "a") as f:  # appended
        f.write("l3\n")
    os.rename(app, logs / "app.log.1")  # logrotate create: renamed, then a new file of the same name
    app.write_text("l4\n")
    run()
    (logs / "app.log.1").unlink()
    os.truncate(app, 0)  # copytruncate (its copy went elsewhere), then new lines
    app.write_text("l5\nl6\n")
    run()
    assert sorted(written(tmp_path / "out")) == ["l1", "l2", "l3", "l4", "l5", "l6"]
