"""Pipeline spec -> Graph: resolve input references, order nodes, find cycles.

Input: any object with `name`, `sources`, `transforms`, `sinks` (spec models) and an optional
source map (`value(path)`, `key(path)` -> Span); no YAML here (see etl/graph/model.py).
"""

from __future__ import annotations

from typing import Any

from etl.diagnostics import Report, Span, Suggester, did_you_mean
from etl.graph.model import Edge, Graph, Node, is_placeholder

_LISTS = (("sources", "source"), ("transforms", "transform"), ("sinks", "sink"))


def _input_key(smap: Any, path: tuple) -> str:
    return "inputs" if smap is None or smap.has(path + ("inputs",)) or not smap.has(path + ("input",)) else "input"


def build_graph(pipeline: Any, smap: Any, report: Report, base_dir: str = ".") -> Graph:
    """Resolve every component's inputs into edges; report unknown ids, wrong kinds and cycles."""
    file = smap.file if smap is not None else "<pipeline>"
    raw: dict[str, tuple[str, Any, tuple]] = {}
    order: list[str] = []
    for list_name, kind in _LISTS:
        for i, spec in enumerate(getattr(pipeline, list_name)):
            if spec is None:  # a component without a usable id (partial graph of an invalid pipeline)
                continue
            path = (list_name, i)
            if spec.id in raw:
                first = smap.value(raw[spec.id][2] + ("id",)) if smap else Span(file)
                report.error("E200", f"duplicate id '{spec.id}' (first used at line {first.line})",
                             smap.value(path + ("id",)) if smap else Span(file), "ids must be unique in a pipeline")
                continue
            raw[spec.id] = (kind, spec, path)
            order.append(spec.id)

    outputs = {nid: tuple(spec.outputs()) if hasattr(spec, "outputs") else () for nid, (_, spec, _) in raw.items()}
    known = _Known(raw, outputs)
    nodes: dict[str, Node] = {}
    for nid in order:
        kind, spec, path = raw[nid]
        span = smap.value(path) if smap else Span(file)
        edges = []
        key = _input_key(smap, path)
        refs = list(spec.inputs) if hasattr(spec, "inputs") else []
        for j, ref in enumerate(refs):
            ref_span = (smap.value(path + (key, j)) if key == "inputs" else smap.value(path + (key,))) if smap else span
            edge = _resolve(ref, nid, raw, outputs, ref_span, report, known)
            if edge is not None:
                edges.append(edge)
        table = spec.table_input() if hasattr(spec, "table_input") else None  # a lookup's table: role "table"
        if not isinstance(table, str):
            table = None
        if table is not None:
            t_span = smap.value(path + ("table",)) if smap else span
            edge = _resolve(table, nid, raw, outputs, t_span, report, known, role="table")
            if edge is not None:
                edges.append(edge)
        if kind != "source" and not refs and not is_placeholder(spec):
            report.error("E201", f"{kind} '{nid}' has no inputs", span, "add `inputs: [<upstream id>]`")
        nodes[nid] = Node(nid, kind, spec.type, spec, span, path, tuple(edges), outputs[nid])

    ordered = _toposort(nodes, report)
    return Graph(pipeline.name, pipeline, ordered, {}, smap, base_dir)


class _Known:
    """What an input may name (every non-sink id and 'route.label'), indexed once for did-you-mean hints."""

    def __init__(self, raw: dict, outputs: dict):
        self.raw, self.outputs = raw, outputs
        self._suggester: Suggester | None = None

    def hint(self, ref: str) -> str | None:
        if self._suggester is None:
            cands = [i for i, (k, _, _) in self.raw.items() if k != "sink"]
            cands += [f"{i}.{lab}" for i, labs in self.outputs.items() for lab in labs]
            self._suggester = Suggester(cands)
        s = self._suggester
        return s.hint(ref) or (f"known ids: {s.listing()}" if s.cands else None)


