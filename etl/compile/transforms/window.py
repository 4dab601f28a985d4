"""window: tumbling and sliding event-time windows (append mode: a window is emitted once the
watermark passes its end). Session windows, processing time, early and late-to-dead-letter
emission come in a later issue.

Output columns: the group_by columns, window_start, window_end, one column per aggregate.
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, CompileError, not_supported
from etl.compile.transforms.columns import _expr
from etl.compile.watermark import with_event_time
from etl.graph.model import Node


def _aggregate(node: Node, a: Any) -> Any:
    from pyspark.sql import functions as F

    fn = a.fn
    if fn == "count":
        col = F.count(F.col(a.field)) if a.field and a.field != "*" else F.count(F.lit(1))
    elif fn in ("sum", "avg", "min", "max", "collect_list", "collect_set", "approx_count_distinct"):
        col = getattr(F, fn)(F.col(a.field))
    elif fn in ("first", "last"):
        col = getattr(F, fn)(F.col(a.field), ignorenulls=True)
    elif fn == "count_distinct":
        raise CompileError(f"window '{node.id}': streaming aggregation cannot count distinct values exactly",
                           node, "aggregates", "use fn: approx_count_distinct", code="E404")
    else:
        raise not_supported(node, f"aggregate {fn}")
    return col.alias(a.as_)


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    if spec.kind == "session":
        raise not_supported(node, "session window")
    if spec.time == "processing":
        raise not_supported(node, "processing-time window")
    if spec.emit.early is not None:
        raise not_supported(node, "early window emission")
    if spec.emit.late == "dead_letter":
        raise not_supported(node, "late events to dead letters")
    et = spec.event_time or ctx.event_time(node)
    if et is None:
        raise CompileError(f"window '{node.id}' needs event time", node, code="E320",
                           hint="set `event_time: {field: ts, watermark: 30s}` on the window or its source")
    if spec.event_time is not None:
        df = with_event_time(df, node, spec.event_time)
    elif et.field not in df.columns:
        raise CompileError(f"window '{node.id}': event time column '{et.field}' is not in its input", node,
                           hint=f"columns: {', '.join(df.columns)}", code="E320")
    groups = [F.col(f"`{g}`") if g in df.columns else _expr(node, g, "group_by") for g in spec.group_by]
    slide = spec.slide.spark() if spec.kind == "sliding" else None
    w = F.window(F.col(et.field), spec.size.spark(), slide)
    out = df.groupBy(w.alias("_etl_window"), *groups).agg(*[_aggregate(node, a) for a in spec.aggregates])
    keys = out.columns[1:1 + len(groups)]
    out = out.select(*[F.col(f"`{k}`") for k in keys], F.col("_etl_window.start").alias("window_start"),
                     F.col("_etl_window.end").alias("window_end"), *[F.col(f"`{a.as_}`") for a in spec.aggregates])
    if spec.having:
        out = out.where(F.coalesce(_expr(node, spec.having, "having"), F.lit(False)))
    return out
