"""The dissect transform's JVM engine (etl/jvm/Dissect.java + the fields set by Spark expressions) gives the rows of
etl.dissect's reference: Logstash's cases (tests/unit/test_dissect_conformance.py) and generated patterns and
lines (hypothesis). Each test is one Spark job over one DataFrame on the session's `spark`."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etl.dissect import DissectError, apply, outputs, parse_mappings
from tests.unit.test_dissect_conformance import CASES

pytestmark = pytest.mark.spark

Case = tuple[dict, str, dict, str | None]  # (mapping, line of `message`, convert_datatype, append_separator)


def expected(case: Case) -> dict:
    """The reference's row: the output columns with a value, and `_err` (the failure) alone when it fails."""
    mapping, line, conv, sep = case
    mappings = parse_mappings(mapping)
    r = apply(mappings, {"message": line}, conv, sep)
    if r.error is not None:
        return {"_err": r.error}
    names = outputs(mappings, {"cid": "int", "message": "string"}, conv, "indirect")
    row = {n: (r.pairs or None) if n == "indirect" else r.event.get(n) for n in names}
    return {k: v for k, v in row.items() if v is not None}


def through_jvm(spark, cases: list[Case], engine: str = "dissect-jvm") -> list[dict]:
    """Each case's row as the transform's engine gives it: one DataFrame, one job."""
    from pyspark.sql import functions as F

    from etl.components.transforms.dissect.build import dissected

    df = spark.createDataFrame([(i, c[1]) for i, c in enumerate(cases)], "cid int, message string")
    staged, got = df, []
    for i, (mapping, _, conv, sep) in enumerate(cases):
        staged, out, err, _ = dissected(staged, parse_mappings(mapping), conv, sep, "indirect", engine, tag=f"c{i}_")
        row = F.struct(*[c.alias(n) for n, c in out.items()], F.lit(None).cast("string").alias("_err"))
        got.append(F.when(F.col("cid") == i, F.when(err.isNull(), F.to_json(row)).otherwise(
            F.to_json(F.struct(err.alias("_err"))))))
    rows = sorted(staged.select("cid", F.coalesce(*got).alias("row")).collect())
    assert [r.cid for r in rows] == list(range(len(cases)))
    return [json.loads(r.row) for r in rows]


def test_logstash_cases_through_the_jvm(spark):
    cases = [({"message": c[1]}, c[2], c[3].get("convert_datatype", {}), c[3].get("append_separator"))
             for c in CASES]
    cases.append(({"message": '"%{field1}" "%{+field1}" "%{description}"', "description": "%{f3} %{&field1}"},
                  '"a" "b" "x y"', {}, None))  # a later mapping cuts a field an earlier one set
    got = through_jvm(spark, cases)
    want = [expected(c) for c in cases]
    assert got == want
    # the appended value joined by the delimiter before it (`" "`); the indirect key is field1's value
    assert want[-1] == {"field1": 'a" "b', "description": "x y", "f3": "x", "indirect": {'a" "b': "y"}}
    assert sum("_err" in w for w in want) == 5  # failures among them: each with the reference's reason
    assert got[CASES.index(next(c for c in CASES if c[0] == "indirect field"))] == {
        "key": "hello", "indirect": {"hello": "world"}}


def test_without_the_jar_the_reference_scans_in_a_python_udf(spark):
    names = ("multibyte delimiters", "indirect field", "conversions")  # each scan and conversion is a Python UDF
    cases = [({"message": c[1]}, c[2], c[3].get("convert_datatype", {}), c[3].get("append_separator"))
             for c in CASES if c[0] in names]
    assert len(cases) == len(names)
    assert through_jvm(spark, cases, engine="dissect-python") == [expected(c) for c in cases]


# ------------------------------------------------------------------------------------------ generated
ALPHABET = " ,-:=[]xé྿"  # delimiters' characters (a multi-byte one among them)
VALUES = ALPHABET + "ab0123.5e+"
NAMES = ("a", "b", "c")


@st.composite
def dissections(draw) -> Case:
    n = draw(st.integers(1, 5))
    lead = draw(st.text(ALPHABET, max_size=2))
    delims = [draw(st.text(ALPHABET, min_size=1, max_size=3)) for _ in range(n - 1)]
    trail = draw(st.text(ALPHABET, max_size=2))
    fields = []
    for _ in range(n):
        kind = draw(st.sampled_from(["", "", "?", "+", "&"]))
        name = draw(st.sampled_from(NAMES)) if kind != "?" or draw(st.booleans()) else ""
        suffix = draw(st.sampled_from(["", "", "->"] + (["/1", "/2", "/3->"] if kind == "+" else [])))
        fields.append(f"%{{{kind}{name}{suffix}}}")
    pattern = lead + "".join(f + d for f, d in zip(fields, delims + [trail], strict=True))
    lines = []
    for _ in range(draw(st.integers(1, 4))):  # lines built on the pattern's delimiters, now and then padded
        vals = [draw(st.text(VALUES, max_size=4)) for _ in range(n)]
        pads = [d * draw(st.integers(1, 3)) for d in delims]
        lines.append(lead + "".join(v + p for v, p in zip(vals, pads + [trail], strict=True)))
    lines.append(draw(st.text(VALUES, max_size=12)))  # and any text
    conv = draw(st.sampled_from([{}, {}, {"c": "int"}, {"c": "float"}]))
    sep = draw(st.sampled_from([None, None, "/"]))
    return ({"message": pattern}, draw(st.sampled_from(lines)), conv, sep)


def _valid(case: Case) -> bool:
    try:
        outputs(parse_mappings(case[0]), {"cid": "int", "message": "string"}, case[2], "indirect")
    except DissectError:
        return False
    return True


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(dissections().filter(_valid), min_size=30, max_size=30))
def test_generated_patterns_and_lines_jvm_equals_reference(spark, cases):
    assert through_jvm(spark, cases) == [expected(c) for c in cases]
