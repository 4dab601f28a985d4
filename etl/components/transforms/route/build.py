"""route: one output per label; `exclusive` sends an event to its first matching route only."""

from __future__ import annotations

from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built, CompileContext
from etl.compile.deadletter import from_shared
from etl.compile.guard import Guards, active
from etl.compile.columns import sql_expr
from etl.graph.model import Node


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Built:
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    guards = Guards(ctx, node, df) if active(df) else None
    conds = {}
    for label, sql in spec.routes.items():
        cond = sql_expr(node, sql, f"route {label!r}")
        if guards is not None:  # a row whose condition throws is a dead letter (and goes to no route)
            df, cond = guards.wrap(df, cond, ("routes", label), f"route '{label}'")
        conds[label] = F.coalesce(cond, F.lit(False))
    dead = base = None
    if guards is not None:  # the routes and the dead letters read one frame (cached when several do)
        base = guards.shared(df, df.columns)
        dead = from_shared(base, ctx.pipeline, node.id).dead
        df = base.where(F.col(ERR).isNull())
    outs: dict[str, Any] = {}
    earlier = F.lit(False)
    for label, cond in conds.items():
        outs[label] = df.where(cond & ~earlier) if spec.exclusive else df.where(cond)
        earlier = earlier | cond
    if spec.default:
        outs[spec.default] = df.where(~earlier)
    if guards is not None:
        outs = {label: frame.drop(ERR, PAYLOAD, *guards.hidden) for label, frame in outs.items()}
    return Built(outs=outs, base=df if base is None else base, dead=dead)
