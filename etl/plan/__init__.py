"""Graph -> Plan: steps in order, optimized programs attached, delivery per sink.

The plan layer reads only the Graph (see etl/graph/model.py for how a YAML or a
SQL front-end produces one), so every front-end gets the same plan, explain
text and runtime.

Filter programs (the optimizer's compiled rule sets) are attached when
`programs=True`: `etl explain` and `etl run` ask for them; `etl validate`
does not need them (the regexes were already checked one by one) and stays fast.
"""

from __future__ import annotations

import os

from etl.diagnostics import Report
from etl.graph.checks import checkpoint_dir
from etl.graph.model import Graph
from etl.plan.delivery import delivery_for
from etl.plan.ir import Delivery, Plan, Step

__all__ = ["Delivery", "Plan", "Step", "build_plan", "compile_filter"]


def compile_filter(graph: Graph, node_id: str, report: Report) -> Step | None:
    """Compile the rules of filter `node_id` into a FilterProgram; errors point at the rule."""
    from etl.optimize import RuleCompileError, compile_rules
    from etl.optimize.explain import FULL_LIMIT, explain

    from etl.load.rules import rule_files_signature

    node = graph.nodes[node_id]
    rules = graph.rules.get(node_id, ())
    base_dir = os.path.dirname(graph.smap.file) if getattr(graph.smap, "file", None) else graph.base_dir
    watched = getattr(node.spec, "rule_files", None) or getattr(node.spec, "sigma", None)
    signature = rule_files_signature(node.spec, base_dir or ".") if watched else ()
    try:
        program = compile_rules([r.rule for r in rules], cache=True)
    except RuleCompileError as e:
        origin = e.origin
        sr = next((r for r in rules if r.rule.id == getattr(origin, "rule", None)), None)
        span = sr.span_of("when", *getattr(origin, "path", ())) if sr is not None else node.span
        report.error("E300", f"rule cannot be compiled: {e.message}", span)
        return None
    # small programs: every line, nothing machine-dependent (golden tests); large ones: a summary with
    # the databases' serialized sizes (they depend on the Hyperscan build and the CPU)
    return Step(node.id, node.kind, node.type, program, explain(program, show_sizes=len(program.rules) > FULL_LIMIT),
                signature)


def build_plan(graph: Graph, report: Report, *, programs: bool = False) -> Plan:
    steps = []
    for n in graph.nodes.values():
        step = Step(n.id, n.kind, n.type)
        if programs and graph.rules.get(n.id):  # a filter's rules (etl.check loads them)
            step = compile_filter(graph, n.id, report) or step
        steps.append(step)
    delivery = tuple(delivery_for(graph, n) for n in graph.of_kind("sink"))
    return Plan(graph.name, graph, tuple(steps), delivery, checkpoint_dir(graph))
