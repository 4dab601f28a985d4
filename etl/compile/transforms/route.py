"""route: one output per label; `exclusive` sends an event to its first matching route only."""

from __future__ import annotations

from typing import Any

from etl.compile.context import Built, CompileContext
from etl.compile.transforms.columns import _expr
from etl.graph.model import Node


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    conds = {label: F.coalesce(_expr(node, sql, f"route {label!r}"), F.lit(False)) for label, sql in spec.routes.items()}
    outs: dict[str, Any] = {}
    earlier = F.lit(False)
    for label, cond in conds.items():
        outs[label] = df.where(cond & ~earlier) if spec.exclusive else df.where(cond)
        earlier = earlier | cond
    if spec.default:
        outs[spec.default] = df.where(~earlier)
    return Built(outs=outs, base=df)
