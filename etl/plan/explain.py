"""Deterministic text of a plan: nodes, edges, columns, filter programs, delivery per sink.

The text depends only on the pipeline (never on the machine, the working
directory or the time), so golden tests can compare it byte for byte.
"""

from __future__ import annotations

from typing import Any

from etl.secrets import redact
from etl.plan.delivery import changes_for
from etl.plan.ir import Plan
from etl.plan.transport import transport_lines

_WIDTH = 100


def _cols(cols: Any) -> str:
    if cols is None:
        return "unknown (no schema declared upstream)"
    if not cols:
        return "(none)"
    return ", ".join(f"{n}:{t}" for n, t in cols)


def _wrap(prefix: str, text: str, indent: str) -> list[str]:
    """Wrap a comma-separated list at _WIDTH, continuation lines indented (secrets hidden before it wraps)."""
    text = redact(text) or text
    out: list[str] = []
    line = prefix
    for i, part in enumerate(text.split(", ")):
        piece = part + (", " if i < len(text.split(", ")) - 1 else "")
        if len(line) + len(piece.rstrip()) > _WIDTH and line.strip() != prefix.strip():
            out.append(line.rstrip())
            line = indent + piece
        else:
            line += piece
    out.append(line.rstrip())
    return out


def fill_width(text: str, indent: str, more: str) -> list[str]:
    """Wrap a detail line at _WIDTH on spaces (deterministic; long words are kept whole), after hiding the values
    read from the environment: a secret never straddles two lines, and the lines are as wide as they are shown."""
    import textwrap

    if len(indent) + len(text) > _WIDTH:  # (a line that is not wrapped is redacted with the whole text)
        text = redact(text) or text
    return textwrap.wrap(text, _WIDTH, initial_indent=indent, subsequent_indent=more, break_long_words=False,
                         break_on_hyphens=False) or [indent.rstrip()]


def _details(node: Any) -> list[str]:
    """What a node does, one short line each: its spec's `explain_lines` hook (etl.spec.base.Component)."""
    hook = getattr(node.spec, "explain_lines", None)
    return hook() if hook is not None else []


def _sampled(g: Any, node: Any) -> list[str]:
    """How a schemaless file source's columns were inferred (etl.load.infer): run reads it with them."""
    sample = getattr(g, "inferred", {}).get(node.id)
    if sample is None:
        return []
    from etl.load.infer import limits

    return [sample.text(limits()) + "; etl run reads the files with these columns"]


def _rules(plan: Plan, node: Any) -> list[str]:
    rules = plan.graph.rules.get(node.id, ())
    if not rules and node.id not in getattr(plan.graph, "sigma", {}):
        return []
    sigma = getattr(plan.graph, "sigma", {}).get(node.id)
    files = sorted({r.file for r in rules if r.path[:2] != node.path and not hasattr(r, "sigma")})
    inline = sum(1 for r in rules if r.path[:2] == node.path and not hasattr(r, "sigma"))
    out = [f"rules: {len(rules)}" + (f" ({inline} inline, {len(files)} file{'s' if len(files) != 1 else ''})"
                                     if files else " (inline)" if sigma is None else "")]
    if sigma is not None:
        out.append(sigma.text())
        from etl.load.sigma_corr import silent

        held = sorted(silent(sigma.correlations))
        if held and node.spec.mode in ("tag", "alerts"):
            out.append(f"alerts of {', '.join(held)}: correlation input only, not emitted (no correlation rule "
                       "referencing them says `generate: true`)")
    step = next((st for st in plan.steps if st.node_id == node.id), None)
    text = getattr(step, "explain", None) if step is not None else None
    if text:
        out.append("program:")
        out.extend("  " + line for line in text.rstrip("\n").splitlines())
    return out


def _correlations(plan: Plan, node: Any) -> list[str]:
    """The correlation rules a sigma_correlation runs (those of its input filter's Sigma files)."""
    src = next((e.src for e in node.inputs if e.role == "input"), None)
    stats = getattr(plan.graph, "sigma", {}).get(src)
    corrs = stats.correlations if stats is not None else []
    et = node.spec.event_time or next((s.spec.event_time for s in plan.graph.upstream_sources(node.id)
                                       if getattr(s.spec, "event_time", None) is not None), None)
    watermark = str(et.watermark) if et is not None else None
    return [f"correlation rules: {len(corrs)} (of filter '{src}')"] + [
        line for c in corrs for line in (c.explain(node.spec.slides), c.state_text(node.spec.slides, watermark))]


def explain_plan(plan: Plan) -> str:  # noqa: C901 - refactored after issue 39's move
    """The logical plan's text (etl.physical.explain.explain_text adds the physical plan's)."""
    g = plan.graph
    p = g.pipeline
    updating: dict[str, object] = {}  # etl.spec.continuous.updating_input's answers, shared by the sinks' walks
    lines = [f"pipeline {plan.name}"]
    trigger = getattr(p, "trigger", None)
    if trigger is not None:
        lines.append(f"trigger {trigger.mode}" + (f" {trigger.interval}" if trigger.mode == "interval" else "")
                     + (f" (Spark's real-time mode: each row written as it is read, offsets checkpointed every "
                        f"{trigger.interval}; at least once)" if trigger.mode == "realtime" else ""))
    ck = getattr(getattr(p, "checkpoint", None), "path", None)
    lines.append(f"checkpoint {ck}" if ck else f"checkpoint .etl/{plan.name}/checkpoint (default)")
    if g.functions:
        from etl.graph.functions import explain_lines

        lines += ["", "functions:"]
        for line in explain_lines(g.functions):
            lines.extend(fill_width(line, "  ", "      "))
    for kind, title in (("source", "sources"), ("transform", "transforms"), ("sink", "sinks")):
        nodes = g.of_kind(kind)
        if not nodes:
            continue
        lines.append("")
        lines.append(f"{title}:")
        for node in nodes:
            ins = ", ".join(e.ref if e.role == "input" else f"table={e.ref}" for e in node.inputs)
            lines.append(f"  {node.id} ({node.type})" + (f" <- {ins}" if ins else ""))
            for d in _details(node) + transport_lines(node.spec) + _sampled(g, node):
                lines.extend(fill_width(d, "    ", "        "))
            lines.extend("    " + r for r in _rules(plan, node))  # a filter's rules (no other node has any)
            if getattr(node.spec, "RUNS_CORRELATIONS", False):
                for text in _correlations(plan, node):
                    lines.extend(fill_width(text, "    ", "        "))
            if node.outputs:
                for lab in node.outputs:
                    lines.append(f"    output {node.id}.{lab}")
            if kind != "sink" or g.columns.get(node.id) is not None:
                lines.extend(_wrap("    columns: ", _cols(g.columns.get(node.id)), "      "))
            if kind == "sink":
                dv = plan.delivery_of(node.id)
                lines.extend(fill_width(f"delivery: {dv.guarantee} ({dv.reason})", "    ", "      "))
                changes = changes_for(g, node, updating)
                if changes is not None:
                    lines.extend(fill_width(f"changes: {changes}", "    ", "      "))
    lines.append("")
    lines.append("edges:")
    for node in g.nodes.values():
        for e in node.inputs:
            lines.append(f"  {e.ref} -> {e.dst}" + (" (lookup table)" if e.role == "table" else ""))
    return "\n".join(lines) + "\n"
