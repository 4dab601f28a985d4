"""etl/jvm/JsonLinesFormat.java: the file source's jsonl reader gives exactly the rows of Spark's own json reader
(PERMISSIVE with a corrupt-record column) -- malformed lines, wrong types, arrays of objects with a bad element,
blank lines, scalars, timestamps in every form Spark reads or refuses -- and its pushed filters; other modes are
Spark's reader itself."""

from __future__ import annotations

import json
import random

import pytest
from pyspark.sql import functions as F

from etl.compile import jvm
from etl.components.sources.file.build import JSON_LINES

from .helpers import random_timestamp

pytestmark = pytest.mark.spark

LINES = [
    '{"id": 1, "host": "a", "status": 200}',
    "{bad json",
    "",
    '{"id": "x", "host": "b"}',
    '[{"id": 2}, {"id": 3}]',
    '{"id": 4, "ts": "2026-01-01T00:00:00Z", "tags": ["p", "q"]}',
    '[{"id": 5}, {"id": "y"}]',
    '{"id": 6, "status": "abc", "host": "h"}',
    "   ",
    "123",
    '"str"',
    '{"id": 7, "host": "\\u00e9t\\u00e9", "extra": {"deep": 1}}',
    # timestamps: ISO instants with their zone (converted by the reader), anything else (Spark's parser)
    '{"id": 20, "ts": "2024-02-29T23:59:59.999999Z"}',
    '{"id": 21, "ts": "2026-01-10T12:00:00.5+05:30"}',
    '{"id": 22, "ts": "1969-12-31T23:59:59.5Z"}',
    '{"id": 23, "ts": "0001-01-01T00:00:00-17:59"}',
    '{"id": 24, "ts": "9999-12-31T23:59:59.123456+17:59"}',
    '{"id": 25, "ts": "2023-02-29T00:00:00Z"}',
    '{"id": 26, "ts": "2026-01-10 12:00:00"}',
    '{"id": 27, "ts": 1700000000}',
    '{"id": 28, "ts": "2026-01-10T12:00:00.1234567Z"}',
    '{"id": 29, "ts": "2026-01-10T24:00:00Z"}',
    '{"id": 30, "ts": ""}',
    '{"id": 31, "ts": {"a": 1}}',
    '{"id": 32, "ts": "2026-01-10T12:00:00z"}',
    '{"id": 33, "ts": null, "host": "n"}',
    '[{"id": 34, "ts": "2026-01-10T12:00:00Z"}, {"id": 35, "ts": "nope"}]',
    '[{"id": 36, "ts": "2026-01-10T12:00:00Z"}, {"id": 37, "ts": "2026-01-10T12:00:01+01:00"}]',
    '{"id": 38, "ts": "2026-01-10T12:00:00+18:00"}',
    '{"id": 39, "ts": "2026-01-10T12:00:00.Z"}',
    '{"id": 40, "ts": "2026-01-10T12:00Z"}',
    '{"id": 41, "ts": "2026-01-10 12:00:00.25-01:30"}',
]
DDL = "id bigint, host string, status int, ts timestamp, tags array<string>, _bad string"


def read(spark, fmt, path, **options):
    reader = spark.read.format(fmt).schema(DDL).option("columnNameOfCorruptRecord", "_bad")
    return reader.options(**options).load(str(path))


def rows(df):
    """The rows, timestamps as microseconds since the epoch (Python's datetime stops at year 1)."""
    return df.withColumn("ts", F.unix_micros("ts")).collect()


