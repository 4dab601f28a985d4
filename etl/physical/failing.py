"""Which stages write dead letters: the planner's view of each builder's failure split.

A stage compiled over streaming frames splits its failed rows off (etl.compile.
deadletter.from_shared) when its builder can fail on a row: a source parsing
JSON or CSV, reading records it bounds in size (every file, kafka and rocketmq source: etl/jvm/BoundedLines.java,
the tail mode, etl.compile.deadletter.within_record_size) or declaring an event time (the horizon), grok, dissect and parse with `on_error: dead_letter`, every guarded
expression (derive columns, select expressions, filter `expr`, route
conditions, window `having`; etl.compile.guard), rule programs that may leave
a row undecided (Python `re` past its budget), and the state engine's late
events. A window grouping by an expression writes the rows on which it throws
through a query of its own; so does a transform declaring an event time behind a live
source, for its input rows beyond the horizon (over bounded input its input's root's
query finds them: horizon_root). The run-equals-explain test holds compile to this.
"""

from __future__ import annotations

from typing import Any

from etl.graph.model import Graph, Node
from etl.physical.grouping import root_of
from etl.spec.transforms import PLAIN


def fails(node: Node, graph: Graph, engines: dict[str, str], undecided: bool) -> bool:
    """Does the stage write dead letters from the query of its root? `engines`: its chosen engines;
    `undecided`: its rule program (or its shared pass's) may leave a row undecided. The component says
    (etl.spec.base.Component.dead_letters)."""
    return bool(node.spec.dead_letters(engines, undecided))


def declared_event_times(node: Node) -> list[tuple[int, Any]]:
    """The event times a transform declares itself (a window's, dedupe's, sigma_correlation's `event_time`, a join's
    `left_time` and `right_time`), with the index of the input each bounds (etl.compile.watermark.bound_declared)."""
    if node.kind != "transform":
        return []
    s = node.spec
    times = [(0, getattr(s, "event_time", None)), (0, getattr(s, "left_time", None)), (1, getattr(s, "right_time", None))]
    return [(i, et) for i, et in times if et is not None]


def dead_stream(node: Node, graph: Graph, horizon: str | None) -> bool:
    """A window grouping by an expression: the rows on which it throws get a query of their own; so do the rows of a
    transform's input whose declared event time lies beyond the horizon, unless the query of its input's root
    finds them (`horizon`: horizon_root's answer for the node)."""
    return _groups_by_expression(node, graph) or (bool(declared_event_times(node)) and horizon is None)


def horizon_root(node: Node, graph: Graph) -> str | None:
    """The root whose query writes the rows of `node`'s input beyond its declared event time's horizon, found on
    each of its micro-batches (etl.compile.watermark.beyond_rows), or None: they need a query of their own. Only
    for bounded input (no live source upstream): its horizon is a constant, so the root's query and the node's
    streaming plan (which drops those rows) decide each row alike; a live source's horizon is the micro-batch's
    time, which two queries do not share. The node's inputs must all come from that one root, and the node must
    not also group by an expression (whose failed rows take the query of their own)."""
    if not declared_event_times(node) or _groups_by_expression(node, graph):
        return None
    if any(getattr(s.spec, "LIVE", False) for s in graph.upstream_sources(node.id)):
        return None
    roots = {root_of(graph, e.src) for e in node.inputs if e.role == "input"}
    return roots.pop() if len(roots) == 1 else None


def _groups_by_expression(node: Node, graph: Graph) -> bool:
    group_by = node.spec.grouped_by_expressions() if node.kind == "transform" else ()
    if not group_by:
        return False
    ins = graph.input_columns(node.id)
    known = {c for c, _ in ins[0]} if ins and ins[0] is not None else None
    return any((g not in known) if known is not None else not PLAIN.fullmatch(g.strip())
               for g in group_by)


def undecided_of(program: Any) -> bool:
    return bool(getattr(program, "runs_python_re", False))
