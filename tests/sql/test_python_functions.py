"""Python functions (`functions:` / CREATE FUNCTION): signatures read without importing, diagnostics at positions."""
from pathlib import Path

from etl.check import check_file
from etl.plan.explain import explain_plan

# importing this module would stop the test: validation must read it, never run it
MODULE = '''\
from typing import Iterator, NamedTuple
import pandas as pd
from etl.udf import udf

raise SystemExit("etl imported the module")


class Row(NamedTuple):
    word: str
    pos: int


def shout(s: str) -> str:
    return s.upper()


def words(s: str) -> Iterator[Row]:
    yield Row(s, 0)


def spread(v: pd.Series) -> float:
    return float(v.max() - v.min())


@udf(returns="bigint", args=["string", "bigint"])
def weight(s, n):
    return len(s) * n


def vague(s):
    return s
'''

YAML = '''\
name: fns
functions:
  - name: shout
    callable: "udfs:shout"
  - name: words
    callable: "udfs:words"
  - name: spread
    callable: "udfs:spread"
  - name: weight
    callable: "udfs:weight"
{extra}sources:
  - id: src
    type: file
    path: in
    schema: {{s: string, n: bigint, ts: timestamp}}
    event_time: {{field: ts, watermark: 5s}}
transforms:
  - id: d
    type: derive
    inputs: [src]
    columns: {{{columns}}}
  - id: w
    type: window
    inputs: [src]
    kind: tumbling
    size: 1m
    aggregates: [{{fn: {agg}, field: n, as: x}}]
sinks:
  - {{id: out, type: file, path: o1, inputs: [d]}}
  - {{id: out2, type: file, path: o2, inputs: [w]}}
'''


def _check(tmp_path: Path, columns: str = "a: shout(s)", agg: str = "spread", extra: str = "", module: str = MODULE):
    (tmp_path / "udfs.py").write_text(module)
    (tmp_path / "p.yaml").write_text(YAML.format(columns=columns, agg=agg, extra=extra))
    return check_file(tmp_path / "p.yaml", programs=True)


def _diags(c) -> list[tuple[str, int, int, str]]:
    return [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()]


def test_signatures_from_annotations_and_decorator_are_explained(tmp_path):
    c = _check(tmp_path, columns='a: "shout(s)", b: "weight(s, n) + 1"')
    assert c.report.errors == [], _diags(c)
    text = explain_plan(c.plan)
    assert "functions:\n" \
        "  shout(string) -> string  [scalar, udfs:shout; signature: annotations (udfs.py:13)]\n" \
        "  words(string) -> table(word string, pos bigint)  [table, udfs:words; signature: annotations\n" \
        "      (udfs.py:17)]\n" \
        "  spread(series) -> double  [aggregate, udfs:spread; signature: annotations (udfs.py:21)]\n" \
        "  weight(string, bigint) -> bigint  [scalar, udfs:weight; signature: @udf decorator (udfs.py:26)]\n" in text
    # the result types flow into the columns: a scalar's value, an aggregate's window column
    assert "columns: s:string, n:bigint, ts:timestamp, a:string, b:bigint" in text
    assert "columns: window_start:timestamp, window_end:timestamp, x:double" in text


def test_declared_signature_wins_and_says_so(tmp_path):
    extra = '  - name: same\n    callable: "udfs:vague"\n    kind: scalar\n    returns: string\n    args: [string]\n'
    c = _check(tmp_path, columns="a: same(s)", extra=extra)
    assert c.report.errors == [], _diags(c)
    assert "  same(string) -> string  [scalar, udfs:vague; signature: declared in the pipeline]" in explain_plan(c.plan)


def test_unknown_module_and_missing_callable_at_their_callable(tmp_path):
    extra = '  - name: gone\n    callable: "nomod:f"\n  - name: typo\n    callable: "udfs:shoot"\n'
    c = _check(tmp_path, extra=extra)
    assert _diags(c) == [
        ("E350", 12, 15, "function 'gone': module 'nomod' not found beside the pipeline (nomod.py) nor installed"),
        ("E350", 14, 15, "function 'typo': module 'udfs' (udfs.py) has no function 'shoot'"),
    ]
    assert c.report.sorted()[1].hint == "did you mean 'shout'?"


