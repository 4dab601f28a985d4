"""Property: the optimized matcher and the naive reference agree on every event."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.matching.matcher import Matcher
from etl.matching.merged import split_results
from etl.optimize import compile_rules, merge_programs
from etl.optimize.reference import matched_rules
from tests.optimize.strategies import events, rule_sets, to_batch

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(rules=rule_sets(), evs=st.lists(events(), min_size=1, max_size=8))
def test_matcher_equals_reference(rules, evs):
    program = compile_rules(rules)
    got = Matcher(program, cache=False).match(to_batch(evs)).matched_ids()
    want = [matched_rules(rules, e) for e in evs]
    assert got == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rule_sets(max_rules=3), evs=st.lists(events(), min_size=1, max_size=6), repeat=st.integers(1, 3))
def test_cached_matcher_equals_reference(rules, evs, repeat):
    program = compile_rules(rules)
    m = Matcher(program)  # with the pre-fingerprint cache: repeated events hit it
    batch = to_batch(evs * repeat)
    want = [matched_rules(rules, e) for e in evs] * repeat
    assert m.match(batch).matched_ids() == want
    assert m.match(batch).matched_ids() == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=rule_sets(max_rules=3), b=rule_sets(max_rules=3), evs=st.lists(events(), min_size=1, max_size=6))
def test_sibling_merge_equals_reference(a, b, evs):
    merged = merge_programs([compile_rules(a), compile_rules(b)])
    res = Matcher(merged.program, cache=False).match(to_batch(evs))
    got_a, got_b = (r.matched_ids() for r in split_results(merged, res))
    assert got_a == [matched_rules(a, e) for e in evs]
    assert got_b == [matched_rules(b, e) for e in evs]
