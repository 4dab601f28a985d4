from __future__ import annotations

import hyperscan
import pytest

from etl.optimize import compile_rules
from tests.optimize.golden import check, load_cases, render, rules_of


@pytest.mark.parametrize("case", load_cases("merge_by_field"), ids=lambda c: c["name"])
def test_golden(case):
    check("merge_by_field", case, render(case, "merge_by_field"))


def test_one_database_per_subject_and_flags():
    program = compile_rules(rules_of([
        {"id": "a", "when": {"field": "cmd", "regex": "wget"}},
        {"id": "b", "when": {"field": "cmd", "contains": "wget"}},
        {"id": "c", "when": {"field": "cmd", "regex": "curl", "caseless": True}},
        {"id": "d", "when": {"field": "cmd", "apply": ["lower"], "regex": "curl"}},
    ]), upto="merge_by_field")
    assert [db.subject for db in program.databases] == ["cmd", "lower(cmd)"]
    cmd = program.databases[0]
    assert [(p.expression, p.leaves) for p in cmd.patterns] == [(b"wget", (0, 1)), (b"curl", (2,))]
    base = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SINGLEMATCH
    assert [p.flags for p in cmd.patterns] == [base, base | hyperscan.HS_FLAG_CASELESS]
    assert cmd.serialized is None  # compiled by the fallback pass
