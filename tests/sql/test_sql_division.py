"""Flink's `/` of two integers is an integer (7 / 2 is 3, -7 / 2 is -3, BIGINT / INT a BIGINT); a DECIMAL or DOUBLE
operand keeps a fraction; an operand whose type etl cannot tell is W015 at the `/`; AVG of an INT is an INT
(etl.sql.division)."""
from __future__ import annotations

from decimal import Decimal

import pytest

from tests.sql.checking import check_sql

SOURCE = ("CREATE TABLE t (k VARCHAR, x INT, y BIGINT, d DECIMAL(10, 2), f DOUBLE, s VARCHAR, n SMALLINT)\n"
          "WITH (type = 'file', filePath = 'x.jsonl');\n")
TABLE = (SOURCE + "CREATE TABLE o (a INT, b INT, c INT, e BIGINT, g DOUBLE, h DECIMAL(16, 6), i INT, j INT, l INT, m BIGINT,\n"
         "  p SMALLINT, q INT, r INT, u DECIMAL(16, 6)) WITH (type = 'print');\n"
         "CREATE TABLE o2 (k VARCHAR, avg_int BIGINT, avg_f DOUBLE, avg_x INT, avg_fd DOUBLE) WITH (type = 'print');\n"
         "CREATE TABLE o3 (k VARCHAR, w BIGINT, z DOUBLE) WITH (type = 'print');\n")
QUERY = ("INSERT INTO o SELECT x / 2 AS a, -7 / 2 AS b, 7 / -2 AS c, y / 2 AS e, x / f AS g, d / 2 AS h,\n"
         "  CAST(NULL AS INT) / 2 AS i, x % 2 AS j, MOD(x, -2) AS l, x / CAST(2 AS BIGINT) AS m, n / n AS p,\n"
         "  CAST(s AS INT) / 2 AS q, (x / 2) / 2 AS r, x / 2.0 AS u FROM t;\n"
         "CREATE VIEW agg AS SELECT k, SUM(x) AS total, COUNT(*) AS cnt, SUM(f) AS sf FROM t GROUP BY k;\n"
         "INSERT INTO o2 SELECT k, SUM(x) / COUNT(*) AS avg_int, SUM(f) / COUNT(*) AS avg_f, AVG(x) AS avg_x,\n"
         "  AVG(f) AS avg_fd FROM t GROUP BY k;\n"
         "INSERT INTO o3 SELECT k, total / cnt AS w, sf / cnt AS z FROM agg;\n")




def _fields(c, node: str) -> list[str]:
    return next(s for s in c.pipeline.components() if s.id == node).model_dump()["fields"]


def test_a_division_of_integers_is_flinks_integer_division(tmp_path):
    c = check_sql(tmp_path, TABLE + QUERY)
    assert [d.render() for d in c.report.sorted()] == []
    assert _fields(c, "o_select") == [
        "CAST(x DIV 2 AS INT) AS a", "CAST(-7 DIV 2 AS INT) AS b", "CAST(7 DIV -2 AS INT) AS c",
        "CAST(y DIV 2 AS BIGINT) AS e", "x / f AS g", "d / CAST(2 AS INT) AS h", "CAST(CAST(NULL AS INT) DIV 2 AS INT) AS i",
        "x % 2 AS j", "x % -2 AS l", "CAST(x DIV CAST(2 AS BIGINT) AS BIGINT) AS m",
        "CAST(n DIV n AS SMALLINT) AS p", "CAST(CAST(s AS INT) DIV 2 AS INT) AS q",
        "CAST((CAST(x DIV 2 AS INT)) DIV 2 AS INT) AS r", "x / 2.0 AS u"]
    # SUM(x) / COUNT(*) is BIGINT / BIGINT in Flink (SUM of an INT an INT, COUNT a BIGINT); through a view too
    # AVG of an INT is an INT in Flink: the sum divided by the count as integers (NULL without values)
    assert _fields(c, "o2_select") == ["k", "CAST(_agg0 DIV _agg1 AS BIGINT) AS avg_int", "_agg2 / _agg1 AS avg_f",
                                       "CAST(_agg0 DIV _agg3 AS INT) AS avg_x", "avg_fd", "_update"]
    assert _fields(c, "o3_select") == ["k", "CAST(total DIV cnt AS BIGINT) AS w", "sf / cnt AS z", "_update"]


