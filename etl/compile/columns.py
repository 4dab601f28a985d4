"""A Spark SQL expression of a pipeline, compiled with its failure named at its node (derive, select, route, window,
aggregate and filter build theirs with it)."""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileError
from etl.graph.model import Node



def sql_expr(node: Node, sql: str, where: str) -> Any:
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    try:
        return F.expr(sql)
    except PySparkException as e:
        raise CompileError(f"{node.type} '{node.id}': cannot parse {where} {sql!r}: "
                           f"{str(e).strip().splitlines()[0]}", node, code="E311") from None
