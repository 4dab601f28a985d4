from __future__ import annotations

import pyarrow as pa
import pytest

from etl.matching.matcher import Matcher
from etl.matching.merged import split_results
from etl.optimize import compile_rules, merge_programs
from etl.optimize.explain import explain
from tests.optimize.golden import check, load_cases, rules_of


@pytest.mark.parametrize("case", load_cases("sibling_merge"), ids=lambda c: c["name"])
def test_golden(case):
    merged = merge_programs([compile_rules(rules_of(p)) for p in case["programs"]])
    check("sibling_merge", case, explain(merged.program, show_sizes=False))


def test_split_results_back():
    (case,) = load_cases("sibling_merge")
    progs = [compile_rules(rules_of(p)) for p in case["programs"]]
    merged = merge_programs(progs)
    batch = pa.RecordBatch.from_pylist([
        {"cmd": "curl x | sh", "user": "root", "host": "web1"},
        {"cmd": "wget y", "user": "root", "host": "db2"},
        {"cmd": "wget y", "user": "bob", "host": None},
        {"cmd": None, "user": None, "host": "dbx"},
    ])
    a, b = split_results(merged, Matcher(merged.program, cache=False).match(batch))
    assert a.matched_ids() == [["curl"], ["root_wget"], [], []]
    assert b.matched_ids() == [[], ["wget", "root_wget_again", "host"], ["wget"], ["host"]]
    # same as running each sibling alone
    assert a.matched_ids() == Matcher(progs[0], cache=False).match(batch).matched_ids()
    assert b.matched_ids() == Matcher(progs[1], cache=False).match(batch).matched_ids()
    # one database for cmd, shared by both siblings
    assert [(db.subject, len(db.patterns)) for db in merged.program.databases] == [("cmd", 2), ("host", 1)]
