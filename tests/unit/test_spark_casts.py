"""Spark's cast rules (etl/sql/spark_casts.tsv, written by scripts/spark_casts.py; etl.sql.casts): current for the
installed pyspark, recursing into containers as Spark does, and what validate reports of a cast Spark refuses
(tests/spark/test_spark_casts.py asks Spark the same)."""

from __future__ import annotations

from importlib import metadata

import pytest

from etl.sql.casts import FILE, kinds, tables, verdict
from tests.unit.test_spark_catalog import common_pipeline

# casts over s string, b bigint, d double, ts timestamp, tags array<string>, m map<string,string> that validate takes
# (and Spark's analysis: tests/spark/test_spark_casts.py)
TAKEN = [
    "CAST(s AS int)", "CAST(s AS timestamp)", "CAST(s AS binary)", "CAST(b AS timestamp)", "CAST(d AS boolean)",
    "CAST(ts AS date)", "CAST(ts AS bigint)", "CAST(tags AS array<int>)", "CAST(tags AS string)",
    "CAST(m AS map<string,int>)", "CAST(m AS string)", "TRY_CAST(s AS date) IS NULL OR true",
    "b::string", "CAST(b AS interval day)", "CAST(1.5 AS interval day)", "CAST(struct(s, b) AS struct<x: int, y: string>)",
    "CAST(array(ts) AS array<date>)", "CAST(map(b, s) AS map<string,string>)", "CAST(m AS map<int,string>)",
]
# casts Spark's analysis refuses, and validate's E102 at each (line, column)
REFUSED = {
    "CAST(s AS array<int>)": (13, 17), "CAST(m AS int)": (14, 17), "CAST(tags AS map<string,string>)": (15, 17),
    "b::date": (16, 13), "CAST(ts AS binary)": (17, 17), "TRY_CAST(CAST(ts AS date) AS int)": (18, 21),
    "CAST(struct(s, b) AS struct<x: string>)": (19, 17), "CAST(split(s, ',') AS array<array<int>>)": (20, 17),
    "TRY_CAST(m AS map<int,string>) IS NULL": (21, 21), "CAST(ts AS interval day)": (22, 17),
    "CAST(d AS interval day)": (23, 18),
}


def test_the_table_is_current():
    text = FILE.read_text()
    assert f"\npyspark\t{metadata.version('pyspark')}\n" in text
    assert len(kinds()) == 22
    assert {level: len(cells) for level, cells in tables().items()} == {"top": 484, "element": 484, "key": 484}


@pytest.mark.parametrize("src,dst,try_,expected", [
    ("string", "int", False, True), ("string", "array<int>", False, False), ("STRING", "Array<Int>", True, False),
    ("array<string>", "array<int>", False, True), ("array<array<string>>", "array<date>", False, False),
    ("array<date>", "array<int>", False, False), ("array<date>", "array<int>", True, True),  # element: TRY only
    ("map<string,string>", "map<int,string>", False, True), ("map<string,string>", "map<int,string>", True, False),
    ("map<int,string>", "map<decimal(12,2),string>", False, None),  # a key turning NULL: the precisions tell
    ("struct<a:int,b:string>", "struct<x:bigint,y:int>", False, True),
    ("struct<a:int,b:string>", "struct<x:bigint>", False, False),
    ("struct<a: map<string,int> NOT NULL COMMENT 'x'>", "struct<`b c`: string>", False, True),
    ("interval hour to second", "date", False, False), ("interval hour", "int", False, True),
    ("long", "timestamp_ltz", False, True), ("varchar(5)", "char(2)", False, True), ("date", "bigint", False, False),
    ("unknown", "int", False, None), ("interval", "int", False, None), ("geography", "string", False, None),
])
def test_verdict(src, dst, try_, expected):
    assert verdict(src, dst, try_) is expected


def test_casts_spark_takes_validate_clean(tmp_path):
    from etl.check import check_file

    (tmp_path / "p.yaml").write_text(common_pipeline(TAKEN))
    checked = check_file(tmp_path / "p.yaml")
    assert not checked.report.diagnostics, [d.render() for d in checked.report.diagnostics]


def test_casts_spark_refuses_are_e102_at_the_value(tmp_path):
    from etl.check import check_file

    (tmp_path / "p.yaml").write_text(common_pipeline(list(REFUSED)))
    checked = check_file(tmp_path / "p.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in checked.report.diagnostics] == \
        [("E102", *at) for at in REFUSED.values()], [d.render() for d in checked.report.diagnostics]
