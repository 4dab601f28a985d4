"""generator source: its builder (the data source itself is reader.py's: the module Spark's Python processes
import, kept free of the compile layer)."""

from __future__ import annotations

import json
from typing import Any

from etl.components.sources.generator.reader import NAME, GeneratorDataSource, spec_options
from etl.connectors.api import CompileError, register_data_source, with_event_time
from etl.spec.generated import field_order, parse_time


def build(ctx: Any, node: Any) -> Any:
    spec = node.spec
    opts = spec_options(spec)
    try:
        field_order(opts["fields"])
        parse_time(spec.start_time)
    except ValueError as e:
        raise CompileError(f"generator '{node.id}': {e}", node, "fields", code="E406") from None
    register_data_source(ctx.spark, GeneratorDataSource)
    parallelism = max(1, ctx.spark.sparkContext.defaultParallelism)
    df = (ctx.spark.readStream.format(NAME).option("spec", json.dumps(opts))
          .option("partitions", str(parallelism)).load())
    if spec.event_time is not None:
        df = with_event_time(df, node, spec.event_time)
    return df
