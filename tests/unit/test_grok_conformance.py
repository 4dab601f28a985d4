"""Grok as Logstash users know it: the cases of Logstash's own pattern tests (tests/fixtures/grok/
logstash_spec_cases.yaml, from logstash-patterns-core's spec/patterns) give the same answer here -- whether the
line matches, and the exact fields, nested and typed as Logstash sets them -- through etl's pure-Python reference
(etl.grok.GrokPattern.match: Python re, and the matcher program of etl/grokvm where it answers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from etl.grok import expand
from etl.grokvm import Program, Unsupported, compile_program
from tests.unit.test_grokvm import check_line

CASES = YAML(typ="safe").load(Path(__file__).resolve().parents[1] / "fixtures" / "grok" / "logstash_spec_cases.yaml")


def _has(got: object, want: object) -> bool:
    """Logstash's `include` (hash_including for nested mappings): every wanted field is there with that value."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_has(got.get(k), v) for k, v in want.items())
    return got == want


def _answer(case: dict) -> tuple[bool, dict | None]:
    pattern = case.get("grok") or ("^%{" + case["pattern"] + "}$" if case.get("exact") else "%{" + case["pattern"] + "}")
    g = expand(pattern, library=case.get("library", "legacy"))
    line = case["line"]
    out = g.match(line, {"message": line})  # Logstash's spec helper: the line is the event's message
    if line.isascii():  # the matcher program, where it answers, gives re's groups (etl/grokvm)
        try:
            prog = Program.from_bytes(compile_program(g.python_regex).to_bytes())
        except Unsupported:
            prog = None
        if prog is not None:
            check_line(prog, re.compile(g.python_regex, re.DOTALL), line)
    ok = out is not None and all(_has(out.get(k), v) for k, v in (case.get("include") or {}).items()) and all(
        out.get(k) is None for k in case.get("absent") or ())
    return out is not None, out if ok else None


@pytest.mark.parametrize("case", CASES, ids=[f"{c['spec']}[{c.get('library', 'legacy')}]" for c in CASES])
def test_logstash_spec_case(case):
    matched, fields = _answer(case)
    want_pass = case.get("pass", True)
    right = matched == want_pass and (not want_pass or fields is not None)
    if case.get("differs"):
        assert not right, f"now as Logstash: remove `differs` ({case['differs']})"
    else:
        assert right, (matched, fields)


def test_the_cases_cover_both_libraries():
    libs = [c.get("library", "legacy") for c in CASES]
    assert len(CASES) == 45 and libs.count("ecs-v1") == 11
    assert sum(1 for c in CASES if c.get("pass", True) is False) == 8
