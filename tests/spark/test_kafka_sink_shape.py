"""The kafka sink's shaping columns (key, the row as JSON, headers) are built once per list of column names on the
driver and reused for every batch's frame (issue 42: per-batch py4j round trips), and still mean each frame's rows."""

from __future__ import annotations

import pytest

from etl import registry
from etl.runtime.sink import SinkContext

pytestmark = pytest.mark.spark


def test_kafka_sink_builds_its_columns_once_per_column_list(spark, tmp_path):
    from etl.components.sinks.kafka.build import KafkaSink

    spec = registry.lookup("sink", "kafka").spec.model_validate(
        {"id": "out", "inputs": ["x"], "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topic": "t",
         "key": "id", "headers": {"h": "upper(host)"}})
    sink = KafkaSink(spec, SinkContext("p", "out", "q", str(tmp_path / "ckpt"), str(tmp_path)))
    first = spark.createDataFrame([(1, "a")], "id long, host string")
    cols = sink.prepare_columns(first)
    second = spark.createDataFrame([(2, "b")], "id long, host string")  # the next batch: the same columns
    again = sink.prepare_columns(second)
    assert len(again) == 3 and all(a is b for a, b in zip(cols, again, strict=True))
    assert [tuple(r) for r in second.select(*again).collect()] == [("2", '{"id":2,"host":"b"}', "B")]
    assert [tuple(r) for r in first.select(*cols).collect()] == [("1", '{"id":1,"host":"a"}', "A")]
    wider = spark.createDataFrame([(3, "c", 1.5)], "id long, host string, x double")  # other columns: built anew
    other = sink.prepare_columns(wider)
    assert other[1] is not cols[1]
    assert [tuple(r) for r in wider.select(*other).collect()] == [("3", '{"id":3,"host":"c","x":1.5}', "C")]
