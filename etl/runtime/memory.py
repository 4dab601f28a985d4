"""Given events as a streaming source: what `etl test` feeds a pipeline with.

The events are converted to the declared column types (ISO 8601 text ->
timestamp, numbers, nested values as given), written as JSON lines and read by
Spark's file source: no Python worker has to start (a Python data source would
start two per query).

A multi-batch test writes one *feed* file per batch, holding the events of
every source (`_etl_src` names the source, `_etl_row` holds the event as JSON),
moved into the feed folder in one rename. Every source of a query reads the
same streaming DataFrame (`feed_stream`) and keeps its own rows
(`source_from_feed`): Spark sees one source, so a batch's events of all sources
land in the same micro-batch, never split by a trigger that fires between two
files.
"""

from __future__ import annotations

import json
from datetime import date, datetime, UTC
from typing import Any

FEED_DDL = "_etl_src string, _etl_row string"
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]XXX"


def to_timestamp(v: Any) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v if v is None or v.tzinfo else v.replace(tzinfo=UTC)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return datetime.fromtimestamp(v / 1000.0, tz=UTC)
    t = datetime.fromisoformat(str(v).strip().replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


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


def write_feed(folder: str, index: int, batch: dict[str, tuple[list[dict[str, Any]], str]]) -> None:
    """Batch `index`: source id -> (events, column DDL), typed and written as one file renamed into `folder`."""
    import os

    from pyspark.sql.types import StructType, _parse_datatype_string

    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(os.path.dirname(folder.rstrip("/")), f".feed-{index:05d}.jsonl")
    with open(tmp, "w", encoding="utf-8") as fh:
        for source_id, (rows, ddl) in batch.items():
            schema = _parse_datatype_string(ddl)
            assert isinstance(schema, StructType)
            for row in rows:
                typed = {f.name: _json_value(convert(row.get(f.name), f.dataType)) for f in schema.fields}
                fh.write(json.dumps({"_etl_src": source_id, "_etl_row": json.dumps(typed, default=str)}) + "\n")
    os.replace(tmp, os.path.join(folder, f"batch-{index:05d}.jsonl"))


def feed_stream(spark: Any, folder: str) -> Any:
    """The feed folder as one streaming DataFrame (share it between the sources of a query)."""
    from pyspark.sql.types import _parse_datatype_string

    return spark.readStream.schema(_parse_datatype_string(FEED_DDL)).option("mode", "FAILFAST").json(folder)


def source_from_feed(feed: Any, source_id: str, ddl: str) -> Any:
    """The rows of one source in the feed, with its columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    schema: Any = _parse_datatype_string(ddl)  # a StructType (typed DataType)
    row = F.from_json("_etl_row", schema, {"mode": "FAILFAST", "timestampFormat": TIME_FORMAT})
    return feed.where(F.col("_etl_src") == source_id).select(row.alias("_etl_r")).select("_etl_r.*")
