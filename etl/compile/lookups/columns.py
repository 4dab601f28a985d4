"""Column helpers both lookup engines share (etl.compile.lookups.dimension, etl.compile.lookups.jvm): the Spark
type of an Arrow column, and the events' join key as text."""

from __future__ import annotations

import functools
from typing import Any

_ARROW_TO_SPARK = {"string": "string", "large_string": "string", "int64": "bigint", "int32": "int",
                   "int16": "smallint", "int8": "tinyint", "double": "double", "float": "float",
                   "bool": "boolean", "date32[day]": "date"}


def spark_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return _ARROW_TO_SPARK.get(str(t), "string")


def event_key(events: Any, cols: list[str]) -> Any:
    """The events' join key as text, built like store.key_array builds the table's."""
    from pyspark.sql import functions as F

    parts = [F.col(f"`{c}`").cast("string") for c in cols]
    if len(parts) == 1:
        return parts[0]
    present = functools.reduce(lambda a, b: a & b, [p.isNotNull() for p in parts])
    return F.when(present, F.concat_ws("\x1f", *parts))
