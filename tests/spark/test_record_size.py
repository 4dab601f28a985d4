"""The record-size guard of the sources whose reader does not bound lines itself (etl.compile.deadletter's
within_record_size): a csv or parquet row, a kafka/rocketmq `text` or `raw` value over ETL_MAX_RECORD_MB is a dead
letter of its source with its size and first 1,024 characters; a record of exactly the maximum passes, and the
batch's other rows are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl import settings
from etl.compile.context import ERR, PAYLOAD
from etl.components.sources.kafka import build as kafka
from etl.components.sources.rocketmq import build as rocketmq
from etl.components.sources.kafka.spec import KafkaSource
from etl.components.sources.rocketmq.spec import RocketMQSource
from tests.spark.helpers import checked
from tests.spark.test_physical_run import run_once

pytestmark = pytest.mark.spark
CAP = 1024 * 1024
OVER = (f"record of {CAP + 1} bytes is over the maximum record size of {CAP} bytes (ETL_MAX_RECORD_MB); payload: "
        "its first 1024 characters")
BIG = "é" * (CAP // 2) + "x"  # 1 MB + 1 byte, 524,289 characters
FITS = "n" * CAP  # exactly the maximum: passes

PIPELINE = """\
name: sizes
sources:
  - {id: rows, type: file, path: csv_in, format: csv, header: true, schema: {id: int, name: string}}
  - {id: cols, type: file, path: pq_in, format: parquet, schema: {id: int, name: string}}
sinks:
  - {id: csv_out, type: file, input: rows, path: csv_out}
  - {id: pq_out, type: file, input: cols, path: pq_out}
