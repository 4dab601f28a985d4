"""The JVM rule path over several fields (etl/optimize/jvmmulti.py, RuleMatch.anyRow/idsRow): rule sets with
string comparisons, null tests, ranges and patterns on several string columns decided exactly as the reference
interpreter decides them -- on random rule sets, and on the SigmaHQ corpus rules with their generated events."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.optimize import compile_rules
from etl.optimize.jvmmulti import multi_plan
from etl.optimize.reference import matched_rules
from etl.spec.rules import Rule
from tests.optimize.strategies import ALPHABET, literals, regexes, trees_of
from tests.spark.helpers import check_random_rule_sets

pytestmark = pytest.mark.spark

FIELDS = ("img", "cmd", "user")
FOLDING = "\u212a\u017f\u0130\u0131"  # Kelvin sign, long s, dotted and dotless i: caselessly k, s, i, i
texts = st.text(alphabet=ALPHABET + FOLDING + "\u2013\u00e9\u00c9\U0001d400", max_size=10)


@st.composite
def predicates(draw) -> dict:
    field = draw(st.sampled_from(FIELDS))
    kind = draw(st.sampled_from(["eq", "eq", "ne", "in", "contains", "contains", "starts_with", "ends_with",
                                 "regex", "gt", "le", "is_null", "not_null", "fieldref"]))
    p: dict = {"field": field}
    if kind == "fieldref":
        return {**p, "fieldref": draw(st.sampled_from(FIELDS)), "caseless": draw(st.booleans())}
    if kind in ("is_null", "not_null"):
        p[kind] = True
        return p
    if kind == "regex":
        p[kind] = draw(regexes)
    elif kind == "in":
        p[kind] = draw(st.lists(st.one_of(literals, texts, st.integers(0, 9)), min_size=1, max_size=3))
    elif kind in ("eq", "ne"):
        p[kind] = draw(st.one_of(literals, texts, st.integers(0, 9), st.booleans()))
    elif kind in ("gt", "le"):
        p[kind] = draw(st.one_of(literals, st.floats(0, 9)))
    else:
        p[kind] = draw(st.one_of(literals, texts.filter(bool)))
    if kind not in ("gt", "le") and draw(st.booleans()):
        p["caseless"] = True
    return p


def decide(spark, program, events: list[dict], tag: bool, fields: tuple = FIELDS) -> list:
    """The JVM's verdicts (matched rule ids with `tag`, else booleans) on events of string fields, in order."""
    return decide_each(spark, program, events, (tag,), fields)[0]


def decide_each(spark, program, events: list[dict], tags: tuple, fields: tuple = FIELDS) -> list[list]:
    """The verdicts of each mode in `tags`, computed by one Spark job."""
    return decide_cases(spark, [(program, events)], tags, fields)[0]


def decide_cases(spark, cases: list[tuple], tags: tuple, fields: tuple = FIELDS) -> list[list[list]]:
    """For each (program, events) case, the verdicts of each mode in `tags` on its events: all cases in one Spark
    job (a job costs far more than a verdict: 1.8 s per case in a job of its own on a loaded machine)."""
    from etl.compile.rules_jvm_multi import unfit, verdict

    rows = [(c, i, *(e.get(f) for f in fields)) for c, (_, events) in enumerate(cases) for i, e in enumerate(events)]
    df = spark.createDataFrame(rows, "`_case` int, `_i` int, " + ", ".join(f"`{f}` string" for f in fields)).coalesce(1)
    cols = []
    for c, (program, _) in enumerate(cases):
        assert unfit(spark, program, df) is None
        cols += [verdict(program, df, tag, None).alias(f"v{c}_{k}") for k, tag in enumerate(tags)]
    got = df.select("_case", "_i", *cols).orderBy("_case", "_i").collect()
    return [[[r[f"v{c}_{k}"] for r in got if r["_case"] == c] for k in range(len(tags))] for c in range(len(cases))]


# 150 random rule sets, five per example: each example decides its five in one Spark job
rule_sets = st.lists(trees_of(predicates(), 3), min_size=1, max_size=5)
event_lists = st.lists(st.fixed_dictionaries({f: st.one_of(st.none(), texts, literals) for f in FIELDS}),
                       min_size=1, max_size=8)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(st.tuples(rule_sets, event_lists), min_size=5, max_size=5))
