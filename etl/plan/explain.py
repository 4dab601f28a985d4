"""Deterministic text of a plan: nodes, edges, columns, delivery per sink."""

from __future__ import annotations

from etl.plan.ir import Plan


def explain_plan(plan: Plan) -> str:
    g = plan.graph
    lines = [f"pipeline {plan.name}", f"checkpoint {plan.checkpoint}", ""]
    lines.append("nodes:")
    for node in g.nodes.values():
        ins = ", ".join(e.ref if e.role == "input" else f"table={e.ref}" for e in node.inputs)
        lines.append(f"  {node.kind} {node.id} ({node.type})" + (f" <- {ins}" if ins else ""))
        if node.outputs:
            lines.append(f"    outputs: {', '.join(node.outputs)}")
        cols = g.columns.get(node.id)
        if cols:
            lines.append("    columns: " + ", ".join(f"{n}:{t}" for n, t in cols))
    lines.append("")
    lines.append("delivery:")
    for d in plan.delivery:
        lines.append(f"  {d.sink_id}: {d.guarantee} ({d.reason})")
    return "\n".join(lines) + "\n"
