from __future__ import annotations

import pyarrow as pa

from etl.matching.fpcache import FingerprintCache
from etl.matching.matcher import Matcher
from etl.optimize import compile_rules
from tests.optimize.golden import rules_of


def test_lru_bounded():
    c = FingerprintCache(capacity=2, window=1000)
    for k in ("a", "b"):
        c.store(k, (0,))
    c.lookup_batch(["a"])  # a becomes most recent
    c.store("c", ())
    verdicts, misses = c.lookup_batch(["a", "b", "c"])
    assert verdicts == [(0,), None, ()]
    assert list(misses) == ["b"]
    assert len(c) == 2


def test_switches_off_when_hit_rate_is_low():
    c = FingerprintCache(capacity=100, window=10, min_hit_rate=0.5)
    _, misses = c.lookup_batch([f"k{i}" for i in range(9)])
    for k in misses:
        c.store(k, ())
    assert c.enabled
    c.lookup_batch(["k0", "new"])  # window of 10 lookups, 1 hit: 10% < 50%
    assert not c.enabled and c.disabled_at == 11 and len(c) == 0
    c.store("x", ())
    assert len(c) == 0
    c.reset()
    assert c.enabled


def test_stays_on_when_hit_rate_is_high():
    c = FingerprintCache(capacity=100, window=10, min_hit_rate=0.5)
    for _ in range(5):
        _, misses = c.lookup_batch(["a", "b", "a", "b"])
        for k in misses:
            c.store(k, (1,))
    assert c.enabled and c.lookups == 20 and c.hits == 18


RULES = rules_of([
    {"id": "curl", "when": {"field": "cmd", "regex": "curl"}},
    {"id": "root", "when": {"all": [{"field": "user", "eq": "root"}, {"not": {"field": "cmd", "contains": "ls"}}]}},
])


def test_matcher_uses_the_cache_on_repetitive_data():
    cache = FingerprintCache(window=20, min_hit_rate=0.5)
    m = Matcher(compile_rules(RULES), cache=cache)
    batch = pa.RecordBatch.from_pydict({"cmd": ["curl a", "ls", "curl a", "ls"] * 5, "user": ["root"] * 20})
    expected = [["curl", "root"], []] * 10
    assert m.match(batch).matched_ids() == expected
    assert m.match(batch).matched_ids() == expected
    assert cache.enabled and cache.lookups == 40 and cache.hits == 38 and len(cache) == 2


def test_matcher_cache_switches_off_on_unique_data():
    cache = FingerprintCache(window=50, min_hit_rate=0.3)
    m = Matcher(compile_rules(RULES), cache=cache)
    cmds = [f"curl {i}" if i % 3 == 0 else f"ls {i}" for i in range(60)]
    batch = pa.RecordBatch.from_pydict({"cmd": cmds, "user": ["root", "bob"] * 30})
    expected = [["curl", "root"] if i % 3 == 0 and i % 2 == 0 else ["curl"] if i % 3 == 0 else [] for i in range(60)]
    assert m.match(batch).matched_ids() == expected
    assert not cache.enabled and cache.hit_rate == 0.0
    assert m.match(batch).matched_ids() == expected  # served without the cache now
    assert cache.lookups == 60


def test_cache_keys_keep_types_and_float_signs():
    rules = rules_of([{"id": "neg", "when": {"field": "x", "regex": "^-"}}])
    m = Matcher(compile_rules(rules), cache=FingerprintCache(window=1000))
    floats = pa.RecordBatch.from_pydict({"x": pa.array([0.0, -0.0, 0.0, -0.0])})
    assert m.match(floats).matched_ids() == [[], ["neg"], [], ["neg"]]
    ints = pa.RecordBatch.from_pydict({"x": pa.array([-1, 1])})
    texts = pa.RecordBatch.from_pydict({"x": pa.array(["-1", "1"])})
    assert m.match(ints).matched_ids() == [["neg"], []]
    assert m.match(texts).matched_ids() == [["neg"], []]
