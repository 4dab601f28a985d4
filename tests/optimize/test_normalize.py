from __future__ import annotations

import pytest

from etl.matching.ir import NodePath
from etl.optimize import RuleCompileError, compile_rules
from tests.optimize.golden import check, load_cases, render, rules_of


@pytest.mark.parametrize("case", load_cases("normalize"), ids=lambda c: c["name"])
def test_golden(case):
    check("normalize", case, render(case, "normalize"))


def test_identical_subtrees_are_one_object():
    p = compile_rules(rules_of([
        {"id": "a", "when": {"all": [{"field": "x", "eq": 1}, {"field": "y", "regex": "z"}]}},
        {"id": "b", "when": {"all": [{"field": "y", "regex": "z"}, {"field": "x", "eq": 1}]}},
    ]), upto="normalize")
    assert p.rules[0].expr is p.rules[1].expr
    assert [pr.rules for pr in p.predicates] == [("a", "b"), ("a", "b")]


def test_bad_regex_points_at_the_predicate():
    with pytest.raises(RuleCompileError) as err:
        compile_rules(rules_of([{"id": "bad", "when": {"any": [{"field": "x", "eq": 1}, {"field": "y", "regex": "("}]}}]))
    assert err.value.origin == NodePath("bad", ("any", 1))
    assert str(err.value).startswith("rule bad at when.any.1: invalid regular expression '('")


def test_bad_network_points_at_the_predicate():
    with pytest.raises(RuleCompileError) as err:
        compile_rules(rules_of([{"id": "n", "when": {"field": "ip", "cidr": "10.0.0.0/33"}}]))
    assert err.value.origin == NodePath("n", ())
    assert str(err.value).startswith("rule n: bad network in cidr")
