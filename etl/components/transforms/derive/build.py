"""The derive transform's builder: new columns from Spark SQL expressions, a failing row a dead letter."""

from __future__ import annotations

from typing import Any

from etl.compile.columns import sql_expr
from etl.compile.context import Built, CompileContext
from etl.compile.deadletter import from_shared
from etl.compile.guard import Guards, active
from etl.graph.model import Node


def build_derive(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    """Columns in order: a later column may use an earlier one. A row whose expression fails is a dead letter."""
    from pyspark.sql import functions as F

    df = inputs[0]
    if not active(df):
        for name, sql in node.spec.columns.items():
            df = df.withColumn(name, sql_expr(node, sql, f"column {name!r}"))
        return Built(out=df)
    guards = Guards(ctx, node, df)
    originals = {c: f"_etl_orig_{c}" for c in node.spec.columns if c in df.columns}
    frame = df.withColumns({h: F.col(f"`{c}`") for c, h in originals.items()}) if originals else df
    for name, sql in node.spec.columns.items():
        frame, value = guards.wrap(frame, sql_expr(node, sql, f"column {name!r}"), ("columns", name),
                                   f"column '{name}'")
        frame = frame.withColumn(name, value)
    keep = [c for c in frame.columns if c not in guards.hidden and c not in originals.values()]
    return from_shared(guards.shared(frame, keep, originals), ctx.pipeline, node.id)
