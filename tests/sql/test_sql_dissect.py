"""DISSECT(field, 'pattern') in SQL scripts: refused calls at their position (fast), and the twin of a SQL script
and a YAML pipeline with the dissect transform: the same sink rows (Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl.check import check_file

LINES = ["Mar 16 00:01:25 evita postfix/smtpd[1713]: connect from camomile",
         "Mar  7 10:00:00 host-b cron[1]: (root) CMD",  # two spaces: an empty + field
         "no match here", "", "Jan 1 00:00:00 h p[9]: it's \"quoted\" \\ and ☃"]
PATTERN = "%{ts} %{+ts} %{+ts} %{host} %{prog}[%{pid}]: %{msg}"

SQL = f"""CREATE TABLE logs (line VARCHAR) WITH (type = 'file', filePath = 'in', format = 'text');
CREATE TABLE parsed (line VARCHAR, d ROW<ts VARCHAR, host VARCHAR, prog VARCHAR, pid VARCHAR, msg VARCHAR>)
WITH (type = 'file', filePath = 'out_sql');
INSERT INTO parsed
SELECT line, DISSECT(line, '{PATTERN}') AS d FROM logs WHERE DISSECT(line, '{PATTERN}') IS NOT NULL;
"""

YAML = f"""name: parsed
sources:
  - {{id: logs, type: file, path: in, format: text}}
transforms:
  - id: dissected
    type: dissect
    input: logs
    mapping: {{line: "{PATTERN}"}}
    on_error: drop
  - id: shaped
    type: select
    input: dissected
    fields: [line, "named_struct('ts', ts, 'host', host, 'prog', prog, 'pid', pid, 'msg', msg) AS d"]
sinks:
  - {{id: out, type: file, input: shaped, path: out_yaml}}
"""


def _check(tmp_path: Path, query: str):
    f = tmp_path / "job.sql"
    f.write_text("CREATE TABLE t (s VARCHAR) WITH (type = 'file', filePath = 'x.jsonl');\n"
                 "CREATE TABLE o (v VARCHAR) WITH (type = 'print');\n" + query)
    return check_file(f, environ={})


@pytest.mark.parametrize("query,code,col,message", [
    ("INSERT INTO o SELECT DISSECT(s, s).a FROM t;\n", "E011", 33, "DISSECT's pattern must be a string literal"),
    ("INSERT INTO o SELECT DISSECT(s, '%{a}%{b}').a FROM t;\n", "E305", 33,
     "DISSECT pattern: fields %{a} and the one after it have no delimiter between them: the pattern never matches "
     "(in Logstash either)"),
    ("INSERT INTO o SELECT DISSECT(s, '%{?k} %{&k}').a FROM t;\n", "E305", 33,
     "DISSECT pattern: indirect fields (%{&key}) are the dissect transform's: a struct's fields are fixed"),
    ("INSERT INTO o SELECT DISSECT(s, '%{} %{?x}').a FROM t;\n", "E305", 33,
     "DISSECT pattern sets no field (every one is skipped)"),
    ("INSERT INTO o SELECT DISSECT(s).a FROM t;\n", "E012", 22, "DISSECT takes 2 arguments, not 1"),
])
def test_a_refused_call_is_reported_at_its_position(tmp_path, query, code, col, message):
    c = _check(tmp_path, query)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [(code, 3, col, message)]


def _run(spark, path: Path, out: Path) -> list[dict]:
    from etl.runtime.runner import PipelineRun, RunOptions

    c = check_file(path, programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    run = PipelineRun(c.plan, spark, RunOptions(once=True, checkpoint=str(out) + "_ck", progress="none"))
    run.start()
    run.wait()
    return sorted((json.loads(line) for f in sorted(out.rglob("*.jsonl")) for line in f.read_text().splitlines()),
                  key=json.dumps)


@pytest.mark.spark
def test_sql_and_yaml_spellings_give_the_same_rows(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.log").write_text("".join(line + "\n" for line in LINES))
    (tmp_path / "job.sql").write_text(SQL)
    (tmp_path / "job.yaml").write_text(YAML)
    from_sql = _run(spark, tmp_path / "job.sql", tmp_path / "out_sql")
    from_yaml = _run(spark, tmp_path / "job.yaml", tmp_path / "out_yaml")
    assert from_sql == from_yaml == sorted([
        {"line": LINES[0], "d": {"ts": "Mar 16 00:01:25", "host": "evita", "prog": "postfix/smtpd", "pid": "1713",
                                 "msg": "connect from camomile"}},
        {"line": LINES[1], "d": {"ts": "Mar  7", "host": "10:00:00", "prog": "host-b cron", "pid": "1",
                                 "msg": "(root) CMD"}},
        {"line": LINES[4], "d": {"ts": "Jan 1 00:00:00", "host": "h", "prog": "p", "pid": "9",
                                 "msg": "it's \"quoted\" \\ and ☃"}},
    ], key=json.dumps)


def test_the_struct_type_is_known_to_validate(tmp_path):
    f = tmp_path / "job.sql"
    f.write_text("CREATE TABLE t (s VARCHAR) WITH (type = 'file', filePath = 'x.jsonl');\n"
                 "CREATE TABLE o (v ROW<a VARCHAR, p ROW<n VARCHAR>>) WITH (type = 'print');\n"
                 "INSERT INTO o SELECT DISSECT(s, '%{a} %{+a} [%{[p][n]}]') AS v FROM t;\n")
    c = check_file(f, environ={})
    assert dict(c.graph.columns_of("o_select") or {})["v"] == "struct<a: string, p: struct<n: string>>"
    assert [(d.code, d.span.line, d.message) for d in c.report.sorted()] == []
