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
from etl.grokvm import Program
from etl.grokvm.cache import program_bytes
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
        raw = program_bytes(g.python_regex)[0]  # compiled once per regex (and kept in etl's cache folder)
        if raw is not None:
            check_line(Program.from_bytes(raw), re.compile(g.python_regex, re.DOTALL), line)
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


# --------------------------------------------------------------------------- every pattern of both libraries

def _generate(tree, rnd, groups: dict) -> str:
    """A text for a parsed regex (re._parser's tree): lookarounds and anchors are ignored, so the text may not
    match; the caller checks."""
    from re import _constants as c

    out = []
    for op, av in tree:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append("x" if av != ord("x") else "y")
        elif op is c.ANY:
            out.append("x")
        elif op is c.IN or op is c.CATEGORY:
            items = av if op is c.IN else [(op, av)]
            cand = [chr(b) for b in range(32, 127)]
            ok = [ch for ch in cand if _in_class(items, ch)]
            out.append(rnd.choice(ok) if ok else "")
        elif op is c.BRANCH:
            out.append(_generate(rnd.choice(av[1]), rnd, groups))
        elif op is c.SUBPATTERN:
            text = _generate(av[3], rnd, groups)
            if av[0]:
                groups[av[0]] = text
            out.append(text)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            n = rnd.randint(lo, min(hi, lo + 3))
            out.extend(_generate(sub, rnd, groups) for _ in range(n))
        elif op is c.ATOMIC_GROUP:
            out.append(_generate(av, rnd, groups))
        elif op is c.GROUPREF:
            out.append(groups.get(av, ""))
        elif op is c.GROUPREF_EXISTS:
            out.append(_generate(av[1] if av[0] in groups or av[2] is None else av[2], rnd, groups))
    return "".join(out)


def _in_class(items, ch: str) -> bool:
    from re import _constants as c

    neg = bool(items) and items[0][0] is c.NEGATE
    hit = False
    for op, av in items[neg:]:
        if op is c.LITERAL:
            hit |= ord(ch) == av
        elif op is c.RANGE:
            hit |= av[0] <= ord(ch) <= av[1]
        elif op is c.CATEGORY:
            hit |= bool(re.match({c.CATEGORY_DIGIT: r"\d", c.CATEGORY_NOT_DIGIT: r"\D", c.CATEGORY_WORD: r"\w",
                                  c.CATEGORY_NOT_WORD: r"\W", c.CATEGORY_SPACE: r"\s",
                                  c.CATEGORY_NOT_SPACE: r"\S"}[av], ch, re.ASCII))
    return hit != neg


def _a_matching_line(g, rnd) -> str | None:
    from re import _parser

    tree = _parser.parse(g.python_regex, re.ASCII)
    for _ in range(40):
        line = _generate(tree, rnd, {})
        if g.regex.search(line) is not None:
            return line
    return None


# the names without a generated line: the generator ignores lookarounds, anchors and \b, which these need
UNGENERATED = {"BACULA_LOG_FATAL_CONN", "BACULA_LOG_NO_CONNECT", "MONGO_QUERY", "MONGO_SLOWQUERY", "SHOREWALL",
               "SYSLOGFACILITY"}


@pytest.mark.parametrize("library, generated", [("legacy", 312), ("ecs-v1", 357)])
def test_every_pattern_has_a_matching_line_and_a_near_miss(library, generated):
    """Each pattern of the library, anchored (^%{NAME}$), on a line generated from it: matches, with its fields
    set as ``outputs`` says (a list exactly where a field is captured more than once non-exclusively, a dict for
    nested fields, converted types); the same line cut short by one character or with a control character
    in the middle is a near miss that the pattern rejects (or, where the pattern allows it, still matches)."""
    import random

    from etl.grok import bundled_patterns, columns_of

    rnd = random.Random(7)
    names = sorted(bundled_patterns(library))
    found = 0
    for name in names:
        g = expand("^%{" + name + "}$", library=library)
        line = _a_matching_line(g, rnd)
        if line is None:
            assert name in UNGENERATED, name
            continue
        found += 1
        out = g.match(line)
        assert out is not None and set(out) == set(columns_of(g.outputs())), name
        for leaf in g.outputs():
            v = out
            for k in leaf.path:
                v = v.get(k) if isinstance(v, dict) else None
            if v is None:
                continue
            if leaf.spark_type.startswith("array<"):
                assert isinstance(v, list) and len(v) >= 1, (name, leaf)
            else:
                assert isinstance(v, {"string": str, "int": int, "bigint": int, "float": float,
                                      "double": float}[leaf.spark_type]), (name, leaf, v)
        for near in (line[:-1], line[: len(line) // 2] + "\x01" + line[len(line) // 2:]):
            m = g.regex.search(near)
            assert (g.match(near) is None) == (m is None), name
    assert found == generated
