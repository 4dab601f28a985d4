"""etl/jvm/JsonLinesFormat.java: the file source's jsonl reader gives exactly the rows of Spark's own json reader
(PERMISSIVE with a corrupt-record column) -- malformed lines, wrong types, arrays of objects with a bad element,
blank lines, scalars -- and its pushed filters; other modes are Spark's reader itself."""

from __future__ import annotations

import pytest

from etl.compile import jvm
from etl.connectors.sources.file import JSON_LINES

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
]
DDL = "id bigint, host string, status int, ts timestamp, tags array<string>, _bad string"


def read(spark, fmt, path, **options):
    reader = spark.read.format(fmt).schema(DDL).option("columnNameOfCorruptRecord", "_bad")
    return reader.options(**options).load(str(path))


def test_same_rows_as_sparks_json_reader(spark, tmp_path):
    assert jvm.available(spark)
    (tmp_path / "a.jsonl").write_text("\n".join(LINES) + "\n")
    (tmp_path / "b.jsonl").write_text('{"id": 8}\n{"id": 9, oops}\n')
    want = read(spark, "json", tmp_path, mode="PERMISSIVE").collect()
    got = read(spark, JSON_LINES, tmp_path, mode="PERMISSIVE").collect()
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    assert len(got) == 14  # the arrays give two rows each (the one with a bad element too), blank lines none
    assert sorted(r["_bad"] for r in got if r["_bad"] is not None) == sorted([
        "{bad json", '{"id": "x", "host": "b"}', '[{"id": 5}, {"id": "y"}]', '[{"id": 5}, {"id": "y"}]',
        '{"id": 6, "status": "abc", "host": "h"}', "123", '"str"', '{"id": 9, oops}'])
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
