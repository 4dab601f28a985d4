"""window: tumbling, sliding and session windows over event or processing time
(etl/compile/windows/native.py; the state engine for early results and late dead letters is
etl/compile/windows/state.py).

Output columns: the group_by columns, window_start, window_end, one column per aggregate;
with `emit.early`, `_final` and `_retract` too (upsert key: group_by, window_start, window_end).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from etl.compile.context import Built, CompileContext, CompileError
from etl.compile.deadletter import dead_frame, from_shared, ok_frame
from etl.compile.functions import aggregate_functions
from etl.compile.guard import Guards
from etl.compile.columns import sql_expr
from etl.compile.watermark import with_event_time
from etl.compile.windows.aggregate import window_aggregate
from etl.compile.windows.native import WindowError, choose_timers
from etl.graph.model import Node

CODES = MappingProxyType({"event_time": "E320", "group_by": "E310", "aggregates": "E310", "emit": "E400"})


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import functions as F

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
    guards = Guards(ctx, node, df)  # a row whose group_by expression throws is a dead letter
    for i, g in enumerate(spec.group_by):  # an expression groups by a column named after its text
        if g not in df.columns:
            df, value = guards.wrap(df, sql_expr(node, g, "group_by"), ("group_by", i), f"group_by {g!r}")
            df = df.withColumn(g, value)
    dead_stream = None
    if guards.hidden:
        shared = guards.shared(df, [c for c in df.columns if c not in guards.hidden])
        dead_stream = dead_frame(shared, ctx.pipeline, node.id)
        df = ok_frame(shared)
    engine = ctx.engine(node, "window")  # native | state (etl.physical.engines)
    native_having = spec.having and engine == "native"

    def guard_having(frame: Any, columns: list[str]) -> tuple[Any, Any, Any, Any]:
        """The state engine's `having`, guarded: a window row on which it throws is a dead letter."""
        having = Guards(ctx, node, frame.select(*[F.col(f"`{c}`") for c in columns]))
        frame, value = having.wrap(frame, sql_expr(node, spec.having, "having"), ("having",), "having")
        return frame, value, having.reason, F.when(having.reason.isNotNull(), having.payload())

    try:
        res = window_aggregate(df, spec.model_copy(update={"having": None}) if native_having else spec, et,
                               stage=node.id, engine=engine, guard_having=guard_having,
                               timers=choose_timers(spec, ctx.trigger), python=aggregate_functions(ctx.graph, spec.aggregates))
    except WindowError as e:
        raise CompileError(f"window '{node.id}': {e}", node, e.field, code=e.code or CODES.get(e.field or "", "E400")) from None
    if native_having:  # a window whose `having` throws is a dead letter (its payload: the window's row)
        having = Guards(ctx, node, res.df)
        frame, value = having.wrap(res.df, sql_expr(node, spec.having, "having"), ("having",), "having")
        frame = frame.where(F.coalesce(value, F.lit(False)) | having.reason.isNotNull())
        built = from_shared(having.shared(frame, res.df.columns), ctx.pipeline, node.id)
    elif res.shared is not None:
        built = from_shared(res.shared, ctx.pipeline, node.id)
    else:
        built = Built(out=res.df)
    built.dead_stream = dead_stream
    ctx.record(node.id, "window", res.engine)
    return built
