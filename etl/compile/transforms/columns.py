"""derive / select (with rename and drop): Spark SQL expressions over columns."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.graph.model import Node


def _expr(node: Node, sql: str, where: str) -> Any:
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        return F.expr(sql)
    except PySparkException as e:
        raise CompileError(f"{node.type} '{node.id}': cannot parse {where} {sql!r}: "
                           f"{str(e).strip().splitlines()[0]}", node, code="E311") from None


def build_derive(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    """Columns in order: a later column may use an earlier one."""
    df = inputs[0]
    for name, sql in node.spec.columns.items():
        df = df.withColumn(name, _expr(node, sql, f"column {name!r}"))
    return df


def build_select(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    """`fields` (names or expressions) first, then `rename`, then `drop`."""
    spec = node.spec
    df = inputs[0]
    if spec.fields is not None:
        df = df.select(*[_expr(node, f, "field") for f in spec.fields])
    missing = [old for old in spec.rename if old not in df.columns]
    if missing:
        raise CompileError(f"select '{node.id}': cannot rename unknown column(s) {', '.join(missing)}", node,
                           "rename", f"columns: {', '.join(df.columns)}", code="E310")
    if spec.rename:
        df = df.withColumnsRenamed(dict(spec.rename))
    if spec.drop:
        df = df.drop(*spec.drop)
    return df
