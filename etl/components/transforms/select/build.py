"""The select transform's builder: expressions, renames and drops; a failing row a dead letter."""

from __future__ import annotations

from typing import Any

from etl.compile.columns import sql_expr
from etl.compile.context import Built, CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.compile.guard import Guards, active
from etl.graph.model import Node

# a column reference cannot throw; a generator (a LATERAL VIEW of SQL scripts) cannot sit inside an expression, so
# a guard cannot wrap it (the planner reads the same patterns to know which selects write dead letters)
from etl.spec.transforms import GENERATOR, PLAIN


def build_select(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    """`fields` (names or expressions) first, then `rename`, then `drop`."""
    spec = node.spec
    df = inputs[0]
    built = None
    if spec.fields is not None and not active(df):
        df = df.select(*[sql_expr(node, f, "field") for f in spec.fields])
    elif spec.fields is not None:
        guards = Guards(ctx, node, df)
        frame, cols = df, []
        for i, f in enumerate(spec.fields):
            column = sql_expr(node, f, "field")
            if PLAIN.fullmatch(f.strip()) or GENERATOR.search(f):  # a column reference or a star cannot fail
                cols.append(column)
                continue
            name = df.select(column).columns[0]
            frame, value = guards.wrap(frame, column, ("fields", i), f"field {f!r}")
            cols.append(value.alias(name))
        if not guards.hidden:
            df = df.select(*cols)
        else:
            built = from_shared(guards.shared(frame, cols), ctx.pipeline, node.id)
            if not spec.rename and not spec.drop:
                return built
            df = built.out
    missing = [old for old in spec.rename if old not in df.columns]
    if missing:
        raise CompileError(f"select '{node.id}': cannot rename unknown column(s) {', '.join(missing)}", node,
                           "rename", f"columns: {', '.join(df.columns)}", code="E310")
    if spec.rename:
        df = df.withColumnsRenamed(dict(spec.rename))
    if spec.drop:
        df = df.drop(*spec.drop)
    if built is None:
        return df
    return Built(out=df, dead=built.dead)
