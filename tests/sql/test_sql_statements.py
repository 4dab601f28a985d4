"""Flink's statements around queries, without a JVM: statement sets, EXECUTE, EXPLAIN, a bare SELECT (to the
console) and INSERT INTO t (columns) with fewer columns than t (the others NULL, W016)."""
from __future__ import annotations

import textwrap
from pathlib import Path

from tests.sql.checking import check_sql, codes

HEAD = """\
CREATE TABLE orders (order_id VARCHAR, customer VARCHAR, amount DOUBLE, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (type = 'file', filePath = 'orders.jsonl');
CREATE TABLE big (order_id VARCHAR, amount DOUBLE) WITH (type = 'file', filePath = 'big');
CREATE TABLE small (order_id VARCHAR, amount DOUBLE) WITH (type = 'file', filePath = 'small');
"""
BIG = "INSERT INTO big SELECT order_id, amount FROM orders WHERE amount > 100;"
SMALL = "INSERT INTO small SELECT order_id, amount FROM orders WHERE amount <= 100;"


def _check(tmp_path: Path, text: str):
    return check_sql(tmp_path, textwrap.dedent(text))




def _components(c) -> dict:
    return {t.id: t.model_dump(by_alias=True) for t in c.pipeline.components()}


def test_statement_sets_are_their_inserts(tmp_path):
    plain = _check(tmp_path, HEAD + BIG + "\n" + SMALL + "\n")
    assert plain.plan is not None and codes(plain) == []
    for text in (f"EXECUTE STATEMENT SET BEGIN\n{BIG}\n{SMALL}\nEND;\n",
                 f"BEGIN STATEMENT SET;\n{BIG}\n{SMALL}\nEND;\n",
                 f"EXECUTE {BIG}\n{SMALL}\n"):
        c = _check(tmp_path, HEAD + text)
        assert c.plan is not None and codes(c) == [], text
        assert _components(c) == _components(plain)


def test_explain_is_checked_and_left_out(tmp_path):
    c = _check(tmp_path, HEAD + f"EXPLAIN PLAN FOR {BIG}\nEXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT order_id "
               f"FROM orders;\n{SMALL}\n")
    assert codes(c) == [("W015", 5, 1), ("W015", 6, 1)]
    assert c.report.sorted()[0].message == ("EXPLAIN: Flink prints the statement's plan and runs nothing; etl reads "
                                            "the statement (its syntax, tables and functions) and leaves it out of "
                                            "the pipeline")
    assert [s.id for s in c.pipeline.sinks] == ["small"] and c.plan is not None
    c = _check(tmp_path, HEAD + "EXPLAIN INSERT INTO big SELECT order_id, amount FROM order;\n" + SMALL + "\n")
    assert codes(c) == [("W015", 5, 1), ("E201", 5, 54)]  # its tables and functions are read


def test_a_bare_select_goes_to_the_console(tmp_path):
    c = _check(tmp_path, HEAD + "SELECT customer, amount FROM orders WHERE amount > 10;\n")
    assert c.plan is not None and codes(c) == [("W204", 3, 14), ("W204", 4, 14)]  # big, small: not written
    (sink,) = c.pipeline.sinks
    assert (sink.id, sink.type, sink.inputs) == ("select", "print", ["select_select"])
    assert [t.id for t in c.pipeline.transforms] == ["select_where", "select_select"]


def test_insert_with_fewer_columns_fills_nulls(tmp_path):
    c = _check(tmp_path, HEAD.replace("big (order_id VARCHAR, amount DOUBLE)",
                                      "big (order_id VARCHAR, customer VARCHAR, amount DOUBLE)")
               + "INSERT INTO big (amount, order_id) SELECT amount, order_id FROM orders;\n" + SMALL + "\n")
    assert codes(c) == [("W016", 5, 13)]
    assert c.report.warnings[0].message == ("INSERT INTO big lists 2 of its 3 columns: customer is NULL in every row, "
                                            "as in Flink")
    t = {x.id: x for x in c.pipeline.transforms}
    assert t["big_columns"].fields == ["order_id", "CAST(NULL AS string) AS customer", "amount"]
    assert c.pipeline.sinks[0].inputs == ["big_columns"]
    cols = c.graph.columns_of("big_columns")
    assert list(cols) == [("order_id", "string"), ("customer", "string"), ("amount", "double")]
