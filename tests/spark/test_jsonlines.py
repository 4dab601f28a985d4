"""etl/jvm/JsonLines.java writes exactly what to_json writes (plus a newline), for every type it claims."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pytest

from etl.components.sinks.file.jsonlines import json_lines, writable

pytestmark = pytest.mark.spark

SCHEMA = ("s string, b boolean, i8 tinyint, i16 smallint, i32 int, i64 bigint, f float, d double, "
          "dec decimal(20,7), small decimal(5,0), day date, ts timestamp, tags array<string>, "
          "nums array<double>, inner struct<x: string, y: array<struct<z: int, w: string>>, t: timestamp>")
TEXTS = ["", "plain", 'quote " and \\ backslash', "tab\tnew\nline\rret\bbs\ffeed", "\x00\x01\x1f\x7f",
         "/slash", "naïve ✓ 😀", "\u2028\u2029", "'single'", "{}[],:", "é" * 300,
         # escapes between long plain runs (written 8 bytes at a time around them), at word edges, then non-ASCII
         "a" * 20 + '"' + "b" * 30 + "\\" + "c" * 17 + "\n" + "d" * 9, '"x"' * 40, "1234567\x01" + "z" * 16 + "\x1f",
         "12345678\t" + "y" * 15 + '"', "x" * 13 + '"' + "y" * 20 + "é" + "z" * 9]
DOUBLES = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-7, 1e21, 1.2345678901234567e300, 5e-324, 2.5e-5,
           float("nan"), float("inf"), float("-inf"), 123456789.125]
DECIMALS = [decimal.Decimal(x) for x in ("0", "0.0000001", "-1.5", "1234567890123.1234567", "0E-7", "100")]
DAYS = [dt.date(1, 1, 1), dt.date(1582, 10, 4), dt.date(1970, 1, 1), dt.date(2026, 11, 24), dt.date(9999, 12, 31)]
STAMPS = [dt.datetime(2026, 1, 10, 12, 0, 2, 123456), dt.datetime(1900, 1, 1), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
          dt.datetime(2026, 3, 29, 1, 30), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]


def row(rnd: random.Random) -> tuple:
    def maybe(v):
        return None if rnd.random() < 0.2 else v

    inner = maybe((maybe(rnd.choice(TEXTS)),
                   maybe([maybe((maybe(rnd.randint(-5, 5)), maybe(rnd.choice(TEXTS)))) for _ in range(rnd.randint(0, 3))]),
                   maybe(rnd.choice(STAMPS))))
    return (maybe(rnd.choice(TEXTS)), maybe(rnd.random() < 0.5), maybe(rnd.randint(-128, 127)),
            maybe(rnd.randint(-32768, 32767)), maybe(rnd.randint(-2**31, 2**31 - 1)), maybe(rnd.randint(-2**63, 2**63 - 1)),
            maybe(rnd.choice(DOUBLES)), maybe(rnd.choice(DOUBLES)), maybe(rnd.choice(DECIMALS)),
            maybe(decimal.Decimal(rnd.randint(-99999, 99999))), maybe(rnd.choice(DAYS)), maybe(rnd.choice(STAMPS)),
            maybe([maybe(rnd.choice(TEXTS)) for _ in range(rnd.randint(0, 4))]),
            maybe([maybe(rnd.choice(DOUBLES)) for _ in range(rnd.randint(0, 3))]), inner)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_json_lines_equal_to_json(spark, zone):
    from pyspark.sql import functions as F

    rnd = random.Random(7)
    df = spark.createDataFrame([row(rnd) for _ in range(600)], SCHEMA)
    # text that is not valid UTF-8 (Spark strings can hold it): to_json turns it into U+FFFD
    df = df.union(df.limit(3).withColumn("s", F.unhex(F.lit("C328A0FF61")).cast("string")))
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        col, newline = json_lines(df)
        assert newline
        got = df.select(col.alias("j"), F.concat(F.to_json(F.struct(*df.columns)), F.lit("\n")).alias("want"))
        rows = got.collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert len(rows) == 603
    bad = [(r.j, r.want) for r in rows if r.j != r.want]
    assert not bad, bad[:3]
    assert any('\\u0000' in r.j for r in rows) and any('"NaN"' in r.j for r in rows)


def test_types_it_does_not_write_use_to_json(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([({"a": 1}, bytearray(b"x"))], "m map<string,int>, bin binary")
    assert not writable(df.schema)
    col, newline = json_lines(df)
    assert not newline
    assert df.select(col.alias("j")).first().j == df.select(F.to_json(F.struct("m", "bin"))).first()[0]
