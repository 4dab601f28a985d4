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
* `security`: SASL / TLS (etl.spec.transport.KafkaSecurity, the same block as
  the kafka sink's), mapped to Spark's `kafka.security.protocol`,
  `kafka.sasl.mechanism`, `kafka.sasl.jaas.config` and PEM trust / key stores.
* `options`: extra consumer settings (Java client names) get the `kafka.`
  prefix; Spark's own source options (failOnDataLoss, minPartitions, ...)
  pass as they are.
* Start-up check: a metadata request with librdkafka, with `security` and the
  SASL/TLS settings of `options` translated (`sasl.jaas.config` ->
  `sasl.username`/`sasl.password`, ...). A refused login or handshake is E407
  on `security` within about a second; an unreachable broker after 10 s.
"""

from __future__ import annotations

import json
import re
import socket
import time
from typing import Any, NamedTuple

from etl.connectors.api import (CompileContext, CompileError, MissingConnector, from_shared, require_class,
                                with_event_time)
from etl.connectors.kafka_security import librdkafka_conf, spark_options, translate_options
from etl.connectors.messages import bounded_value, decode_json
from etl.graph.model import Node

PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# Spark Kafka source options that are not consumer settings (no `kafka.` prefix)
SPARK_OPTIONS = frozenset({
    "failOnDataLoss", "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions", "groupIdPrefix", "includeHeaders",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "maxRecordsPerPartition", "assign",
})


def consumer_options(spec: Any, base_dir: str | None = None) -> dict[str, str]:
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
    opts.update(spark_options(spec.security, base_dir))
    for k, v in spec.options.items():
        opts[k if k.startswith("kafka.") or k in SPARK_OPTIONS else f"kafka.{k}"] = str(v)
    return opts


class Unreachable(NamedTuple):
    reason: str
    auth: bool  # authentication or TLS handshake refused: trying again will not help


_AUTH_ERRORS = ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL")


def client_conf(spec: Any, base_dir: str | None = None, *, producer: bool = False) -> tuple[dict[str, Any], bool]:
    """(librdkafka settings, complete) of a kafka source or sink: `security` plus the SASL/TLS `options`."""
    conf, complete = translate_options(spec.options, keep_unknown=producer)
    conf.update(librdkafka_conf(spec.security, base_dir))
    return conf, complete


def check_reachable(bootstrap: str, timeout: float = 10.0, conf: dict[str, Any] | None = None,
                    complete: bool = True) -> Unreachable | None:
    """None when a broker answers a metadata request with these settings, else why not.

    A refused login or TLS handshake is reported as soon as the client sees it (within a second or so);
    an unreachable broker after `timeout`. Settings librdkafka cannot express (`complete` false:
    another SASL mechanism, a JKS trust store) leave a TCP connect as the check."""
    if not complete:
        return _tcp_check(bootstrap, timeout)
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return None
    errors: list[Any] = []
    full = {k: v for k, v in (conf or {}).items() if k not in ("bootstrap.servers", "logger", "error_cb")}
    full.update({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout * 1000), "log_level": 0,
                 "logger": _silent, "error_cb": errors.append})
    try:
        admin = AdminClient(full)
    except (KafkaException, ValueError, TypeError) as e:  # bad client configuration
        return Unreachable(_text(e), True)
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return None
        except KafkaException as e:
            last = _text(e)
        admin.poll(0)
        refused = [e for e in errors if e.name() in _AUTH_ERRORS]
        if refused:
            return Unreachable(_CLIENT_NOISE.sub("", refused[-1].str()), True)
        if time.monotonic() >= deadline:
            return Unreachable(last, False)


_CLIENT_NOISE = re.compile(r"^\S+://\S+/(bootstrap|\d+): | \(after \d+ms in state \w+\)$")


def _text(e: Exception) -> str:
    err = e.args[0] if e.args else e
    return getattr(err, "str", lambda: str(err))()


def _tcp_check(bootstrap: str, timeout: float) -> Unreachable | None:
    last = ""
    for hp in bootstrap.split(","):
        host, _, port = hp.strip().rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=min(timeout, 5.0)).close()
            return None
        except (OSError, ValueError) as e:
            last = f"{hp.strip()}: {e}"
    return Unreachable(last or "no broker address", False)


class _Silent:
    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


_silent = _Silent()


def _require(ctx: CompileContext, node: Node) -> None:
    try:
        require_class(ctx.spark, PROVIDER, f"kafka source '{node.id}'")
    except MissingConnector as e:
        raise CompileError(str(e), node, "type", code="E407") from None
    conf, complete = client_conf(node.spec, ctx.graph.base_dir)
    bad = check_reachable(node.spec.bootstrap_servers, conf=conf, complete=complete)
    if bad is None:
        return
    if bad.auth:
        where = "security" if node.spec.security is not None else "options" if node.spec.options else "bootstrap_servers"
        raise CompileError(f"kafka source '{node.id}': Kafka at {node.spec.bootstrap_servers} refused the "
                           f"connection: {bad.reason}", node, where,
                           "check security (protocol, sasl_mechanism, username, password, ca_file) against the "
                           "broker's listener", code="E407")
    raise CompileError(f"kafka source '{node.id}': cannot reach Kafka at {node.spec.bootstrap_servers}: "
                       f"{bad.reason}", node, "bootstrap_servers",
                       "check bootstrap_servers (host:port of a broker), that the broker runs, and that the listener "
                       "speaks the configured security protocol", code="E407")


def _headers(col: Any) -> Any:
    from pyspark.sql import functions as F

    # array<struct<key string, value binary>> -> map<string, string> (a repeated header keeps the last value)
    pairs = F.transform(col, lambda h: F.struct(h["key"].alias("key"), h["value"].cast("string").alias("value")))
    return F.when(col.isNull(), F.create_map().cast("map<string,string>")).otherwise(F.map_from_entries(pairs))


def decode(df: Any, spec: Any, node: Node, pipeline: str, parser: str | None = None) -> Any:
    """Raw Kafka rows -> the source's columns (json: shared frame with dead-letter columns; `parser`: the physical
    plan's json parser)."""
    from pyspark.sql import functions as F

    if spec.format != "json":
        value = F.col("value") if spec.format == "raw" else F.col("value").cast("string")
        return bounded_value(df.select(F.col("key").cast("string").alias("key"), value.alias(spec.value_column),
                                       F.col("topic"), F.col("timestamp"), _headers(F.col("headers")).alias("headers")),
                             spec.value_column)
    return decode_json(df, F.col("value").cast("string"), spec, node, "kafka", empty="empty message value",
                       null="null message value (tombstone)", parser=parser)


def build(ctx: CompileContext, node: Node) -> Any:
    spec = node.spec
    _require(ctx, node)
    reader = ctx.spark.readStream.format("kafka")
    try:
        options = consumer_options(spec, ctx.graph.base_dir)
    except OSError as e:  # a certificate or key file that cannot be read
        raise CompileError(f"kafka source '{node.id}': {e}", node, "security", code="E407") from None
    for k, v in options.items():
        reader = reader.option(k, v)
    raw = reader.load()
    parser = ctx.built_with(node, "parser") if spec.format == "json" else None
    out = decode(raw, spec, node, ctx.pipeline, parser)
    et = spec.event_time
    if et is not None:
        out = with_event_time(out, node, et)
    return from_shared(out, ctx.pipeline, node.id)
