"""One planner per run (issue 39): what a run learns is the run's (rules_jvm.Demotions on its CompileContext), the
physical plan carries the query grouping compile and runtime read (roots, paces), and planning writes nothing onto
the frozen graph. No Spark."""

from __future__ import annotations

import textwrap
from pathlib import Path

from etl.check import check_file
from etl.compile.context import CompileContext
from etl.compile.rules_jvm import Demotions
from etl.physical import Target, physical_plan
from etl.physical.grouping import paced_by, roots

RULES = """
name: p
sources: [{id: s, type: file, path: in, format: jsonl, schema: {msg: string, n: int}}]
transforms:
  - id: f
    type: filter
    input: s
    rules: [{id: r1, when: {field: msg, regex: "ssh\\\\s+-R"}}]
  - {id: d, type: derive, input: f, columns: {m: "upper(msg)"}}
  - {id: a, type: aggregate, input: d, group_by: [m], every: 45s, aggregates: [{fn: count, as: n}]}
sinks:
  - {id: o, type: print, input: d}
  - {id: t, type: print, input: a}
"""


class _Plan:
    def __init__(self, tmp_path: Path, text: str = RULES):
        p = tmp_path / "p.yaml"
        p.write_text(textwrap.dedent(text))
        c = check_file(str(p), programs=True)
        assert c.plan is not None, [d.render() for d in c.report.sorted()]
        self.plan = c.plan
        self.graph = c.plan.graph
        self.program = c.plan.step("f").program


class _Budget(Exception):
    """A failed Spark job as Python sees it: RuleMatch.Exhausted's text in the message of a cause."""


def _stopped(file: str, pattern: int = 0) -> Exception:
    try:
        try:
            raise RuntimeError(f"Job aborted: etl-rule-budget[{file}] pattern {pattern} read more than 10 characters")
        except RuntimeError as e:
            raise _Budget("py4j error") from e
    except _Budget as e:
        return e


class _JvmPlan:
    regexes = ("ssh\\s+-R",)


def test_a_budget_failure_demotes_its_rule_set_in_its_run_only(tmp_path, caplog):
    p = _Plan(tmp_path)
    run = Demotions()
    run.shipped("rules-1.txt", p.program, _JvmPlan())
    assert not run.demote(_stopped("rules-2.txt"))  # a file this run did not ship: not its rule set
    assert not run.demote(RuntimeError("no budget here"))
    with caplog.at_level("WARNING", logger="etl.rules"):
        assert run.demote(_stopped("rules-1.txt"))
    assert run.demoted(p.program) and run.frozen() == frozenset({p.program.digest})
    assert [r.getMessage() for r in caplog.records] == [
        f"rule set {p.program.digest[:12]} leaves the JVM for the Python path (Hyperscan): pattern 'ssh\\\\s+-R' "
        "read more than 10 characters"]
    assert not run.demote(_stopped("rules-1.txt"))  # moved already: the batch is not retried again
    assert not Demotions().demoted(p.program)  # another run starts with none


def test_the_contexts_demotions_are_the_planners_target(tmp_path):
    p = _Plan(tmp_path)
    pp = physical_plan(p.plan, Target())
    node = p.graph.node("f")
    ctx = CompileContext(None, p.graph, plan=p.plan, physical=pp)
    assert ctx.choices(node, p.program)["rules"] == "rules-jvm"
    ctx.demotions.programs.add(p.program.digest)
    assert ctx.choices(node, p.program)["rules"] == "rules-python"
    assert ctx.physical_plan() is pp  # planned once: the context reads the plan it was handed
    other = CompileContext(None, p.graph, plan=p.plan, physical=pp)
    assert other.choices(node, p.program)["rules"] == "rules-jvm"


def test_the_plan_carries_the_roots_and_paces_and_the_graph_is_left_alone(tmp_path):
    p = _Plan(tmp_path)
    before = dict(p.graph.__dict__)
    pp = physical_plan(p.plan, Target())
    assert dict(p.graph.__dict__).keys() - before.keys() <= {"_ups"}  # the graph's own cache of its sources only
    assert dict(pp.roots) == roots(p.graph) == {"s": "s", "f": "s", "d": "s", "a": "a", "o": "s", "t": "a"}
    assert pp.root_of("d") == "s" and pp.root_of("nope") is None
    assert pp.paced("a") == paced_by(p.graph, "a") == (45.0, "a")
    assert pp.paced("t") == (45.0, "a") and pp.paced("s") is None and pp.paced("o") is None
    assert pp.node("f") is pp.find("f") and pp.find("nope") is None
