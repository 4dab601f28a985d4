"""Graph -> Plan: steps in order, optimized programs attached, delivery per sink."""

from __future__ import annotations

from etl.diagnostics import Report
from etl.graph.checks import checkpoint_dir
from etl.graph.model import Graph
from etl.plan.delivery import delivery_for
from etl.plan.ir import Delivery, Plan, Step

__all__ = ["Delivery", "Plan", "Step", "build_plan"]


def build_plan(graph: Graph, report: Report) -> Plan:
    steps = tuple(Step(n.id, n.kind, n.type) for n in graph.nodes.values())
    delivery = tuple(delivery_for(graph, n) for n in graph.of_kind("sink"))
    return Plan(graph.name, graph, steps, delivery, checkpoint_dir(graph))
