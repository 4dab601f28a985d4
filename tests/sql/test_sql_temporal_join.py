"""Flink's event-time temporal join (`FOR SYSTEM_TIME AS OF` the probe's event time) -> `temporal_join`: the
translation, what is E011 and where, and the state of a key (etl.components.transforms.temporal_join.build, no JVM). The rows
on Spark: pipelines/sql/temporal_join.tests.yaml (tests/sql/test_sql_spark.py::test_example_scripts_pass_their_tests)."""
from pathlib import Path

import pytest

from etl.check import check_file
from etl.components.transforms.temporal_join.build import fire, new_state, next_timer, take

ORDERS = ("CREATE TABLE orders (order_id VARCHAR, currency VARCHAR, price DOUBLE, ts TIMESTAMP(3), pt AS PROCTIME(), "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (type = 'file', filePath = 'x.jsonl');\n")
RATES = ("CREATE TABLE rates (currency VARCHAR, rate DOUBLE, update_time TIMESTAMP(3){pk}{wm}) "
         "WITH (type = 'file', filePath = 'r.jsonl');\n")
PK, WM = ", PRIMARY KEY (currency) NOT ENFORCED", ", WATERMARK FOR update_time AS update_time"
OUT = "CREATE TABLE o (order_id VARCHAR, v DOUBLE) WITH (type = 'print');\n"
JOIN = ("INSERT INTO o SELECT order_id, price * r.rate FROM orders LEFT JOIN rates FOR SYSTEM_TIME AS OF "
        "orders.{at} AS r ON {on};\n")
ON = "orders.currency = r.currency"


def _check(tmp_path: Path, at: str = "ts", on: str = ON, pk: str = PK, wm: str = WM, rates: str | None = None):
    f = tmp_path / "job.sql"
    f.write_text(ORDERS + (rates or RATES.format(pk=pk, wm=wm)) + OUT + JOIN.format(at=at, on=on), encoding="utf-8")
    return check_file(f, environ={})


def _codes(c) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in c.report.sorted()]


def test_flinks_event_time_temporal_join_is_a_temporal_join(tmp_path):
    c = _check(tmp_path, on=ON + " AND r.rate > 1")
    assert _codes(c) == []
    specs = {t.id: t.model_dump(exclude_defaults=True) for t in c.pipeline.transforms}
    assert specs["o_temporal"] == {"id": "o_temporal", "type": "temporal_join", "inputs": ["orders", "rates"],
                                   "on": ["currency"], "how": "left", "condition": "rate > 1"}
    assert [s.id for s in c.pipeline.sources] == ["orders", "rates"]  # rates: a stream of versions, no dimension
    assert c.pipeline.sources[1].event_time.field == "update_time"
    assert specs["o_select"]["fields"] == ["order_id", "price * rate AS v"]
    from etl.plan.explain import explain_plan

    assert ("left temporal join on currency: each orders row joins the rates version valid at its event time\n"
            "        (the newest at or before it), once the watermark passes it where rate > 1") in explain_plan(c.plan)
    # AS OF the stream's PROCTIME() column: a lookup of a dimension table's current rows, as before
    lookup = _check(tmp_path, at="pt", pk="", wm="")
    assert _codes(lookup) == [] and [t.type for t in lookup.pipeline.transforms] == ["lookup", "select"]


def test_a_key_the_padded_side_reads_is_null_in_a_left_joins_padded_row(tmp_path):
    f = tmp_path / "job.sql"
    f.write_text(ORDERS + RATES.format(pk=PK, wm=WM) + "CREATE TABLE o (c VARCHAR) WITH (type = 'print');\n"
                 "INSERT INTO o SELECT r.currency FROM orders LEFT JOIN rates FOR SYSTEM_TIME AS OF orders.ts AS r "
                 "ON orders.currency = r.currency;\n", encoding="utf-8")
    c = check_file(f, environ={})
    assert _codes(c) == []
    assert c.pipeline.transforms[1].fields == ["CASE WHEN update_time IS NULL THEN NULL ELSE currency END AS c"]


@pytest.mark.parametrize("kw,code,col,message", [
    ({"at": "order_id"}, "E011", 97, "FOR SYSTEM_TIME AS OF orders.order_id: an event-time temporal join reads the "
     "probe side's event-time column ('ts')"),
    ({"pk": ""}, "E011", 69, "an event-time temporal join needs a versioned table: 'rates' has no PRIMARY KEY (the "
     "key whose versions the join picks from)"),
    ({"wm": ""}, "E011", 69, "an event-time temporal join needs a versioned table: 'rates' has no WATERMARK (the time "
     "from which each version is valid)"),
    ({"rates": "CREATE TABLE rates (currency VARCHAR, rate DOUBLE, update_time TIMESTAMP(3)" + PK + WM + ") WITH "
      "(type = 'db', url = 'jdbc:mysql://127.0.0.1:3306/d', tableName = 'rates', userName = 'u', password = 'p');\n"},
     "E011", 69, "an event-time temporal join needs a versioned table: 'rates' is a dimension table (its current "
     "rows, no versions)"),
    ({"on": "orders.order_id = r.rate"}, "E011", 115, "an equality of 'rate', not a column of 'rates''s PRIMARY KEY "
     "(currency)"),
    ({"on": "orders.price > r.rate"}, "E011", 115, "a temporal join's ON compares every column of 'rates''s PRIMARY "
     "KEY (currency)"),
])
def test_what_a_temporal_join_cannot_do_exactly_is_e011_at_its_position(tmp_path, kw, code, col, message):
    c = _check(tmp_path, **kw)
    assert _codes(c) == [(code, 4, col)], [d.render() for d in c.report.sorted()]
    assert c.report.errors[0].message == message


