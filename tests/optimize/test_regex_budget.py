"""Python re searches of the matcher have a time budget: a search that backtracks past it gives up, and the
rules that depend on it are undecided on that row (never matched, never silently false)."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from etl.matching.matcher import Matcher
from etl.matching.regex_budget import searches
from etl.optimize import compile_rules
from tests.optimize.golden import rules_of

# Hyperscan gets a superset of this backreference pattern; Python re confirms its reports. On EVIL it
# backtracks for 8 s (2 s at 20 a's, 0.5 s at 18: it doubles with each one)
CONFIRM = r"(a+)+b\1c"
EVIL = "a" * 22 + "b" + "a" * 27 + "c"
# matches the empty string: Hyperscan rejects it, so it runs in Python re alone (a fallback); 4 s on EVIL2
FALLBACK = r"^(a|a)*$"
EVIL2 = "a" * 26 + "b"


@pytest.fixture(autouse=True)
def short_budget(monkeypatch):
    monkeypatch.setenv("ETL_REGEX_BUDGET_S", "0.2")


def test_searches_give_up_one_by_one_and_the_others_are_answered():
    import re

    slow, fast = re.compile(CONFIRM).search, re.compile("ab").search
    calls = [(fast, "xab"), (slow, EVIL), (fast, "b"), (slow, "aabaac"), (slow, EVIL), (fast, "ab")]
    assert searches(calls) == [True, None, False, True, None, True]
    assert searches([]) == []


def test_outside_the_main_thread_there_is_no_budget():
    import re

    got = []
    slow = re.compile(CONFIRM).search
    t = threading.Thread(target=lambda: got.append(searches([(slow, "a" * 16 + "b" + "a" * 20 + "c")])))
    t.start()
    t.join()
    assert got == [[False]]  # answered (it takes 0.1 s: under the budget anyway, but no signal was used)


def _program(rules):
    return compile_rules(rules_of(rules))


def test_confirmed_pattern_that_gives_up_leaves_its_rules_undecided():
    program = _program([
        {"id": "evil", "when": {"field": "msg", "regex": CONFIRM}},
        {"id": "hello", "when": {"field": "msg", "contains": "hello"}},
        {"id": "not_evil", "when": {"not": {"field": "msg", "regex": CONFIRM}}},
        {"id": "evil_or_host", "when": {"any": [{"field": "msg", "regex": CONFIRM}, {"field": "host", "eq": "h1"}]}},
    ])
    assert not program.fallbacks and [p.ascii_rows for d in program.databases for p in d.patterns].count("confirm") == 1
    batch = pa.RecordBatch.from_pylist([
        {"msg": EVIL, "host": "h0"},
        {"msg": "aabaac hello", "host": "h0"},
        {"msg": EVIL + " hello", "host": "h1"},
        {"msg": "nothing", "host": "h0"},
    ])
    for cache in (False, True, True):  # the second cached run answers from the cache
        r = Matcher(program, cache=cache).match(batch)
        assert r.matched_ids() == [[], ["evil", "hello", "evil_or_host"], ["hello", "evil_or_host"], ["not_evil"]]
        # row 2: evil_or_host is decided by its native predicate; the OR is true whatever the pattern says
        assert sorted(zip(r.undecided_rows.tolist(), [r.rule_ids[k] for k in r.undecided_rules.tolist()], strict=True)) == [
            (0, "evil"), (0, "evil_or_host"), (0, "not_evil"), (2, "evil"), (2, "not_evil")]
        assert r.undecided().tolist() == [True, False, False, False]  # row 2 matched rules: its verdict is known
        assert r.verdict().to_pylist() == [None, True, True, True]
        assert r.verdict(negate=True).to_pylist() == [None, False, False, False]
        assert r.to_arrow().to_pylist() == [None, ["evil", "hello", "evil_or_host"], None, ["not_evil"]]


def test_fallback_pattern_that_gives_up_leaves_its_rules_undecided():
    program = _program([{"id": "only_a", "when": {"field": "msg", "regex": FALLBACK}}])
    assert [f.python_regex for f in program.fallbacks] == [FALLBACK]
    batch = pa.RecordBatch.from_pylist([{"msg": "aaa"}, {"msg": EVIL2}, {"msg": None}, {"msg": "ab"}])
    r = Matcher(program, cache=False).match(batch)
    assert r.matched_ids() == [["only_a"], [], [], []]
    assert r.undecided_rows.tolist() == [1] and r.verdict().to_pylist() == [True, None, False, False]


def test_without_a_give_up_nothing_is_undecided():
    program = _program([{"id": "evil", "when": {"field": "msg", "regex": CONFIRM}}])
    r = Matcher(program, cache=False).match(pa.RecordBatch.from_pylist([{"msg": "aabaac"}, {"msg": "x"}]))
    assert r.undecided() is None and r.verdict().null_count == 0 and r.to_arrow().null_count == 0


def test_a_budget_of_zero_turns_it_off(monkeypatch):
    import re

    monkeypatch.setenv("ETL_REGEX_BUDGET_S", "0")
    slow = re.compile(CONFIRM).search  # 0.5 s on this value: past the 0.2 s of the other tests
    assert searches([(slow, "a" * 18 + "b" + "a" * 23 + "c")]) == [False]
