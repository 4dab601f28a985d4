"""kafka source: Spark's own Kafka connector (java/lib/spark, see scripts/setup-java.sh).

* `topics` (subscribe) or `pattern` (subscribePattern); `starting_offsets`
  earliest / latest / {topic: {partition: offset}}; `max_offsets_per_trigger`.
* Offsets live in the query's checkpoint: a restarted run resumes, a replayed
  micro-batch re-reads exactly the same offsets.
* Reads committed data only (`kafka.isolation.level=read_committed`), so the
  output of an exactly-once kafka sink is read without aborted transactions;
  `options: {isolation.level: read_uncommitted}` overrides it.
* `format: json` decodes values to the declared schema; a value that is not
  JSON, not an object, or does not fit the schema goes to dead letters with
  the reason and the original text. `text` / `raw` keep the value as a string /
  bytes next to key, topic, timestamp and headers (map of string to string).
* `options`: extra consumer settings (`security.protocol: SASL_SSL`, ...) get
  the `kafka.` prefix; Spark's own source options (failOnDataLoss,
  minPartitions, ...) pass as they are.
"""

from __future__ import annotations

import json
from typing import Any

from etl.compile.context import CompileContext, CompileError
from etl.compile.deadletter import from_shared
from etl.compile.watermark import with_event_time
from etl.connectors.sources.messages import decode_json
from etl.graph.model import Node

PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# Spark Kafka source options that are not consumer settings (no `kafka.` prefix)
SPARK_OPTIONS = frozenset({
    "failOnDataLoss", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions", "groupIdPrefix", "includeHeaders",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "maxRecordsPerPartition", "assign",
})


def consumer_options(spec: Any) -> dict[str, str]:
    """Options of spark.readStream.format('kafka') for a KafkaSource spec."""
    opts: dict[str, str] = {
        "kafka.bootstrap.servers": spec.bootstrap_servers,
        "kafka.isolation.level": "read_committed",
    }
    if spec.format != "json":  # json values become the declared columns only: no header conversion per row
        opts["includeHeaders"] = "true"
    if spec.topics is not None:
        opts["subscribe"] = ",".join(spec.topics)
    else:
        opts["subscribePattern"] = spec.pattern
    so = spec.starting_offsets
    opts["startingOffsets"] = so if isinstance(so, str) else json.dumps(so)
    if spec.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(spec.max_offsets_per_trigger)
    for k, v in spec.options.items():
        opts[k if k.startswith("kafka.") or k in SPARK_OPTIONS else f"kafka.{k}"] = str(v)
    return opts


def check_reachable(bootstrap: str, timeout: float = 10.0, extra: dict[str, str] | None = None) -> str | None:
    """None when a broker answers a metadata request, else the reason (needs confluent-kafka; skipped without)."""
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return None
    conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout * 1000), "log_level": 0,
            "logger": _silent}
    conf.update({k: v for k, v in (extra or {}).items()
                 if k not in ("bootstrap.servers", "logger") and not k.startswith("kafka.") and k not in SPARK_OPTIONS})
    try:
        AdminClient(conf).list_topics(timeout=timeout)
    except KafkaException as e:
        err = e.args[0] if e.args else e
        return getattr(err, "str", lambda: str(err))()
    except ValueError as e:  # bad client configuration
        return str(e)
    return None


class _Silent:
    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


_silent = _Silent()


def _require(ctx: CompileContext, node: Node) -> None:
    from etl.runtime.session import MissingConnector, require_class

    try:
        require_class(ctx.spark, PROVIDER, f"kafka source '{node.id}'")
    except MissingConnector as e:
        raise CompileError(str(e), node, "type", code="E407") from None
    reason = check_reachable(node.spec.bootstrap_servers, extra=dict(node.spec.options))
    if reason is not None:
        raise CompileError(f"kafka source '{node.id}': cannot reach Kafka at {node.spec.bootstrap_servers}: "
                           f"{reason}", node, "bootstrap_servers",
                           "check bootstrap_servers (host:port of a broker) and that the broker runs", code="E407")


def _headers(col: Any) -> Any:
    from pyspark.sql import functions as F

    # array<struct<key string, value binary>> -> map<string, string> (a repeated header keeps the last value)
    pairs = F.transform(col, lambda h: F.struct(h["key"].alias("key"), h["value"].cast("string").alias("value")))
    return F.when(col.isNull(), F.create_map().cast("map<string,string>")).otherwise(F.map_from_entries(pairs))


def decode(df: Any, spec: Any, node: Node, pipeline: str) -> Any:
    """Raw Kafka rows -> the source's columns (json: shared frame with dead-letter columns)."""
    from pyspark.sql import functions as F

    if spec.format != "json":
        value = F.col("value") if spec.format == "raw" else F.col("value").cast("string")
        return df.select(F.col("key").cast("string").alias("key"), value.alias(spec.value_column),
                         F.col("topic"), F.col("timestamp"), _headers(F.col("headers")).alias("headers"))
    return decode_json(df, F.col("value").cast("string"), spec, node, "kafka", empty="empty message value",
                       null="null message value (tombstone)")


def build(ctx: CompileContext, node: Node) -> Any:
    spec = node.spec
    _require(ctx, node)
    reader = ctx.spark.readStream.format("kafka")
    for k, v in consumer_options(spec).items():
        reader = reader.option(k, v)
    raw = reader.load()
    out = decode(raw, spec, node, ctx.pipeline)
    et = spec.event_time
    if spec.format != "json":
        return with_event_time(out, node, et) if et is not None else out
    if et is not None:
        out = with_event_time(out, node, et)
    return from_shared(out, ctx.pipeline, node.id)
