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


# (SQL text rather than Column calls: each Column call is py4j round trips, and these two run per micro-batch)
def dead_frame(shared: Any, pipeline: str, stage: str) -> Any:
    from etl.optimize.native_split import sql_string

    return shared.where(f"`{ERR}` IS NOT NULL").selectExpr(
        f"{sql_string(pipeline)} AS pipeline", f"{sql_string(stage)} AS stage", f"`{ERR}` AS reason",
        f"CAST(`{PAYLOAD}` AS STRING) AS payload", "current_timestamp() AS time")


def ok_frame(shared: Any) -> Any:
    return shared.where(f"`{ERR}` IS NULL").drop(ERR, PAYLOAD)


def from_shared(shared: Any, pipeline: str, stage: str, on_error: str = "dead_letter") -> Built:
    """on_error: dead_letter (split), drop (good rows only), keep (every row, failed fields NULL)."""
    if on_error == "keep":
        return Built(out=shared.drop(ERR, PAYLOAD))
    if on_error == "drop":
        return Built(out=ok_frame(shared))
    return Built(out=ok_frame(shared), dead=dead_frame(shared, pipeline, stage), shared=shared)