def test_multi_field_rule_sets_decided_in_the_jvm_equal_the_reference(spark, cases):
    check_random_rule_sets(spark, cases, multi_plan, decide_cases)


def test_needles_with_folding_characters_and_short_needles(spark):
    rules = [Rule.model_validate({"id": i, "when": w}) for i, w in [
        ("kill", {"field": "cmd", "contains": "kill", "caseless": True}),
        ("ends", {"field": "img", "ends_with": "\\SKIP.exe", "caseless": True}),
        ("eq", {"field": "user", "eq": "system", "caseless": True}),
        ("cased", {"field": "cmd", "contains": "Kill", "caseless": False}),
        ("dash", {"field": "cmd", "contains": " \u2013c ", "caseless": True}),
        ("short", {"all": [{"field": "cmd", "contains": "/c", "caseless": True},
                           {"field": "cmd", "contains": "x", "caseless": True}]}),
        ("ne", {"field": "user", "ne": "root", "caseless": True}),
        ("accent", {"field": "img", "contains": "\u00e9t\u00e9", "caseless": True}),
        ("ref", {"field": "user", "fieldref": "cmd", "caseless": True}),
        ("cased_ref", {"field": "img", "fieldref": "cmd"}),
    ]]
    program = compile_rules(rules)
    assert multi_plan(program).body is not None
    events = [{"cmd": "run \u212aILL now", "img": "c:\\\u017f\u212aIP.EXE", "user": "\u017fy\u017ftem"},
              {"cmd": "KiLL", "img": "x\\skip.exe", "user": "SYSTEM"},
              {"cmd": "a \u2013C b /C X", "img": "\u00c9T\u00c9", "user": "ROOT"},
              {"cmd": "Kill", "img": None, "user": None},
              {"cmd": "", "img": "", "user": ""},
              {"cmd": "/", "img": "skip.exe", "user": "r\u0130"},
              {"cmd": "\u212a\u0130\u03c3", "img": "\u212a\u0130\u03c3", "user": "KI\u03c2"}]
    want = [matched_rules(rules, e) for e in events]
    assert want[0] == ["kill", "ends", "eq", "ne"]  # Python matches k with the Kelvin sign, s with the long s
    assert want[-1] == ["ne", "ref", "cased_ref"]  # ... and i with the dotted I, the final sigma with sigma
    assert [list(x) for x in decide(spark, program, events, tag=True)] == want


def test_cased_needles_of_one_and_two_bytes_with_capitals(spark):
    # found by Hypothesis: the table of 1- and 2-byte needles was keyed by their own bytes and looked up by the
    # value's bytes lower-cased, so a cased needle holding a capital was never found
    rules = [Rule.model_validate({"id": i, "when": w}) for i, w in [
        ("S", {"field": "cmd", "contains": "S"}),
        ("Ab", {"field": "cmd", "contains": "Ab"}),
        ("s_caseless", {"field": "img", "contains": "S", "caseless": True}),
        ("aB_caseless", {"field": "img", "contains": "aB", "caseless": True}),
    ]]
    program = compile_rules(rules)
    assert multi_plan(program).body is not None
    events = [{"cmd": "S", "img": "s"}, {"cmd": "s", "img": "S"}, {"cmd": "xAbx", "img": "xabx"},
              {"cmd": "ab AB aB", "img": "AB"}, {"cmd": None, "img": None}]
    want = [matched_rules(rules, e) for e in events]
    assert want == [["S", "s_caseless"], ["s_caseless"], ["Ab", "aB_caseless"], ["aB_caseless"], []]
    assert [list(x) for x in decide(spark, program, events, tag=True)] == want



