"""GROUP BY keys and aggregate arguments that are expressions: the front-end computes them in a `derive`
before the window / continuous aggregate (as Flink does in place), then groups and aggregates the columns."""
from __future__ import annotations

import textwrap
from pathlib import Path

from etl.check import check_file

HEAD = """\
CREATE TABLE sales (usr VARCHAR, country VARCHAR, price DOUBLE, qty INT, x INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (type = 'file', filePath = 'in');
CREATE TABLE o (country VARCHAR, revenue DOUBLE, users BIGINT, mean DOUBLE) WITH (type = 'print');
"""


def _dump(tmp_path: Path, query: str) -> dict:
    f = tmp_path / "job.sql"
    f.write_text(HEAD + textwrap.dedent(query))
    c = check_file(f)
    assert c.plan is not None, [d.render() for d in c.report.sorted()]
    return {s.id: s.model_dump(by_alias=True, exclude_defaults=True) for s in c.pipeline.transforms}


def test_window_over_expressions_gets_a_derive_step(tmp_path):
    dump = _dump(tmp_path, """\
        INSERT INTO o SELECT lower(country) AS country, SUM(price * qty) AS revenue,
          COUNT(DISTINCT lower(usr)), AVG(CAST(x AS DOUBLE)) AS mean
        FROM sales GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), lower(country) HAVING SUM(price * qty) > 10;
        """)
    assert list(dump) == ["o_derive", "o_window", "o_select"]
    assert dump["o_derive"] == {"id": "o_derive", "type": "derive", "inputs": ["sales"], "columns": {
        "country": "LOWER(country)", "_agg0": "price * qty", "_agg1": "LOWER(usr)", "_agg2": "CAST(x AS DOUBLE)"}}
    w = dump["o_window"]
    assert (w["inputs"], w["group_by"], w["having"]) == (["o_derive"], ["country"], "revenue > 10")
    assert w["aggregates"] == [{"fn": "sum", "field": "_agg0", "as": "revenue"},
                               {"fn": "collect_set", "field": "_agg1", "as": "_distinct__agg1"},
                               {"fn": "avg", "field": "_agg2", "as": "mean"}]
    assert dump["o_select"]["fields"] == ["country", "revenue", "SIZE(_distinct__agg1) AS users", "mean"]


def test_continuous_aggregate_key_without_alias_and_a_shared_argument(tmp_path):
    """An unnamed key is `_key<i>`; the same argument twice is one column."""
    dump = _dump(tmp_path, """\
        INSERT INTO o SELECT UPPER(country), SUM(price * qty), COUNT(*), AVG(price * qty)
        FROM sales GROUP BY UPPER(country);
        """)
    assert dump["o_derive"]["columns"] == {"_key0": "UPPER(country)", "_agg0": "price * qty"}
    a = dump["o_aggregate"]
    assert (a["inputs"], a["group_by"]) == (["o_derive"], ["_key0"])
    assert a["aggregates"] == [{"fn": "sum", "field": "_agg0", "as": "sum__agg0"}, {"fn": "count", "as": "count"},
                               {"fn": "avg", "field": "_agg0", "as": "avg__agg0"}]
    assert dump["o_select"]["fields"][:2] == ["_key0 AS country", "sum__agg0 AS revenue"]


def test_an_alias_that_would_replace_a_column_read_elsewhere_is_not_the_key(tmp_path):
    dump = _dump(tmp_path, """\
        INSERT INTO o SELECT lower(country) AS country, SUM(price), COUNT(DISTINCT country), MAX(price)
        FROM sales GROUP BY lower(country);
        """)
    assert dump["o_derive"]["columns"] == {"_key0": "LOWER(country)"}
    assert dump["o_aggregate"]["group_by"] == ["_key0"]
    assert dump["o_aggregate"]["aggregates"][1] == {"fn": "collect_set", "field": "country",
                                                    "as": "_distinct_country"}


def test_window_start_in_an_aggregate_argument_stays_e011(tmp_path):
    f = tmp_path / "job.sql"
    f.write_text(HEAD + "INSERT INTO o SELECT country, SUM(HOUR(TUMBLE_START(ts, INTERVAL '1' MINUTE))), "
                 "COUNT(*), 1.0\nFROM sales GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE), country;\n")
    c = check_file(f)
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.sorted()] == [
        ("E011", 4, 40, "an aggregate's argument reads the window's start or end: they exist only after the window")]
