"""Column propagation through every transform, and column-reference checks (E310/E311)."""
from pathlib import Path

from etl.check import check_file
from etl.graph.sql import guess_type, parse

from .helpers import check, codes

ROOT = Path(__file__).resolve().parents[2]


def cols(checked, ref):
    c = checked.graph.columns_of(ref)
    return None if c is None else dict(c)


def test_all_transforms_fixture():
    c = check_file(ROOT / "tests/fixtures/valid/all_transforms.yaml", environ={})
    assert c.ok, codes(c)
    base = {"ts": "timestamp", "user_id": "bigint", "ad_id": "bigint", "page": "string", "ms": "int"}
    assert cols(c, "parsed") == base  # payload dropped (keep_original: false), schema added
    assert cols(c, "all_events") == base
    for label in ("slow", "fast", "other"):
        assert cols(c, f"by_speed.{label}") == base
    assert cols(c, "ad_info") == {**base, "advertiser": "string", "cpc": "double"}
    assert cols(c, "unique") == cols(c, "ad_info")
    assert cols(c, "matched") == {**base, "views_ts": "timestamp", "views_page": "string", "views_ms": "int"}  # as run
    assert cols(c, "sliding") == {"advertiser": "string", "window_start": "timestamp", "window_end": "timestamp",
                                  "spend": "double", "clicks": "bigint", "top_pages": "array<string>"}
    assert cols(c, "sessions") == {"user_id": "bigint", "window_start": "timestamp", "window_end": "timestamp",
                                   "pages": "array<string>"}
    assert cols(c, "report") == {"window_start": "timestamp", "advertiser": "string", "spend": "double",
                                 "busy": "boolean"}
    assert cols(c, "spend_out") == cols(c, "report")


SRC = """
name: c
sources:
  - id: gen
    type: generator
    fields: {Status: {int_range: [1, 5]}, msg: {choice: ["a=1 b=x"]}, host: {ipv4: true}}
transforms:
TRANSFORMS
sinks:
  - {id: out, type: print, input: last}
"""


def run(tmp_path, transforms: str):
    return check(tmp_path, SRC.replace("TRANSFORMS", transforms))


def test_case_insensitive_and_nested_references(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: filter, input: gen, expr: "status > 1 AND HOST IS NOT NULL AND msg.x IS NULL"}
""")
    # columns match case-insensitively; msg is a string, which has no field x (Spark: INVALID_EXTRACT_BASE_FIELD_TYPE)
    assert codes(c) == [("E310", 8, 85)]
    assert "'msg' is string: it has no field 'x'" in c.report.diagnostics[0].message


def test_grok_types_and_keep_original(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: grok, input: gen, field: msg, pattern: "a=%{INT:a:int} b=%{WORD:b}", keep_original: false}
""")
    assert cols(c, "last") == {"Status": "bigint", "host": "string", "a": "int", "b": "string"}


def test_filter_tag_mode_adds_tag_field(tmp_path):
    c = run(tmp_path, """
  - id: last
    type: filter
    input: gen
    mode: tag
    tag_field: tags
    rules: [{id: r, when: {field: msg, contains: "a="}}]
""")
    assert cols(c, "last")["tags"] == "array<string>"


def test_select_star_rename_drop_and_expressions(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: select, input: gen, fields: ["*", "length(msg) AS n", "upper(host)"], rename: {Status: st}, drop: [msg]}
""")
    assert cols(c, "last") == {"st": "bigint", "host": "string", "n": "int", "upper(host)": "string"}


def test_derive_replaces_case_insensitively(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: derive, input: gen, columns: {STATUS: "cast(status AS string)", ok: "status < 3"}}
""")
    assert cols(c, "last") == {"msg": "string", "host": "string", "Status": "string", "ok": "boolean"}


def test_parse_adds_schema(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: parse, input: gen, field: msg, format: kv, schema: {a: int, b: string}}
""")
    assert cols(c, "last") == {"Status": "bigint", "msg": "string", "host": "string", "a": "int", "b": "string"}


def test_unknown_columns_skip_checks_but_select_makes_them_known(tmp_path):
    c = check(tmp_path, """
name: u
sources:
  - {id: k, type: kafka, bootstrap_servers: "x:1", topics: [t]}
transforms:
  - {id: f, type: filter, input: k, expr: "whatever > 1"}
  - {id: s, type: select, input: f, fields: [a, "b AS c"]}
  - {id: g, type: filter, input: s, expr: "d > 1"}
sinks:
  - {id: out, type: print, input: g}
