"""Given events as a streaming source: what `etl test` feeds a pipeline with.

The events are converted to the declared column types (ISO 8601 text ->
timestamp, numbers, nested values as given), written as one JSON-lines file
and read by Spark's file source: every event is in the first micro-batch, and
no Python worker has to start (a Python data source would start two per query).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any


def to_timestamp(v: Any) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v if v is None or v.tzinfo else v.replace(tzinfo=timezone.utc)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return datetime.fromtimestamp(v / 1000.0, tz=timezone.utc)
    t = datetime.fromisoformat(str(v).strip().replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def convert(value: Any, dtype: Any) -> Any:
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        t = to_timestamp(value)
        return t.replace(tzinfo=None) if isinstance(dtype, T.TimestampNTZType) and t else t
    if isinstance(dtype, T.DateType):
        return value if isinstance(value, date) else date.fromisoformat(str(value))
    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return int(value)
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return float(value)
    if isinstance(dtype, T.DecimalType):
        from decimal import Decimal

        return Decimal(str(value))
    if isinstance(dtype, T.BooleanType):
        return value if isinstance(value, bool) else str(value).lower() in ("true", "1", "yes")
    if isinstance(dtype, T.StringType):
        if isinstance(value, str):
            return value
        if isinstance(value, (dict, list)):
            return json.dumps(value, default=str)
        return str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(dtype, T.ArrayType):
        return [convert(v, dtype.elementType) for v in value]
    if isinstance(dtype, T.MapType):
        return {convert(k, dtype.keyType): convert(v, dtype.valueType) for k, v in value.items()}
    if isinstance(dtype, T.StructType):
        return tuple(convert(value.get(f.name), f.dataType) for f in dtype.fields)
    return value


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if hasattr(v, "is_finite"):  # Decimal
        return float(v)
    return v


def stream_from_file(spark: Any, folder: str, rows: list[dict[str, Any]], ddl: str) -> Any:
    """The same events through Spark's JSON file source: no Python worker to start (fast tests).

    Values are converted to the column types first (ISO text for timestamps), so
    Spark's JSON reader sees exactly what the Python data source would produce."""
    import os

    from pyspark.sql.types import StructType, _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    assert isinstance(schema, StructType)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "events.jsonl"), "w", encoding="utf-8") as fh:
        for row in rows:
            typed = {f.name: _json_value(convert(row.get(f.name), f.dataType)) for f in schema.fields}
            fh.write(json.dumps(typed, default=str) + "\n")
    return (spark.readStream.schema(schema).option("mode", "FAILFAST")
            .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX").json(folder))
