"""window: tumbling, sliding and session windows over event or processing time
(etl/compile/windowing.py; the state engine for early results and late dead letters is
etl/compile/window_state.py).

Output columns: the group_by columns, window_start, window_end, one column per aggregate;
with `emit.early`, `_final` and `_retract` too (upsert key: group_by, window_start, window_end).
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.compile.transforms.columns import _expr
from etl.compile.watermark import with_event_time
from etl.graph.model import Node

CODES = {"event_time": "E320", "group_by": "E310", "aggregates": "E310"}


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from etl.compile.windowing import WindowError, window_aggregate

    spec = node.spec
    df = inputs[0]
    et = None
    if spec.time == "event":
        et = spec.event_time or ctx.event_time(node)
        if et is None:
            raise CompileError(f"window '{node.id}' needs event time", node, code="E320",
                               hint="set `event_time: {field: ts, watermark: 30s}` on the window or its source, "
                                    "or `time: processing`")
        if spec.event_time is not None:
            df = with_event_time(df, node, spec.event_time)
    for g in spec.group_by:  # an expression groups by a column named after its text
        if g not in df.columns:
            df = df.withColumn(g, _expr(node, g, "group_by"))
    try:
        res = window_aggregate(df, spec, et, stage=node.id)
    except WindowError as e:
        raise CompileError(f"window '{node.id}': {e}", node, e.field, code=CODES.get(e.field or "", "E400")) from None
    if res.shared is not None:
        return from_shared(res.shared, ctx.pipeline, node.id)
    return res.df