def test_no_result_type_says_which_sources_were_read(tmp_path):
    c = _check(tmp_path, extra='  - name: vague\n    callable: "udfs:vague"\n')
    [d] = c.report.errors
    assert (d.code, d.span.line, d.span.col) == ("E351", 12, 15)
    assert d.message == ("function 'vague' (udfs:vague): cannot tell its result type: not declared in the pipeline, "
                         "no @udf(returns=...) decorator, no usable return annotation (udfs.py:30)")


def test_wrong_arity_and_argument_type_at_the_call(tmp_path):
    c = _check(tmp_path, columns='a: "shout(s, s)", b: "weight(n, n)"')
    assert _diags(c) == [
        ("E352", 21, 19, "function 'shout' takes 1 argument, 2 given in transform 'd' (columns.a)"),
        ("E352", 21, 37, "argument 1 of function 'weight' is bigint, it takes string (transform 'd' (columns.b))"),
    ]


def test_functions_used_as_the_wrong_kind(tmp_path):
    c = _check(tmp_path, columns="a: spread(n)", agg="shout")
    assert _diags(c) == [
        ("E353", 21, 18, "aggregate function 'spread' called in transform 'd' (columns.a) as a scalar function"),
        ("E353", 27, 23, "scalar function 'shout' used as a window aggregate"),
    ]


def test_unknown_aggregate_has_a_did_you_mean(tmp_path):
    c = _check(tmp_path, agg="spred")
    assert _diags(c) == [("E102", 27, 23, "unknown aggregate function 'spred' in window 'w'")]
    assert c.report.errors[0].hint == "did you mean 'spread'?"


def test_a_continuous_aggregate_takes_python_aggregates_only(tmp_path):
    """A Python aggregate function runs in a continuous aggregate (typed by its result); a scalar one is E353 at its
    fn, an unknown name E102."""
    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "p.yaml").write_text(
        'name: agg\n'
        'functions: [{name: spread, callable: "udfs:spread"}, {name: shout, callable: "udfs:shout"}]\n'
        'sources: [{id: src, type: file, path: in, schema: {s: string, n: bigint}}]\n'
        'transforms:\n'
        '  - {id: per_s, type: aggregate, input: src, group_by: [s], aggregates: [{fn: spread, field: n, as: x}]}\n'
        '  - {id: typo, type: aggregate, input: src, group_by: [s], aggregates: [{fn: sprad, field: n, as: x}]}\n'
        '  - {id: kind, type: aggregate, input: src, group_by: [s], aggregates: [{fn: shout, field: s, as: x}]}\n'
        'sinks: [{id: out, type: print, inputs: [per_s, typo, kind]}]\n')
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert _diags(c) == [
        ("E102", 6, 78, "unknown aggregate function 'sprad' in aggregate 'typo'"),
        ("E353", 7, 78, "scalar function 'shout' used as an aggregate of aggregate 'kind'"),
    ]
    assert dict(c.graph.columns["per_s"]) == {"s": "string", "x": "double", "_update": "boolean"}
    text = (tmp_path / "p.yaml").read_text().splitlines()
    (tmp_path / "p.yaml").write_text("\n".join([*text[:5], "sinks: [{id: out, type: print, inputs: [per_s]}]", ""]))
    c = check_file(tmp_path / "p.yaml", programs=True)
    assert c.report.errors == [], _diags(c)
    assert ("    python aggregates (spread): each key's values kept in its state, the function run on them after\n"
            "        each micro-batch that changed the key (raising: that row is a dead letter)\n"
            ) in explain_plan(c.plan)


def test_a_name_of_a_spark_builtin_is_refused(tmp_path):
    c = _check(tmp_path, extra='  - name: upper\n    callable: "udfs:shout"\n')
    assert _diags(c) == [("E102", 11, 11, "function name 'upper' is a Spark SQL built-in function")]


SQL = """\
CREATE FUNCTION shout AS 'udfs:shout';
CREATE FUNCTION gone AS 'nomod:f' LANGUAGE PYTHON;
CREATE TABLE src (s VARCHAR) WITH (type = 'file', path = 'in');
CREATE TABLE out (a VARCHAR) WITH (type = 'file', path = 'out');
INSERT INTO out SELECT shout(s, s) AS a FROM src;
"""


def test_sql_create_function_diagnostics_point_into_the_script(tmp_path):
    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "job.sql").write_text(SQL)
    c = check_file(tmp_path / "job.sql")
    assert _diags(c) == [
        ("E350", 2, 25, "function 'gone': module 'nomod' not found beside the pipeline (nomod.py) nor installed"),
        ("E352", 5, 24, "function 'shout' takes 1 argument, 2 given in transform 'out_select' (fields[0])"),
    ]


