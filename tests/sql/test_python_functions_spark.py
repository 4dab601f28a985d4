"""Python functions on Spark: the example twins' tests, and a function raising on a row (a dead letter, the stream
goes on)."""
import json
from pathlib import Path

import pytest

from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["functions.sql", "functions.yaml"])
def test_example_functions_pass_their_tests(spark, name):
    """A scalar, a table and an aggregate function, exact rows, in the SQL script and its YAML twin."""
    from etl.runtime.testing import run_tests

    c = check_file(ROOT / "pipelines" / "sql" / name, programs=True)
    assert c.plan is not None and len(c.pipeline.tests) == 2
    results = run_tests(c, spark)
    assert [r.ok for r in results] == [True, True], "\n".join(r.message for r in results)


MODULE = '''\
from typing import Iterator


def shout(s: str) -> str:
    if s == "boom":
        raise ValueError("cannot shout boom")
    return s.upper()


def chars(s: str) -> Iterator[tuple[str]]:
    if s == "bang":
        raise KeyError(s)
    for ch in s:
        yield (ch,)
'''

PIPELINE = '''\
name: raising
functions:
  - name: shout
    callable: "udfs:shout"
  - name: chars
    callable: "udfs:chars"
sources:
  - {id: src, type: file, path: in, schema: {s: string}}
transforms:
  - id: loud
    type: derive
    inputs: [src]
    columns: {t: "shout(s)"}
  - id: rows
    type: derive
    inputs: [src]
    columns: {cs: "chars(s)"}
  - id: each
    type: select
    inputs: [rows]
    fields: [s, "INLINE(cs) AS (ch)"]
sinks:
  - {id: out, type: file, path: o1, inputs: [loud]}
  - {id: out2, type: file, path: o2, inputs: [each]}
'''


@pytest.mark.spark
def test_a_function_raising_on_a_row_sends_that_row_to_dead_letters(spark, tmp_path):
    from etl.runtime.testing import run_case
    from etl.spec import TestCase

    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "p.yaml").write_text(PIPELINE)
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    rows = [{"s": "ab"}, {"s": "boom"}, {"s": "bang"}]
    res = run_case(c.plan, TestCase(name="raising", inputs={"src": rows}), spark)
    got = {k: sorted(tuple(r.values()) for r in v) for k, v in res.captured.items() if k != "dead_letter"}
    assert got == {"out": [("ab", "AB"), ("bang", "BANG")],
                   "out2": [("ab", "a"), ("ab", "b"), ("boom", "b"), ("boom", "m"), ("boom", "o"), ("boom", "o")]}
    dead = sorted((d["stage"], d["reason"], json.loads(d["payload"])) for d in res.captured["dead_letter"])
    pos = str(tmp_path / "p.yaml")
    assert dead == [
        ("loud", f"{pos}:13:18: derive 'loud' column 't': USER_RAISED_EXCEPTION: python function 'shout' failed: "
                 "ValueError: cannot shout boom", {"s": "boom"}),
        ("rows", f"{pos}:17:19: derive 'rows' column 'cs': USER_RAISED_EXCEPTION: python function 'chars' failed: "
                 "KeyError: 'bang'", {"s": "bang"}),
    ]