def test_a_division_whose_operand_type_is_unknown_is_w015_at_the_slash(tmp_path):
    text = (SOURCE + "CREATE TABLE o4 (a DOUBLE, b DOUBLE, c DOUBLE, e INT) WITH (type = 'print');\n"
            "CREATE FUNCTION twice AS 'fns:twice' LANGUAGE PYTHON;\n"
            "INSERT INTO o4 SELECT twice(x) / 2 AS a, x /  (twice(x)) AS b, twice(x) / 2.5 AS c,\n"
            "  CAST(twice(x) AS INT) / 2 AS e FROM t;\n")
    (tmp_path / "fns.py").write_text("def twice(x: int) -> int:\n    return 2 * x\n")
    c = check_sql(tmp_path, text)
    got = [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]
    assert got == [("W015", 5, 32), ("W015", 5, 44)]
    assert c.report.sorted()[0].message.startswith("Flink divides two integers into an integer (7 / 2 is 3")
    assert _fields(c, "o4_select") == ["TWICE(x) / 2 AS a", "x / (TWICE(x)) AS b", "TWICE(x) / 2.5 AS c",
                                      "CAST(CAST(TWICE(x) AS INT) DIV 2 AS INT) AS e"]


ROWS = "VALUES ('a', 7, 7, 7.00, 2.0, '7', 7), ('a', -7, -7, -7.00, 2.0, '-7', -7), ('a', 8, 8, 8.00, 4.0, '8', 8), " \
       "('b', NULL, NULL, NULL, NULL, NULL, NULL)"
INPUT = (f"SELECT CAST(col1 AS STRING) AS k, CAST(col2 AS INT) AS x, CAST(col3 AS BIGINT) AS y, "
         f"CAST(col4 AS DECIMAL(10, 2)) AS d, CAST(col5 AS DOUBLE) AS f, CAST(col6 AS STRING) AS s, "
         f"CAST(col7 AS SMALLINT) AS n FROM {ROWS}")


@pytest.mark.spark
def test_flinks_division_on_spark(spark, tmp_path):
    """The translated projection and aggregate on Spark: Flink's rows and types."""
    c = check_sql(tmp_path, TABLE + QUERY)
    df = spark.sql(f"SELECT {', '.join(_fields(c, 'o_select'))} FROM ({INPUT})")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("a", "int"), ("b", "int"), ("c", "int"), ("e", "bigint"), ("g", "double"), ("h", "decimal(21,13)"),
        ("i", "int"), ("j", "int"), ("l", "int"), ("m", "bigint"), ("p", "smallint"), ("q", "int"), ("r", "int"),
        ("u", "decimal(17,6)")]
    assert [tuple(r) for r in df.collect()] == [
        (3, -3, -3, 3, 3.5, Decimal("3.5"), None, 1, 1, 3, 1, 3, 1, Decimal("3.5")),
        (-3, -3, -3, -3, -3.5, Decimal("-3.5"), None, -1, -1, -3, 1, -3, -1, Decimal("-3.5")),
        (4, -3, -3, 4, 2.0, Decimal("4"), None, 0, 0, 4, 1, 4, 2, Decimal("4")),
        (None, -3, -3, None, None, None, None, None, None, None, None, None, None, None)]
    aggs = next(s for s in c.pipeline.components() if s.id == "o2_aggregate").model_dump(by_alias=True)["aggregates"]
    inner = ", ".join(f"{a['fn']}({a.get('field') or '*'}) AS {a['as']}" for a in aggs)
    fields = [f for f in _fields(c, "o2_select") if f != "_update"]
    got = spark.sql(f"SELECT {', '.join(fields)} FROM (SELECT k, {inner} FROM ({INPUT}) GROUP BY k) ORDER BY k")
    assert [tuple(r) for r in got.collect()] == [("a", 2, 8.0 / 3, 2, 8.0 / 3), ("b", None, None, None, None)]
    assert [f.dataType.simpleString() for f in got.schema.fields] == ["string", "bigint", "double", "int", "double"]
