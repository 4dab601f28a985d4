"""The kafka sink in Spark's real-time mode: Spark's own Kafka sink (the kafka sink spec's REALTIME_WRITER).

The rows come shaped by the kafka sink itself (etl.components.sinks.kafka.build.KafkaSink.prepare_columns: key =
the `key` expression, value = the row as to_json, `_h<i>` = the `headers` expressions), so a record is the same as
in a micro-batch run; a NULL header is left out, as the micro-batch sink does. The connection is the kafka source's
(`bootstrap_servers`, `security` through etl.connectors.kafka_security.spark_options). Delivery is at least once:
Spark's producer has no transactions (etl.graph.realtime requires `delivery: at_least_once`). A message larger than
the topic takes fails the query (Spark's producer), where a micro-batch run sends it to dead letters.
"""

from __future__ import annotations

from typing import Any

from etl.connectors.kafka_security import spark_options


def writer(frame: Any, spec: Any, base_dir: str | None = None) -> Any:
    """The DataStreamWriter of `frame` (key, value, `_h<i>` columns) to the sink's topic."""
    from pyspark.sql import functions as F

    cols = [F.col("key"), F.col("value")]
    if spec.headers:
        pairs = F.array(*[F.struct(F.lit(name).alias("key"), F.col(f"_h{i}").cast("binary").alias("value"))
                          for i, name in enumerate(spec.headers)])
        cols.append(F.filter(pairs, lambda h: h["value"].isNotNull()).alias("headers"))
    w = frame.select(*cols).writeStream.format("kafka")
    options = {"kafka.bootstrap.servers": spec.bootstrap_servers, "topic": spec.topic,
               **spark_options(spec.security, base_dir)}
    for k, v in options.items():
        w = w.option(k, v)
    return w
