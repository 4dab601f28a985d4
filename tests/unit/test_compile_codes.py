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
  - {id: g, type: generator, count: 5, fields: {a: {template: "{b}x"}, b: {template: "y"}}}
  - {id: f, type: file, path: in, format: jsonl, schema: {msg: string}}
transforms:
  - id: rx
    type: filter
    input: f
    rules: [{id: r1, when: {field: msg, regex: '(ab)\\1'}}]
  - {id: rf, type: filter, input: f, rule_files: [rules.yaml]}
sinks:
  - {id: o1, type: print, input: g}
  - {id: o2, type: print, input: rx}
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
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.sorted()] == [("W301", 9, 48)]


def test_e406_a_generator_that_skipped_validation(checked):
    """A spec built without validation (a plugin, a program) with a start time no parser reads: compile's E406."""
    import dataclasses

    from etl.components.sources.generator.build import build

    graph = checked.plan.graph
    node = graph.node("g")
    bad = dataclasses.replace(node, spec=node.spec.model_copy(update={"start_time": "yesterday"}))
    with pytest.raises(CompileError) as e:
        build(CompileContext(None, graph), bad)
    assert _code(e.value, graph) == ("E406", 3, 48)
    assert "generator 'g'" in str(e.value)


def test_what_compile_would_refuse_is_refused_at_validate(tmp_path: Path):
    """A generator template cycle (compile: E406) and a text file as a lookup table (compile: E400) are validate's
    errors, at their positions."""
    (tmp_path / "t.txt").write_text("x\n")
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent("""\
        name: refused
        sources:
          - {id: g, type: generator, count: 5, fields: {a: {template: "{b}x"}, b: {template: "{a}y"}}}
          - {id: t, type: file, path: t.txt, format: text, static: true}
        transforms:
          - {id: lk, type: lookup, input: g, table: t, on: {a: line}}
        sinks:
          - {id: o, type: print, input: lk}
        """))
    c = check_file(p)
    assert [(d.code, d.span.line, d.span.col, d.message, d.hint) for d in c.report.sorted()] == [
        ("E102", 3, 63, "generator templates refer to each other in a cycle at 'a' in generator 'g'",
         "let one of the fields be a value of its own"),
        ("W204", 4, 5, "source 't' is not used by any transform or sink", "remove it or add it to some component's "
         "inputs"),  # its only reader refused
        ("E203", 6, 45, "lookup table 't': a text file cannot be a lookup table", "use format csv, jsonl or parquet"),
    ]


def test_e403_a_filter_whose_rule_files_were_not_loaded(checked):
    from etl.compile.rule_programs import RuleSet

    graph = checked.plan.graph
    graph.rules.pop("rf")  # compiled from a plan checked without loading its rule files
    with pytest.raises(CompileError) as e:
        RuleSet(CompileContext(None, graph), graph.node("rf"))
    assert _code(e.value, graph) == ("E403", 10, 50)
