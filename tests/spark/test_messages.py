"""JSON message values -> declared columns with dead-letter reasons, as the kafka and rocketmq sources decode them."""

from __future__ import annotations

import pytest

from etl.compile.context import ERR, PAYLOAD, CompileError
from etl.components.sources.kafka import build as kafka
from etl.components.sources.rocketmq import build as rocketmq
from etl.components.sources.kafka.spec import KafkaSource
from etl.components.sources.rocketmq.spec import RocketMQSource

pytestmark = pytest.mark.spark

VALUES = ['{"id": 1, "name": "a"}', '  {"id": 2}', "not json {", "[1, 2]", '{"id": "x"}', "", None]


class _Node:
    def __init__(self, spec):
        self.id, self.spec, self.span = spec.id, spec, "p.yaml:3:5"


def _rows(df):
    return [(r["id"], r["name"], r[ERR], r[PAYLOAD]) for r in df.collect()]


@pytest.mark.parametrize("parser", ["json-parse-jvm", "from_json"])  # the physical plan's engines
def test_kafka_and_rocketmq_decode_the_same_way_except_for_null_values(spark, parser):
    schema = {"id": "bigint", "name": "string"}
    ks = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                                     "format": "json", "schema": schema})
    rs = RocketMQSource.model_validate({"id": "r", "type": "rocketmq", "namesrv": "127.0.0.1:1", "topic": "t",
                                        "group": "g", "format": "json", "schema": schema})
    df = spark.createDataFrame([(None if v is None else v.encode(),) for v in VALUES], "value binary")
    got_k = _rows(kafka.decode(df, ks, _Node(ks), "p", parser))
    got_r = _rows(rocketmq.decode(df.withColumnRenamed("value", "body"), rs, _Node(rs), parser))
    mismatch = "json does not match the declared schema (id bigint, name string)"
    expected = [(1, "a", None, VALUES[0]), (2, None, None, VALUES[1]),
                (None, None, "malformed json", "not json {"), (None, None, "json value is not an object", "[1, 2]"),
                (None, None, mismatch, '{"id": "x"}')]
    assert got_k == expected + [(None, None, "empty message value", ""),
                                (None, None, "null message value (tombstone)", None)]
    assert got_r == expected + [(None, None, "empty message body", ""), (None, None, "empty message body", None)]


def test_json_without_a_schema_names_the_source(spark):
    ks = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                                     "format": "json"})
    df = spark.createDataFrame([(b"{}",)], "value binary")
    with pytest.raises(CompileError, match="p.yaml:3:5: E405 kafka source 'k': format json needs a declared schema"):
        kafka.decode(df, ks, _Node(ks), "p")


@pytest.mark.parametrize("parser", ["json-parse-jvm", "from_json"])
def test_a_value_over_the_maximum_record_size_is_not_parsed(spark, parser, monkeypatch):
    from etl import settings

    monkeypatch.setenv("ETL_MAX_RECORD_MB", "1")
    settings.reset()
    ks = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                                     "format": "json", "schema": {"id": "bigint", "name": "string"}})
    big = '{"id": 3, "name": "' + "é" * (512 * 1024) + '"}'  # 1 MB + 21 bytes, 524,309 characters
    fits = '{"id": 4, "name": "' + "n" * (1024 * 1024 - 22) + '"}'  # 1 MB less a byte: parsed
    df = spark.createDataFrame([(v.encode(),) for v in (big, fits)], "value binary")
    got = _rows(kafka.decode(df, ks, _Node(ks), "p", parser))
    assert got[0] == (None, None, f"record of {1024 * 1024 + 21} bytes is over the maximum record size of 1048576 "
                                  "bytes (ETL_MAX_RECORD_MB); payload: its first 1024 characters", big[:1024])
    assert got[1] == (4, "n" * (1024 * 1024 - 22), None, fits)
