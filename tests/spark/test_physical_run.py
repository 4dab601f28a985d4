"""A run builds what `etl explain` shows: the engines compile records per node equal the physical plan's, and the
queries (roots, per-micro-batch nodes, sink outputs) are the plan's (etl.physical)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from etl.check import check_file
from etl.physical import physical_plan, planner_settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("example_filter", "example_grok", "example_lookup", "example_window", "example_route", "quickstart",
            "sql/functions")  # Python functions: an Arrow UDF, a table function, an aggregate on the state engine


def run_once(spark, plan, checkpoint: Path, echo=lambda s: None):
    """`etl run --once` of a checked plan in the test session; the finished run (its compiler's context says
    what ran). `echo` gets what print sinks print."""
    from etl.runtime.runner import PipelineRun, RunOptions

    run = PipelineRun(plan, spark, RunOptions(once=True, checkpoint=str(checkpoint), progress="none", echo=echo))
    try:
        run.start()
        run.wait()
    finally:
        run.close()
    return run


def _dead_letter_writes(run) -> bool:
    """Did the dead-letter sink write a batch (published: its manifest in `_etl_batches/`)? It writes when a stage's
    failed rows are a frame of the query, or when a batch had failed rows."""
    return any(any((sink.dir / "_etl_batches").glob("*")) for (_, out), sink in run.sinks.items()
               if out == "dead_letter")


@pytest.mark.spark
@pytest.mark.parametrize("name", EXAMPLES)
def test_a_run_executes_the_engines_explain_shows(spark, tmp_path, name):

    shutil.copytree(ROOT / "pipelines", tmp_path / "p", ignore=None if "/" in name else shutil.ignore_patterns("sql"))
    checked = check_file(str(tmp_path / "p" / f"{name}.yaml"), programs=True)
    assert checked.plan is not None, [d.render() for d in checked.report.sorted()]
    # what `etl explain --master <the session's master>` prints: the target predicted from this machine
    explained = physical_plan(checked.plan, planner_settings(master=spark.sparkContext.master))
    run = run_once(spark, checked.plan, tmp_path / "ck")
    ctx = run.compiler.ctx
    assert ctx.physical_plan().choices() == explained.choices()  # the session's target picks the same engines
    planned = {k: v for k, v in explained.choices().items() if k[1] != "run"}
    assert planned, "the example has engine choices"
    if not _dead_letter_writes(run):  # the dead-letter sink's writer counts rows when it writes a batch
        planned.pop(("dead_letter", "count"), None)
    assert ctx.executed == planned
    got = [(q.name, q.root, q.nodes, [(o.id, [(r.node, r.label, r.part) for r in o.refs]) for o in q.outputs])
           for q in run.queries]
    assert got == [(q.name, q.root, list(q.nodes), [(o.id, [tuple(r) for r in o.refs]) for o in q.outputs])
                   for q in explained.queries]


@pytest.mark.spark
def test_a_forced_target_is_what_runs(spark, tmp_path, monkeypatch):
    """ETL_RULES_JVM=off and ETL_PREFILTER=off reach the plan, and the run builds the Python path without it."""
    from etl.compile import CompileContext, Compiler

    monkeypatch.setenv("ETL_RULES_JVM", "off")
    monkeypatch.setenv("ETL_PREFILTER", "off")
    shutil.copytree(ROOT / "tests" / "fixtures" / "valid", tmp_path / "v")
    (tmp_path / "v" / "data").mkdir(exist_ok=True)
    (tmp_path / "v" / "data" / "access.log").write_text("")
    checked = check_file(str(tmp_path / "v" / "rules_and_grok.yaml"), programs=True)
    ctx = CompileContext(spark, checked.plan.graph, str(tmp_path / "ck"), plan=checked.plan)
    comp = Compiler(ctx)
    queries = comp.queries()
    assert [q.name for q in queries] == ["access"]
    from etl.dead_letters import ERR, PAYLOAD

    assert queries[0].root_shared  # the text source checks its lines (BoundedLines): its frame carries the split
    line = "1.2.3.4 GET /x 200"
    comp.evaluate(queries[0], spark.createDataFrame([(line, None, line)],
                                                    f"line string, {ERR} string, {PAYLOAD} string"))
    assert ctx.physical_plan().engine("attacks", "rules") == "rules-python"
    assert ctx.executed[("attacks", "rules")] == "rules-python"
    assert ctx.executed[("attacks", "prefilter")] == "no-prefilter"


@pytest.mark.spark
def test_the_dead_letter_sink_runs_the_engines_explain_shows(spark, tmp_path):
    """A `dead_letter:` sink of another type than file (print: written on the driver) is planned as explain shows
    it, and the run writes its malformed line there with that engine."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"msg": "ok"}\n{"msg": \n')
    (tmp_path / "p.yaml").write_text(
        "name: dlx\n"
        "sources: [{id: src, type: file, path: in, format: jsonl, schema: {msg: string}}]\n"
        "sinks: [{id: out, type: file, input: src, path: out}]\n"
        "dead_letter: {type: print}\n"
        "checkpoint: ck\n")
    checked = check_file(str(tmp_path / "p.yaml"), programs=True)
    assert checked.plan is not None, [d.render() for d in checked.report.sorted()]
    explained = physical_plan(checked.plan, planner_settings(master=spark.sparkContext.master))
    assert {k: v for k, v in explained.choices().items() if k[0] == "dead_letter"} == {("dead_letter", "write"): "driver"}
    printed: list[str] = []
    run = run_once(spark, checked.plan, tmp_path / "ck", echo=printed.append)
    assert run.compiler.ctx.executed[("dead_letter", "write")] == "driver"
    assert {k: v for k, v in run.compiler.ctx.executed.items() if k[1] != "run"} == \
        {k: v for k, v in explained.choices().items() if k[1] != "run"}
    dead = [json.loads(line) for line in printed]
    assert [(d["stage"], d["reason"], d["payload"]) for d in dead] == [("src", "malformed json line", '{"msg": ')]