def test_a_versioned_view_is_e011_naming_the_table_to_declare(tmp_path):
    # Flink's versioned view (Versioned Tables page): a deduplication keeping each currency's newest rate
    rates = RATES.format(pk="", wm=WM) + (
        "CREATE VIEW versioned_rates AS SELECT currency, rate, update_time FROM (SELECT *, ROW_NUMBER() OVER "
        "(PARTITION BY currency ORDER BY update_time DESC) AS rownum FROM rates) WHERE rownum = 1;\n")
    f = tmp_path / "job.sql"
    f.write_text(ORDERS + rates + OUT + JOIN.format(at="ts", on=ON).replace("JOIN rates", "JOIN versioned_rates"),
                 encoding="utf-8")
    c = check_file(f, environ={})
    assert _codes(c) == [("E011", 5, 69)]
    assert c.report.errors[0].message == (
        "an event-time temporal join needs a versioned table: 'versioned_rates' is a view: Flink's versioned view "
        "(a ROW_NUMBER() deduplication keeping each key's newest row) is not one etl reads exactly (a row older than "
        "its key's newest is no version there)")
    assert c.report.errors[0].hint.startswith("declare the versioned table as CREATE TABLE t (..., PRIMARY KEY (k) "
                                              "NOT ENFORCED, WATERMARK FOR ts AS ts)")


# ------------------------------------------------------------- the state of a key, as the processor keeps it
H = 3_600_000_000  # an hour in microseconds; the watermark is in milliseconds


def _probe(h: float, name: str) -> tuple:
    return (0, int(h * H), False, (name,))


def _version(h: float, rate: float) -> tuple:
    return (1, int(h * H), False, (rate,))


def test_each_row_joins_the_version_valid_at_its_time_once_the_watermark_passes_it():
    st = new_state()
    take(st, [_version(9, 1.0), _probe(10, "a"), _probe(11, "b"), _probe(8, "before"), _version(10.5, 2.0)], 0)
    assert next_timer(st) == 8 * H // 1000
    assert fire(st, int(9.5 * H // 1000)) == [(("before",), None)]  # no version at 8:00
    take(st, [_version(10.75, 3.0)], int(9.5 * H // 1000))  # later than b's arrival, before the watermark passed b
    assert fire(st, 11 * H // 1000) == [(("a",), (1.0,)), (("b",), (3.0,))]
    assert sorted(st["v"]) == [int(10.75 * H)]  # older versions than the newest at or before the watermark: gone
    assert st["p"] == [] and next_timer(st) is None


def test_a_late_row_is_dropped_and_a_later_version_at_the_same_time_replaces_one():
    st = new_state()
    take(st, [_version(9, 1.0), _version(9, 1.5), _probe(9, "late"), _probe(9.5, "x"), (0, None, False, ("t",))],
         9 * H // 1000)
    assert [p[2] for p in st["p"]] == [("x",)]  # 9:00 is at the watermark: late; no time: nothing to wait for
    assert fire(st, 10 * H // 1000) == [(("x",), (1.5,))]
    nulls = new_state()  # the rows of a NULL key: a version of it is none, a row of it joins none
    take(nulls, [(1, 9 * H, True, (7.0,)), (0, int(9.5 * H), True, ("null key",))], 0)
    assert nulls["v"] == {} and fire(nulls, 10 * H // 1000) == [(("null key",), None)]


YAML = """\
name: t
sources:
  - {id: orders, type: file, path: o.jsonl, schema: {order_id: string, currency: string, ts: timestamp},
     event_time: {field: ts, watermark: 5s}}
  - {id: rates, type: file, path: r.jsonl, schema: {currency: string, rate: double, ts: timestamp},
     event_time: {field: ts, watermark: 0s}}
  - {id: dim, type: file, path: d.jsonl, static: true, schema: {currency: string, rate: double}}
transforms:
  - {id: priced, type: temporal_join, inputs: [orders, VERSIONS], on: [KEY], how: left}
sinks:
  - {id: out, type: print, input: priced}
"""


@pytest.mark.parametrize("versions,key,errors", [
    ("rates", "currency", []),
    ("rates", "curency", [("E310", 69, "unknown column 'curency' in join 'priced' (on[0], left input 'orders')"),
                          ("E310", 69, "unknown column 'curency' in join 'priced' (on[0], right input 'rates')")]),
    ("dim", "currency", [("E203", 56, "'dim' is a static table; use it as a lookup `table`, not as an input")]),
])
def test_a_yaml_temporal_join_is_checked_where_it_reads(tmp_path, versions, key, errors):
    f = tmp_path / "t.yaml"
    f.write_text(YAML.replace("VERSIONS", versions).replace("KEY", key), encoding="utf-8")
    c = check_file(f, environ={})
    assert [(d.code, d.span.line, d.span.col, d.message) for d in c.report.errors] == \
        [(code, 9, col, message) for code, col, message in errors]
    if not errors:
        assert list(c.graph.columns["priced"]) == [("order_id", "string"), ("currency", "string"),
                                                   ("ts", "timestamp"), ("rate", "double"), ("rates_ts", "timestamp")]
