"""Property: random mutations of SQL scripts only ever give positioned diagnostics (never a traceback, E999).

Seeds: pipelines/sql/*.sql and the invalid fixtures. Mutations: delete, duplicate or swap tokens,
drop or insert characters (quotes, parentheses, commas, semicolons, comment openers), replace a
keyword or a name, cut the script short, insert Jinja.
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.check import check_file

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [p.read_text() for p in sorted((ROOT / "pipelines" / "sql").glob("*.sql"))]
SEEDS += [p.read_text() for p in sorted((ROOT / "tests" / "fixtures" / "sql_invalid").glob("*.sql"))][:20]
WORK = Path(tempfile.mkdtemp(prefix="etl-sql-fuzz-"))
CODE = re.compile(r"^[EW]\d{3}$")
TOKEN = re.compile(r"\s+|\w+|'[^']*'|.", re.S)
WORDS = ["SELECT", "FROM", "WHERE", "GROUP BY", "JOIN", "LEFT JOIN", "ON", "AS", "WITH", "TABLE", "VIEW",
         "INSERT INTO", "CREATE", "TUMBLE", "HOP", "SESSION", "WATERMARK", "FOR", "INTERVAL", "EMIT", "UNION ALL",
         "FOR SYSTEM_TIME AS OF", "PROCTIME()", "DESCRIPTOR", "COUNT(DISTINCT x)", "HAVING", "*", "NULL",
         "'x'", "1", "(", ")", ",", ";", "--", "/*", "'", "`", "{{", "{% if %}", "header", "METADATA FROM 'k'",
         "PRIMARY KEY", "type = 'kafka'", "ts", "orders", "a.b.c", "LATERAL TABLE(f(x))", "ROW_NUMBER() OVER ()"]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
_n = iter(range(10**9))


def validate(text: str) -> None:
    path = WORK / f"case{next(_n) % 20}.sql"
    path.write_text(text)
    c = check_file(path, environ={})
    lines = text.count("\n") + 1
    for d in c.report.diagnostics:
        assert CODE.match(d.code) and d.code != "E999", d.render()
        assert d.span.line >= 1 and d.span.col >= 1, d.render()
        if d.span.file == str(path):
            assert d.span.line <= lines + 1, d.render()
        assert "Traceback" not in d.message


@st.composite
def mutated(draw) -> str:
    tokens = TOKEN.findall(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "dup", "swap", "word", "char", "cut"]))
        if op == "delete":
            del tokens[i]
        elif op == "dup":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "word":
            tokens[i] = draw(st.sampled_from(WORDS))
        elif op == "char":
            tokens.insert(i, draw(st.sampled_from(list("'\"`(),;*=.-/{}%\n"))))
        else:
            tokens = tokens[:i]
    return "".join(tokens)


@SETTINGS
@given(mutated())
def test_mutated_scripts_give_only_diagnostics(text):
    validate(text)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.sampled_from(WORDS + ["\n", "a", "b"]), max_size=40).map(" ".join))
def test_random_statements_give_only_diagnostics(text):
    validate(text)