def test_same_rows_as_sparks_json_reader(spark, tmp_path):
    assert jvm.available(spark)
    (tmp_path / "a.jsonl").write_text("\n".join(LINES) + "\n")
    (tmp_path / "b.jsonl").write_text('{"id": 8}\n{"id": 9, oops}\n')
    want = rows(read(spark, "json", tmp_path, mode="PERMISSIVE"))
    got = rows(read(spark, JSON_LINES, tmp_path, mode="PERMISSIVE"))
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    assert len(got) == 36  # the arrays give two rows each (the one with a bad element too), blank lines none
    assert sorted(r["_bad"] for r in got if r["_bad"] is not None) == sorted([
        "{bad json", '{"id": "x", "host": "b"}', '[{"id": 5}, {"id": "y"}]', '[{"id": 5}, {"id": "y"}]',
        '{"id": 6, "status": "abc", "host": "h"}', "123", '"str"', '{"id": 9, oops}',
        *(line for line in LINES if any(f'"id": {i},' in line for i in (25, 29, 30, 31, 32, 40))),
        *['[{"id": 34, "ts": "2026-01-10T12:00:00Z"}, {"id": 35, "ts": "nope"}]'] * 2])
    ts = {r["id"]: r["ts"] for r in got if r["id"] is not None and r["id"] >= 20 and r["_bad"] is None}
    assert ts == {20: 1709251199999999, 21: 1768026600500000, 22: -500000, 23: -62135532060000000,
                  24: 253402236059123456, 26: 1768046400000000, 27: 1700000000000000, 28: 1768046400123456,
                  33: None, 36: 1768046400000000, 37: 1768042801000000, 38: 1767981600000000, 39: 1768046400000000,
                  41: 1768051800250000}
    # a column subset (the corrupt-record column last or in the middle) and a pushed filter
    for cols in (["host", "_bad"], ["_bad", "id"]):
        assert (sorted(map(repr, read(spark, JSON_LINES, tmp_path).select(*cols).where("id > 3 OR id IS NULL")
                           .collect()))
                == sorted(map(repr, read(spark, "json", tmp_path).select(*cols).where("id > 3 OR id IS NULL")
                              .collect())))


def test_other_modes_are_sparks_reader(spark, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": 1}\n{bad\n{"id": 2}\n')
    dropped = read(spark, JSON_LINES, tmp_path, mode="DROPMALFORMED").drop("_bad").collect()
    assert [r["id"] for r in dropped] == [1, 2]
    multi = tmp_path / "m"
    multi.mkdir()
    (multi / "a.json").write_text('{\n "id": 10\n}\n')
    assert [r["id"] for r in read(spark, JSON_LINES, multi, multiLine="true").collect()] == [10]


def test_random_timestamps_read_as_sparks_reader_reads_them(spark, tmp_path):
    """In files of 50 lines: a reader converts the first 64 timestamps of a file here whatever their share of other
    texts (after that, when more than one in 8 was not an ISO instant, Spark's parser reads the rest)."""
    rng = random.Random(20)
    lines = [json.dumps({"id": i, "ts": random_timestamp(rng)}) for i in range(3000)]
    for f in range(0, len(lines), 50):
        (tmp_path / f"t{f:04d}.jsonl").write_text("\n".join(lines[f:f + 50]) + "\n")
    want = rows(read(spark, "json", tmp_path, mode="PERMISSIVE").select("id", "ts", "_bad"))
    got = rows(read(spark, JSON_LINES, tmp_path, mode="PERMISSIVE").select("id", "ts", "_bad"))
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    good = sum(r["_bad"] is None for r in got)
    assert 1000 < good < 2900  # both kinds of line are there


def test_a_file_of_timestamps_without_a_zone_reads_as_sparks_reader_reads_it(spark, tmp_path):
    """Past the first 64 lines of a file most without a zone, Spark's parser reads the rest (each once)."""
    lines = [json.dumps({"id": i, "ts": f"2026-01-10 12:00:{i % 60:02d}" if i < 300 else f"2026-01-10T12:00:{i % 60:02d}Z"})
             for i in range(400)]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    want = rows(read(spark, "json", tmp_path, mode="PERMISSIVE").select("id", "ts", "_bad"))
    got = rows(read(spark, JSON_LINES, tmp_path, mode="PERMISSIVE").select("id", "ts", "_bad"))
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    assert len(got) == 400 and all(r["_bad"] is None and r["ts"] is not None for r in got)
