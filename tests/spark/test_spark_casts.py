"""Spark's cast rules (etl/sql/spark_casts.tsv) say what Spark says: every cell asked again of Spark's own rules
(Cast.canAnsiCast for CAST, Cast.canTryCast for TRY_CAST, the functions its analysis calls), and the casts
tests/unit/test_spark_casts.py sees validate take or refuse, analysed by Spark over real columns."""

from __future__ import annotations

import pytest

from etl.sql.casts import tables
from scripts import spark_casts as probes
from scripts import spark_functions

pytestmark = pytest.mark.spark


def test_every_cell_is_spark_s(spark):
    """3 levels x 22 x 22 types, CAST and TRY_CAST: 2,904 answers of Spark's Cast object (no query: ~1 s)."""
    jvm = spark._jvm
    cast = getattr(jvm.org.apache.spark.sql.catalyst.expressions, "Cast$").__getattr__("MODULE$")
    ddl = jvm.org.apache.spark.sql.types.DataType.fromDDL
    wrong = []
    for level, cells in tables().items():
        types = {k: ddl(probes.LEVELS[level].format(t)) for k, t in probes.TYPES.items()}
        for (src, dst), cell in cells.items():
            told = probes.cell({"CAST": "ok" if cast.canAnsiCast(types[src], types[dst]) else "DATATYPE_MISMATCH",
                                "TRY_CAST": "ok" if cast.canTryCast(types[src], types[dst]) else "DATATYPE_MISMATCH"})
            if told != cell:
                wrong.append(f"{level} {src} -> {dst}: table {cell}, Spark {told}")
    assert not wrong, "\n".join(wrong)


def test_casts_validate_takes_and_refuses_are_spark_s(spark):
    """The casts validate takes analyse in one select; each it refuses is DATATYPE_MISMATCH in Spark's analysis."""
    from tests.unit.test_spark_casts import REFUSED, TAKEN

    frame = spark.createDataFrame([], "s string, b bigint, d double, ts timestamp, tags array<string>, "
                                      "m map<string,string>")
    assert len(frame.selectExpr(*TAKEN).columns) == len(TAKEN)
    analyse = spark_functions.analyser(spark)
    frame.createOrReplaceTempView("casts_frame")
    answers = {e: analyse(f"SELECT {e} FROM casts_frame")[0] for e in REFUSED}
    assert {e: a.split(".")[0] for e, a in answers.items()} == dict.fromkeys(REFUSED, "DATATYPE_MISMATCH"), answers


def test_the_arguments_spark_brings_to_one_type_are_refused_where_validate_says(spark):
    """etl.graph.calls.refused_together against Spark's analysis: each SAME_TYPE function over two columns of each
    pair of 8 column types, one analysis per call."""
    from pyspark.errors import AnalysisException

    from etl.graph.calls import SAME_TYPE, refused_together

    cols = {"i": "int", "d": "double", "b": "boolean", "bin": "binary", "dt": "date", "ts": "timestamp", "s": "string",
            "iv": "interval day to second"}
    df = spark.range(1).selectExpr(*[f"CAST(NULL AS {t}) AS {c}" for c, t in cols.items()])
    wrong = []
    for fn, _positions in SAME_TYPE.items():
        for a, ta in cols.items():
            for b, tb in cols.items():
                args = {"if": f"true, {a}, {b}", "nvl2": f"s, {a}, {b}"}.get(fn, f"{a}, {b}")
                try:
                    df.selectExpr(f"{fn}({args})").schema  # noqa: B018 - analysis only
                    refused = False
                except AnalysisException as e:
                    assert "DATA_DIFF_TYPES" in str(e) or "DATATYPE_MISMATCH" in str(e), str(e)
                    refused = True
                if refused != refused_together(fn, ta, tb):
                    wrong.append((fn, ta, tb, refused))
    assert wrong == [], wrong
