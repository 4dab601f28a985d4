"""Logstash grok's options for several patterns (break_on_match) and empty captures (keep_empty_captures), as etl's
grok reads them: the pure-Python reference (etl.grok's GrokPattern.match, the oracle of the JVM's answers) and what
validate says. The same lines on Spark: tests/sql/test_sql_grok_spark.py::test_grok_options_on_spark."""
from pathlib import Path

from etl.check import check_file
from etl.grok import combine, expand
from etl.plan.explain import explain_plan

FIRST = ["%{INT:n:int}", "%{WORD:w}"]
EVERY = ["%{INT:n:int}", "%{WORD:w}", "x=%{WORD:w}"]
EMPTY = "^%{WORD:a}:(?<b>[a-z]*):(?<c>x)?$"


def test_break_on_match_the_first_pattern_that_matches_anywhere():
    """Logstash searches each pattern in turn: the first that matches gives the fields, even where a later one
    would match further left ('abc 12': INT matches, WORD is not tried)."""
    g = expand(combine(FIRST))
    assert g.match("abc 12") == {"n": 12, "w": None}
    assert g.match("abc") == {"n": None, "w": "abc"}
    assert g.match("...") is None
    assert combine(["%{WORD:w}"]) == "%{WORD:w}"  # one pattern is itself


def test_break_on_match_false_every_pattern_adds_its_fields():
    """Every pattern that matches adds its fields; a field two of them capture is a list (Logstash's handle
    appends); a line matches when one of them matches."""
    g = expand(combine(EVERY, break_on_match=False))
    assert g.match("abc x=yz 12") == {"n": 12, "w": ["abc", "yz"]}
    assert g.match("q") == {"n": None, "w": ["q"]}
    assert g.match("12") == {"n": 12, "w": ["12"]}  # \w matches digits: WORD takes 12 too
    assert g.match("...") is None
    # patterns without captures: matched (no fields) or not
    g = expand(combine(["^%{IPV4}$", "^%{LOGLEVEL}$"], break_on_match=False))
    assert g.match("INFO") == {} and g.match("10.0.0.1") == {} and g.match("x") is None


def test_keep_empty_captures():
    g = expand(EMPTY)
    assert g.match("k::") == {"a": "k", "b": None, "c": None}
    assert g.match("k::", keep_empty=True) == {"a": "k", "b": "", "c": None}  # c did not take part: no value
    assert g.match("k:v:x", keep_empty=True) == {"a": "k", "b": "v", "c": "x"}
    typed = expand("^(?<s>[a-z]*)%{DIGITS:n:int}$", {"DIGITS": "[0-9]*"})
    assert typed.match("", keep_empty=True) == {"s": "", "n": None}  # an empty number is no value


PIPELINE = """\
name: several
sources:
  - {id: src, type: file, path: in, schema: {line: string}}
transforms:
  - id: g
    type: grok
    inputs: [src]
    field: line
    pattern: ['%{INT:n:int}', 'x=%{WORRD:w}']
    break_on_match: false
sinks:
  - {id: out, type: file, inputs: [g], path: out}
"""


def test_validate_reads_a_list_of_patterns(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE)
    c = check_file(path)
    assert [(d.code, d.span.line, d.span.col) for d in c.report.diagnostics] == [("E302", 9, 36)]
    assert c.report.diagnostics[0].hint == "did you mean 'WORD'?"
    path.write_text(PIPELINE.replace("WORRD", "WORD"))
    c = check_file(path)
    assert c.report.diagnostics == []
    text = explain_plan(c.plan)
    assert "line =~ %{INT:n:int} | x=%{WORD:w} (break_on_match: false)\n" in text
    assert "columns: line:string, n:int, w:string\n" in text
    path.write_text(PIPELINE.replace("['%{INT:n:int}', 'x=%{WORRD:w}']", "[]"))
    c = check_file(path)
    assert [(d.code, d.span.line) for d in c.report.diagnostics] == [("E104", 9)]
