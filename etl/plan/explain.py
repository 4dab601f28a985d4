"""Deterministic text of a plan: nodes, edges, columns, filter programs, delivery per sink.

The text depends only on the pipeline (never on the machine, the working
directory or the time), so golden tests can compare it byte for byte.
"""

from __future__ import annotations

from typing import Any

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
    """Wrap a comma-separated list at _WIDTH, continuation lines indented."""
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


def _fill(text: str, indent: str, more: str) -> list[str]:
    """Wrap a detail line at _WIDTH on spaces (deterministic; long words are kept whole)."""
    import textwrap

    return textwrap.wrap(text, _WIDTH, initial_indent=indent, subsequent_indent=more, break_long_words=False,
                         break_on_hyphens=False) or [indent.rstrip()]


def _details(node: Any) -> list[str]:
    """One or two lines of what a node does, from its spec."""
    s = node.spec
    t = node.type
    if node.kind == "source":
        bits = []
        if getattr(s, "event_time", None) is not None:
            bits.append(f"event time {s.event_time.field} (watermark {s.event_time.watermark})")
        if s.is_static():
            bits.append("static table")
        return [", ".join(bits)] if bits else []
    if t == "filter":
        out = [f"mode {s.mode}" + (f", tag field {s.tag_field}" if s.mode == "tag" else "")]
        if s.expr:
            out.append(f"expr: {s.expr}")
        return out
    if t == "derive":
        return [f"{k} = {v}" for k, v in s.columns.items()]
    if t == "select":
        out = []
        if s.fields is not None:
            out.append("fields: " + ", ".join(s.fields))
        if s.rename:
            out.append("rename: " + ", ".join(f"{a} -> {b}" for a, b in s.rename.items()))
        if s.drop:
            out.append("drop: " + ", ".join(s.drop))
        return out
    if t == "grok":
        return [f"{s.field} =~ {s.pattern}" + ("" if s.keep_original else f" (drops {s.field})"),
                f"on error: {s.on_error}"]
    if t == "parse":
        return [f"{s.field} as {s.format}" + ("" if s.keep_original else f" (drops {s.field})"),
                f"on error: {s.on_error}"]
    if t == "route":
        out = [f"{label}: {cond}" for label, cond in s.routes.items()]
        if s.default:
            out.append(f"{s.default}: (no route matched)")
        if s.exclusive:
            out.append("exclusive: first matching route only")
        return out
    if t == "window":
        shape = {"tumbling": f"size {s.size}", "sliding": f"size {s.size} slide {s.slide}",
                 "session": f"gap {s.gap}"}[s.kind]
        tm = f"{s.time} time" + (f" {s.event_time.field} (watermark {s.event_time.watermark})" if s.event_time else "")
        out = [f"{s.kind} {shape}, {tm}"]
        if s.group_by:
            out.append("group by: " + ", ".join(s.group_by))
        out.append("aggregates: " + ", ".join(f"{a.as_} = {a.fn}({a.field or '*'}"
                                              + (f", {a.n}" if a.n else "") + ")" for a in s.aggregates))
        if s.having:
            out.append(f"having: {s.having}")
        if s.emit.early is not None or s.emit.late != "drop":  # shown so SQL's EMIT and YAML's emit compare too
            late = "late events " + {"drop": "dropped", "dead_letter": "to dead letters"}.get(s.emit.late, "")
            if s.emit.late == "update":
                late += (f"update the window for {s.emit.allowed_lateness}"
                         + (f" (every {s.emit.every})" if s.emit.every is not None else "")
                         + f", later ones {'dropped' if s.emit.too_late == 'drop' else 'to dead letters'}")
            early = f"early every {s.emit.early}" + (" (processing-time timers)" if s.emit.timers == "processing" else "")
            out.append("emit: " + ", ".join(([early] if s.emit.early is not None else [])
                                            + [late]))
        return out
    if t == "join":
        return [f"{s.how} join on {', '.join(s.on)} within {s.within}"]
    if t == "lookup":
        on = ", ".join(f"{a} = {s.table}.{b}" for a, b in s.on.items())
        return [f"{s.how} lookup on {on}, store {s.store}"
                + (f", refresh {s.refresh}" if s.refresh is not None else "")]
    if t == "dedupe":
        return ["keys: " + ", ".join(s.keys)
                + (f", event time {s.event_time.field} (watermark {s.event_time.watermark})" if s.event_time else "")]
    return []


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
    step = next((st for st in plan.steps if st.node_id == node.id), None)
    text = getattr(step, "explain", None) if step is not None else None
    if text:
        out.append("program:")
        out.extend("  " + line for line in text.rstrip("\n").splitlines())
    return out


def explain_plan(plan: Plan) -> str:
    g = plan.graph
    p = g.pipeline
    lines = [f"pipeline {plan.name}"]
    trigger = getattr(p, "trigger", None)
    if trigger is not None:
        lines.append(f"trigger {trigger.mode}" + (f" {trigger.interval}" if trigger.mode == "interval" else ""))
    ck = getattr(getattr(p, "checkpoint", None), "path", None)
    lines.append(f"checkpoint {ck}" if ck else f"checkpoint .etl/{plan.name}/checkpoint (default)")
    for kind, title in (("source", "sources"), ("transform", "transforms"), ("sink", "sinks")):
        nodes = g.of_kind(kind)
        if not nodes:
            continue
        lines.append("")
        lines.append(f"{title}:")
        for node in nodes:
            ins = ", ".join(e.ref if e.role == "input" else f"table={e.ref}" for e in node.inputs)
            lines.append(f"  {node.id} ({node.type})" + (f" <- {ins}" if ins else ""))
            for d in _details(node) + transport_lines(node.spec):
                lines.extend(_fill(d, "    ", "        "))
            if node.type == "filter":
                lines.extend("    " + r for r in _rules(plan, node))
            if node.outputs:
                for lab in node.outputs:
                    lines.append(f"    output {node.id}.{lab}")
            if kind != "sink" or g.columns.get(node.id) is not None:
                lines.extend(_wrap("    columns: ", _cols(g.columns.get(node.id)), "      "))
            if kind == "sink":
                d = plan.delivery_of(node.id)
                lines.extend(_fill(f"delivery: {d.guarantee} ({d.reason})", "    ", "      "))
    lines.append("")
    lines.append("edges:")
    for node in g.nodes.values():
        for e in node.inputs:
            lines.append(f"  {e.ref} -> {e.dst}" + (" (lookup table)" if e.role == "table" else ""))
    return "\n".join(lines) + "\n"
