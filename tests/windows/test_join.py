"""Stream-stream joins (inner, left) against a nested-loop oracle."""

from __future__ import annotations

import json

import pytest

from etl.compile.joining import stream_join
from etl.spec.base import EventTime
from etl.components.transforms.join.spec import JoinTransform
from tests.windows.harness import assert_rows_equal, rows_of
from tests.windows.join_data import DELAY_S, LEFT_SCHEMA, RIGHT_SCHEMA, WITHIN_S, make_streams, oracle_join

# no module-wide `spark` mark: tests/conftest.py marks each test that asks for `spark` (also through this
# module's fixtures); the checks of the data and the oracle alone run in the fast lane (no JVM)


def spec(how: str) -> JoinTransform:
    return JoinTransform.model_validate({"id": "j", "type": "join", "inputs": ["l", "r"], "on": ["k"], "how": how,
                                         "within": f"{WITHIN_S}s"})


def test_data_exercises_the_join():
    left, right = make_streams()
    inner = oracle_join(left, right, "inner", WITHIN_S * 1000)
    outer = oracle_join(left, right, "left", WITHIN_S * 1000)
    flat = [e for b in left for e in b]
    assert len(inner) > 10 and len(outer) > len(inner)
    assert len({json.dumps(e) for e in flat}) < len(flat)


@pytest.fixture(scope="module")
def joined(spark, tmp_path_factory):
    """Inner and left joins side by side in one query."""
    from pyspark.sql import functions as F

    tmp = tmp_path_factory.mktemp("join")
    left, right = make_streams()
    (tmp / "l.json").write_text(json.dumps(left))
    (tmp / "r.json").write_text(json.dumps(right))
    read = lambda name, schema: (spark.readStream.format("etl_test_batches")  # noqa: E731
                                 .option("path", str(tmp / f"{name}.json")).option("schema", schema).load())
    et = EventTime(field="ts", watermark=DELAY_S)
    frames = []
    for how in ("inner", "left"):
        res = stream_join(read("l", LEFT_SCHEMA), read("r", RIGHT_SCHEMA), spec(how), et, et)
        assert res.renamed == {"rid": "rid", "ts": "right_ts"}
        frames.append(res.df.withColumn("_how", F.lit(how)))
    q = (frames[0].unionByName(frames[1]).writeStream.format("memory").queryName("joins")
         .option("checkpointLocation", str(tmp / "ck")).trigger(processingTime="0 seconds").start())
    q.processAllAvailable()
    q.stop()
    return left, right, rows_of(spark.table("joins"))


@pytest.mark.parametrize("how", ["inner", "left"])
def test_stream_join(joined, how):
    left, right, rows = joined
    got = [{k: v for k, v in r.items() if k != "_how"} for r in rows if r["_how"] == how]
    assert_rows_equal(got, oracle_join(left, right, how, WITHIN_S * 1000))


def test_a_right_column_differing_in_case_is_renamed(spark, tmp_path):
    """Host and host side by side were an ambiguous reference (Spark resolves names case-insensitively): the
    right one is renamed as validate says (tests/unit/test_join_names.py)."""
    (tmp_path / "none.json").write_text("[]")
    read = lambda schema: (spark.readStream.format("etl_test_batches")  # noqa: E731
                           .option("path", str(tmp_path / "none.json")).option("schema", schema).load())
    res = stream_join(read("k string, Host string, ts timestamp"), read("k string, host string, ts2 timestamp"),
                      spec("inner"), EventTime(field="ts", watermark=DELAY_S), EventTime(field="ts2", watermark=DELAY_S),
                      right_prefix="b_")
    assert res.renamed == {"host": "b_host", "ts2": "ts2"}
    assert res.df.columns == ["k", "Host", "ts", "b_host", "ts2"]