def _resolve(ref: str, dst: str, raw: dict, outputs: dict, span: Span, report: Report, known: _Known,
             role: str = "input") -> Edge | None:
    src, _, label = ref.partition(".")
    if src not in raw:
        report.error("E201", f"unknown input '{ref}' of '{dst}'", span, known.hint(ref))
        return None
    kind, spec, _ = raw[src]
    if kind == "sink":
        report.error("E203", f"'{dst}' reads from sink '{src}'; sinks have no output", span,
                     "read from the sink's input instead")
        return None
    if src == dst:
        report.error("E202", f"'{dst}' reads its own output", span, "remove the self-reference")
        return None
    if is_placeholder(spec):
        # the upstream did not validate (reported already): its outputs and kind of source are unknown
        if label and spec.labels is not None and label not in spec.labels:
            report.error("E205", f"route '{src}' has no output '{label}'", span,
                         did_you_mean(label, spec.labels) or f"outputs: {', '.join(spec.labels)}")
            return None
        return Edge(src, dst, label or None, role, span)
    if label:
        if not outputs.get(src):
            report.error("E205", f"'{src}' has no labelled outputs, so '{ref}' is not valid", span,
                         f"write '{src}'")
            return None
        if label not in outputs[src]:
            report.error("E205", f"route '{src}' has no output '{label}'", span,
                         did_you_mean(label, outputs[src]) or f"outputs: {', '.join(outputs[src])}")
            return None
    elif outputs.get(src):
        report.error("E205", f"route '{src}' has labelled outputs; say which one", span,
                     "write one of " + ", ".join(f"'{src}.{lab}'" for lab in outputs[src]))
        return None
    is_static = kind == "source" and spec.is_static()
    if role == "table" and not is_static:
        report.error("E203", f"lookup table '{src}' must be a static source (file with `static: true`, or mysql)",
                     span, "set `static: true` on the file source")
        return None
    problem = spec.lookup_table_problem() if role == "table" else None
    if problem is not None:
        report.error("E203", f"lookup table '{src}': {problem[0]}", span, problem[1])
        return None
    if role == "input" and is_static:
        report.error("E203", f"'{src}' is a static table; use it as a lookup `table`, not as an input", span)
        return None
    return Edge(src, dst, label or None, role, span)


def _toposort(nodes: dict[str, Node], report: Report) -> dict[str, Node]:
    """Kahn's algorithm, linear, in a stable order (first-in first-out from declaration order);
    nodes on a cycle are reported once."""
    from collections import deque

    indeg = dict.fromkeys(nodes, 0)
    downstream: dict[str, list[str]] = {nid: [] for nid in nodes}
    for n in nodes.values():
        for e in n.inputs:
            if e.src in nodes:
                indeg[n.id] += 1
                downstream[e.src].append(n.id)
    ready = deque(nid for nid in nodes if indeg[nid] == 0)
    out: dict[str, Node] = {}
    while ready:
        nid = ready.popleft()
        out[nid] = nodes[nid]
        for dst in downstream[nid]:
            indeg[dst] -= 1
            if indeg[dst] == 0:
                ready.append(dst)
    stuck = [nid for nid in nodes if nid not in out]
    if stuck:
        cycle = _find_cycle(nodes, stuck)
        first = nodes[cycle[0]]
        shown = cycle + [cycle[0]] if len(cycle) <= 12 else cycle[:10] + [f"... ({len(cycle) - 10} more)", cycle[0]]
        report.error("E202", "cycle in the pipeline: " + " -> ".join(shown), first.span,
                     "a pipeline is a DAG: break the loop")
        for nid in stuck:
            out[nid] = nodes[nid]
    return out


def _find_cycle(nodes: dict[str, Node], stuck: list[str]) -> list[str]:
    """A cycle among `stuck` (in declaration order), walking inputs from the first stuck node."""
    on_cycle = set(stuck)
    path = [stuck[0]]
    at = {stuck[0]: 0}
    while True:
        nxt = next((e.src for e in nodes[path[-1]].inputs if e.src in on_cycle), None)
        if nxt is None:
            return path
        if nxt in at:
            return list(reversed(path[at[nxt]:]))
        at[nxt] = len(path)
        path.append(nxt)
