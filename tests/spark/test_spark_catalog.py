"""Spark's function catalogue (etl/sql/spark_functions.tsv) says what Spark says: a sample of its functions probed
again with scripts/spark_functions.py's probes (the session of the tests: etl's settings), and the calls `etl
validate` refuses or takes, analysed by Spark over real columns."""

from __future__ import annotations

import re

import pytest

from etl.sql.catalog import FILE, catalogue
from scripts import spark_functions as probes

pytestmark = pytest.mark.spark

# signatures probed in full (arity, argument classes, result type): one of each shape
FULL = ("substring", "date_add", "upper", "year", "levenshtein", "element_at")


def _lines() -> dict[str, str]:
    return {line.split("\t")[0]: line for line in FILE.read_text().splitlines()
            if line and not line.startswith(("#", "pyspark\t"))}


def _edges(arity: str) -> list[int]:
    """The numbers of arguments at the edges of what a function takes: the fewest it takes and one fewer, one more
    than the most (a function of N+ arguments: MAX_PROBED)."""
    fn = probes.MAX_PROBED
    taken = [n for n in range(fn + 1) if _takes(arity, n)]
    if not taken:
        return [0]
    low, high = taken[0], taken[-1]
    return sorted({max(low - 1, 0), low, min(high + 1, fn)})


def _takes(arity: str, n: int) -> bool:
    from etl.sql.catalog import SparkFunction

    return SparkFunction("f", "", arity, (), "").takes(n)


def test_a_sample_of_arities_is_spark_s(spark):
    """48 functions across the alphabet, each called at the edges of the numbers of arguments it takes."""
    analyse = probes.analyser(spark)
    names = [n for n in sorted(catalogue())[::12] if catalogue()[n].arity != "?"]
    assert len(names) >= 45
    wrong = []
    for name in names:
        arity = catalogue()[name].arity
        for n in _edges(arity):
            condition, message = analyse(probes.call(name, ["NULL"] * n))
            refused = condition.startswith(probes.ARITY_ERRORS + probes.UNTOLD)
            if refused == _takes(arity, n):
                wrong.append(f"{name}({n} arguments): catalogue {arity}, Spark {condition} {message[:100]}")
    assert not wrong, "\n".join(wrong)


def test_full_signatures_are_spark_s(spark):
    analyse = probes.analyser(spark)
    lines = _lines()
    for name in FULL:
        group = catalogue()[name].group
        assert probes.line(name, group, probes.probe(analyse, name)) == lines[name]


# (expression over host string, ts timestamp, bytes bigint, tags array<string>, ok: what validate says)
CALLS = [
    ("substring(host, 1, 2, 3)", False), ("substring(host, 2)", True), ("upper(tags)", False),
    ("upper(bytes)", True), ("date_add(ts, bytes)", False), ("date_add(ts, '3')", True), ("coalesce()", False),
    ("element_at(tags, 1)", True), ("size(element_at(tags, 1))", False), ("year(bytes)", False),
    ("levenshtein(host, 'web')", True), ("concat_ws('-', tags, host)", True), ("abs(host)", True),
    ("transform(tags, tags -> upper(tags))", True),
]


@pytest.mark.parametrize("text,ok", CALLS)
def test_what_validate_refuses_spark_refuses(spark, text, ok, tmp_path):
    from pyspark.errors import AnalysisException

    from etl.check import check_file

    path = tmp_path / "p.yaml"
    path.write_text(f"""name: p
sources:
  - {{id: s, type: file, path: ./in, format: jsonl, schema: {{host: string, ts: timestamp, bytes: bigint,
      tags: "array<string>"}}}}
transforms:
  - {{id: d, type: derive, input: s, columns: {{v: "{text}"}}}}
sinks:
  - {{id: out, type: print, input: d}}
""")
    checked = check_file(path)
    assert (not checked.report.errors) == ok, [d.render() for d in checked.report.errors]
    frame = spark.createDataFrame([], "host string, ts timestamp, bytes bigint, tags array<string>")
    if ok:
        frame.selectExpr(text)
    else:
        with pytest.raises(AnalysisException):
            frame.selectExpr(text)