checkpoint: state
"""


@pytest.fixture
def one_mb(monkeypatch):
    monkeypatch.setenv("ETL_MAX_RECORD_MB", "1")
    settings.reset()
    yield
    settings.reset()


def lines(folder: Path) -> list[dict]:
    return [json.loads(x) for f in sorted(folder.glob("part-*")) for x in f.read_text().splitlines()]


def test_a_csv_or_parquet_row_over_the_maximum_is_its_sources_dead_letter(spark, tmp_path, one_mb):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [(1, "a"), (2, BIG), (3, FITS)]
    (tmp_path / "csv_in").mkdir()
    (tmp_path / "csv_in" / "a.csv").write_text("id,name\n" + "".join(f"{i},{s}\n" for i, s in rows))
    (tmp_path / "pq_in").mkdir()
    pq.write_table(pa.table({"id": pa.array([i for i, _ in rows], pa.int32()), "name": [s for _, s in rows]}),
                   tmp_path / "pq_in" / "a.parquet")
    c = checked(tmp_path, PIPELINE)
    run_once(spark, c.plan, tmp_path / "state")
    for out in ("csv_out", "pq_out"):
        assert sorted((r["id"], r["name"]) for r in lines(tmp_path / out)) == [(1, "a"), (3, FITS)]
    dead = sorted((d["stage"], d["reason"], d["payload"]) for d in lines(tmp_path / "dead_letters"))
    payload = ('{"id":2,"name":"' + BIG)[:1024]
    assert dead == [("cols", OVER, payload), ("rows", OVER, payload)]


def _rows(df, column):
    return [(r[column], r[ERR], r[PAYLOAD]) for r in df.collect()]


def test_a_text_or_raw_message_value_over_the_maximum_is_a_dead_letter(spark, one_mb):
    common = {"format": "text", "value_column": "line"}
    ks = KafkaSource.model_validate({"id": "k", "type": "kafka", "bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                                     **common})
    rs = RocketMQSource.model_validate({"id": "r", "type": "rocketmq", "namesrv": "127.0.0.1:1", "topic": "t",
                                        "group": "g", **common})
    df = spark.createDataFrame([(b"k", v.encode(), "t", None, None) for v in ("a", BIG, FITS)],
                               "key binary, value binary, topic string, timestamp timestamp, "
                               "headers array<struct<key: string, value: binary>>")
    want = [("a", None, None), (None, OVER, BIG[:1024]), (FITS, None, None)]
    got = _rows(kafka.decode(df, ks, None, "p"), "line")
    assert [(v if e is None else None, e, p) for v, e, p in got] == want
    body = df.select("key", df.value.alias("body"), "topic", "timestamp", df.topic.alias("tags"))
    got = _rows(rocketmq.decode(body, rs, None), "line")
    assert [(v if e is None else None, e, p) for v, e, p in got] == want
    # raw: the bytes; the dead letter's payload is their base64
    raw = KafkaSource.model_validate({**ks.model_dump(by_alias=True), "format": "raw"})
    got = _rows(kafka.decode(df, raw, None, "p"), "line")
    import base64

    assert [(v if e is None else None, e, p) for v, e, p in got] == [
        (b"a", None, None), (None, OVER, base64.b64encode(BIG.encode()).decode()[:1024]), (FITS.encode(), None, None)]


def test_spark_json_readers_rows_over_the_maximum_malformed_or_not(spark, tmp_path, one_mb):
    """Spark's json reader (no etl jar) through the file source's rows (guarded_rows): a row over the maximum is the
    guard's dead letter, a malformed line over it too with its own first characters (not its NULL values'), and
    the good rows' filter is `size <= cap AND corrupt IS NULL` with the IsNull pushed into the reader, as without
    the guard."""
    from etl.compile.deadletter import ok_frame
    from etl.components.sources.file.build import CORRUPT, guarded_rows

    broken = '{"id": 4, "name": "' + BIG  # unterminated: malformed, 1 MB + 20 bytes
    lines = ['{"id": 1, "name": "a"}', json.dumps({"id": 2, "name": BIG}, ensure_ascii=False), '{"id": 3, "name": ',
             broken, '{"id": 5, "name": "' + FITS[:-30] + '"}']
    (tmp_path / "in.jsonl").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    df = (spark.read.schema(f"id int, name string, {CORRUPT} string").option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", CORRUPT).option("maxStringLen", str(CAP)).json(str(tmp_path)))
    shared = guarded_rows(df, [f for f in df.schema.fields if f.name != CORRUPT], "malformed json line")
    got = sorted(((r["id"] if r[ERR] is None else None, r[ERR], r[PAYLOAD] and r[PAYLOAD][:1024])
                  for r in shared.collect()), key=str)
    size = len(broken.encode())
    assert got == sorted([
        (1, None, None), (5, None, None),
        (None, OVER, ('{"id":2,"name":"' + BIG)[:1024]),
        (None, "malformed json line", '{"id": 3, "name": '),
        (None, OVER.replace(str(CAP + 1), str(size), 1), broken[:1024])], key=str)
    plan = ok_frame(shared)._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [IsNull(_etl_corrupt)]" in plan
    assert sorted(r["id"] for r in ok_frame(shared).collect()) == [1, 5]


def test_a_malformed_csv_line_over_the_maximum_without_string_columns(spark, tmp_path, one_mb):
    """A csv of no string column: its malformed lines are measured all the same (the reader's corrupt record)."""
    from etl.components.sources.file.build import CORRUPT, guarded_rows

    big = "1," + "9" * CAP  # n is not an int: malformed, CAP + 2 bytes
    (tmp_path / "in.csv").write_text(f"id,n\n1,2\n{big}\nx,3\n")
    df = (spark.read.schema(f"id int, n int, {CORRUPT} string").option("header", "true").option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", CORRUPT).csv(str(tmp_path)))
    shared = guarded_rows(df, [f for f in df.schema.fields if f.name != CORRUPT], "malformed csv line")
    got = sorted(((r["id"] if r[ERR] is None else None, r[ERR], r[PAYLOAD]) for r in shared.collect()), key=str)
    assert got == sorted([(1, None, None), (None, "malformed csv line", "x,3"),
                          (None, OVER.replace(str(CAP + 1), str(CAP + 2), 1), big[:1024])], key=str)
