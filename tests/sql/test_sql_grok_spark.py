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


OPTIONS = """\
name: grok_options
sources:
  - {id: src, type: file, path: in, schema: {line: string}}
transforms:
  - {id: first, type: grok, inputs: [src], field: line, pattern: ['%{INT:n:int}', '%{WORD:w}']}
  - {id: every, type: grok, inputs: [src], field: line, pattern: ['%{INT:n:int}', '%{WORD:w}', 'x=%{WORD:w}'],
     break_on_match: false}
  - {id: empty, type: grok, inputs: [src], field: line, pattern: '^%{WORD:a}:(?<b>[a-z]*):(?<c>x)?$',
     keep_empty_captures: true}
sinks:
  - {id: o_first, type: file, inputs: [first], path: o1}
  - {id: o_every, type: file, inputs: [every], path: o2}
  - {id: o_empty, type: file, inputs: [empty], path: o3}
tests:
  - name: the lines of tests/unit/test_grok_options.py, with the reference's answers
    inputs:
      src: [{line: abc x=yz 12}, {line: q}, {line: '...'}, {line: 'k::'}, {line: 'k:v:x'}]
    expect:
      o_first:
        - {line: abc x=yz 12, n: 12, w: null}
        - {line: q, n: null, w: q}
        - {line: 'k::', n: null, w: k}
        - {line: 'k:v:x', n: null, w: k}
      o_every:
        - {line: abc x=yz 12, n: 12, w: [abc, yz]}
        - {line: q, n: null, w: [q]}
        - {line: 'k::', n: null, w: [k]}
        - {line: 'k:v:x', n: null, w: [k]}
      o_empty:
        - {line: 'k::', a: k, b: '', c: null}
        - {line: 'k:v:x', a: k, b: v, c: x}
    dead_letters:
      - {stage: first, payload: '...', reason: no match for grok pattern}
      - {stage: every, payload: '...', reason: no match for grok pattern}
      - {stage: empty, payload: abc x=yz 12}
      - {stage: empty, payload: q}
      - {stage: empty, payload: '...'}
"""


@pytest.mark.spark
def test_grok_options_on_spark(spark, tmp_path):
    """break_on_match (true: the first pattern that matches; false: every one adds its fields) and
    keep_empty_captures in the JVM: the rows the pure-Python reference gives (tests/unit/test_grok_options.py)."""
    from etl.grok import combine, expand
    from etl.runtime.testing import run_tests

    path = tmp_path / "options.yaml"
    path.write_text(OPTIONS)
    c = check_file(path, programs=True)
    assert c.report.diagnostics == [] and c.plan is not None
    results = run_tests(c, spark)
    assert [r.ok for r in results] == [True], "\n".join(r.message for r in results)
    # the reference's answers are the rows written above
    every = expand(combine(["%{INT:n:int}", "%{WORD:w}", "x=%{WORD:w}"], break_on_match=False))
    assert [every.match(x) for x in ("abc x=yz 12", "q", "...")] == [{"n": 12, "w": ["abc", "yz"]},
                                                                      {"n": None, "w": ["q"]}, None]
