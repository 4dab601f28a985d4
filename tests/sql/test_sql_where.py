"""WHERE -> rules (the optimizer's) + expr (Spark SQL): which part goes where, and positions."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from etl.check import check_file
from etl.sql.dialect import DIALECT
from etl.sql.where import split

ROOT = Path(__file__).resolve().parents[2]


def _split(where: str):
    q = DIALECT.parse(f"SELECT * FROM t WHERE {where}")[0]
    rules, _, rest = split(q.args["where"].this)
    return rules, " AND ".join(r.sql(dialect="spark") for r in rest) or None


@pytest.mark.parametrize("where,rules,expr", [
    ("a = 'x'", [{"id": "r1", "when": {"field": "a", "eq": "x"}}], None),
    ("a LIKE 'x%' OR b REGEXP '^y' OR c RLIKE 'z'",
     [{"id": "r1", "when": {"field": "a", "like": "x%"}}, {"id": "r2", "when": {"field": "b", "regex": "^y"}},
      {"id": "r3", "when": {"field": "c", "regex": "z"}}], None),
    ("n >= 5 AND 10 > n AND s IN ('a', 'b') AND x IS NULL AND y IS NOT NULL",
     [{"id": "r1", "when": {"all": [{"field": "n", "ge": 5.0}, {"field": "n", "lt": 10.0},
                                    {"field": "s", "in": ["a", "b"]}, {"field": "x", "is_null": True},
                                    {"field": "y", "not_null": True}]}}], None),
    ("lower(trim(a)) LIKE '%err%' AND b ILIKE 'x'",
     [{"id": "r1", "when": {"all": [{"field": "a", "apply": ["trim", "lower"], "like": "%err%"},
                                    {"field": "b", "caseless": True, "like": "x"}]}}], None),
    ("(a = 1 OR b = 2) AND length(c) > 3 AND d NOT LIKE 'x%'",
     [{"id": "r1", "when": {"field": "a", "eq": 1}}, {"id": "r2", "when": {"field": "b", "eq": 2}}],
     "LENGTH(c) > 3 AND d NOT LIKE 'x%'"),
    ("NOT a = 1", [], "NOT a = 1"),  # no NOT in rules: SQL's NULL handling and the rules' would differ
    ("a > 'x' AND b = c AND e LIKE f", [], "a > 'x' AND b = c AND e LIKE f"),
    ("a = 1 OR length(b) > 2", [], "a = 1 OR LENGTH(b) > 2"),  # an OR is routed whole or not at all
])
def test_where_split(where, rules, expr):
    assert _split(where) == (rules, expr)


def test_rule_positions_point_at_each_branch(tmp_path):
    f = tmp_path / "job.sql"
    f.write_text(textwrap.dedent("""\
        CREATE TABLE t (a VARCHAR, b VARCHAR) WITH (type = 'file', path = 't');
        CREATE TABLE o (a VARCHAR, b VARCHAR) WITH (type = 'print');
        INSERT INTO o SELECT * FROM t
        WHERE a LIKE 'x%'
           OR bb = 'y'
           OR b REGEXP '(z';
        """))
    c = check_file(f)
    # E310 at bb; E300 at the regex's '(' (position 0 of the pattern)
    assert [(d.code, d.span.line, d.span.col) for d in c.report.sorted()] == [("E310", 5, 7), ("E300", 6, 17)]


def test_validate_of_a_script_imports_no_pyspark():
    code = ("import sys; from etl.check import check_file; "
            "c = check_file('pipelines/sql/connectors.sql', environ={}); assert c.plan is not None; "
            "assert not [m for m in sys.modules if m.startswith('pyspark')], 'pyspark imported'")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
