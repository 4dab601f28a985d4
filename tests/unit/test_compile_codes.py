"""Compile-time E4xx codes raised before Spark runs anything (the compile steps that need no JVM), and W301."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from etl.check import check_file
from etl.compile.context import CompileContext, CompileError

PIPELINE = """\
name: codes
sources:
  - {id: g, type: generator, count: 5, fields: {a: {template: "{b}x"}, b: {template: "{a}y"}}}
  - {id: t, type: file, path: t.txt, format: text, static: true}
  - {id: f, type: file, path: in, format: jsonl, schema: {msg: string}}
transforms:
  - id: rx
    type: filter
    input: f
    rules: [{id: r1, when: {field: msg, regex: '(ab)\\1'}}]
  - {id: rf, type: filter, input: f, rule_files: [rules.yaml]}
  - {id: lk, type: lookup, input: f, table: t, on: {msg: line}}
sinks:
  - {id: o1, type: print, input: g}
  - {id: o2, type: print, input: rx}
  - {id: o3, type: print, input: lk}
  - {id: o4, type: print, input: rf}
"""


@pytest.fixture()
def checked(tmp_path: Path):
    (tmp_path / "t.txt").write_text("x\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "rules.yaml").write_text("- {id: r2, when: {field: msg, contains: x}}\n")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(PIPELINE))
    c = check_file(p)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return c


def _code(err: CompileError, graph) -> tuple:
    d = err.diagnostic(graph)
    return d.code, d.span.line, d.span.col


def test_w301_a_backreference_falls_back_to_python_re(checked):
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.sorted()] == [("W301", 10, 48)]


def test_e406_generator_fields_that_cannot_be_generated(checked):
    from etl.connectors.sources.generator import build

    graph = checked.plan.graph
    with pytest.raises(CompileError) as e:
        build(CompileContext(None, graph), graph.node("g"))
    assert _code(e.value, graph) == ("E406", 3, 48)
    assert "generator 'g'" in str(e.value)


def test_e400_a_text_file_cannot_be_a_lookup_table(checked):
    from etl.compile.transforms.lookup import dimension

    graph = checked.plan.graph
    with pytest.raises(CompileError) as e:
        dimension(CompileContext(None, graph), graph.node("lk"))
    assert _code(e.value, graph) == ("E400", 12, 45)
    assert e.value.message == "lookup 'lk': a text file cannot be a lookup table"


def test_e403_a_filter_whose_rule_files_were_not_loaded(checked):
    from etl.compile.rule_programs import RuleSet

    graph = checked.plan.graph
    graph.rules.pop("rf")  # compiled from a plan checked without loading its rule files
    with pytest.raises(CompileError) as e:
        RuleSet(CompileContext(None, graph), graph.node("rf"))
    assert _code(e.value, graph) == ("E403", 11, 50)
