"""The SigmaHQ corpus rules of tests/sigma_rules/test_corpus.py (150 process-creation rules, an event each
rule matches and a near miss, checked with pySigma's own reading) decided by the JVM rule path over several
fields (etl/optimize/jvmmulti.py): all rules at once, exactly as the reference interpreter decides them, on the
events as generated, upper-cased, and with the characters Python matches caselessly with k, s and i."""

from __future__ import annotations

import pytest

from etl.optimize import compile_rules
from etl.optimize.jvmmulti import multi_plan
from etl.optimize.reference import matched_rules
from tests.sigma_rules.test_corpus import _cases
from tests.spark.test_rules_jvm_multi import decide_each

pytestmark = pytest.mark.spark

VARIANTS = {
    "generated": lambda s: s,
    "upper": str.upper,
    "folding": lambda s: s.replace("k", "\u212a").replace("s", "\u017f").replace("I", "\u0130"),
}


@pytest.fixture(scope="module")
def corpus_cases():
    cases, _skipped = _cases()
    assert len(cases) >= 100
    return cases


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_corpus_rules_in_the_jvm_equal_the_reference(spark, corpus_cases, variant):
    """Both modes (matched rule ids, and the boolean of the filter) computed by one Spark job."""
    rules = [c[1] for c in corpus_cases]
    program = compile_rules(rules)
    assert multi_plan(program).reason is None
    change = VARIANTS[variant]
    events = [{k: (None if v is None else change(str(v))) for k, v in e.items()}
              for c in corpus_cases for e in (c[2], c[3])]
    fields = tuple(sorted({k for e in events for k in e} | {p.key.field for p in program.predicates}))
    want = [matched_rules(rules, e) for e in events]
    tagged, kept = decide_each(spark, program, events, (True, False), fields)
    assert [list(x) for x in tagged] == want
    assert kept == [bool(w) for w in want]
    if variant == "generated":  # each rule matches its event and not its near miss
        for k, (name, rule, _hit, _miss) in enumerate(corpus_cases):
            assert rule.id in want[2 * k] and rule.id not in want[2 * k + 1], name
    if variant == "folding":
        assert sum(1 for e, w in zip(events, want, strict=True) if w and any("\u212a" in (v or "") for v in e.values())) >= 10
