"""Required literals (the JVM prefilter's condition): a row that matches always contains one of them."""

from __future__ import annotations

import re

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.matching.matcher import Matcher
from etl.optimize import compile_rules
from etl.optimize.literals import program_literal_groups, program_literals, required_literals
from etl.spec.rules import Rule
from tests.optimize.strategies import regexes, rule_sets

ASCII = "abkKsSiIx0 1-._|/%\\\n\t"
ascii_texts = st.one_of(st.text(alphabet=ASCII, max_size=12),
                        st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=8))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regexes, st.booleans(), st.lists(ascii_texts, min_size=5, max_size=20), st.booleans())
def test_a_match_contains_a_required_literal(rx, caseless, values, split_ws):
    flags = re.IGNORECASE if caseless else 0
    need = required_literals(rx, flags, split_ws, min_length=1)
    if need is None:
        return
    assert all(lit.isascii() and lit == lit.lower() for lit in need)
    if split_ws:
        assert not any(c in lit for lit in need for c in " \t\n")
    for v in values:
        if re.search(rx, v, flags):
            assert any(lit in v.lower() for lit in need), (rx, caseless, v, need)


CASES = [
    (r"curl .*\| *sh", 0, {"curl "}),
    (r"/etc/(passwd|shadow)", 0, {"passwd", "shadow"}),
    (r"(?i)MiMi", 0, {"mimi"}),
    (r"MIMI", 0, {"mimi"}),
    (r"[kK]at[sS]", 0, {"kats"}),
    (r"(abc|defg)x", 0, {"abc", "defg"}),
    (r"a(bcd)?e", 0, None),
    (r"a.b", 0, None),
    (r"(a|bc)", 0, None),
    (r"(?<=x)abcdef", 0, {"abcdef"}),
    (r"\bnmap\b", 0, {"nmap"}),
    ("k\u212aabc", re.IGNORECASE, {"abc"}),  # the Kelvin sign breaks the run
]


def test_examples():
    for rx, flags, want in CASES:
        got = required_literals(rx, flags)
        assert (None if got is None else set(got)) == want, rx
    assert set(required_literals("ab cd efgh", 0, split_ws=True)) == {"efgh"}


def _rule(i, when):
    return Rule.model_validate({"id": f"r{i}", "when": when})


def test_program_literals_need_every_rule_to_need_a_pattern():
    regex = {"field": "cmd", "regex": "curl .*sh"}
    assert program_literals(compile_rules([_rule(0, regex)])) == {"cmd": frozenset({"curl "})}
    guarded = {"all": [{"field": "user", "eq": "root"}, {"field": "host", "contains": "prod"}]}
    got = program_literals(compile_rules([_rule(0, regex), _rule(1, guarded)]))
    assert got == {"cmd": frozenset({"curl "}), "host": frozenset({"prod"})}
    for other in ({"not": regex}, {"any": [regex, {"field": "user", "eq": "root"}]}, {"field": "port", "ge": 1},
                  {"field": "cmd", "regex": "a.b"}):
        assert program_literals(compile_rules([_rule(0, regex), _rule(1, other)])) is None, other
    both = {"field": "cmd", "regex": "python[23]? .*socket"}
    assert program_literal_groups(compile_rules([_rule(0, both)])) == {
        "cmd": ((frozenset({"python"}), frozenset({"socket"})),)}
    tunnel = {"field": "cmd", "regex": r"ssh\s+-R\s+\d+:"}  # a later need may be 2 characters, never the first
    assert program_literal_groups(compile_rules([_rule(0, tunnel)])) == {
        "cmd": ((frozenset({"ssh"}), frozenset({"-r"})),)}
    assert program_literal_groups(compile_rules([_rule(0, {"field": "cmd", "regex": r"-r\s+-x"})])) is None
    lowered = {"field": "cmd", "apply": ["collapse_ws"], "contains": "ab  cdef"}
    assert program_literals(compile_rules([_rule(0, lowered)])) == {"cmd": frozenset({"cdef"})}


TEXT = ["cmd", "user", "meta.host"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), st.lists(st.fixed_dictionaries({
    "cmd": st.one_of(st.none(), ascii_texts), "user": st.one_of(st.none(), ascii_texts),
    "meta": st.one_of(st.none(), st.fixed_dictionaries({"host": st.one_of(st.none(), ascii_texts)}))}),
    min_size=1, max_size=15))
def test_rows_the_program_matches_pass_the_literal_condition(rules, rows):
    program = compile_rules(rules)
    lits = program_literals(program, min_length=1)
    if lits is None or not set(lits) <= set(TEXT):
        return
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema([
        ("cmd", pa.string()), ("user", pa.string()), ("meta", pa.struct([("host", pa.string())]))]))
    matched = Matcher(program, cache=False).match(batch).matched_ids()

    def text(row, field):
        v = row.get("meta") if field == "meta.host" else row.get(field)
        return (v or {}).get("host") if field == "meta.host" else v

    groups = program_literal_groups(program, min_length=1)
    assert {f: frozenset(x for g in gs for x in g[0]) for f, gs in groups.items()} == lits
    for row, ids in zip(rows, matched, strict=True):
        if ids:
            assert any(text(row, f) is not None and any(lit in text(row, f).lower() for lit in ls)
                       for f, ls in lits.items()), (row, ids, lits)
            assert any(text(row, f) is not None and any(all(any(x in text(row, f).lower() for x in need)
                                                            for need in g) for g in gs)
                       for f, gs in groups.items()), (row, ids, groups)