def test_a_field_of_long_needles_only_is_probed_every_few_positions(spark):
    # a field whose contains needles are all long (hashes) is probed at every 16th position only, each needle
    # filed under a window of its 4-grams: an occurrence at any offset, in any case, is found; a near miss is not
    hashes = ["SHA256=" + format(k * 0x9E3779B97F4A7C15 % (1 << 64), "016X") * 2 for k in range(1, 5)]
    rules = [Rule.model_validate({"id": f"h{k}", "when": {"field": "hashes", "contains": h, "caseless": k < 3}})
             for k, h in enumerate(hashes)]
    rules.append(Rule.model_validate({"id": "md5", "when": {"field": "hashes", "contains": "MD5=0123456789abcdef"}}))
    program = compile_rules(rules)
    assert multi_plan(program).body is not None
    events = [{"hashes": pad + h + tail} for k, h in enumerate(hashes) for pad in ("", "x" * 5, "IMPHASH=" + "7" * 9)
              for tail in ("", ",MD5=0123456789abcdef")]
    events += [{"hashes": hashes[0].lower()}, {"hashes": hashes[3].lower()}, {"hashes": hashes[1][:-1] + "G"},
               {"hashes": hashes[2][1:]}, {"hashes": "MD5=0123456789ABCDEF"}, {"hashes": None}, {"hashes": ""}]
    want = [matched_rules(rules, e) for e in events]
    assert want[:6] == [["h0"], ["h0", "md5"]] * 3
    assert want[-7:] == [["h0"], [], [], [], [], [], []]
    assert [list(x) for x in decide(spark, program, events, tag=True, fields=("hashes",))] == want


def test_values_seen_again_are_decided_from_the_memo_and_fields_that_never_repeat_pause_it(spark):
    # each task files the predicates that held on a field's recent values (and the lazy ones decided since):
    # 9,000 rows of a few repeated images and commands, with a unique user per row (its memo pauses itself after
    # a window of 4,096 values with too few hits) decide as the reference does, row by row
    rules = [Rule.model_validate({"id": i, "when": w}) for i, w in [
        ("cmd_exe", {"all": [{"field": "img", "ends_with": "\\cmd.exe", "caseless": True},
                             {"not": {"field": "cmd", "contains": "/c dir", "caseless": True}}]}),
        ("odd_id", {"all": [{"field": "user", "ends_with": "7"}, {"field": "img", "contains": "power"}]}),
        ("no_image", {"not": {"field": "img", "starts_with": "C:\\", "caseless": True}}),
    ]]
    program = compile_rules(rules)
    assert multi_plan(program).body is not None
    imgs = ["C:\\Windows\\System32\\cmd.exe", "c:\\windows\\powershell.exe", "D:\\x.exe", None]
    cmds = ["cmd /c dir", "cmd /C DIR x", "powershell -enc", None]
    events = [{"img": imgs[k % 4], "cmd": cmds[k // 4 % 4], "user": f"u{k}"} for k in range(9000)]
    want = [matched_rules(rules, e) for e in events]
    assert {tuple(w) for w in want} == {("cmd_exe",), ("odd_id",), ("no_image",), ()}
    assert [list(x) for x in decide(spark, program, events, tag=True)] == want


ADDRESSES = ["10.1.2.3", "10.1.2", "010.1.2.3", "10.1.2.3 ", "192.168.0.1", "256.1.1.1", "::1", "::1%eth0",
             "::1%", "fe80::1", "FE80::abcd:1", "fe80:::1", "1::2::3", "::ffff:10.1.2.3", "::ffff:10.1.2.03",
             "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::", "::", ":1::", "1:2:3:4:5:6:7", "12345::",
             "fc00::\u0661", "2001:db8::", "2001:db8::/32", "a:b", "", "\u0661.1.1.1", "127.0.0.1", "0.0.0.0"]


@pytest.mark.parametrize("nets", [["10.0.0.0/8", "192.168.0.0/16"], ["::1/128", "fe80::/10", "fc00::/7"],
                                  ["0.0.0.0/0"], ["::/0", "127.0.0.1/32"], ["2001:db8::/32", "10.1.2.0/31"]])
def test_cidr_reads_addresses_as_python_does(spark, nets):
    rules = [Rule.model_validate({"id": "a", "when": {"field": "img", "cidr": nets}})]
    program = compile_rules(rules)
    events = [{"img": a} for a in ADDRESSES]
    want = [matched_rules(rules, e) for e in events]
    assert any(want) and not all(want)
    assert [list(x) for x in decide(spark, program, events, tag=True)] == want


def test_program_outside_the_multi_field_path_says_why():
    lower = [Rule.model_validate({"id": "a", "when": {"field": "cmd", "apply": ["lower"], "eq": "x"}})]
    assert multi_plan(compile_rules(lower)).reason == "a derivation (lower) of field cmd"
    backref = [Rule.model_validate({"id": "a", "when": {"field": "cmd", "regex": "(a)\\1"}})]
    assert multi_plan(compile_rules(backref)).reason == "pattern '(a)\\\\1' has a backreference"
