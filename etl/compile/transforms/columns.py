"""derive / select (with rename and drop): Spark SQL expressions over columns."""

from __future__ import annotations

from typing import Any

from etl.compile.context import Built, CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.compile.guard import Guards, active
from etl.graph.model import Node
# a column reference cannot throw; a generator (a LATERAL VIEW of SQL scripts) cannot sit inside an expression, so
# a guard cannot wrap it (the planner reads the same patterns to know which selects write dead letters)
from etl.spec.transforms import GENERATOR, PLAIN


def sql_expr(node: Node, sql: str, where: str) -> Any:
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        return F.expr(sql)
    except PySparkException as e:
        raise CompileError(f"{node.type} '{node.id}': cannot parse {where} {sql!r}: "
                           f"{str(e).strip().splitlines()[0]}", node, code="E311") from None


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
