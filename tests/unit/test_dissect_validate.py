"""etl validate on dissect transforms: each problem at its position (file:line:col, E305 / E310 / E102), and the
output columns known to the checks of the stages after it."""

from __future__ import annotations

import pytest

from etl.check import check_file

HEAD = """name: d
sources:
  - {id: logs, type: file, path: data/logs, format: text}
transforms:
  - id: parsed
    type: dissect
    input: logs
"""
TAIL = """sinks:
  - {id: out, type: print, input: parsed}
"""


def _render(tmp_path, body: str, tail: str = TAIL) -> list[str]:
    p = tmp_path / "p.yaml"
    p.write_text(HEAD + body + tail)
    checked = check_file(str(p), environ={})
    return [d.render().replace(str(p), "p.yaml") for d in checked.report.sorted()]


@pytest.mark.parametrize("body,expected", [
    ('    mapping: {line: "%{a} %{+&b}"}\n',
     "p.yaml:8:27: E305 dissect 'parsed': field %{+&b} cannot prefix with both append and indirect (+&)"),
    ('    mapping:\n      line: "%{ts}%{level} %{msg}"\n',
     "p.yaml:9:19: E305 dissect 'parsed': fields %{ts} and the one after it have no delimiter between them: the "
     "pattern never matches (in Logstash either)"),
    ('    mapping: {line: "%{a} %{b}"}\n    convert_datatype: {c: int}\n',
     "p.yaml:9:24: E305 dissect 'parsed': convert_datatype names 'c', which no mapping sets"),
    ('    mapping: {lines: "%{a} %{b}"}\n',
     "p.yaml:8:15: E310 unknown column 'lines' in transform 'parsed' (mapping)"),
    ('    mapping: {line: "%{a} %{[a][b]}"}\n',
     "p.yaml:8:27: E305 dissect 'parsed': nested field [a][b] goes into column 'a', which is already set"),
    ('    mapping: {line: "%{a} %{user.name}"}\n',
     "p.yaml:8:27: E102 column name 'user.name' of transform 'parsed' has a dot: Spark reads `a.b` as field b of "
     "column a"),
    ('    mapping: {line: "%{a} %{b}"}\n    remove_field: [line, c]\n',
     "p.yaml:9:26: E310 unknown column 'c' in transform 'parsed' (remove_field)"),
    ('    mapping: {line: "%{?k}=%{&k} %{indirect}"}\n',
     "p.yaml:5:5: E305 dissect 'parsed': indirect_field 'indirect' is also a field of the dissection"),
])
def test_problems_at_their_position(tmp_path, body, expected):
    got = _render(tmp_path, body)
    assert [g.split("\n")[0] for g in got] == [expected]


def test_the_outputs_are_known_columns(tmp_path):
    body = ('    mapping: {line: "%{ts} %{+ts} %{n} %{[proc][pid]} %{?k}=%{&k}"}\n'
            '    convert_datatype: {n: int}\n'
            '  - {id: f, type: filter, input: parsed, expr: "n > 1 AND proc.pid = \'1\' AND indirect[\'x\'] = \'y\' '
            'AND level = 2"}\n')
    got = _render(tmp_path, body, "sinks:\n  - {id: out, type: print, input: f}\n")
    assert [g.split("\n")[0] for g in got] == [
        "p.yaml:10:102: E310 unknown column 'level' in transform 'f' (expr)"]


def test_removed_fields_are_gone(tmp_path):
    body = ('    mapping: {line: "%{a} %{b}"}\n    remove_field: [line, a]\n'
            '  - {id: f, type: filter, input: parsed, expr: "b = \'x\' OR a = \'y\'"}\n')
    got = _render(tmp_path, body, "sinks:\n  - {id: out, type: print, input: f}\n")
    assert [g.split("\n")[0] for g in got] == ["p.yaml:10:60: E310 unknown column 'a' in transform 'f' (expr)"]


def test_a_valid_dissect_has_no_diagnostic(tmp_path):
    body = ('    mapping:\n      line: "%{ts} %{+ts} %{level} %{msg}"\n      msg: "%{a->} %{b}"\n'
            '    append_separator: "T"\n    on_error: keep\n')
    assert _render(tmp_path, body) == []
