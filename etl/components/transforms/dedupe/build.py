"""dedupe: drop repeated keys within the watermark (dropDuplicatesWithinWatermark); keep: last, each key's
newest row (etl/components/transforms/dedupe/last.py)."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.components.transforms.dedupe.last import keep_last
from etl.compile.watermark import with_event_time
from etl.graph.model import Node


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    spec = node.spec
    df = inputs[0]
    missing = [k for k in spec.keys if k not in df.columns]
    if missing:
        raise CompileError(f"dedupe '{node.id}': unknown key column(s) {', '.join(missing)}", node, "keys",
                           f"columns: {', '.join(df.columns)}", code="E310")
    et = ctx.event_time(node)
    if et is None:
        raise CompileError(f"dedupe '{node.id}' needs event time to bound its state", node, code="E320",
                           hint="set `event_time: {field: ts, watermark: 10m}` on the dedupe or its source")
    if spec.event_time is not None:
        df = with_event_time(df, node, spec.event_time)
    if spec.keep == "last":
        if dict(df.dtypes).get(et.field) != "timestamp":
            raise CompileError(f"dedupe '{node.id}' (keep: last) orders by event time column '{et.field}', which is "
                               f"{dict(df.dtypes).get(et.field, 'missing')} here", node, code="E320",
                               hint="declare the event time column as a timestamp")
        return keep_last(df, list(spec.keys), et.field)
    if not df.isStreaming:
        return df.dropDuplicates(list(spec.keys))
    return df.dropDuplicatesWithinWatermark(list(spec.keys))
