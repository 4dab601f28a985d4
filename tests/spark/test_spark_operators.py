"""Spark's arithmetic (etl/sql/spark_operators.tsv) says what Spark says: every pair the tables take analysed again
in one select, the pairs they refuse among the types pipelines' columns have asked one by one, and the types and
refusals tests/unit/test_spark_operators.py sees validate give (Spark's rules for other precisions, intervals,
literals, the values of a CASE, an IF, coalesce, greatest, array) analysed over real columns."""

from __future__ import annotations

import pytest

from etl.sql.operators import REFUSED, tables
from scripts import spark_functions
from scripts import spark_operators as probes

pytestmark = pytest.mark.spark
# the refused pairs asked again: among the types of most pipelines' columns
COMMON = ("string", "boolean", "int", "date", "timestamp", "array")


def _frame(spark, types: dict[str, str]):
    return spark.range(1).selectExpr(*[f"CAST(NULL AS {t}) AS `{c}`" for c, t in types.items()])


def test_every_pair_the_tables_take_is_spark_s(spark):
    """One analysis of every cell that is a type (1,560 expressions in one select): Spark's type is the cell."""
    frame = _frame(spark, {f"c_{k}": t for k, t in probes.TYPES.items()})
    cells = [(op, a, b, c) for op, t in tables().items() for (a, b), c in t.items() if c not in (REFUSED, "?")]
    exprs = [probes.expression(op, a, b).replace(f"CAST(NULL AS {probes.TYPES[a]})", f"`c_{a}`", 1)
             .replace(f"CAST(NULL AS {probes.TYPES[b]})", f"`c_{b}`", 1) for op, a, b, _ in cells]
    schema = frame.selectExpr(*[f"{e} AS `e{i}`" for i, e in enumerate(exprs)]).schema
    assert len(cells) >= 1500
    wrong = [(e, c, f.dataType.simpleString()) for e, (_, _, _, c), f in zip(exprs, cells, schema.fields, strict=True)
             if f.dataType.simpleString() != c]
    assert not wrong, wrong


def test_the_pairs_the_tables_refuse_spark_refuses(spark):
    """Per operator and type of COMMON on the left, the first and the last type of COMMON the tables refuse on the
    right, one analysis each: DATATYPE_MISMATCH."""
    analyse = spark_functions.analyser(spark)
    refused = []
    for op, t in tables().items():
        for a in COMMON:
            right = [b for b in COMMON if t[(a, b)] == REFUSED]
            refused += [probes.expression(op, a, b) for b in dict.fromkeys(right[:1] + right[-1:])]
    assert len(refused) >= 120
    answers = {e: analyse(f"SELECT {e}")[0] for e in refused}
    assert {e: a.split(".")[0] for e, a in answers.items()} == dict.fromkeys(refused, "DATATYPE_MISMATCH")


def test_the_types_validate_gives_are_spark_s(spark):
    from tests.unit.test_spark_operators import AGGREGATES, COLUMNS, REFUSED_AT, TYPES

    frame = _frame(spark, COLUMNS)
    for told in (TYPES, AGGREGATES):
        schema = frame.selectExpr(*[f"{e} AS `e{i}`" for i, e in enumerate(told)]).schema
        assert {e: f.dataType.simpleString() for e, f in zip(told, schema.fields, strict=True)} == told
    frame.createOrReplaceTempView("operators_frame")
    analyse = spark_functions.analyser(spark)
    answers = {e: analyse(f"SELECT {e} FROM operators_frame")[0] for e in REFUSED_AT}
    assert {e: a.split(".")[0] for e, a in answers.items()} == dict.fromkeys(REFUSED_AT, "DATATYPE_MISMATCH")
