from __future__ import annotations

import pytest

from etl.optimize import compile_rules
from tests.optimize.golden import check, load_cases, render, rules_of


@pytest.mark.parametrize("case", load_cases("fingerprint"), ids=lambda c: c["name"])
def test_golden(case):
    check("fingerprint", case, render(case, "fingerprint"))


def test_digest_is_stable_and_sensitive():
    rules = [{"id": "a", "when": {"field": "cmd", "regex": "wget"}}]
    d1 = compile_rules(rules_of(rules)).digest
    assert d1 == compile_rules(rules_of(rules)).digest
    assert d1 != compile_rules(rules_of([{"id": "a", "when": {"field": "cmd", "regex": "curl"}}])).digest
    assert d1 != compile_rules(rules_of([{"id": "b", "when": {"field": "cmd", "regex": "wget"}}])).digest
