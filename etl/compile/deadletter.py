"""Rows that fail parsing or conversion: split a stage's output into good rows and dead letters.

A stage that can fail builds one frame holding every row plus ERR (the reason,
NULL for good rows) and PAYLOAD (the original text); `from_shared` splits it.
Dead letters carry the pipeline, the stage id, the reason, the payload and the
processing time.
"""

from __future__ import annotations

from typing import Any

from etl.compile.context import ERR, PAYLOAD, Built


def fence(expr: Any) -> Any:
    """`expr`, made opaque to the optimizer at the cost of one integer comparison.

    A stage's good rows are `where(ERR IS NULL)` over a projection computing an expensive
    value (a regex, a JSON parse). Spark pushes such filters below projections by copying the
    aliased expressions into the filter, which would run the regex twice per row; it also
    merges projections. Neither happens across a nondeterministic expression, and
    spark_partition_id() is the cheapest one."""
    from pyspark.sql import functions as F

    return F.when(F.spark_partition_id() >= 0, expr)


def dead_frame(shared: Any, pipeline: str, stage: str) -> Any:
    from pyspark.sql import functions as F

    return shared.where(F.col(ERR).isNotNull()).select(
        F.lit(pipeline).alias("pipeline"), F.lit(stage).alias("stage"), F.col(ERR).alias("reason"),
        F.col(PAYLOAD).cast("string").alias("payload"), F.current_timestamp().alias("time"))


def ok_frame(shared: Any) -> Any:
    from pyspark.sql import functions as F

    return shared.where(F.col(ERR).isNull()).drop(ERR, PAYLOAD)


def from_shared(shared: Any, pipeline: str, stage: str, on_error: str = "dead_letter") -> Built:
    """on_error: dead_letter (split), drop (good rows only), keep (every row, failed fields NULL)."""
    if on_error == "keep":
        return Built(out=shared.drop(ERR, PAYLOAD))
    if on_error == "drop":
        return Built(out=ok_frame(shared))
    return Built(out=ok_frame(shared), dead=dead_frame(shared, pipeline, stage), shared=shared)
