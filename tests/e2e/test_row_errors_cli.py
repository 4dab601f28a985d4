"""`etl run --once` over a file with a row that a derive's cast cannot convert (Spark 4: ANSI SQL, the cast
throws): the run ends by itself with exit 0, the good rows in the sink, the bad one in the dead-letter files
with its position and Spark's error, and no Python or Java stack on the console (issue 19). The value the
cast fails on is built from an env() value: the dead letter's reason, the console and the run's log hide it
(issue 35: Spark's message about the row is made on an executor, the failed task is logged by the JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

PIPELINE = """\
    name: repro
    sources:
      - {id: src, type: file, path: input, format: jsonl, schema: {id: bigint, a: string}}
    transforms:
      - id: d
        type: derive
        input: src
        columns:
          n: "cast(if(a = 'x', 'x{{ env("ETL_T_SECRET") }}', a) as int)"
    sinks:
      - {id: out, type: file, input: d, path: output, format: jsonl}
    checkpoint: state/checkpoint
"""


SECRET = "Zq9-hidden-Tok3n"


def test_a_bad_cast_is_a_dead_letter_and_the_run_exits_0(tmp_path):
    (tmp_path / "input").mkdir()
    rows = [{"id": 1, "a": "5"}, {"id": 2, "a": "x"}, {"id": 3, "a": "7"}]
    (tmp_path / "input" / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "p.yaml").write_text(textwrap.dedent(PIPELINE))
    env = {**{k: v for k, v in os.environ.items() if k != "ETL_LOG_LEVEL"}, "ETL_T_SECRET": SECRET}
    p = subprocess.run([sys.executable, "-m", "etl", "run", "p.yaml", "--once", "--conf", "spark.ui.enabled=false"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    for noise in ("Traceback", "\tat ", "Exception in task", "Lost task", "aborting job", "ERROR"):
        assert noise not in p.stderr, p.stderr[-3000:]
    assert "wrote out=2, dead letters 1" in p.stderr
    out = [json.loads(x) for f in sorted((tmp_path / "output").glob("part-*.jsonl"))
           for x in f.read_text().splitlines()]
    assert sorted(out, key=lambda r: r["id"]) == [{"id": 1, "a": "5", "n": 5}, {"id": 3, "a": "7", "n": 7}]
    dead = [json.loads(x) for f in sorted((tmp_path / "state" / "dead_letters").glob("part-*.jsonl"))
            for x in f.read_text().splitlines()]
    assert [(d["pipeline"], d["stage"], json.loads(d["payload"])) for d in dead] == [("repro", "d", rows[1])]
    assert dead[0]["reason"] == (
        "p.yaml:9:10: derive 'd' column 'n': CAST_INVALID_INPUT: The value 'x***' of the type \"STRING\" cannot be cast "
        "to \"INT\" because it is malformed. Correct the value as per the syntax, or change its target type. Use "
        "`try_cast` to tolerate malformed input and return NULL instead.")
    logs = [f.read_text() for f in (tmp_path / "state" / "logs").glob("*.log")]
    assert logs and "CAST_INVALID_INPUT" in "".join(logs)  # the failed attempt of the batch, as the JVM logged it
    for text in [p.stderr, *logs, *((tmp_path / "state" / "dead_letters").rglob("*"))]:
        text = text if isinstance(text, str) else text.read_text() if text.is_file() else ""
        assert "hidden-tok3n" not in text.lower() and "zq9-" not in text.lower(), text[-3000:]