def test_common_calls_analyse(spark):
    """The calls tests/unit/test_spark_catalog.py::test_common_calls_validate sees validate take, Spark takes."""
    from tests.unit.test_spark_catalog import COMMON

    frame = spark.createDataFrame([], "s string, b bigint, d double, ts timestamp, tags array<string>, "
                                      "m map<string,string>")
    assert len(frame.selectExpr(*COMMON).columns) == len(COMMON)


def test_text_cast_to_a_number_fails_the_query(spark):
    """date_add(ts, 'x') passes Spark's analysis (text is cast to int) and fails the query under ANSI: validate's
    E102."""
    from pyspark.errors import NumberFormatException

    frame = spark.createDataFrame([("2024-05-01 00:00:00",)], "t string").selectExpr("CAST(t AS TIMESTAMP) AS ts")
    with pytest.raises(NumberFormatException, match="CAST_INVALID_INPUT"):
        frame.selectExpr("date_add(ts, 'x')").collect()
    assert frame.selectExpr("date_add(ts, '3') AS d").collect()[0].d.isoformat() == "2024-05-04"


def test_the_calls_the_header_explains(spark):
    """The catalogue's header: lag(), lead(), ntile() and concat() are Spark's (validate parses them), when() is
    refused though its arity reads 0+, between(a, b, c) and when(c, v) are functions Spark takes."""
    analyse = probes.analyser(spark)
    answers = {q: analyse(f"SELECT {q} FROM range(1)") for q in (
        "lag() OVER (ORDER BY id)", "lead() OVER (ORDER BY id)", "ntile() OVER (ORDER BY id)", "concat()",
        "between(1, 0, 2)", "when(true, 1)", "when()")}
    assert {q: a[1] if a[0] == "ok" else a[0] for q, a in answers.items()} == {
        "lag() OVER (ORDER BY id)": "void", "lead() OVER (ORDER BY id)": "void", "ntile() OVER (ORDER BY id)": "int",
        "concat()": "string", "between(1, 0, 2)": "boolean", "when(true, 1)": "int",
        "when()": "COMPLEX_EXPRESSION_UNSUPPORTED_INPUT.NO_INPUTS"}


def test_result_types_by_class_are_spark_s(spark):
    """Each function whose result type depends on its arguments' classes (the catalogue's by_class), called with
    columns of one class at every position: the type validate gives (etl.graph.sql.guess_type) is Spark's."""
    from etl.graph.sql import guess_type
    from etl.sql.catalog import CLASS_NAMES

    types = {k: {"n": "decimal(10,2)", "a": "array<string>", "m": "map<string,string>", "r": "struct<a:string>"}
             .get(k, v) for k, v in CLASS_NAMES.items()}
    cols = {f"c{k}": v for k, v in types.items()}
    frame = spark.createDataFrame([], ", ".join(f"{c} {t}" for c, t in cols.items()))
    guessed: dict[str, str] = {}
    for fn in catalogue().values():
        if not fn.by_class or fn.group in ("agg", "window", "generator", "table", "lambda"):
            continue
        n = next((k for k in range(max(p for p, _ in fn.by_class), 7) if fn.takes(k)), None)
        for letter in types:
            if n is None or any(fn.refuses(i, types[letter]) for i in range(n)):
                continue
            call = f"{fn.name}({', '.join([f'c{letter}'] * n)})"
            typ = guess_type(call, cols)
            if typ != "unknown":
                guessed[call] = typ
    assert len(guessed) >= 100
    frame.createOrReplaceTempView("by_class_frame")
    analyse = probes.analyser(spark)  # one call at a time: Spark refuses some together (try_add(date, date))
    answers = {c: analyse(f"SELECT {c} FROM by_class_frame") for c in guessed}
    kind = lambda t: re.sub(r"decimal\([0-9,]*\)", "decimal", t.replace(" ", ""))  # noqa: E731 (precisions: not told)
    wrong = {c: (t, answers[c][1]) for c, t in guessed.items() if answers[c][0] == "ok" and kind(answers[c][1]) != kind(t)}
    assert sum(a[0] == "ok" for a in answers.values()) >= 100
    assert not wrong, wrong
