"""validate's inferred columns (etl.load.infer, Python) are Spark's: for tricky jsonl and csv files, the columns
spark.read.json / .csv infers over the same files (names, order, types), and the rows read with the inferred
columns are the rows Spark's own inference reads. In the session-wide `spark` fixture; tiny files."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.load.infer import infer_columns

pytestmark = pytest.mark.spark
SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "infer"
CASES = [("jsonl", "jsonl", ","), ("csv", "csv", ","), ("csv_types", "csv", ";")]


def _spark_read(spark, folder: str, fmt: str, delimiter: str, schema=None):
    reader = spark.read if schema is None else spark.read.schema(schema)
    path = str(SAMPLES / folder)
    if fmt == "csv":
        return reader.options(header="true", inferSchema="true", sep=delimiter).csv(path)
    return reader.json(path)


@pytest.mark.parametrize("folder,fmt,delimiter", CASES)
def test_inferred_columns_are_sparks(spark, folder, fmt, delimiter):
    from etl.components.sources.file.build import struct_of
    from etl.graph.model import Node

    sample = infer_columns(folder, str(SAMPLES), fmt, True, delimiter)
    assert sample.columns and not sample.cut
    df = _spark_read(spark, folder, fmt, delimiter)
    spark_columns = {f.name: f.dataType.simpleString() for f in df.schema.fields if f.name != "_corrupt_record"}
    assert list(sample.columns.items()) == list(spark_columns.items())
    # read with the pinned columns (as etl run does), the rows are those of Spark's own inference
    pinned = struct_of(Node("s", "source", "file", None, None), sample.columns)
    theirs = df.select(*[f"`{c}`" for c in spark_columns]).collect()
    ours = _spark_read(spark, folder, fmt, delimiter, pinned).collect()
    assert [repr(r.asDict(recursive=True)) for r in ours] == [repr(r.asDict(recursive=True)) for r in theirs]  # NaN
    assert len(ours) == {"jsonl": 13, "csv": 7, "csv_types": 3}[folder]
