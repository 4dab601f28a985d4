from __future__ import annotations

import hyperscan
import pytest

from etl.optimize import compile_rules
from tests.optimize.golden import check, load_cases, render, rules_of


@pytest.mark.parametrize("case", load_cases("fallback"), ids=lambda c: c["name"])
def test_golden(case):
    check("fallback", case, render(case, "fallback"))


def test_databases_are_serialized_and_loadable():
    program = compile_rules(rules_of([
        {"id": "a", "when": {"field": "cmd", "regex": "wget"}},
        {"id": "b", "when": {"field": "cmd", "regex": "a\\n^b"}},
        {"id": "c", "when": {"field": "cmd", "regex": "^$"}},
    ]), upto="fallback")
    (db,) = program.databases
    assert [(p.expression, p.ascii_rows) for p in db.patterns] == [(b"wget", "exact"), (b"a\\x{a}b", "confirm")]
    loaded = hyperscan.loadb(db.serialized, hyperscan.HS_MODE_BLOCK)
    hits = []

    def on_match(pid, start, end, flags, ctx):
        hits.append(pid)

    loaded.scan(b"xx a\nb wget", match_event_handler=on_match, scratch=hyperscan.Scratch(loaded))
    assert sorted(hits) == [0, 1]
    assert [(f.leaf, f.python_regex, f.rules) for f in program.fallbacks] == [(2, "^$", ("c",))]
