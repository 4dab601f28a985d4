"""Event time columns and watermarks."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileError
from etl.graph.model import Node

NUMERIC = ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long")


def with_event_time(df: Any, node: Node, et: Any) -> Any:
    """Declare `et.field` as event time with `et.watermark` lateness; epoch milliseconds become timestamps."""
    from pyspark.sql import functions as F

    types = dict(df.dtypes)
    if et.field not in types:
        raise CompileError(f"event time column '{et.field}' of '{node.id}' does not exist", node, "event_time",
                           f"columns: {', '.join(df.columns)}", code="E320")
    t = types[et.field]
    if t in NUMERIC:
        df = df.withColumn(et.field, F.timestamp_millis(F.col(et.field)))
    elif t not in ("timestamp", "timestamp_ntz"):
        raise CompileError(f"event time column '{et.field}' of '{node.id}' is {t}, not a timestamp", node,
                           "event_time", "declare it as `timestamp` in the schema, or derive one", code="E320")
    if not df.isStreaming:
        return df
    from etl.compile.drain import watermarked

    return watermarked(df, et.field, et.watermark.spark())