def test_sql_function_in_another_language_is_not_supported(tmp_path):
    (tmp_path / "job.sql").write_text("CREATE FUNCTION f AS 'udfs:shout' LANGUAGE JAVA;\n" + SQL.split("\n", 2)[2])
    (tmp_path / "udfs.py").write_text(MODULE)
    c = check_file(tmp_path / "job.sql")
    assert _diags(c)[0] == ("E011", 1, 44, "CREATE FUNCTION ... LANGUAGE JAVA: only Python functions are supported")


def test_an_untyped_parameter_of_a_scalar_function_is_reported(tmp_path):
    module = MODULE + "\n\ndef untyped(s) -> str:\n    return s\n"
    c = _check(tmp_path, extra='  - name: untyped\n    callable: "udfs:untyped"\n', module=module)
    assert _diags(c) == [("E351", 12, 15, "function 'untyped' (annotations (udfs.py:34)): argument 1 has no type")]


def test_an_installed_module_is_read_without_being_imported(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "fnpkg"  # installed: on sys.path, not beside the pipeline
    pkg.mkdir(parents=True)
    (tmp_path / "pipe").mkdir()
    (pkg / "__init__.py").write_text("raise SystemExit('the package ran')\n")
    (pkg / "text.py").write_text("def shout2(s: str) -> str:\n    return s.upper()\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    c = _check(tmp_path / "pipe", extra='  - name: shout2\n    callable: "fnpkg.text:shout2"\n')
    assert c.report.errors == [], _diags(c)
    assert "shout2(string) -> string  [scalar, fnpkg.text:shout2; signature: annotations (text.py:1)]" in \
        explain_plan(c.plan)


def test_a_python_aggregate_in_a_sql_group_by_without_a_window(tmp_path):
    """CREATE FUNCTION + GROUP BY without a window: the continuous aggregate calling it (run on Spark in
    tests/sql/test_python_functions_spark.py)."""
    (tmp_path / "udfs.py").write_text(MODULE)
    (tmp_path / "job.sql").write_text(
        "CREATE FUNCTION spread AS 'udfs:spread';\n"
        "CREATE TABLE src (g VARCHAR, n BIGINT) WITH (type = 'file', path = 'in');\n"
        "CREATE TABLE o (g VARCHAR, spread DOUBLE, n BIGINT) WITH (type = 'file', path = 'o');\n"
        "INSERT INTO o SELECT g, spread(n) AS spread, COUNT(*) AS n FROM src GROUP BY g;\n")
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.report.errors == [], _diags(c)
    [agg] = [t for t in c.pipeline.transforms if t.type == "aggregate"]
    assert [(a.fn, a.field, a.as_) for a in agg.aggregates] == [("spread", "n", "spread"), ("count", None, "n")]
    assert dict(c.graph.columns[agg.id]) == {"g": "string", "spread": "double", "n": "bigint", "_update": "boolean"}


def test_flink_spelling_of_a_python_function(tmp_path):
    """Flink's `CREATE TEMPORARY SYSTEM FUNCTION f AS 'module.function' LANGUAGE PYTHON` is etl's function
    'module:function' (it was E011 unsupported statement at CREATE; a dotted name was no module:callable)."""
    (tmp_path / "udfs.py").write_text("def add_one(x: int) -> int:\n    return x + 1\n")
    (tmp_path / "job.sql").write_text(
        "CREATE TEMPORARY SYSTEM FUNCTION add_one AS 'udfs.add_one' LANGUAGE PYTHON;\n"
        "CREATE TABLE t (n BIGINT) WITH (type = 'file', filePath = 'x.jsonl');\n"
        "CREATE TABLE o (v BIGINT) WITH (type = 'print');\n"
        "INSERT INTO o SELECT add_one(n) FROM t;\n")
    c = check_file(tmp_path / "job.sql", programs=True)
    assert c.report.errors == [], [d.render() for d in c.report.errors]
    assert [(f.name, f.callable) for f in c.pipeline.functions] == [("add_one", "udfs:add_one")]
    assert next(s for s in c.pipeline.components() if s.id == "o_select").model_dump()["fields"] == ["ADD_ONE(n) AS v"]
