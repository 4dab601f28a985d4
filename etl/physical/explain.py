"""Text of a physical plan, printed by `etl explain` after the logical plan (deterministic for one Target)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from etl.graph.realtime import realtime
from etl.physical.lateness import explain_line
from etl.physical.model import PhysicalPlan, QueryPlan

from etl.plan.explain import explain_plan, fill_width


PARTS = MappingProxyType({"dead": " (dead letters)", "horizon": " (input rows beyond its event time's horizon)"})


def _query(q: QueryPlan) -> list[str]:
    head = {"root": f"query {q.name}: streaming from {q.root}",
            "union": f"query {q.name}: streaming over the union of its inputs",
            "dead_only": f"query {q.name}: failed input rows of {q.root}"}[q.kind]
    out = [f"  {head}"]
    if q.nodes:
        out.extend(fill_width("per micro-batch: " + ", ".join(q.nodes), "    ", "      "))
    for o in q.outputs:
        refs = ", ".join(n + (f".{lab}" if lab else "") + PARTS.get(part, "") for n, lab, part in o.refs)
        out.extend(fill_width(f"writes {o.id} <- {refs}", "    ", "      "))
    return out


def _realtime_queries(graph: Any) -> list[str]:
    """The queries of a pipeline in Spark's real-time mode (etl.runtime.realtime): each sink's, and the sources'
    dead letters in micro-batches."""
    out = []
    for sink in graph.of_kind("sink"):
        chain: list[str] = []
        node = sink
        while node.inputs:
            node = graph.node(node.inputs[0].src)
            chain.insert(0, node.id)
        out.extend(fill_width(f"query {sink.id}: real-time mode, streaming from {chain[0]}"
                              + (f" through {', '.join(chain[1:])}" if chain[1:] else ""), "  ", "    "))
        out.append(f"    writes {sink.id} <- {chain[-1]}")
    interval = graph.pipeline.trigger.interval
    for source in graph.of_kind("source"):
        out.append(f"  query {source.id}-dead_letters: failed input rows of {source.id}, micro-batches every {interval}")
        out.append(f"    writes dead_letter <- {source.id} (dead letters)")
    return out


def explain_physical(pp: PhysicalPlan, graph: Any = None) -> str:
    """`graph`: the pipeline's, when it runs in Spark's real-time mode (its queries are not the planner's)."""
    lines = ["physical plan:"]
    lines.extend(fill_width("target: " + pp.target.text(), "  ", "    "))
    lines.append("")
    lines.append("queries:")
    for line in _realtime_queries(graph) if graph is not None else [x for q in pp.queries for x in _query(q)]:
        lines.append(line)
    lines.extend(fill_width("counts: rows out of every transform, one count(1) per output observed per micro-batch "
                       "(DataFrame.observe, no extra job)" if pp.target.component_counts else
                       "counts: off (ETL_COMPONENT_COUNTS=off): sources and sinks only", "  ", "    "))
    if pp.shared:
        lines.append("")
        lines.append("shared passes:")
        for s in pp.shared:
            lines.extend(fill_width(f"{' + '.join(s.members)} on {s.input}: one mapInArrow pass, "
                               f"prefilter {s.prefilter.engine}", "  ", "    "))
    lines.append("")
    lines.append("engines:")
    for n in pp.nodes:
        for c in n.choices:
            what = f"{n.node_id} {c.aspect}" if c.aspect != "run" else n.node_id
            lines.extend(fill_width(f"{what}: {c.engine} - {c.reason}", "  ", "      "))
            for r in c.rejected:
                lines.extend(fill_width(f"not {r.engine}: {r.why}", "    ", "      "))
            if c.aspect == "window" and n.node_id in pp.lates:
                lines.extend(fill_width(explain_line(c.engine, pp.lates[n.node_id]), "    ", "      "))
    return "\n".join(lines) + "\n"


def explain_text(plan: Any, physical: Any) -> str:
    """What `etl explain` prints: the logical plan's text (etl.plan.explain), then the physical plan's."""
    return explain_plan(plan) + "\n" + explain_physical(physical, plan.graph if realtime(plan.graph) else None)