""")
    assert cols(c, "f") is None
    assert cols(c, "s") == {"a": "unknown", "c": "unknown"}
    assert codes(c) == [("E310", 7, 44)]


def test_sql_helpers():
    assert parse("a + b").columns == (("a", 0), ("b", 4))
    assert parse("transform(xs, x -> x + 1)").columns == (("xs", 10),)
    assert parse("`weird col` = 1").columns == (("weird col", 0),)
    assert parse("a IN (SELECT b FROM t)").columns == (("a", 0),)
    assert parse("x >").error is not None
    assert parse("SELECT 1").error.message == "expected an expression, not a statement"
    assert parse("a; b").error is not None
    assert guess_type("cast(x AS bigint)", {}) == "bigint"
    assert guess_type("x / 2", {"x": "int"}) == "double"
    assert guess_type("x", {"X": "int"}) == "int"
    assert guess_type("'a'", {}) == "string"
    assert guess_type("x > 1", {}) == "boolean"
    assert guess_type("some_udf(x)", {}) == "unknown"


def test_window_output_and_having(tmp_path):
    c = check(tmp_path, """
name: w
sources:
  - id: gen
    type: generator
    fields: {ts: {timestamp: event}, svc: {choice: [a]}, lat: {float_range: [1, 2]}, n: {int_range: [1, 3]}}
    event_time: {field: ts, watermark: 5s}
transforms:
  - id: w
    type: window
    input: gen
    kind: tumbling
    size: 1m
    group_by: [svc, "lower(svc) AS svc_l"]
    aggregates:
      - {fn: sum, field: n, as: s}
      - {fn: sum, field: lat, as: sl}
      - {fn: min, field: lat, as: mn}
      - {fn: collect_list, field: n, as: ns}
      - {fn: first, field: svc, as: f}
    having: "s > 1 AND window_end IS NOT NULL AND n > 1"
sinks:
  - {id: out, type: print, input: w}
""")
    assert cols(c, "w") == {"svc": "string", "svc_l": "string", "window_start": "timestamp",
                            "window_end": "timestamp", "s": "bigint", "sl": "double", "mn": "double",
                            "ns": "array<bigint>", "f": "string"}
    assert codes(c) == [("E310", 20, 51)]  # `n` is not an output column of the window


WINDOW = """
name: w
sources:
  - id: gen
    type: generator
    fields: {ts: {timestamp: event}, user: {int_range: [1, 9]}}
    event_time: {field: ts, watermark: 10s}
transforms:
  - id: w
    type: window
    input: gen
    kind: tumbling
    size: 1m
    group_by: [user]
    aggregates: [{fn: count_distinct, field: user, as: users}]
    EMIT
  - {id: last, type: filter, input: w, expr: "FILTER"}
sinks:
  - {id: out, type: print, input: last}
"""
BASE_W = {"user": "bigint", "window_start": "timestamp", "window_end": "timestamp", "users": "bigint"}


def test_window_flag_columns_known_downstream(tmp_path):
    """count_distinct validates (exact in both engines); `_final`/`_retract` (early), `_update` (late updates)
    are columns of the window, so a downstream filter reads them."""
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {early: 10s}").replace("FILTER", "_final AND NOT _retract"))
    assert c.ok, codes(c)
    assert cols(c, "last") == {**BASE_W, "_final": "boolean", "_retract": "boolean"}
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {late: update, allowed_lateness: 10m, every: 1m}")
              .replace("FILTER", "_update OR _final"))
    assert c.ok, codes(c)
    assert cols(c, "last") == {**BASE_W, "_final": "boolean", "_retract": "boolean", "_update": "boolean"}
    c = check(tmp_path, WINDOW.replace("EMIT", "").replace("FILTER", "_final"))
    assert codes(c) == [("E310", 16, 47)]
    assert cols(c, "w") == BASE_W


def test_window_late_update_spec_positions(tmp_path):
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {late: update}").replace("FILTER", "true"))
    assert codes(c) == [("E104", 15, 11)]
    assert "`late: update` needs `allowed_lateness`" in c.report.sorted()[0].message
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {late: drop, every: 1m}").replace("FILTER", "true"))
    assert codes(c) == [("E104", 15, 11)]
    assert "`every` applies to `late: update` only" in c.report.sorted()[0].message
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {late: update, allowed_lateness: 0s}").replace("FILTER", "true"))
    assert [d.code for d in c.report.sorted()] == ["E102"]
    c = check(tmp_path, WINDOW.replace("EMIT", "emit: {early: 1s}").replace("FILTER", "true")
              .replace("as: users", "as: _final"))
    assert [d.code for d in c.report.sorted()] == ["E104"]


def test_a_bare_literal_is_a_value_not_a_column(tmp_path):
    c = run(tmp_path, """
  - {id: last, type: derive, input: gen, columns: {t: "true", n: "null", f: "FALSE", h: "HOST"}}
""")
    assert c.ok, codes(c)
    assert dict(c.graph.columns["last"])["t"] == "boolean"
