"""top_n: the first n rows per partition of each window's final rows (etl.components.transforms.top_n.spec), per micro-batch.

It runs on the micro-batch of its window's query (a batch DataFrame), where every final row of a
window is present: row_number() over (partition_by, order_by), kept while <= n. Ties keep Spark's
order of equal rows (as Flink's, unspecified). Over a streaming frame the same expression is only
built (the compiler builds every node once over the streams); a streaming query running it (a
stateful stage after it) fails at start with Spark's "non-time-based windows" error.
With `continuous: true` it keeps each key's first n rows in the state store instead
(etl.components.transforms.top_n.state).
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import CompileContext
from etl.components.transforms.top_n.state import continuous_top_n
from etl.graph.model import Node
from etl.components.transforms.top_n.spec import order_terms

RANK = "_etl_rank"


def build(ctx: CompileContext, node: Node, inputs: list[Any]) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spec = node.spec
    df = inputs[0]
    if spec.continuous:
        return continuous_top_n(df, spec)
    order = [F.col(f"`{c}`").desc_nulls_last() if desc else F.col(f"`{c}`").asc_nulls_first()
             for c, desc in order_terms(spec.order_by)]
    w = Window.partitionBy(*[F.col(f"`{p}`") for p in spec.partition_by]).orderBy(*order)
    out = df.withColumn(RANK, F.row_number().over(w)).where(F.col(RANK) <= spec.n)
    if spec.rank is not None:
        return out.withColumnRenamed(RANK, spec.rank) if spec.rank not in df.columns else \
            out.drop(spec.rank).withColumnRenamed(RANK, spec.rank)
    return out.drop(RANK)
