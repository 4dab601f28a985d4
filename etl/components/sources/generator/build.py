"""generator source: its builder (the events themselves are reader.py's: the module Spark's Python processes
import, kept free of the compile layer).

Its `offsets` engine (etl.physical.engines): `index-jvm` reads etl/jvm/GeneratorIndex.java's event indices, whose
offsets the JVM keeps, and makes their events in Spark's shared Python workers (mapInArrow over reader.events_of);
`python-source`, without etl's jar, reads reader.py's Python data source, which makes them in its read (and for
which Spark keeps a Python process per query). Both give the same rows and offsets."""

from __future__ import annotations

import functools
import json
from typing import Any

from etl.components.sources.generator.reader import NAME, GeneratorDataSource, ddl, events_of, spec_options
from etl.connectors.api import CompileError, register_data_source, with_event_time
from etl.spec.generated import field_order, parse_time

INDEX = "etl.jvm.GeneratorIndex"  # the event indices and their offsets, in the JVM (etl/jvm)


def build(ctx: Any, node: Any) -> Any:
    spec = node.spec
    opts = spec_options(spec)
    try:
        field_order(opts["fields"])
        parse_time(spec.start_time)
    except ValueError as e:
        raise CompileError(f"generator '{node.id}': {e}", node, "fields", code="E406") from None
    parallelism = str(max(1, ctx.spark.sparkContext.defaultParallelism))
    if ctx.built_with(node, "offsets") == "index-jvm":
        df = indexed_events(ctx.spark.readStream, opts, parallelism)
    else:
        register_data_source(ctx.spark, GeneratorDataSource)
        df = (ctx.spark.readStream.format(NAME).option("spec", json.dumps(opts))
              .option("partitions", parallelism).load())
    if spec.event_time is not None:
        df = with_event_time(df, node, spec.event_time)
    return df


def indexed_events(reader: Any, opts: dict[str, Any], partitions: str) -> Any:
    """The events of GeneratorIndex.java's indices read by `reader` (spark.readStream or spark.read): the columns
    and types the Python data source declares (its schema), made by the same numpy code."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(ddl(opts))
    assert isinstance(schema, StructType)
    reader = reader.format(INDEX).option("rowsPerBatch", str(opts["rows_per_batch"])).option("partitions", partitions)
    for key in ("count", "rate"):
        if opts[key] is not None:
            reader = reader.option(key, str(opts[key]))
    fn = functools.partial(events_of, opts, to_arrow_schema(schema, timezone="UTC"))
    return reader.load().mapInArrow(fn, schema)
