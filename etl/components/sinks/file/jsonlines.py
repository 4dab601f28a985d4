"""JSON lines rendered in the JVM: etl/jvm/JsonLines.java where it writes every column type, else to_json.

`json_lines(df)` returns (column, ends_with_newline). The Java renderer gives the
text to_json(struct(...)) gives (tests/spark/test_jsonlines.py compares them on
every supported type) followed by a newline, so a sink can write the column's
bytes as they are; it writes strings, booleans, numbers, decimals, dates,
timestamps and arrays or structs of them -- a frame with another type (a map,
binary ...) is rendered with to_json, without newlines.
"""

from __future__ import annotations

from typing import Any

from etl.connectors.api import jvm

CLASS = "etl.jvm.JsonLines"


def writable(t: Any) -> bool:
    """A Spark type JsonLines.java writes."""
    from pyspark.sql import types as T

    if isinstance(t, (T.StringType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType,
                      T.FloatType, T.DoubleType, T.DecimalType, T.DateType)):
        return True
    if type(t) is T.TimestampType:  # not TimestampNTZType
        return True
    if isinstance(t, T.ArrayType):
        return writable(t.elementType)
    if isinstance(t, T.StructType):
        return all(writable(f.dataType) for f in t.fields)
    return False


def json_lines(df: Any, engine: str | None = None) -> tuple[Any, bool]:
    """The frame's rows as JSON text: (column, whether each value ends with a newline). `engine`: the physical
    plan's (json-jvm: JsonLines.java where it writes every column type; to_json); None: json-jvm where the
    session has etl's jar."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructType

    row = F.struct(*[F.col(f"`{c}`") for c in df.columns])
    spark = df.sparkSession
    if engine != "to_json" and (engine == "json-jvm" or jvm.available(spark)) and writable(df.schema):
        schema = StructType(list(df.schema.fields))
        zone = spark.conf.get("spark.sql.session.timeZone")
        return jvm.static_call(spark, CLASS, "render", StringType(), row, F.lit(schema.json()), F.lit(zone)), True
    return F.to_json(row), False
