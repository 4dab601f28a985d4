"""The physical planner (etl.physical): engines picked from the Target, with the reason; query grouping;
shared passes; every example pipeline explained with the engine of each node. No Spark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from etl.check import check_file
from etl.physical import Target, physical_plan, planner_settings
from etl.physical.explain import explain_physical

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "pipelines").glob("*.yaml")) + sorted((ROOT / "pipelines" / "sql").glob("*.sql"))


def _plan(path: Path | str, target: Target | None = None):
    c = check_file(str(path), programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return physical_plan(c.plan, target or Target())


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_node_has_an_engine_and_a_reason(path):
    pp = _plan(path)
    c = check_file(str(path), programs=True)
    # every node of the graph, then the dead-letter sink when a query writes dead letters
    dead = ["dead_letter"] if any(o.id == "dead_letter" for q in pp.queries for o in q.outputs) else []
    assert [n.node_id for n in pp.nodes] == list(c.plan.graph.nodes) + dead
    text = explain_physical(pp)
    for n in pp.nodes:
        assert n.choices and all(ch.engine and ch.reason for ch in n.choices), n
        assert any(line.startswith(f"  {n.node_id}") for line in text.splitlines()), n.node_id


RULES = """
name: p
sources: [{id: s, type: file, path: in, format: jsonl, schema: {msg: string, n: int}}]
transforms:
  - id: f
    type: filter
    input: s
    rules: [{id: r1, when: {field: msg, regex: "ssh\\\\s+-R"}}]
sinks: [{id: o, type: print, input: f}]
"""


def test_rules_engine_follows_the_target(tmp_path):
    p = _write(tmp_path, RULES)
    assert _plan(p).engine("f", "rules") == "rules-jvm"
    assert _plan(p).engine("f", "prefilter") == "prefilter-jvm"
    off = _plan(p, Target(rules_jvm=False, prefilter=False)).node("f")
    assert off.engine("rules") == "rules-python" and off.engine("prefilter") == "no-prefilter"
    assert off.choice("rules").rejected[0].why == "ETL_RULES_JVM is off"
    assert off.choice("prefilter").rejected[0].why == "ETL_PREFILTER is off"
    nojar = _plan(p, Target(jvm=False, jvm_why="javac/jar not found (install a JDK)")).node("f")
    assert nojar.engine("rules") == "rules-python" and nojar.engine("prefilter") == "prefilter-udf"
    assert nojar.choice("rules").rejected[0].why == ("etl's jar is not on the class path: javac/jar not found "
                                                     "(install a JDK)")
    nojdk = _plan(p, Target(jvm=False, jdk=False)).node("f")
    assert nojdk.engine("prefilter") == "no-prefilter"


def test_a_demoted_program_goes_to_python_workers(tmp_path):
    p = _write(tmp_path, RULES)
    c = check_file(str(p), programs=True)
    digest = c.plan.step("f").program.digest
    node = physical_plan(c.plan, Target(demoted=frozenset({digest}))).node("f")
    assert node.engine("rules") == "rules-python"
    assert "step budget" in node.choice("rules").rejected[0].why


def test_rules_on_a_non_string_field_stay_in_python(tmp_path):
    p = _write(tmp_path, RULES.replace("field: msg", "field: n"))
    node = _plan(p).node("f")
    assert node.engine("rules") == "rules-python"
    assert node.choice("rules").rejected[0].why == "field n is int, not a string"


def test_sibling_filters_share_one_pass_unless_their_rules_run_in_the_jvm(tmp_path):
    text = RULES.replace("sinks: [{id: o, type: print, input: f}]", """
  - id: g
    type: filter
    input: s
    rules: [{id: r2, when: {field: msg, regex: "netcat\\\\s+-e"}}]
sinks: [{id: o, type: print, input: f}, {id: o2, type: print, input: g}]
""")
    p = _write(tmp_path, text)
    assert _plan(p).shared == ()  # both in the JVM: each alone
    pp = _plan(p, Target(rules_jvm=False))
    (sp,) = pp.shared
    assert sp.members == ("f", "g") and sp.input == "s" and sp.prefilter.engine == "prefilter-jvm"
    assert pp.node("f").choice("rules").reason.endswith("; one shared pass with g")
    (q,) = pp.queries
    assert (q.name, q.nodes, [o.id for o in q.outputs]) == ("s", ("f", "g"), ["o", "o2", "dead_letter"])
    # the jsonl source's malformed lines; rows the pass's Python re searches could not decide in time
    assert q.outputs[2].refs == (("s", None, "dead"), ("f", None, "dead"), ("g", None, "dead"))


def test_grok_paths(tmp_path):
    p = _write(tmp_path, """
name: p
sources: [{id: s, type: file, path: in, format: text}]
transforms: [{id: g, type: grok, input: s, field: line, pattern: "%{IP:ip} %{WORD:verb}"}]
sinks: [{id: o, type: file, path: out, format: jsonl, input: g}]
""")
    assert _plan(p).engine("g", "captures") == "grok-program"
    assert _plan(p, Target(grok_program=False)).engine("g", "captures") == "java-regex"
    assert _plan(p, Target(jvm=False)).engine("g", "captures") == "spark-regexp"
    assert _plan(p).engine("o", "json") == "spark-json"  # the file sink writes with Spark's json writer
    assert _plan(p, Target(force=frozenset({"json-jvm"}))).engine("o", "json") == "json-jvm"
    assert _plan(p, Target(jvm=False, force=frozenset({"json-jvm"}))).engine("o", "json") == "spark-json"
    assert _plan(p, Target(force=frozenset({"to_json"}))).engine("o", "json") == "to_json"


def test_lookup_store_by_size_master_and_switch(tmp_path):
    (tmp_path / "t.csv").write_text("k,v\na,1\n")
    p = _write(tmp_path, """
