"""join: stream-stream inner/left/right/full join on keys within a time bound (etl/compile/joining.py).

A right column whose name the left input already uses is renamed `<right input id>_<name>`."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.compile.joining import JoinError, stream_join
from etl.compile.watermark import with_event_time
from etl.graph.model import Node


def side_time(ctx: CompileContext, node: Node, src: str, own: Any) -> Any:
    if own is not None:
        return own
    up = ctx.graph.node(src)
    sources = [up] if up.kind == "source" else ctx.graph.upstream_sources(src)
    return next((s.spec.event_time for s in sources if getattr(s.spec, "event_time", None) is not None), None)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    edges = [e for e in node.inputs if e.role == "input"]
    left, right = inputs
    lt = side_time(ctx, node, edges[0].src, spec.left_time)
    rt = side_time(ctx, node, edges[1].src, spec.right_time)
    if spec.left_time is not None:
        left = with_event_time(left, node, spec.left_time)
    if spec.right_time is not None:
        right = with_event_time(right, node, spec.right_time)
    try:
        return stream_join(left, right, spec, lt, rt, right_prefix=f"{edges[1].src}_").df
    except JoinError as e:
        code = "E320" if (e.field or "").endswith("_time") else "E310"
        raise CompileError(f"join '{node.id}': {e}", node, e.field, code=code) from None