name: p
sources:
  - {id: s, type: file, path: in, format: jsonl, schema: {k: string}}
  - {id: t, type: file, path: t.csv, format: csv, static: true}
transforms: [{id: l, type: lookup, input: s, table: t, on: {k: k}, store: STORE}]
sinks: [{id: o, type: print, input: l}]
""".replace("STORE", "rocksdb"))
    assert _plan(p).engine("l", "store") == "rocksdb-jvm"
    assert _plan(p, Target(master="spark://h:7077")).engine("l", "store") == "rocksdb-python"
    off = _plan(p, Target(lookup_jvm=False)).node("l").choice("store")
    assert off.engine == "rocksdb-python"
    assert [(r.engine, r.why) for r in off.rejected] == [("broadcast", "store: rocksdb"),
                                                          ("rocksdb-jvm", "ETL_LOOKUP_JVM is off")]
    p.write_text(p.read_text().replace("store: rocksdb", "store: auto"))
    node = _plan(p).node("l")
    assert node.engine("store") == "broadcast"
    assert node.choice("store").reason.endswith("(auto: table file <= 16 MB)")


def test_window_engine_follows_emit():
    pp = _plan(ROOT / "pipelines" / "example_window.yaml")
    assert pp.engine("per_minute", "window") == "native"


def test_planner_settings_reads_the_switches():
    t = planner_settings({"ETL_RULES_JVM": "off", "ETL_PREFILTER": "0", "ETL_GROK_PROGRAM": "no",
                          "ETL_LOOKUP_JVM": "yes"}, master="spark://x:7077", jvm=False, jvm_why="w")
    assert (t.rules_jvm, t.prefilter, t.grok_program, t.lookup_jvm, t.local, t.jvm, t.jvm_why) == (
        False, False, False, True, False, False, "w")
    forced = planner_settings({"ETL_FORCE_ENGINES": " state, rules-python ,"})
    assert forced.force == {"state", "rules-python"} and forced.text().endswith(", forced rules-python, state")


def test_a_forced_engine_is_taken_only_where_it_can_run(tmp_path):
    p = _write(tmp_path, RULES)
    assert _plan(p, Target(force=frozenset({"rules-python", "no-prefilter"}))).node("f").choices[0].engine == (
        "rules-python")
    # forcing the JVM path cannot bring a switched-off path back
    node = _plan(p, Target(rules_jvm=False, force=frozenset({"rules-jvm"}))).node("f")
    assert node.engine("rules") == "rules-python"


def test_the_physical_package_imports_no_pyspark():
    code = ("import sys; import etl.physical, etl.physical.explain; from etl.check import check_file; "
            "from etl.physical import physical_plan, Target; "
            f"physical_plan(check_file({str(ROOT / 'tests/fixtures/valid/rules_and_grok.yaml')!r}, programs=True).plan,"
            " Target()); assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


HORIZON = """
name: p
sources: [{id: s, type: SOURCE, path: in, format: jsonl, schema: {k: string, t: string}}]
transforms:
  - {id: d, type: derive, input: s, columns: {ts: "to_timestamp(t)"}}
  - id: w
    type: window
    input: d
    kind: tumbling
    size: 10s
    group_by: [k]
    aggregates: [{fn: count, as: n}]
    event_time: {field: ts, watermark: 1s}
sinks: [{id: o, type: print, input: w}]
"""


@pytest.mark.parametrize("source,queries", [
    # bounded input: the horizon is a constant, so the source's query finds the window's input rows beyond it
    ("file", [("s", ("d",), [("o", ()), ("dead_letter", (("s", None, "dead"), ("d", None, "dead"),
                                                            ("w", None, "horizon")))])]),
    # a live source: the horizon is the micro-batch's time, which only the window's own queries share
    ("kafka", [("s", ("d",), [("dead_letter", (("s", None, "dead"), ("d", None, "dead")))]),
               ("w-dead_letters", (), [("dead_letter", (("w", None, "dead"),))])]),
])
def test_the_rows_beyond_a_declared_event_time_s_horizon_are_found_by_the_query_that_reads_them(
        tmp_path, source, queries):
    text = HORIZON.replace("SOURCE", source)
    if source == "kafka":
        text = text.replace("path: in, format: jsonl", "bootstrap_servers: \"127.0.0.1:9092\", topics: [t], format: json")
    pp = _plan(_write(tmp_path, text))
    got = [(q.name, q.nodes, [(o.id, o.refs) for o in q.outputs]) for q in pp.queries if q.name != "w"]
    want = [(n, nodes, [(o, refs) for o, refs in outs if o != "o"]) for n, nodes, outs in queries]
    assert got == want
    assert [(o.id, o.refs) for q in pp.queries if q.name == "w" for o in q.outputs] == [("o", (("w", None, "out"),))]
    text = " ".join(explain_physical(pp).split())
    assert ("w (input rows beyond its event time's horizon)" in text) == (source == "file")
